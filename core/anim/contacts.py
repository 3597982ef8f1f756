"""Foot contacts read from a motion: how planted a toe is from its height over its floor and its horizontal
speed, and the runs of frames a foot stays planted."""
from __future__ import annotations

import numpy as np

from ..math.vector import length

CONTACT_HEIGHT_M = (0.03, 0.06)
"""A source toe this high above its planted height is fully planted (first) or free (second)."""
CONTACT_SPEED_M_S = (0.25, 0.6)
"""A source toe this fast horizontally is fully planted (first) or free (second)."""


def contact_weight(height, speed):
    """How planted a source toe is, 0 to 1, from its height above its floor and its horizontal speed."""
    low_h, high_h = CONTACT_HEIGHT_M
    low_v, high_v = CONTACT_SPEED_M_S
    return np.clip((high_h - height) / (high_h - low_h), 0.0, 1.0) * np.clip((high_v - speed) / (high_v - low_v),
                                                                              0.0, 1.0)


def contact_weights(toe_positions: np.ndarray, fps: float) -> np.ndarray:
    """(F,) how planted a source toe is over a whole motion: its floor the 5th percentile of its heights."""
    height = toe_positions[:, 1] - np.percentile(toe_positions[:, 1], 5)
    velocity = np.gradient(toe_positions[:, [0, 2]], axis=0) * fps if len(toe_positions) > 1 else np.zeros((1, 2))
    return contact_weight(height, length(velocity))


def contact_segments(weights: np.ndarray) -> list[tuple[int, int]]:
    """[(start, stop)) runs of frames with a positive contact weight."""
    on = np.concatenate([[False], weights > 0.0, [False]])
    edges = np.flatnonzero(on[1:] != on[:-1])
    return list(zip(edges[::2], edges[1::2]))
