"""Axes: the one place that converts between core's +Y-up frame and Blender's +Z-up frame.

Blender's frame is core's turned +90° about X: (x, y, z) -> (x, -z, y). A position is carried
across by that turn; an orientation (an object's or a bone's rotation into the world) by
composing with it on the left, so the object's own axes are unchanged.
"""
import numpy as np

# The +90° turn about X as a quaternion (w, x, y, z).
Y_UP_TO_Z_UP = np.array([np.sqrt(0.5), np.sqrt(0.5), 0.0, 0.0])


def z_up_from_y_up(positions):
    """(..., 3) positions in core's frame (+Y up) to Blender's (+Z up): (x, y, z) -> (x, -z, y)."""
    p = np.asarray(positions, dtype=float)
    return np.stack([p[..., 0], -p[..., 2], p[..., 1]], axis=-1)


def y_up_from_z_up(positions):
    """(..., 3) positions in Blender's frame (+Z up) to core's (+Y up): (x, y, z) -> (x, z, -y)."""
    p = np.asarray(positions, dtype=float)
    return np.stack([p[..., 0], p[..., 2], -p[..., 1]], axis=-1)


def _turn(turn, q):
    """Quaternion product turn ⊗ q for a fixed turn (4,) and q (..., 4)."""
    tw, tx, ty, tz = turn
    w, x, y, z = np.moveaxis(np.asarray(q, dtype=float), -1, 0)
    return np.stack([tw * w - tx * x - ty * y - tz * z, tw * x + tx * w + ty * z - tz * y,
                     tw * y - tx * z + ty * w + tz * x, tw * z + tx * y - ty * x + tz * w], axis=-1)


def z_up_rotation_from_y_up(rotations):
    """(..., 4) orientations (w, x, y, z) in core's frame to Blender's."""
    return _turn(Y_UP_TO_Z_UP, rotations)


def y_up_rotation_from_z_up(rotations):
    """(..., 4) orientations (w, x, y, z) in Blender's frame to core's."""
    return _turn(Y_UP_TO_Z_UP * [1.0, -1.0, -1.0, -1.0], rotations)
