"""The predictor's body as motion matching's query guide (matching/guide.py): its hips' and feet's velocities
and its feet's offsets from its ground point, so the matched legs step with the predicted body.

The predictor steps at 30 Hz and holds between its steps, so a velocity is taken over the last two frames at
60 Hz (one predictor step) both offline and live."""
from __future__ import annotations

from collections import deque

import numpy as np

from ..matching.guide import QueryGuide

PARTS = ("hips_velocity", "feet_velocities", "feet_offsets")
"""The parts of a QueryGuide the hybrid can fill; HybridConfig.query_guide names those it does."""
SPAN = 2
"""Frames a velocity is taken over."""


def ground_offsets(hips: np.ndarray, feet: np.ndarray) -> np.ndarray:
    """Feet (..., 2, 3) from the point on the floor under the hips (..., 3)."""
    ground = hips * np.array([1.0, 0.0, 1.0])
    return feet - ground[..., None, :]


def query_guides(hips: np.ndarray, feet: np.ndarray, fps: float, parts) -> list[QueryGuide]:
    """Per frame, the guide of a body whose hips (T, 3) and feet (T, 2, 3) are given, with the named `parts`."""
    joints = np.concatenate([feet, hips[:, None]], axis=1)
    earlier = np.concatenate([np.repeat(joints[:1], SPAN, axis=0), joints[:-SPAN]])[:len(joints)]
    velocities = (joints - earlier) * fps / SPAN
    offsets = ground_offsets(hips, feet)
    return [guide_of(velocities[t], offsets[t], parts) for t in range(len(hips))]


def guide_of(velocities: np.ndarray, offsets: np.ndarray, parts) -> QueryGuide:
    """The guide with the named parts from the feet's and hips' velocities (3, 3) and the feet's offsets (2, 3)."""
    return QueryGuide(velocities[2] if "hips_velocity" in parts else None,
                      velocities[:2] if "feet_velocities" in parts else None,
                      offsets if "feet_offsets" in parts else None)


class LiveGuide:
    """The guide one live frame at a time, from the last SPAN frames' hips and feet."""

    def __init__(self, parts):
        self.parts = tuple(parts)
        self.joints = deque(maxlen=SPAN + 1)
        self.times = deque(maxlen=SPAN + 1)

    def add(self, hips: np.ndarray, feet: np.ndarray, dt: float) -> QueryGuide:
        """This frame's guide from the body's hips (3,) and feet (2, 3), `dt` after the previous frame."""
        joints = np.vstack([feet, hips])
        self.times.append((self.times[-1] + dt) if self.times else 0.0)
        self.joints.append(joints)
        span = self.times[-1] - self.times[0]
        velocities = (joints - self.joints[0]) / span if span > 0 else np.zeros((3, 3))
        return guide_of(velocities, ground_offsets(hips, feet), self.parts)
