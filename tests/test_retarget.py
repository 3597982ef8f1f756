"""Retargeting onto rigs with other rest poses, bone axes, facings and proportions (core.retarget)."""
import numpy as np
import pytest

from core import quat
from core.humanoid import find_mapping
from core.motion import forward_kinematics
from core.retarget import CANONICAL_CHILD, Retargeting, TargetSkeleton


def _rig(motion, scale=1.0, arm_drop_deg=0.0, turn_deg=0.0, random_axes=False, seed=0):
    """A target made from the clip's own skeleton: scaled, arms lowered into an A-pose, turned, any bone axes."""
    skeleton = motion.skeleton
    mapping = find_mapping(skeleton)
    local = quat.identity(len(skeleton))
    for side, sign in (("l", 1.0), ("r", -1.0)):
        local[mapping[f"{side}_upper_arm"]] = quat.from_axis_rotation("z", np.radians(-sign * arm_drop_deg))
    local[0] = quat.from_axis_rotation("y", np.radians(turn_deg))
    rotations, positions = forward_kinematics(skeleton.parents, local, skeleton.offsets * scale)
    axes = quat.normalize(np.random.default_rng(seed).normal(size=rotations.shape)) if random_axes else rotations
    return TargetSkeleton.build(skeleton.names, skeleton.parents, positions, axes)


def _directions(positions, mapping):
    pairs = [(mapping[j], mapping[c]) for j, c in CANONICAL_CHILD.items()]
    d = np.stack([positions[:, c] - positions[:, j] for j, c in pairs], axis=1)
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def test_retargeting_onto_the_same_skeleton_changes_nothing(walk1):
    clip = walk1[:120]
    rig = _rig(clip)
    rotations, positions = Retargeting.between(clip.skeleton, find_mapping(clip.skeleton), rig).apply(clip)
    truth_rotations, truth_positions = clip.global_transforms()
    np.testing.assert_allclose(positions, truth_positions, atol=1e-6)  # float32 clip
    np.testing.assert_allclose(np.abs(np.sum(rotations * truth_rotations, -1)), 1.0, atol=1e-6)


@pytest.mark.parametrize("arm_drop_deg, turn_deg", [(45.0, 0.0), (40.0, 90.0), (0.0, -150.0)])
def test_an_a_pose_rig_with_other_axes_facing_and_size_follows_every_bone_direction(walk1, arm_drop_deg, turn_deg):
    clip = walk1[:120]
    rig = _rig(clip, scale=0.8, arm_drop_deg=arm_drop_deg, turn_deg=turn_deg, random_axes=True)
    retargeting = Retargeting.between(clip.skeleton, find_mapping(clip.skeleton), rig)
    _, positions = retargeting.apply(clip)
    _, truth = clip.global_transforms()
    mapping = find_mapping(clip.skeleton)
    np.testing.assert_allclose(_directions(positions, mapping), _directions(truth, mapping), atol=1e-5)
    # Proportions are the rig's: every mapped bone keeps its rest length.
    for joint, child in CANONICAL_CHILD.items():
        length = np.linalg.norm(positions[:, mapping[child]] - positions[:, mapping[joint]], axis=-1)
        np.testing.assert_allclose(length, np.linalg.norm(rig.rest_positions[mapping[child]]
                                                          - rig.rest_positions[mapping[joint]]), atol=1e-6)
    # The hips keep their horizontal track and scale their height with the legs.
    hips = mapping["hips"]
    np.testing.assert_allclose(positions[:, hips, [0, 2]], truth[:, hips, [0, 2]], atol=1e-6)
    assert retargeting.hips_scale == pytest.approx(0.8)
    np.testing.assert_allclose(positions[:, hips, 1] - rig.floor_height(),
                               0.8 * (truth[:, hips, 1] - retargeting.source_floor), atol=1e-6)


def test_arms_resolved_on_the_avatars_lengths_reach_the_wrist_targets(walk1):
    clip = walk1[:120]
    mapping = find_mapping(clip.skeleton)
    rig = _rig(clip, scale=0.9, arm_drop_deg=45.0, random_axes=True, seed=3)
    _, truth = clip.global_transforms()
    wrists = truth[:, [mapping["l_hand"], mapping["r_hand"]]]  # the source's wrists, out of the smaller rig's reach
    wrists = wrists + np.array([0.0, -0.05, 0.0])             # ... lowered so they are in reach
    rotations, positions = Retargeting.between(clip.skeleton, mapping, rig).apply(clip, wrists)
    reached = positions[:, [mapping["l_hand"], mapping["r_hand"]]]
    arm = [np.linalg.norm(rig.rest_positions[mapping[f"{s}_forearm"]] - rig.rest_positions[mapping[f"{s}_upper_arm"]])
           + np.linalg.norm(rig.rest_positions[mapping[f"{s}_hand"]] - rig.rest_positions[mapping[f"{s}_forearm"]])
           for s in "lr"]
    shoulder = positions[:, [mapping["l_upper_arm"], mapping["r_upper_arm"]]]
    reachable = np.linalg.norm(wrists - shoulder, axis=-1) < np.array(arm) - 1e-3
    assert reachable.mean() > 0.5
    np.testing.assert_array_less(np.linalg.norm(reached - wrists, axis=-1)[reachable], 1e-6)
    # Out of reach, the arm points straight at the target.
    far = ~reachable
    if far.any():
        toward = (wrists - shoulder)[far]
        along = (reached - shoulder)[far]
        cosine = np.sum(toward * along, -1) / np.linalg.norm(toward, axis=-1) / np.linalg.norm(along, axis=-1)
        assert cosine.min() > 0.999


def test_unmapped_bones_keep_their_rest_relation_and_a_rig_without_legs_is_refused(walk1):
    clip = walk1[:30]
    rig = _rig(clip)
    names = rig.names + ("prop",)
    parents = np.append(rig.parents, -1)  # a second root: a control bone outside the body
    extra = TargetSkeleton.build(names, parents, np.vstack([rig.rest_positions, [[1.0, 0.0, 0.0]]]),
                                 np.vstack([rig.rest_rotations, [[1.0, 0.0, 0.0, 0.0]]]))
    rotations, positions = Retargeting.between(clip.skeleton, find_mapping(clip.skeleton), extra).apply(clip)
    np.testing.assert_allclose(positions[:, -1], [[1.0, 0.0, 0.0]] * 30)
    legless = [j for j, n in enumerate(rig.names) if "Leg" not in n and "Foot" not in n and "Toe" not in n]
    with pytest.raises(ValueError, match="Foot|foot|LowerLeg|shin|thigh"):
        TargetSkeleton.build([rig.names[j] for j in legless], [legless.index(rig.parents[j]) if rig.parents[j] >= 0
                                                                else -1 for j in legless],
                             rig.rest_positions[legless], rig.rest_rotations[legless])
