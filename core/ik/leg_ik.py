"""Two-bone IK for a leg: turn the thigh and shin so the ankle reaches a target, keeping the knee's plane.

The knee stays in the plane through the hip, the target and the current knee (so the leg bends the
way the matched pose bends it); the cosine rule places it, and each bone takes the shortest
rotation onto its new direction. A target out of reach straightens the leg toward it.
"""
from __future__ import annotations

import numpy as np

from ..math import quat
from ..math.vector import length, reject, unit_or


def knee_position(hip: np.ndarray, knee: np.ndarray, target: np.ndarray, thigh_m: np.ndarray, shin_m: np.ndarray):
    """Where the knee goes (..., 3) for the ankle to reach `target` (or as near as the leg allows)."""
    reach = np.clip(length(target - hip), np.abs(thigh_m - shin_m) + 1e-6, thigh_m + shin_m - 1e-6)
    along = unit_or(target - hip, knee - hip)
    bend = unit_or(reject(knee - hip, along), np.array([0.0, 0.0, 1.0]))
    # Cosine rule: the thigh's angle at the hip between the hip-target line and the thigh.
    cos_hip = np.clip((thigh_m ** 2 + reach ** 2 - shin_m ** 2) / (2.0 * thigh_m * reach), -1.0, 1.0)
    sin_hip = np.sqrt(1.0 - cos_hip ** 2)
    return hip + thigh_m[..., None] * (cos_hip[..., None] * along + sin_hip[..., None] * bend)


def two_bone_ik(hip, knee, ankle, target, thigh_rotation, shin_rotation):
    """New global rotations of thigh and shin (..., 4) that put the ankle at `target` where reachable."""
    thigh, shin = knee - hip, ankle - knee
    thigh_m, shin_m = length(thigh), length(shin)
    new_knee = knee_position(hip, knee, target, thigh_m, shin_m)
    thigh_turn = quat.between(thigh, new_knee - hip)
    # The shin turns onto the line from the new knee to the target: a target out of reach lies on it too.
    shin_turn = quat.between(quat.rotate(thigh_turn, shin), target - new_knee)
    return (quat.multiply(thigh_turn, thigh_rotation),
            quat.multiply(shin_turn, quat.multiply(thigh_turn, shin_rotation)))

