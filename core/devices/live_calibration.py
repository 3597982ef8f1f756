"""Calibration live: the gesture read from a live session's first minute as `solve` reads it from a file's
(calibration.py, the same rule on the same samples), and every later frame's controllers re-expressed as held the
way the solver assumes.

Frames before the calibration is known pass as they come. The last KEPT_S seconds are kept and searched every
CHECK_EVERY_S; once a pose among them that ended POSE_BREAK_S ago is the gesture, the calibration is known: the
first gesture in the stream, as `solve` finds it in a file of the same samples. After `search_s` without one the
devices pass as they come. The calibration is eased in over EASE_S, so the hands glide to the calibrated wrists
instead of jumping.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from ..config import CalibrationConfig, DeviceOffsets
from ..files.stream import ThreePointStream
from .calibration import POSE_BREAK_S, StreamCalibration, calibrate_stream
from .plausibility import usable_samples

KEPT_S = 6.0
"""The frames kept while listening: a gesture's pose lasts a few seconds."""
CHECK_EVERY_S = 0.25
"""While listening, how often (stream time) the samples so far are searched for a finished gesture."""
EASE_S = 0.5
"""The found calibration is applied in full this long after it is known, linearly from none."""


class LiveCalibration:
    """The calibration of one live session (module docstring): `step` each frame's device poses through it."""

    def __init__(self, config: CalibrationConfig = CalibrationConfig(), devices: DeviceOffsets = DeviceOffsets()):
        self.config, self.devices = config, devices
        self.calibration: StreamCalibration | None = None
        """None while listening; then what the gesture told (`found` False: the devices pass as they come)."""
        self.samples: deque[tuple] = deque()
        self.now_s, self.checked_s, self.applied_s = 0.0, 0.0, 0.0

    def step(self, positions: np.ndarray, rotations: np.ndarray, tracked: np.ndarray, dt: float
             ) -> tuple[np.ndarray, np.ndarray]:
        """Device poses (3, 3), (3, 4) of a frame `dt` seconds after the last, calibrated as far as is known (the
        devices' unusable samples left as they are)."""
        usable = usable_samples(positions, rotations, np.asarray(tracked, dtype=bool))
        if self.calibration is None:
            self.listen(positions, rotations, usable, dt)
            return positions, rotations
        if not self.calibration.found:
            return positions, rotations
        self.applied_s += dt if 0.0 < dt < np.inf else 0.0
        placed, turned = self.calibration.applied(positions[None], rotations[None], self.devices,
                                                  min(self.applied_s / EASE_S, 1.0))
        return (np.where(usable[:, None], placed[0], positions), np.where(usable[:, None], turned[0], rotations))

    def listen(self, positions: np.ndarray, rotations: np.ndarray, usable: np.ndarray, dt: float) -> None:
        """Keep the frame (unusable devices as untracked, as `solve` reads a file) and the last KEPT_S seconds
        before it, and look for a gesture that has ended."""
        if self.samples:
            if not 0.0 < dt < np.inf:
                return  # a frame repeated or without a time step: nothing new to keep
            self.now_s += dt
        self.samples.append((self.now_s, np.where(usable[:, None], positions, np.nan),
                             np.where(usable[:, None], rotations, np.nan), usable))
        while self.now_s - self.samples[0][0] > KEPT_S:
            self.samples.popleft()
        if self.now_s > self.config.search_s:
            self.calibration, self.samples = StreamCalibration(False), deque()
        elif self.now_s - self.checked_s >= CHECK_EVERY_S:
            self.checked_s = self.now_s
            calibration = calibrate_stream(self.stream(), self.config, self.devices, self.now_s - POSE_BREAK_S)
            if calibration.found:
                self.calibration, self.samples = calibration, deque()

    def stream(self) -> ThreePointStream:
        """The frames kept as a stream."""
        times, positions, rotations, tracked = (np.array(column) for column in zip(*self.samples))
        return ThreePointStream(times, positions, rotations, tracked)
