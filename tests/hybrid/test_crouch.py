"""The body goes down with the headset (core/ik/crouch.py): a user who crouches or bends to pick something off the
floor, which nobody in the training capture did."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from core.anim.motion import Motion, forward_kinematics
from core.config import HybridConfig, SimulationConfig
from core.devices.attachments import joints_from_devices
from core.devices.simulate import simulate_stream
from core.files.bvh import read_bvh
from core.files.stream import ThreePointStream
from core.ik.crouch import MIN_LEG_SHARE, hips_moves
from core.math import quat
from core.math.vector import length
from core.n3p.model import N3PModel
from core.rig.humanoid import find_mapping
from core.solve import solve
from conftest import DATASET_1
from hybrid.test_hybrid_solver import hybrid, stepped_live

STANDING = DATASET_1 / "dataset-1_byebye_normal_001.bvh"
"""A validation clip; its first frame, held, is a person standing."""


@pytest.fixture(scope="module")
def model():
    return N3PModel.load()


vectors = st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3).map(np.array)


@settings(max_examples=300, deadline=None)
@given(vectors, vectors, st.floats(0.2, 0.4), st.floats(0.0, 1.0), st.floats(0.5, 1.0), vectors, vectors)
def test_the_hips_move_the_least_that_lets_the_torso_reach_and_never_up(direction, target, torso_m, hip_height,
                                                                       leg_m, left, right):
    """Whatever the pose: the hips never rise nor go lower than leaves a hip MIN_LEG_SHARE of its leg above its
    ankle; after the move the target is never nearer than the torso's length (the turn that follows reaches it),
    and, where the legs had room, not below the pivot (the torso at most level); a target above the pivot and the
    torso's length away moves nothing, and one nearer, above, moves the hips the least: straight away from it."""
    pivot = np.array([0.0, hip_height + 0.1, 0.0])
    neck = pivot + torso_m * (direction + [0.0, 1.5, 0.0]) / np.linalg.norm(direction + [0.0, 1.5, 0.0])
    hips = np.stack([pivot + [-0.1, -0.1, 0.0], pivot + [0.1, -0.1, 0.0]])
    ankles = hips + 0.5 * leg_m * np.stack([left, right]) - [0.0, leg_m * 0.8, 0.0]
    move = hips_moves(pivot[None], neck[None], target[None], hips[None], ankles[None], np.full(2, leg_m))[0]
    apart = hips - ankles
    room = max((apart[:, 1] - np.sqrt(np.maximum((MIN_LEG_SHARE * leg_m) ** 2 - apart[:, 0] ** 2 - apart[:, 2] ** 2,
                                                 0.0))).min(), 0.0)
    assert -room - 1e-12 <= move[1] <= 1e-12
    assert np.linalg.norm(target - pivot - move) >= torso_m - 1e-9
    if -move[1] < room - 1e-9:
        assert target[1] >= pivot[1] + move[1] - 1e-9
    gap = np.linalg.norm(target - pivot)
    if target[1] >= pivot[1]:
        if gap >= torso_m:
            np.testing.assert_allclose(move, 0.0, atol=1e-12)
        elif -move[1] < room - 1e-9:
            np.testing.assert_allclose(np.linalg.norm(move), torso_m - gap, atol=1e-9)
            np.testing.assert_allclose(np.cross(move, pivot - target), 0.0, atol=1e-9)


@pytest.fixture(scope="module")
def standing(model):
    """The default solver and the predictor's standing pose: local rotations and positions (1, J, ...) and the
    global poses of the joints `combine` reads."""
    solver = hybrid(model)
    body = solver.standing_motion()[:1]
    return solver, body, solver.lower_pose(body)


