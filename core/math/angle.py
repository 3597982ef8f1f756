"""Angles in radians."""
from __future__ import annotations

import numpy as np


def wrap_angle(angle: np.ndarray) -> np.ndarray:
    """Angles wrapped to [-pi, pi)."""
    return (np.asarray(angle) + np.pi) % (2.0 * np.pi) - np.pi
