"""Skeleton and Motion: forward kinematics, resampling, mirroring, slicing, concatenation."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from core.math import quat
from core.anim.sides import mirror_pairs
from core.rig.humanoid import find_mapping
from core.anim.motion import WORLD_MIRROR, Motion, forward_kinematics, local_from_global
from core.anim.skeleton import Skeleton


def chain():
    return Skeleton(("root", "mid", "tip"), np.array([-1, 0, 1]), np.array([[0, 0, 0], [0, 1, 0], [0, 1, 0.0]]))


def test_forward_kinematics_by_hand():
    half_turn_z = quat.from_axis_rotation("z", np.pi / 2)
    rotations = np.stack([half_turn_z, half_turn_z, quat.identity()])[None]
    motion = Motion.from_root(chain(), rotations, np.array([[1.0, 0, 0]]), 30.0)
    # root at (1,0,0) turned 90 deg about z: its +y child goes to -x; mid turns another 90 deg.
    assert np.allclose(motion.global_positions()[0], [[1, 0, 0], [0, 0, 0], [0, -1, 0]], atol=1e-12)
    global_rotations, _ = motion.global_transforms()
    assert np.allclose(local_from_global(chain().parents, global_rotations), rotations)


def test_forward_kinematics_vectorised_over_any_leading_axes(walk1):
    rotations, positions = forward_kinematics(walk1.skeleton.parents, walk1.rotations[None], walk1.positions[None])
    assert rotations.shape == (1, len(walk1), 22, 4)
    assert np.allclose(positions[0], walk1.global_positions())
    _, one_frame = forward_kinematics(walk1.skeleton.parents, walk1.rotations[7], walk1.positions[7])
    assert np.allclose(one_frame, walk1.global_positions()[7])


def test_global_positions_of_a_few_frames_skip_the_rotations_and_equal_forward_kinematics(walk1):
    for frames in (slice(7, 8), slice(3, 19), slice(None)):  # one frame, the largest small batch, all frames
        part = walk1[frames]
        _, expected = forward_kinematics(part.skeleton.parents, part.rotations, part.positions)
        np.testing.assert_array_equal(part.global_positions(), expected)


def test_forward_kinematics_of_some_joints_computes_them_and_their_ancestors_only(walk1):
    parents = walk1.skeleton.parents
    hand = find_mapping(walk1.skeleton)["l_hand"]
    asked = [hand]
    for frames in (slice(7, 8), slice(None)):  # the matrix path (one frame) and the quaternion path (all)
        rotations, positions = forward_kinematics(parents, walk1.rotations[frames], walk1.positions[frames], asked)
        full_rotations, full_positions = forward_kinematics(parents, walk1.rotations[frames], walk1.positions[frames])
        chain = [hand]
        while parents[chain[-1]] >= 0:
            chain.append(int(parents[chain[-1]]))
        assert np.allclose(positions[:, chain], full_positions[:, chain], atol=1e-12)
        assert np.all(quat.angle_between(rotations[:, chain], full_rotations[:, chain]) < 1e-7)
        others = [j for j in range(len(parents)) if j not in chain]
        assert others and np.all(positions[:, others] == 0.0) and np.all(rotations[:, others] == 0.0)


@st.composite
def hierarchies(draw):
    """Any tree or forest in parents-first order (a BVH's joints of any depth and branching), with random local
    rotations and offsets on one to a few frames."""
    count = draw(st.integers(1, 40))
    if draw(st.booleans()):  # one chain, as deep as it is long
        parents = np.arange(-1, count - 1)
    else:
        parents = np.array([-1] + [draw(st.integers(-1, j - 1)) for j in range(1, count)])
    seed = draw(st.integers(0, 2 ** 31))
    frames = draw(st.sampled_from([(), (1,), (3,), (2, 2)]))
    rng = np.random.default_rng(seed)
    return parents, quat.normalize(rng.normal(size=frames + (count, 4))), rng.normal(size=frames + (count, 3))


@given(hierarchies())
@settings(max_examples=60, deadline=None)
def test_forward_kinematics_of_a_few_frames_equals_the_quaternion_chain_on_any_hierarchy(drawn):
    """The 4x4 path of a few frames (pointer jumping over the ancestors) against the quaternion chain, joint by
    joint, for hierarchies from one joint to chains 40 deep."""
    parents, rotations, positions = drawn
    fast_rotations, fast_positions = forward_kinematics(parents, rotations, positions)
    expected_rotations = np.zeros_like(rotations)
    expected_positions = np.zeros_like(positions)
    for j, p in enumerate(parents):
        if p < 0:
            expected_rotations[..., j, :], expected_positions[..., j, :] = rotations[..., j, :], positions[..., j, :]
        else:
            expected_rotations[..., j, :] = quat.multiply(expected_rotations[..., p, :], rotations[..., j, :])
            expected_positions[..., j, :] = (expected_positions[..., p, :]
                                             + quat.rotate(expected_rotations[..., p, :], positions[..., j, :]))
    np.testing.assert_allclose(fast_positions, expected_positions, atol=1e-9)
    assert np.all(quat.angle_between(fast_rotations, expected_rotations) < 1e-6)


def test_skeleton_validation():
    with pytest.raises(ValueError, match="must precede"):
        Skeleton(("a", "b"), np.array([1, -1]), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="unique"):
        Skeleton(("a", "a"), np.array([-1, 0]), np.zeros((2, 3)))
    with pytest.raises(KeyError, match="no joint named 'x'"):
        chain().index("x")


def test_resample_30_to_60_keeps_frames_and_slerps_between(walk1):
    fast = walk1.resampled(60.0)
    assert fast.fps == 60.0 and len(fast) == 2 * len(walk1) - 1
    assert np.isclose(fast.duration, walk1.duration)
    assert np.all(quat.angle_between(fast.rotations[::2], walk1.rotations) < 1e-7)
    middle = quat.slerp(walk1.rotations[:-1], walk1.rotations[1:], 0.5)
    assert np.all(quat.angle_between(fast.rotations[1::2], middle) < 1e-7)
    assert np.allclose(fast.positions[1::2], 0.5 * (walk1.positions[:-1] + walk1.positions[1:]))
    back = fast.resampled(30.0)
    assert np.abs(back.global_positions() - walk1.global_positions()).max() < 1e-9


@pytest.mark.parametrize("fixture", ["walk1", "walk2"])
def test_mirror(fixture, request):
    motion = request.getfixturevalue(fixture)
    mirrored = motion.mirrored()
    pairs = mirror_pairs(motion.skeleton.names)
    names = motion.skeleton.names
    assert names[pairs[names.index("Hand_L")]] == "Hand_R" and pairs[names.index("Spine")] == names.index("Spine")
    # Every joint lands where its partner's reflection (x -> -x) is.
    expected = (motion.global_positions() @ WORLD_MIRROR)[:, pairs]
    assert np.abs(mirrored.global_positions() - expected).max() < 1e-9
    # Mirroring twice is the identity.
    twice = mirrored.mirrored()
    assert np.all(quat.angle_between(twice.rotations, motion.rotations) < 1e-7)
    # The right arm of the mirrored walk moves like a right arm: its local rotations stay close to
    # the real right arm's (a wrong twist in the rig's mirrored axes would put them ~180 deg off).
    for joint in ("UpperArm_R", "LowerArm_R", "UpperLeg_R", "Foot_R"):
        j = names.index(joint)
        gap = np.degrees(quat.angle_between(mirrored.rotations[:, j], motion.rotations[:, j])).mean()
        assert gap < 45.0, joint


def test_mirror_of_a_static_root_stays_static(walk1):
    mirrored = walk1.mirrored()
    assert np.all(quat.angle_between(mirrored.rotations[:, 0], quat.identity()) < 1e-9)
    assert np.allclose(mirrored.positions[:, 0], 0.0)


def test_slice_and_concatenate(walk1):
    first, second = walk1[:10], walk1[10:]
    assert len(first) == 10 and len(walk1[3]) == 1
    joined = Motion.concatenate([first, second])
    assert np.array_equal(joined.rotations, walk1.rotations) and np.array_equal(joined.positions, walk1.positions)
    with pytest.raises(ValueError, match="resample first"):
        Motion.concatenate([first, second.resampled(60.0)])
    other = Motion.from_root(chain(), quat.identity(2, 3), np.zeros((2, 3)), 30.0)
    with pytest.raises(ValueError, match="skeleton differs"):
        Motion.concatenate([first, other])


def test_motion_validates_shapes():
    with pytest.raises(ValueError, match="rotations shaped"):
        Motion(chain(), quat.identity(2, 2), np.zeros((2, 3, 3)), 30.0)
    with pytest.raises(ValueError, match="frame rate"):
        Motion(chain(), quat.identity(2, 3), np.zeros((2, 3, 3)), 0.0)