def test_the_moved_pose_is_forward_kinematics_of_the_local_pose_written(standing):
    """`Crouch.pose` gives the global poses that forward kinematics of `Crouch.apply`'s local poses gives (the hands
    keeping their world rotations), over random hip moves and torso turns up to the limit and past it."""
    solver, body, (rotations, positions) = standing
    crouch, parents = solver.crouch, solver.skeleton.parents
    rng = np.random.default_rng(5)
    moves = rng.uniform(-0.3, 0.3, (40, 3))
    bends = quat.from_rotation_vector(rng.normal(size=(40, 3)) * rng.uniform(0.0, 2.0, (40, 1)))
    frames = len(moves)
    rotations, positions = np.repeat(rotations, frames, 0), np.repeat(positions, frames, 0)
    local, local_positions = np.repeat(body.rotations, frames, 0), np.repeat(body.positions, frames, 0)
    parent = parents[crouch.hips]
    crouch.apply(local, local_positions, rotations, moves, bends, rotations[:, parent] if parent >= 0 else None)
    expected_rotations, expected_positions = forward_kinematics(parents, local, local_positions, solver.posed)
    hands = solver.arms.chains[:, -1]
    expected_rotations[:, hands] = rotations[:, hands]
    moved_rotations, moved_positions = crouch.pose(rotations, positions, moves, bends)
    np.testing.assert_allclose(moved_positions, expected_positions, atol=1e-9)
    np.testing.assert_allclose(np.abs(np.sum(moved_rotations * expected_rotations, axis=-1)),
                               np.abs(np.sum(expected_rotations ** 2, axis=-1)), atol=1e-9)


def standing_still(seconds: float) -> tuple[ThreePointStream, np.ndarray, np.ndarray]:
    """(the stream of a person standing: a validation clip's first frame, held; its seconds from the start; where the
    headset looks along the floor (T, 3))."""
    clip = read_bvh(STANDING)
    frames = int(seconds * clip.fps)
    still = Motion(clip.skeleton, np.repeat(clip.rotations[:1], frames, 0), np.repeat(clip.positions[:1], frames, 0),
                   clip.fps)
    stream = simulate_stream(still, SimulationConfig(look_around_deg=0.0)).stream
    forward = -quat.rotate(stream.rotations[:, 0], np.array([0.0, 0.0, 1.0]))
    forward[:, 1] = 0.0
    return stream, stream.times - stream.times[0], forward / np.linalg.norm(forward, axis=1, keepdims=True)


def picking_up(depth_m: float, seconds: float = 8.0) -> ThreePointStream:
    """A person standing who goes down over a second, 2 s in, to pick something off the floor 30 cm in front, stays
    there 2 s and comes back up: the headset `depth_m` lower and 0.4 of that forward, the controllers at the floor
    between the feet's sides."""
    stream, t, forward = standing_still(seconds)
    down = np.clip(np.minimum(t - 2.0, 6.0 - t), 0.0, 1.0)
    down = 0.5 - 0.5 * np.cos(np.pi * down)
    side = np.cross(forward, [0.0, 1.0, 0.0])
    positions = stream.positions.copy()
    hmd = positions[:, 0].copy()
    positions[:, 0] += down[:, None] * (0.4 * depth_m * forward - [0.0, depth_m, 0.0])
    for hand, sign in ((1, -1.0), (2, 1.0)):
        floor = hmd + 0.3 * forward + sign * 0.12 * side
        floor[:, 1] = 0.1
        positions[:, hand] += down[:, None] * (floor - positions[:, hand])
    return ThreePointStream(stream.times, positions, stream.rotations, stream.tracked)


def misses(solver, motion: Motion, stream: ThreePointStream):
    """Per frame: the head's and the farther hand's distance (m) from where the devices put them, and the toes (T, 2,
    3)."""
    mapping = find_mapping(motion.skeleton)
    positions = motion.global_positions()
    joints = joints_from_devices(stream.positions, stream.rotations, solver.offsets)
    count = min(len(positions), len(joints))
    head = length(positions[:count, mapping["head"]] - joints[:count, 0])
    hands = length(positions[:count][:, [mapping["l_hand"], mapping["r_hand"]]] - joints[:count, 1:]).max(axis=1)
    return head, hands, positions[:count][:, [mapping["l_toes"], mapping["r_toes"]]]


