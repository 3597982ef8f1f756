"""FABRIK (Aristidou & Lasenby 2011) with cone joint limits, over many frames at once.

The baseline that Parger et al. (§4) compare against: a general iterative solver that only keeps
bones at their lengths and inside their joint limits, with no knowledge of where elbows go. Used
for evaluation only. A chain is a fixed root, bone lengths, and a start pose; each iteration
reaches backward from the target to the root, then forward from the root, where each bone's
direction is kept within a cone around its reference (the first bone's given direction, then the
previous bone's).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..math.vector import dot, unit, unit_across


@dataclass(frozen=True)
class FabrikConfig:
    """Iterations and joint limits (cone half-angles, degrees) for the upper-body chains."""

    iterations: int = 20
    shoulder_cone_deg: float = 20.0
    """Shoulder (clavicle), around its direction in the reference pose, carried by the chest."""
    upper_arm_cone_deg: float = 120.0
    """Upper arm, around the shoulder bone's direction (it cannot point back into the chest)."""
    forearm_cone_deg: float = 150.0
    """Forearm, around the upper arm's direction (the elbow's flexion limit)."""


def within_cone(direction: np.ndarray, axis: np.ndarray, half_angle: float) -> np.ndarray:
    """Unit `direction` moved onto the cone of `half_angle` radians around unit `axis` where it lies outside."""
    cos_limit = np.cos(half_angle)
    inside = dot(direction, axis) >= cos_limit
    across = unit_across(direction, axis, np.roll(axis, 1, axis=-1))
    on_cone = cos_limit * axis + np.sin(half_angle) * across
    return np.where(inside[..., None], direction, on_cone)


def solve_chain(root: np.ndarray, joints: np.ndarray, lengths, target: np.ndarray, first_axis: np.ndarray,
                cones_deg, iterations: int) -> np.ndarray:
    """Joint positions (T, K, 3) of a chain hanging from a fixed root (T, 3), its end reaching for target (T, 3).

    joints (T, K, 3) is the start pose (excluding the root); lengths (K,) the bones from the root
    down; first_axis (T, 3) the first bone's cone axis; cones_deg (K,) each bone's limit.
    """
    joints = joints.copy()
    lengths = np.asarray(lengths, float)
    limits = np.radians(np.asarray(cones_deg, float))
    count = len(lengths)
    for _ in range(iterations):
        joints[:, -1] = target
        for k in range(count - 2, -1, -1):
            joints[:, k] = joints[:, k + 1] + lengths[k + 1] * unit(joints[:, k] - joints[:, k + 1])
        previous, axis = root, first_axis
        for k in range(count):
            direction = within_cone(unit(joints[:, k] - previous), axis, limits[k])
            joints[:, k] = previous + lengths[k] * direction
            previous, axis = joints[:, k], direction
    return joints
