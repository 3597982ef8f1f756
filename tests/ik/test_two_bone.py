"""Two-bone IK: the ankle on its target within reach, the knee in its plane, and the soft approach to full extension."""
import numpy as np
from hypothesis import given, settings, strategies as st

from core.ik.two_bone import soft_reach, two_bone_ik
from core.math import quat

HIP, KNEE, ANKLE = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.55, 0.05]), np.array([0.0, 0.1, 0.0])
FULL = np.linalg.norm(KNEE - HIP) + np.linalg.norm(ANKLE - KNEE)


def solved(targets: np.ndarray, soft_m: float):
    """Knees and ankles (T, 3) of the leg above turned onto each target (T, 3)."""
    count = len(targets)
    thigh, shin = two_bone_ik(np.tile(HIP, (count, 1)), np.tile(KNEE, (count, 1)), np.tile(ANKLE, (count, 1)),
                              targets, quat.identity(count), quat.identity(count), soft_m)
    knees = HIP + quat.rotate(thigh, KNEE - HIP)
    return knees, knees + quat.rotate(shin, ANKLE - KNEE)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.0, 2.0), st.floats(0.005, 0.1))
def test_soft_reach_eases_into_full_extension(distance, soft):
    """Below full - soft the distance as it is; past it, up to full and short of the distance, rising with it, and
    joined with a continuous slope (1 at the join)."""
    full = 0.9
    reach = float(soft_reach(np.array(distance), full, soft))
    if distance <= full - soft:
        assert reach == distance
    else:
        assert full - soft <= reach <= full and reach <= distance
    step = 1e-7
    slope = (soft_reach(np.array(full - soft + step), full, soft) - (full - soft)) / step
    assert abs(slope - 1.0) < 1e-4
    assert soft_reach(np.array(distance + 0.01), full, soft) >= reach


def test_a_target_passing_through_full_extension_bends_the_knee_gradually():
    """A target drawn 1 mm a frame toward the hip from 3 cm beyond reach: the plain IK's knee swings 2.1 cm in the
    frame the target comes within reach (the square root of the slack); eased over the last 4 cm, at most 1.7 mm a
    frame, and the ankle is on the target once 4 cm within reach, and never more than 4 cm / e short of it."""
    direction = np.array([0.0, -1.0, 0.2]) / np.linalg.norm([0.0, -1.0, 0.2])
    targets = HIP + np.linspace(FULL + 0.03, FULL - 0.12, 151)[:, None] * direction
    plain_knees, plain_ankles = solved(targets, 0.0)
    soft_knees, soft_ankles = solved(targets, 0.04)
    assert np.linalg.norm(np.diff(plain_knees, axis=0), axis=-1).max() > 0.015
    assert np.linalg.norm(np.diff(soft_knees, axis=0), axis=-1).max() < 0.0025
    reachable = np.linalg.norm(targets - HIP, axis=-1) < FULL - 0.04
    np.testing.assert_allclose(soft_ankles[reachable], targets[reachable], atol=1e-9)
    np.testing.assert_allclose(plain_ankles[reachable], targets[reachable], atol=1e-9)
    within = np.linalg.norm(targets - HIP, axis=-1) < FULL
    assert np.linalg.norm(soft_ankles[within] - targets[within], axis=-1).max() < 0.04 / np.e + 1e-6
