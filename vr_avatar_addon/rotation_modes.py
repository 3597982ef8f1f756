"""Rotations in each pose bone's own rotation mode: the solve's quaternions as the bone's mode stores them.

A rig's bones may rotate by quaternion, by an Euler order or by axis and angle; the add-on writes each in the
mode it has and never switches a bone's mode, so the animator's other actions keep posing it.
"""
import numpy as np
from mathutils import Quaternion


def rotation_values(quaternions: np.ndarray, mode: str, previous=None) -> tuple[str, np.ndarray]:
    """The pose bone property and its values (F, 3 or 4) that rotate a bone in `mode` as the quaternions (F, 4)
    do: the quaternions, Euler angles in that order continuous across frames (and with `previous`, a
    mathutils Euler), or axis and angle."""
    if mode == 'QUATERNION':
        return "rotation_quaternion", quaternions
    if mode == 'AXIS_ANGLE':
        q = quaternions * np.where(quaternions[:, :1] < 0.0, -1.0, 1.0)
        half = np.arccos(np.clip(q[:, 0], -1.0, 1.0))
        axis = q[:, 1:] / np.maximum(np.sin(half), 1e-12)[:, None]
        axis[np.sin(half) < 1e-9] = (0.0, 1.0, 0.0)
        return "rotation_axis_angle", np.column_stack([2.0 * half, axis])
    angles = np.empty((len(quaternions), 3))
    for k, q in enumerate(quaternions):
        previous = Quaternion(q).to_euler(mode) if previous is None else Quaternion(q).to_euler(mode, previous)
        angles[k] = previous
    return "rotation_euler", angles


def rotation_property(mode: str) -> str:
    """The rotation property of a bone or object in rotation `mode`."""
    return {'QUATERNION': "rotation_quaternion", 'AXIS_ANGLE': "rotation_axis_angle"}.get(mode, "rotation_euler")


def set_rotations(pose_bones, quaternions: np.ndarray) -> None:
    """Rotate pose bones (a sequence) by quaternions (J, 4), each in its own rotation mode (Euler angles nearest
    the bone's current ones)."""
    for pose_bone, q in zip(pose_bones, quaternions):
        mode = pose_bone.rotation_mode
        current = pose_bone.rotation_euler.copy() if mode not in ('QUATERNION', 'AXIS_ANGLE') else None
        name, values = rotation_values(np.asarray(q, dtype=float)[None], mode, current)
        setattr(pose_bone, name, values[0].tolist())
