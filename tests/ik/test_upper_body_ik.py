"""Parger et al.'s upper-body IK: each equation on hand-computed cases, reach, continuity, no NaN."""
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.math import quat
from core.config import UpperBodyIKConfig
from core.ik.upper_body_ik import (UpperBodyCalibration, arm_positions, forearm_frame, hand_angles_deg, hmd_pitch_deg,
                                neck_pitch_deg, neck_yaw, shoulder_turn_deg, singularity_weights, solve_upper_body,
                                swivel_from_hand_deg, wrist_correction_deg)

CONFIG = UpperBodyIKConfig()
CALIBRATION = UpperBodyCalibration(hmd_height_m=1.6, upper_arm_m=0.3, forearm_m=0.27)
LEFT, RIGHT = 0, 1


def grip(thumb, fingers) -> np.ndarray:
    """An OpenXR grip rotation whose -Z is the thumb direction and -Y the finger direction."""
    y, z = -np.asarray(fingers, float), -np.asarray(thumb, float)
    y, z = y / np.linalg.norm(y), z / np.linalg.norm(z)
    return quat.from_matrix(np.stack([np.cross(y, z), y, z], axis=-1))


def level_hmd(yaw_deg=0.0, pitch_down_deg=0.0) -> np.ndarray:
    """HMD rotation looking along +Z turned by yaw, tilted down by pitch (device looks along its -Z)."""
    return quat.multiply(quat.from_yaw(np.radians(yaw_deg) + np.pi),
                         quat.from_axis_rotation("x", -np.radians(pitch_down_deg)))


def test_hmd_pitch_reads_looking_down_as_positive():
    assert hmd_pitch_deg(level_hmd(0, 30)) == pytest.approx(30.0)
    assert hmd_pitch_deg(level_hmd(70, -20)) == pytest.approx(-20.0)


def test_eq2_neck_pitch():
    # (h0 - h) / h0 * (135.3 + 0.333 * beta_H) = 0.25 * (135.3 + 9.99)
    assert neck_pitch_deg(1.2, 30.0, 1.6, CONFIG) == pytest.approx(0.25 * (135.3 + 0.333 * 30.0))
    assert neck_pitch_deg(1.6, 45.0, 1.6, CONFIG) == pytest.approx(0.0)


def test_eq3_shoulder_turn_and_its_clamp():
    assert shoulder_turn_deg(0.9, 1.0, CONFIG) == pytest.approx(30.0 * (0.9 - 0.5))
    assert shoulder_turn_deg(0.3, 1.0, CONFIG) == 0.0
    assert shoulder_turn_deg(3.0, 1.0, CONFIG) == 33.0


def test_eq4_swivel_and_its_clamps():
    # x: -25 + 30 = 5; y: -90 + 120 = 30; z: -78 + 65 < 0 -> 0; phi = 15 + 35
    assert swivel_from_hand_deg([0.5, 1.5, -0.3], CONFIG) == pytest.approx(50.0)
    assert swivel_from_hand_deg([0.1, -0.5, 0.2], CONFIG) == 175.0
    low = dataclasses.replace(CONFIG, elbow_offset_deg=5.0)
    assert swivel_from_hand_deg([1.0, 2.5, -0.5], low) == 13.0


def test_eq5_wrist_corrections():
    assert wrist_correction_deg(60.0, 45.0, CONFIG) == pytest.approx(15.0 ** 2 / 135.0)
    assert wrist_correction_deg(-60.0, 45.0, CONFIG) == pytest.approx(-15.0 ** 2 / 135.0)
    assert wrist_correction_deg(0.0, -30.0, CONFIG) == pytest.approx(-30.0 ** 2 / 600.0)
    assert wrist_correction_deg(0.0, 120.0, CONFIG) == pytest.approx(30.0 ** 2 / 300.0)
    assert wrist_correction_deg(44.0, 89.0, CONFIG) == 0.0
    assert wrist_correction_deg(50.0, 100.0, CONFIG) == pytest.approx(25 / 135 + 100 / 300)


def test_singularity_weights():
    near, behind = singularity_weights(np.array([[0.3, -0.5, 0.0], [0.0, -0.5, -0.05], [0.6, 0.0, 0.2]]), CONFIG)
    np.testing.assert_allclose(near, [1 - 0.3 / 0.5, 1 - 0.05 / 0.5, 0.0])
    np.testing.assert_allclose(behind, [0.0, 0.5, 0.0])


@pytest.mark.parametrize("side", [LEFT, RIGHT])
def test_hand_angles_read_the_same_on_both_arms(side):
    """Elbow down, forearm forward: palm down is roll 0, thumb up 90, fingers bent outward positive yaw."""
    outward = np.array([1.0, 0, 0]) if side == LEFT else np.array([-1.0, 0, 0])
    forward, up = np.array([0, 0, 1.0]), np.array([0, 1.0, 0])  # the forearm and its across (to the shoulder)
    cases = {(0.0, 0.0): grip(-outward, forward), (0.0, 90.0): grip(up, forward), (0.0, 180.0): grip(outward, forward),
             (30.0, 90.0): grip(up, np.cos(np.radians(30)) * forward + np.sin(np.radians(30)) * outward)}
    for (yaw, roll), rotation in cases.items():
        rotations = np.stack([rotation, rotation])
        yaws, rolls = hand_angles_deg(np.stack([forward, forward]), np.stack([up, up]), rotations)
        assert yaws[side] == pytest.approx(yaw, abs=1e-6)
        assert rolls[side] == pytest.approx(roll, abs=1e-6)


