"""The torso's part in reaching (core/ik/torso_reach.py): the least twist and clavicle turn, within their limits."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from core.ik.torso_reach import turn_toward, twist_angles
from core.math import quat

angles = st.floats(-np.pi, np.pi)
widths = st.floats(0.0, np.pi)


@given(angles, widths, angles, widths, st.floats(0.01, 1.0))
@settings(max_examples=200, deadline=None)
def test_the_twist_is_the_least_that_both_arms_allow(psi_l, width_l, psi_r, width_r, limit):
    """Zero where both arms reach untwisted; else the allowed twist nearest zero; never past the limit."""
    psi, width = np.array([psi_l, psi_r]), np.array([width_l, width_r])
    twist = float(twist_angles(psi, width, np.array([True, True]), limit))
    assert abs(twist) <= limit + 1e-12
    low, high = np.max(psi - width), np.min(psi + width)
    if low <= 0.0 <= high:
        assert twist == 0.0
    elif low <= high:
        nearest = low if low > 0 else high
        assert abs(twist - np.clip(nearest, -limit, limit)) < 1e-12


def test_an_untracked_arm_does_not_turn_the_chest():
    psi, width = np.array([1.0, 0.0]), np.array([0.2, 0.0])
    assert twist_angles(psi, width, np.array([False, True]), 1.0) == 0.0
    assert abs(twist_angles(psi, width, np.array([True, False]), 1.0) - 0.8) < 1e-12


@given(st.lists(st.floats(-1.0, 1.0), min_size=9, max_size=9), st.floats(0.05, 0.7), st.floats(0.01, 1.5))
@settings(max_examples=200, deadline=None)
def test_the_clavicle_turns_the_least_that_brings_the_shoulder_within_reach(values, reach, limit):
    pivot, point, target = np.reshape(values, (3, 3))
    turn = turn_toward(pivot, point, target, np.array(reach), limit)
    moved = pivot + quat.rotate(turn, point - pivot)
    angle = 2.0 * np.arccos(np.clip(abs(turn[0]), 0.0, 1.0))
    assert angle <= limit + 1e-9
    assert abs(np.linalg.norm(moved - pivot) - np.linalg.norm(point - pivot)) < 1e-9
    before, after = np.linalg.norm(point - target), np.linalg.norm(moved - target)
    if before <= reach:
        assert angle < 1e-9
    else:
        # A turn never takes the point away from the target (an arm of a few nanometres has no direction to keep).
        assert after <= before + 1e-9 or np.linalg.norm(point - pivot) < 1e-6
        if angle < limit - 1e-6 and after > reach + 1e-6:  # the limit did not stop it: it points at the target
            assert np.linalg.norm(np.cross(moved - pivot, target - pivot)) < 1e-6 * max(1.0, np.linalg.norm(target - pivot))
