"""Floors and foot contacts read from a motion: the floor under a clip's toes (one rule for every reader), whether
a foot touches it (motion matching's contact labels), how planted a toe is from its height over the floor and
its horizontal speed (retargeting's stances), and the runs of frames a foot stays planted."""
from __future__ import annotations

import numpy as np

from ..math.vector import length

FLOOR_PERCENTILE = 1.0
"""A clip's floor is this percentile of its toe heights: below nearly every planted toe, above a stray sample."""
CONTACT_HEIGHT_M = (0.03, 0.06)
"""A source toe this high above its planted height is fully planted (first) or free (second)."""
CONTACT_SPEED_M_S = (0.25, 0.6)
"""A source toe this fast horizontally is fully planted (first) or free (second)."""
PLANTED_WEIGHT = 0.5
"""A foot whose contact weight is at least this is planted."""


def floor_height(toe_heights: np.ndarray) -> float:
    """The clip's floor: the FLOOR_PERCENTILE of its toe heights."""
    return float(np.percentile(toe_heights, FLOOR_PERCENTILE))


def foot_contacts(toes: np.ndarray, fps: float, speed_m_s: float, height_m: float) -> np.ndarray:
    """(T, K) whether each toe (T, K, 3) touches the ground: nearly still (MMVR §6.2) and near the clip's floor."""
    speed = np.zeros(toes.shape[:2])
    speed[1:] = np.linalg.norm(np.diff(toes, axis=0), axis=-1) * fps
    speed[0] = speed[1] if len(speed) > 1 else 0.0
    return (speed < speed_m_s) & (toes[..., 1] - floor_height(toes[..., 1]) < height_m)


def planted(weights) -> np.ndarray:
    """Where contact weights (any shape) say a foot is planted."""
    return np.asarray(weights) >= PLANTED_WEIGHT


def contact_weight(height, speed):
    """How planted a source toe is, 0 to 1, from its height above its floor and its horizontal speed."""
    low_h, high_h = CONTACT_HEIGHT_M
    low_v, high_v = CONTACT_SPEED_M_S
    return np.clip((high_h - height) / (high_h - low_h), 0.0, 1.0) * np.clip((high_v - speed) / (high_v - low_v),
                                                                              0.0, 1.0)


def contact_weights(toe_positions: np.ndarray, fps: float) -> np.ndarray:
    """(F,) how planted a source toe is over a whole motion, over its floor."""
    height = toe_positions[:, 1] - floor_height(toe_positions[:, 1])
    velocity = np.gradient(toe_positions[:, [0, 2]], axis=0) * fps if len(toe_positions) > 1 else np.zeros((1, 2))
    return contact_weight(height, length(velocity))


def contact_segments(weights: np.ndarray) -> list[tuple[int, int]]:
    """[(start, stop)) runs of frames with a positive contact weight."""
    on = np.concatenate([[False], weights > 0.0, [False]])
    edges = np.flatnonzero(on[1:] != on[:-1])
    return list(zip(edges[::2], edges[1::2]))
