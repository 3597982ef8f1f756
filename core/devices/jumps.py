"""Jumps of the devices that no body makes: a teleport, a recentring, the headset found again elsewhere.

A head that moves along the floor faster than CARRY_SPEED_M_S (by at least SMALLEST_JUMP_M) between two samples
jumped; so did a headset that turns about the vertical faster than TURN_SPEED_DEG_S (by at least SMALLEST_TURN_DEG)
while the tracked controllers go round with it, as a recentring ("reset view") turns the whole tracking space about
the user. A head turned that fast with the controllers left where they were, or with none tracked to tell, is taken
for a glitch of the headset's, not a jump.
"""
from __future__ import annotations

import math

import numpy as np

from ..files.stream import ThreePointStream
from ..math import quat

CARRY_SPEED_M_S = 8.0
"""A head moving along the floor faster than this between two samples (a sprint is about 7 m/s) jumped."""
SMALLEST_JUMP_M = 0.1
"""A step shorter than this is never a jump, however short the time (a fast stream's samples a millisecond apart,
each a few millimetres off)."""
TURN_SPEED_DEG_S = 1500.0
"""A headset turning about the vertical faster than this (a head shaken hard turns at up to about 800 degrees a second,
a dancer's pirouette at about 1,100) with the controllers, jumped."""
SMALLEST_TURN_DEG = 20.0
"""A turn smaller than this is never a jump, however short the step (a fast stream's samples a millisecond apart)."""


def step_limit(dt: float) -> float:
    """The shortest step along the floor (metres) over `dt` seconds that is a jump's."""
    return max(SMALLEST_JUMP_M, CARRY_SPEED_M_S * dt)


def turn_limit(dt: float) -> float:
    """The smallest turn about the vertical (radians) over `dt` seconds that is a jump's."""
    return math.radians(max(SMALLEST_TURN_DEG, TURN_SPEED_DEG_S * dt))


def jumped(step: np.ndarray, dt: float) -> bool:
    """Whether the head's (or the headset's) step (3,) along the floor over `dt` seconds is faster than
    CARRY_SPEED_M_S (and longer than SMALLEST_JUMP_M)."""
    return float(np.hypot(step[0], step[2])) > step_limit(dt)


def vertical_turns(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The turns (radians, about +Y, within a half turn) of the rotations taking world rotations `before` (..., 4) to
    `after`: their twists about the vertical, which a recentring's is all of."""
    a, b = np.moveaxis(np.asarray(after, dtype=float), -1, 0), np.moveaxis(np.asarray(before, dtype=float), -1, 0)
    w = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]  # after * inverse(before): its w and y
    y = a[2] * b[0] - a[0] * b[2] + a[1] * b[3] - a[3] * b[1]
    return (2.0 * np.arctan2(y, w) + np.pi) % (2.0 * np.pi) - np.pi


def hmd_may_have_jumped(before: tuple, after: tuple, dt: float) -> bool:
    """Whether the HMD's pose (position (3,), rotation (4,)) moved along the floor or turned about the vertical
    between two samples as fast as a jump's (a first test in plain floats, for the live step: `jumped` on the head and
    `turned_with_controllers` decide)."""
    (x0, _, z0), (x1, _, z1) = before[0].tolist(), after[0].tolist()
    if math.hypot(x1 - x0, z1 - z0) > step_limit(dt):
        return True
    (bw, bx, by, bz), (aw, ax, ay, az) = before[1].tolist(), after[1].tolist()
    turn = 2.0 * math.atan2(ay * bw - aw * by + ax * bz - az * bx, aw * bw + ax * bx + ay * by + az * bz)
    return abs(math.remainder(turn, 2.0 * math.pi)) >= turn_limit(dt)


def turned_with_controllers(before: tuple, after: tuple, dt: float) -> float:
    """The vertical turn (radians) of a recentring between two samples, `before` and `after` (positions (3, 3),
    rotations (3, 4), tracked (3,); the HMD tracked in both), or 0.0 if there was none: the headset turned faster
    than TURN_SPEED_DEG_S, by at least SMALLEST_TURN_DEG, and each controller tracked in both lies nearer where that
    turn about the headset takes it than where it was. With no controller tracked in both, none: a headset's glitch
    could not be told from a recentring."""
    turn = float(vertical_turns(before[1][0], after[1][0]))
    if abs(turn) < turn_limit(dt):
        return 0.0
    both = np.flatnonzero(before[2][1:] & after[2][1:]) + 1
    if not len(both):
        return 0.0
    was, now = before[0][both], after[0][both]
    moved = quat.rotate(quat.from_yaw(turn), was - before[0][0]) + after[0][0]
    if np.any(np.linalg.norm(moved - now, axis=-1) >= np.linalg.norm(was - now, axis=-1)):
        return 0.0
    return turn


def jump_samples(stream: ThreePointStream) -> np.ndarray:
    """The samples (indices) that a jump (a teleport's or a recentring's, as above, from the sample before, the HMD
    tracked in both) leads to, found at the stream's own rate."""
    positions, rotations, tracked, times = stream.positions, stream.rotations, stream.tracked, stream.times
    dts = np.diff(times)
    steps = positions[1:, 0] - positions[:-1, 0]
    with np.errstate(invalid="ignore"):
        fast = np.hypot(steps[:, 0], steps[:, 2]) > np.maximum(SMALLEST_JUMP_M, CARRY_SPEED_M_S * dts)
        turning = np.abs(vertical_turns(rotations[:-1, 0], rotations[1:, 0])) >= \
            np.radians(np.maximum(SMALLEST_TURN_DEG, TURN_SPEED_DEG_S * dts))
    candidates = np.flatnonzero(tracked[:-1, 0] & tracked[1:, 0] & (fast | turning))
    return np.array([k + 1 for k in candidates if fast[k] or turned_with_controllers(
        (positions[k], rotations[k], tracked[k]), (positions[k + 1], rotations[k + 1], tracked[k + 1]), dts[k])], int)


def held_up_to_jumps(stream: ThreePointStream) -> tuple[ThreePointStream, np.ndarray]:
    """The stream with each sample before a jump (`jump_samples`) held until just before the next one, so that
    resampling it puts no sample halfway across the jump; and the times of the samples the jumps lead to."""
    after = jump_samples(stream)
    times = stream.times
    if not len(after):
        return stream, times[after]
    held = after - 1
    hold_times = np.maximum(times[after] - 1e-6, (times[held] + times[after]) / 2)
    return ThreePointStream(np.insert(times, after, hold_times), np.insert(stream.positions, after,
                                                                           stream.positions[held], axis=0),
                            np.insert(stream.rotations, after, stream.rotations[held], axis=0),
                            np.insert(stream.tracked, after, stream.tracked[held], axis=0)), times[after]


def crossing(jump_times: np.ndarray, times: np.ndarray) -> np.ndarray:
    """(T,) the frames at `times` (a resampled timeline) that are the first at or after a jump (`jump_times`): where
    a solver stepping at that rate, whose own test sees a longer step, must take the jump."""
    crossed = np.zeros(len(times), bool)
    if len(times):
        crossed[np.minimum(np.searchsorted(times, jump_times), len(times) - 1)] = True
    return crossed