def test_forearm_frame_matches_the_arm_it_describes():
    rng = np.random.default_rng(4)
    axis = rng.normal(size=(200, 2, 3))
    axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
    direction = rng.normal(size=(200, 2, 3))
    direction -= np.sum(direction * axis, axis=-1, keepdims=True) * axis
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    upper, fore = 0.3, 0.27
    reach = rng.uniform(0.04, upper + fore, size=(200, 2))
    reach[:10] = upper + fore  # straight arms
    cos = np.clip((upper ** 2 + reach ** 2 - fore ** 2) / (2 * upper * reach), -1.0, 1.0)
    sin = np.sqrt(1.0 - cos ** 2)
    elbows = upper * (cos[..., None] * axis + sin[..., None] * direction)
    wrists = reach[..., None] * axis
    along, across = forearm_frame(axis, direction, reach, cos, sin, upper, fore)
    measured = wrists - elbows
    np.testing.assert_allclose(along, measured / np.linalg.norm(measured, axis=-1, keepdims=True), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(across, axis=-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(np.sum(along * across, axis=-1), 0.0, atol=1e-9)
    to_shoulder = -elbows[10:] - np.sum(-elbows[10:] * along[10:], axis=-1, keepdims=True) * along[10:]
    np.testing.assert_allclose(across[10:], to_shoulder / np.linalg.norm(to_shoulder, axis=-1, keepdims=True),
                               atol=1e-6)
    np.testing.assert_allclose(across[:10], -direction[:10], atol=1e-9)  # a straight arm turns away from its elbow


def test_neck_yaw_follows_the_hands_within_90_degrees_of_the_hmd():
    hmd = np.array([0, 1.6, 0.0])
    rotation = level_hmd(0)
    in_front = np.array([[0.3, 1.0, 0.4], [-0.1, 1.0, 0.5]])
    direction = (in_front - hmd) / np.linalg.norm(in_front - hmd, axis=-1, keepdims=True)
    expected = np.arctan2(direction.sum(0)[0], direction.sum(0)[2])
    assert neck_yaw(hmd, rotation, in_front, CONFIG) == pytest.approx(expected)
    to_the_side = np.array([[1.0, 1.3, -0.3], [0.5, 1.2, 0.05]])  # summed direction 96.6 deg from the HMD
    assert neck_yaw(hmd, rotation, to_the_side, CONFIG) == pytest.approx(np.radians(90.0))
    behind = np.array([[0.2, 1.0, -0.3], [-0.2, 1.0, -0.3]])
    assert neck_yaw(hmd, rotation, behind, CONFIG) == pytest.approx(0.0, abs=1e-9)


def test_t_pose_calibration_eq1():
    calibration = UpperBodyCalibration.from_t_pose([0, 1.7, 0], [0.8, 1.45, 0], [-0.8, 1.45, 0])
    assert calibration.upper_arm_m == pytest.approx((1.6 - 0.31) / 4)
    assert calibration.forearm_m == calibration.upper_arm_m
    assert calibration.hmd_height_m == pytest.approx(1.7)
    with pytest.raises(ValueError, match="not wider than the shoulders"):
        UpperBodyCalibration.from_t_pose([0, 1.7, 0], [0.1, 1.45, 0], [-0.1, 1.45, 0])


def random_arm_problem(seed: int, count: int, reach_scale: float):
    rng = np.random.default_rng(seed)
    shoulders = rng.normal(size=(count, 2, 3)) * 0.1 + [0, 1.4, 0]
    direction = rng.normal(size=(count, 2, 3))
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    reach = rng.uniform(0.1, 1.0, size=(count, 2, 1)) * reach_scale
    targets = shoulders + direction * reach
    controllers = quat.normalize(rng.normal(size=(count, 2, 4)))
    frames = quat.from_yaw(rng.uniform(-np.pi, np.pi, count))
    return shoulders, targets, controllers, frames


def test_reachable_targets_are_reached_with_the_arm_lengths_kept():
    shoulders, targets, controllers, frames = random_arm_problem(1, 2000, 0.57)
    elbows, wrists = arm_positions(shoulders, targets, controllers, quat.to_matrix(frames), 0.3, 0.27, CONFIG)
    np.testing.assert_allclose(wrists, targets, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(elbows - shoulders, axis=-1), 0.3, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(wrists - elbows, axis=-1), 0.27, atol=1e-9)


def test_unreachable_targets_give_a_straight_arm_pointing_at_them():
    shoulders, _, controllers, frames = random_arm_problem(2, 500, 1.0)
    rng = np.random.default_rng(3)
    direction = rng.normal(size=shoulders.shape)
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    targets = shoulders + direction * rng.uniform(0.6, 3.0, size=(500, 2, 1))
    elbows, wrists = arm_positions(shoulders, targets, controllers, quat.to_matrix(frames), 0.3, 0.27, CONFIG)
    np.testing.assert_allclose(elbows, shoulders + 0.3 * direction, atol=1e-9)
    np.testing.assert_allclose(wrists, shoulders + 0.57 * direction, atol=1e-9)


@pytest.mark.parametrize("path", ["across_radius", "across_behind"])
def test_singularity_blend_is_continuous(path):
    """Elbows move by a few millimetres at most per millimetre of hand motion through both thresholds."""
    steps = np.linspace(0.0, 1.0, 1001)
    shoulder = np.array([0.2, 1.4, 0.0])
    if path == "across_radius":  # hand out to the side, moving outward through 0.5 m from the vertical axis
        hands = shoulder + np.stack([0.35 + 0.17 * steps, -0.1 + 0 * steps, 0.09 + 0 * steps], axis=-1)
    else:  # hand beside the body, moving from in front of the shoulder to 0.2 m behind it
        hands = shoulder + np.stack([0.15 + 0 * steps, -0.4 + 0 * steps, 0.1 - 0.3 * steps], axis=-1)
    count = len(steps)
    shoulders = np.broadcast_to(shoulder, (count, 2, 3)).copy()
    targets = np.stack([hands, hands * [-1, 1, 1]], axis=1)
    controllers = np.broadcast_to(grip([0, 1.0, 0], [0, 0, 1.0]), (count, 2, 4))
    level = np.broadcast_to(np.eye(3), (count, 3, 3))
    elbows, _ = arm_positions(shoulders, targets, controllers, level, 0.3, 0.27, CONFIG)
    hand_step = np.linalg.norm(np.diff(hands, axis=0), axis=-1).max()
    elbow_step = np.linalg.norm(np.diff(elbows, axis=0), axis=-1).max(axis=0)
    assert np.all(elbow_step < 5.0 * hand_step), elbow_step / hand_step


def test_one_frame_gives_what_the_batch_gives():
    rng = np.random.default_rng(4)
    hmd = rng.normal(size=(50, 3)) * 0.1 + [0, 1.6, 0]
    hmd_rotations = quat.normalize(rng.normal(size=(50, 4)) * [1, 0.2, 1, 0.2])
    wrists = hmd[:, None] + rng.normal(size=(50, 2, 3)) * 0.3
    controllers = quat.normalize(rng.normal(size=(50, 2, 4)))
    batch = solve_upper_body(hmd, hmd_rotations, wrists, controllers, CALIBRATION)
    for t in (0, 17, 49):
        single = solve_upper_body(hmd[t], hmd_rotations[t], wrists[t], controllers[t], CALIBRATION)
        np.testing.assert_allclose(single.elbows, batch.elbows[t], atol=1e-12)
        np.testing.assert_allclose(single.shoulders, batch.shoulders[t], atol=1e-12)


coordinate = st.floats(-1.5, 1.5, allow_nan=False)
unit_quaternion = st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 4).filter(lambda q: sum(x * x for x in q) > 1e-3)


@settings(max_examples=300, deadline=None)
@given(hmd=st.tuples(coordinate, st.floats(0.0, 2.0), coordinate), hmd_rotation=unit_quaternion,
       left=st.tuples(coordinate, coordinate, coordinate), right=st.tuples(coordinate, coordinate, coordinate),
       controllers=st.tuples(unit_quaternion, unit_quaternion),
       special=st.sampled_from(["none", "at_hmd", "at_shoulder", "behind_head", "looking_down", "same_place"]))
def test_no_nan_for_any_device_pose(hmd, hmd_rotation, left, right, controllers, special):
    hmd = np.array(hmd)
    hmd_rotation = quat.normalize(np.array(hmd_rotation))
    wrists = hmd + np.array([left, right])
    if special == "at_hmd":
        wrists[:] = hmd
    elif special == "behind_head":
        wrists = hmd + quat.rotate(hmd_rotation, np.array([[0.1, 0.0, 0.15], [-0.1, 0.0, 0.15]]))
    elif special == "looking_down":
        hmd_rotation = level_hmd(30, 90)
    elif special == "same_place":
        wrists[1] = wrists[0]
    chain = solve_upper_body(hmd, hmd_rotation, wrists, quat.normalize(np.array(controllers)), CALIBRATION)
    if special == "at_shoulder":
        chain = solve_upper_body(hmd, hmd_rotation, chain.shoulders, quat.normalize(np.array(controllers)),
                                 CALIBRATION)
    for name in ("neck", "neck_rotation", "shoulders", "elbows", "wrists"):
        assert np.all(np.isfinite(getattr(chain, name))), name
    np.testing.assert_allclose(np.linalg.norm(chain.elbows - chain.shoulders, axis=-1), 0.3, atol=1e-6)
