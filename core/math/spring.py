"""Critically damped springs: smoothing toward a goal, decaying offsets, and predicting ahead in time.

MMVR §5.3 smooths the HMD velocity (eq. 3) and the predicted body orientation (eq. 4, a yaw) with an
exponential decay, and says its results use a spring-damper [Kir04] instead. These are the exact
solutions of a critically damped spring, parameterised by a half-life as Holden's code does: the
damping is 4 ln 2 / half-life, so the decay envelope e^(-yt) quarters in one half-life, and a spring
starting at rest has (1 + 2 ln 2) / 4 = 60 % of its distance left after one, 24 % after two. Exact
solutions are stable for any time step, so the same call advances one frame (dt = 1/60 s) or predicts
a state a second ahead.
"""
from __future__ import annotations

import numpy as np

from .angle import wrap_angle


LN2_TIMES_4 = 4.0 * np.log(2.0)


def damping_from_halflife(halflife: float) -> float:
    """Damping d = 4 ln 2 / halflife of x'' = -d x' - (d/2)^2 (x - goal) (see the module docstring)."""
    return LN2_TIMES_4 / (halflife + 1e-8)


def _critically_damped(error: np.ndarray, velocity: np.ndarray, halflife: float, dt):
    """The error to a still goal and its velocity, `dt` seconds later.

    With y = d/2, j0 = error and j1 = velocity + j0 y the solution is
    x(t) = e^(-yt) (j0 + j1 t) and v(t) = e^(-yt) (velocity - j1 y t).
    """
    y = 0.5 * damping_from_halflife(halflife)
    j1 = velocity + error * y
    decay = np.exp(-y * dt)
    return decay * (error + j1 * dt), decay * (velocity - j1 * y * dt)


def spring_toward(x: np.ndarray, v: np.ndarray, goal: np.ndarray, halflife: float, dt: float | np.ndarray):
    """Position and velocity of a critically damped spring pulled toward a still `goal`, `dt` seconds later.

    `dt` may be an array of times (broadcast against x's leading axes) to predict several instants at once.
    """
    error, velocity = _critically_damped(x - goal, v, halflife, np.asarray(dt, dtype=float))
    return goal + error, velocity


def decay_toward_zero(x: np.ndarray, v: np.ndarray, halflife: float, dt: float):
    """An offset and its velocity decaying to zero (the inertialization spring)."""
    return _critically_damped(x, v, halflife, dt)


def angle_spring_toward(angle, rate, goal, halflife: float, dt: float | np.ndarray):
    """spring_toward for an angle (radians) about a fixed axis, such as a yaw: the error is taken the short
    way round, wrapped into [-pi, pi). The result is not wrapped."""
    error = wrap_angle(angle - goal)
    error, rate = _critically_damped(error, rate, halflife, np.asarray(dt, dtype=float))
    return goal + error, rate
