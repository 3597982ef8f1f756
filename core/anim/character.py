"""Character space (the virtual root of MMVR §5.1): the hips on the floor, facing the hips' forward direction.

The hips' forward direction is taken perpendicular to the line through the two thigh joints
(left minus right, crossed with up), which turns rigidly with the hips whatever the rig's bone
axes are. Everything is +Y up, floor at y = 0.
"""
from __future__ import annotations

import numpy as np

from ..math import quat

UP = np.array([0.0, 1.0, 0.0])


def hips_forward(left_thigh: np.ndarray, right_thigh: np.ndarray) -> np.ndarray:
    """Unit forward directions on the floor (..., 3) from thigh joint positions."""
    forward = quat.cross(left_thigh - right_thigh, UP)
    forward[..., 1] = 0.0
    return forward / np.maximum(np.linalg.norm(forward, axis=-1, keepdims=True), 1e-9)


def body_yaw(global_positions: np.ndarray, mapping) -> np.ndarray:
    """Yaw in radians about +Y of the character's facing (0 faces +Z), per frame."""
    forward = hips_forward(global_positions[..., mapping["l_thigh"], :], global_positions[..., mapping["r_thigh"], :])
    return quat.yaw_of_direction(forward)


def character_frames(global_positions: np.ndarray, mapping):
    """Virtual root per frame: positions (..., 3) with y = 0 and yaw-only rotations (..., 4)."""
    position = global_positions[..., mapping["hips"], :].copy()
    position[..., 1] = 0.0
    return position, quat.from_yaw(body_yaw(global_positions, mapping))


def to_character_space(points: np.ndarray, root_position: np.ndarray, root_rotation: np.ndarray) -> np.ndarray:
    """Points (..., K, 3) expressed in the character frame given per leading index (..., 3) and (..., 4)."""
    return quat.inverse_rotate(root_rotation[..., None, :], points - root_position[..., None, :])
