"""The path that best agrees with two noisy readings of it: positions, and the steps between them.

Given positions P_t and steps S_t (the move from frame t to t+1), the path X minimises

    sum_t |X_t - P_t|^2 + weight * sum_t |X_{t+1} - X_t - S_t|^2,

whose normal equations (I + weight D^T D) X = P + weight D^T S (D the frame difference) are
tridiagonal: solved here by the Thomas algorithm, one sweep forward and one back, in O(T).
weight 0 returns P; a large weight integrates S, with P fixing only the mean.
"""
from __future__ import annotations

import numpy as np


def least_squares_path(positions: np.ndarray, steps: np.ndarray, weight: float) -> np.ndarray:
    """X (T, ...) from positions (T, ...) and steps (T-1, ...) under the step weight (>= 0)."""
    positions = np.asarray(positions, float)
    frames = len(positions)
    if weight < 0:
        raise ValueError(f"the step weight must be >= 0, not {weight}")
    if weight == 0 or frames < 2:
        return positions.copy()
    steps = np.asarray(steps, float)
    if steps.shape != (frames - 1, *positions.shape[1:]):
        raise ValueError(f"steps {steps.shape} do not fit positions {positions.shape}: expected one fewer frame")
    # Right-hand side P + w D^T S: frame t gains S_{t-1} and loses S_t.
    rhs = positions.copy()
    rhs[1:] += weight * steps
    rhs[:-1] -= weight * steps
    diagonal = np.full(frames, 1.0 + 2.0 * weight)
    diagonal[[0, -1]] = 1.0 + weight
    # Thomas algorithm with off-diagonal -w: eliminate below the diagonal, then substitute back.
    upper = np.empty(frames)
    upper[0] = -weight / diagonal[0]
    rhs[0] /= diagonal[0]
    for t in range(1, frames):
        pivot = diagonal[t] + weight * upper[t - 1]
        upper[t] = -weight / pivot
        rhs[t] = (rhs[t] + weight * rhs[t - 1]) / pivot
    for t in range(frames - 2, -1, -1):
        rhs[t] -= upper[t] * rhs[t + 1]
    return rhs
