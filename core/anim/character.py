"""Character space (the virtual root of MMVR §5.1): the hips on the floor, facing the hips' forward direction.

The hips' forward direction is taken perpendicular to the line through the two thigh joints
(left minus right, crossed with up), which turns rigidly with the hips whatever the rig's bone
axes are. Everything is +Y up, floor at y = 0.
"""
from __future__ import annotations

import numpy as np

from ..math import quat
from .motion import Motion
from .skeleton import Skeleton

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


VIRTUAL_ROOT = "root"
"""The name of a database skeleton's joint 0: the character's root on the floor."""


def database_skeleton(skeleton: Skeleton, hips: int) -> tuple[Skeleton, np.ndarray]:
    """The virtual root followed by the hips and everything below them; and the source joint of each."""
    kept = [j for j in range(len(skeleton)) if skeleton.is_ancestor(hips, j)]
    new_index = {old: i + 1 for i, old in enumerate(kept)}
    parents = np.array([-1, 0] + [new_index[int(skeleton.parents[j])] for j in kept[1:]])
    offsets = np.concatenate([np.zeros((1, 3)), skeleton.offsets[kept]])
    end_sites = tuple((new_index[j], o) for j, o in skeleton.end_sites if j in new_index)
    return Skeleton((VIRTUAL_ROOT,) + tuple(skeleton.names[j] for j in kept), parents, offsets, end_sites), np.array(kept)


def rooted_motion(motion: Motion, mapping) -> Motion:
    """The clip on its database skeleton: joint 0 the virtual root in world space, the hips relative to it
    (`mapping`: the clip's humanoid mapping, rig.humanoid.find_mapping)."""
    hips = mapping["hips"]
    global_rotations, global_positions = motion.global_transforms()
    root_position, root_rotation = character_frames(global_positions, mapping)
    skeleton, source = database_skeleton(motion.skeleton, hips)

    rotations = np.concatenate([root_rotation[:, None], motion.rotations[:, source]], axis=1)
    positions = np.concatenate([root_position[:, None], motion.positions[:, source]], axis=1)
    rotations[:, 1] = quat.inverse_multiply(root_rotation, global_rotations[:, hips])
    positions[:, 1] = quat.inverse_rotate(root_rotation, global_positions[:, hips] - root_position)
    return Motion(skeleton, rotations, positions, motion.fps, motion.name)