@pytest.mark.parametrize("depth_m", [0.6, 0.8])
def test_picking_something_off_the_floor_the_head_and_hands_go_down_with_the_devices(model, depth_m):
    """Down 0.6 m (the head joint at 0.80 m) and 0.8 m (0.60 m): the predictor, which never saw a crouch, stops
    28-47 cm from the headset with the hands 20-30 cm from the controllers; the hips go down and back and the torso
    bends, and at the bottom the head and hands are on their devices (0.0 cm measured), the feet where they stood."""
    stream = picking_up(depth_m)
    bottom = slice(int(3.5 * 60), int(4.5 * 60))
    for config, down in ((HybridConfig(crouch=False), False), (HybridConfig(), True)):
        solver = hybrid(model, None, config)
        solution = solve(stream, solver, None)
        head, hands, toes = misses(solver, solution.motion, solution.stream)
        if not down:
            assert head[bottom].min() > 0.15 and hands[bottom].min() > 0.15
            continue
        assert head[bottom].max() < 0.01 and hands[bottom].max() < 0.01
        assert np.abs(toes - toes[:1]).max() < 0.01 and toes[..., 1].min() > toes[0, :, 1].min() - 0.005
        live_head, live_hands, live_toes = misses(solver, stepped_live(solver, solution), solution.stream)
        assert live_head[bottom].max() < 0.01 and live_hands[bottom].max() < 0.01
        assert np.abs(live_toes - live_toes[:1]).max() < 0.01


def test_a_headset_lost_for_a_moment_moves_nothing_when_it_comes_back(model):
    """Standing, the headset untracked for 0.4 s: its lost samples ask for nothing, and the head's way to it fades out
    and back through the filter, so the head moves at most 0.35 cm a frame (measured; the predictor's own 0.06 cm):
    taken as places, the lost samples bent the torso toward the floor's origin, 18.7 cm in a frame, and cutting the
    moves off while the headset was lost made the head step 1.35 cm."""
    stream = picking_up(0.0)
    t = stream.times - stream.times[0]
    lost = (t > 0.5) & (t < 0.9)
    positions, rotations, tracked = stream.positions.copy(), stream.rotations.copy(), stream.tracked.copy()
    tracked[lost, 0] = False
    positions[lost, 0] = rotations[lost, 0] = np.nan
    solver = hybrid(model)
    motion = solve(ThreePointStream(stream.times, positions, rotations, tracked), solver, None).motion
    head = motion.global_positions()[:, find_mapping(motion.skeleton)["head"]]
    assert length(np.diff(head[int(0.3 * 60):int(1.5 * 60)], axis=0)).max() < 0.005


def test_sitting_down_after_standing_the_avatar_sits_into_a_squat(model):
    """A user who stands for the first seconds, sized by them, then sits (the headset 0.45 m lower over a second, the
    controllers on the lap): the avatar sits back into a squat, it has no chair, with the head and hands on their
    devices (at most 0.14 cm measured), the knees bent to about a right angle (87-90° measured) and the feet where
    they stood."""
    stream, t, forward = standing_still(10.0)
    down = 0.5 - 0.5 * np.cos(np.pi * np.clip(t - 3.0, 0.0, 1.0))
    positions = stream.positions.copy()
    positions[:, :, 1] -= 0.45 * down[:, None]
    positions[:, 1:] += (0.15 * down[:, None] * forward)[:, None]
    solver = hybrid(model)
    solution = solve(ThreePointStream(stream.times, positions, stream.rotations, stream.tracked), solver, None)
    head, hands, toes = misses(solver, solution.motion, solution.stream)
    seated = slice(int(5.0 * 60), None)
    assert head[seated].max() < 0.01 and hands[seated].max() < 0.01
    assert np.abs(toes - toes[:1]).max() < 0.01
    mapping, joints = find_mapping(solution.motion.skeleton), solution.motion.global_positions()[seated]
    thigh = joints[:, mapping["l_thigh"]] - joints[:, mapping["l_shin"]]
    shin = joints[:, mapping["l_foot"]] - joints[:, mapping["l_shin"]]
    knee = np.degrees(np.arccos(np.sum(thigh * shin, axis=-1) / (length(thigh) * length(shin))))
    assert 75.0 < knee.min() and knee.max() < 105.0
