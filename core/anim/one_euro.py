"""The one-euro filter (Casiez, Roussel and Vogel, CHI 2012): a low-pass whose cutoff rises with speed, so slow
motion loses its jitter and fast motion keeps its timing. Run forward and then backward over a whole clip
(`smoothed`), its lag cancels."""
from __future__ import annotations

import numpy as np


def smoothing_factor(cutoff_hz, fps: float):
    """The exponential smoothing factor of a first-order low-pass at `cutoff_hz` sampled at `fps`."""
    tau = 1.0 / (2.0 * np.pi * np.asarray(cutoff_hz, dtype=float))
    return 1.0 / (1.0 + tau * fps)


class OneEuroFilter:
    """The causal filter one sample at a time (a live path, and an offline pass that must give what live gives): its
    state is the last output and its low-passed speed, per channel."""

    def __init__(self, min_cutoff_hz: float, beta: float, derivative_cutoff_hz: float = 1.0):
        self.min_cutoff_hz, self.beta, self.derivative_cutoff_hz = min_cutoff_hz, beta, derivative_cutoff_hz
        self.reset()

    def reset(self) -> None:
        """Forget the past: the next sample passes as it is."""
        self.value: np.ndarray | None = None
        self.speed: np.ndarray | None = None

    def filter(self, values: np.ndarray, dts, restarts: np.ndarray | None = None) -> np.ndarray:
        """(T, ...) samples filtered in time order, `dts` (T,) or one number the seconds since the one before; where
        `restarts` (T,) is set (a teleport) or a step is not a positive finite time, a sample passes as it is."""
        values = np.asarray(values, dtype=float)
        steps = np.broadcast_to(np.asarray(dts, dtype=float), values.shape[:1])
        out = np.empty_like(values)
        for t, value in enumerate(values):
            fresh = self.value is None or (restarts is not None and restarts[t]) or not 0.0 < steps[t] < np.inf
            if fresh:
                self.value, self.speed = value.copy(), np.zeros_like(value)
            else:
                fps = 1.0 / steps[t]
                self.speed = self.speed + smoothing_factor(self.derivative_cutoff_hz, fps) * (
                    (value - self.value) * fps - self.speed)
                factor = smoothing_factor(self.min_cutoff_hz + self.beta * np.abs(self.speed), fps)
                self.value = self.value + factor * (value - self.value)
            out[t] = self.value
        return out


def one_euro(values: np.ndarray, fps: float, min_cutoff_hz: float, beta: float, derivative_cutoff_hz: float = 1.0):
    """(F, ...) values filtered causally along axis 0, each channel on its own: cutoff = min_cutoff + beta·|speed|,
    the speed itself low-passed at `derivative_cutoff_hz`."""
    return OneEuroFilter(min_cutoff_hz, beta, derivative_cutoff_hz).filter(values, 1.0 / fps)


def smoothed(values: np.ndarray, fps: float, min_cutoff_hz: float, beta: float) -> np.ndarray:
    """`one_euro` forward over the clip, then backward over the result: no lag, the ends kept."""
    forward = one_euro(values, fps, min_cutoff_hz, beta)
    return one_euro(forward[::-1], fps, min_cutoff_hz, beta)[::-1]
