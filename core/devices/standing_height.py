"""The user's standing headset height, measured from the stream as it comes: what sizes the avatar to the user.

The mean HMD height over the first seconds (the user stands there), raised wherever the median of a later stretch
of RAISE_WINDOW_S lies more than RAISE_M above it: a user who starts bent over a controller, crouched or seated and
then stands up is measured standing, not kept at the start's height for the whole take. The raised height is the
median of the stretch's samples more than half RAISE_M above the old one (the low start's last samples left out),
so that it is raised once. Live steps and offline solves share it; offline takes its last value for the whole
stream, its first seconds counted from the stream's start (live: from the headset's first usable sample, where the
solver starts).
"""
from __future__ import annotations

from collections import deque

import numpy as np

RAISE_WINDOW_S = 4.0
"""The stretch whose median HMD height is compared with the standing height."""
RAISE_M = 0.10
"""How much higher that median must be to raise the standing height. A walk's head rides higher than its start by up
to 9 cm over such a stretch (100STYLE's bouncy walk, with the capture's drift; Bandai's largest 2.4 cm), and a start
10 cm too low costs the whole take's MPJPE threefold (docs/calibration.md)."""
CHECK_S = 0.25
"""How often the stretch's median is taken."""
COVERED = 0.8
"""... once measured samples cover this share of the stretch (an HMD lost for most of it raises nothing)."""
CLOCK_ROUNDING_S = 1e-9
"""A sample this far past the first seconds still counts among them: the time is a sum of the steps, which rounding
may put just past a sample that falls on the end."""


class StandingHeight:
    """The standing HMD height (module docstring), fed one HMD height a frame; `fixed`: the height given (none is
    measured)."""

    def __init__(self, calibration_s: float, fixed: float | None = None):
        self.calibration_s, self.fixed = calibration_s, fixed
        self.first: list[float] = []
        """The heights of the first calibration_s seconds (at least one)."""
        self.first_total = 0.0
        """Their sum: their mean so far without going over them at each step (a clock ticking in microseconds puts
        hundreds of thousands in those seconds)."""
        self.first_mean: float | None = None
        """Their mean, once calibration_s has passed."""
        self.recent: deque[tuple[float, float, float]] = deque()
        """(time, height, seconds it stands for) of the measured samples of the last RAISE_WINDOW_S seconds."""
        self.raised: float | None = None
        self.raised_s = 0.0
        """When it was last raised (seconds since the first sample): what was seen of the user before, sized to the
        low start, is not theirs."""
        self.elapsed_s = 0.0
        self.checked_s = 0.0

    @property
    def height_m(self) -> float | None:
        """The standing height so far (None before the first sample)."""
        if self.fixed is not None:
            return self.fixed
        if self.raised is not None:
            return self.raised
        if self.first_mean is not None:
            return self.first_mean
        return self.first_total / len(self.first) if self.first else None

    def add(self, height: float, dt: float, sample: bool = True) -> float | None:
        """This frame's HMD height (`sample` False: not a measurement, as a held or rejected one), `dt` seconds
        before the next frame; the standing height."""
        if self.fixed is None and sample:
            if self.elapsed_s <= self.calibration_s + CLOCK_ROUNDING_S or not self.first:
                self.first.append(height)
                self.first_total += height
            elif self.first_mean is None:
                self.first_mean = float(np.mean(self.first))
            self.recent.append((self.elapsed_s, height, min(dt, CHECK_S)))
            while self.recent[0][0] < self.elapsed_s - RAISE_WINDOW_S:
                self.recent.popleft()
            if self.elapsed_s >= RAISE_WINDOW_S and self.elapsed_s - self.checked_s >= CHECK_S and \
                    sum(seconds for _, _, seconds in self.recent) >= COVERED * RAISE_WINDOW_S:
                self.checked_s = self.elapsed_s
                heights = np.array([h for _, h, _ in self.recent])
                if np.median(heights) > self.height_m + RAISE_M:
                    self.raised = float(np.median(heights[heights > self.height_m + RAISE_M / 2]))
                    self.raised_s = self.elapsed_s
        self.elapsed_s += dt
        return self.height_m


def measured_over(times: np.ndarray, heights: np.ndarray, usable: np.ndarray, calibration_s: float) -> StandingHeight:
    """StandingHeight fed a whole stream's HMD heights (T,) at `times` (T,), where `usable` (T,) and finite, its first
    seconds counted from the stream's start."""
    usable = usable & np.isfinite(heights)
    if not usable.any():
        raise ValueError("the HMD is never tracked in this stream: nothing to calibrate or follow")
    measure = StandingHeight(calibration_s)
    for height, dt, sample in zip(heights, np.diff(times, append=times[-1]), usable):
        measure.add(float(height), float(dt), bool(sample))
    return measure


def measured_standing_height(times: np.ndarray, heights: np.ndarray, usable: np.ndarray, calibration_s: float) -> float:
    """The standing height StandingHeight ends with over a whole stream (`measured_over`)."""
    return measured_over(times, heights, usable, calibration_s).height_m
