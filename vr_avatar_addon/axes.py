"""Axes: the one place that converts between core's +Y-up frame and Blender's +Z-up frame."""
import numpy as np


def z_up_from_y_up(positions):
    """(..., 3) positions in core's frame (+Y up) to Blender's (+Z up): (x, y, z) -> (x, -z, y)."""
    p = np.asarray(positions, dtype=float)
    return np.stack([p[..., 0], -p[..., 2], p[..., 1]], axis=-1)


def y_up_from_z_up(positions):
    """(..., 3) positions in Blender's frame (+Z up) to core's (+Y up): (x, y, z) -> (x, z, -y)."""
    p = np.asarray(positions, dtype=float)
    return np.stack([p[..., 0], p[..., 2], -p[..., 1]], axis=-1)
