"""The one-euro filter (Casiez, Roussel and Vogel, CHI 2012): a low-pass whose cutoff rises with speed, so slow
motion loses its jitter and fast motion keeps its timing. Run forward and then backward over a whole clip
(`smoothed`), its lag cancels."""
from __future__ import annotations

import numpy as np


def smoothing_factor(cutoff_hz, fps: float):
    """The exponential smoothing factor of a first-order low-pass at `cutoff_hz` sampled at `fps`."""
    tau = 1.0 / (2.0 * np.pi * np.asarray(cutoff_hz, dtype=float))
    return 1.0 / (1.0 + tau * fps)


def one_euro(values: np.ndarray, fps: float, min_cutoff_hz: float, beta: float, derivative_cutoff_hz: float = 1.0):
    """(F, ...) values filtered causally along axis 0, each channel on its own: cutoff = min_cutoff + beta·|speed|,
    the speed itself low-passed at `derivative_cutoff_hz`."""
    values = np.asarray(values, dtype=float)
    out = np.empty_like(values)
    out[0] = values[0]
    speed = np.zeros_like(values[0])
    speed_factor = smoothing_factor(derivative_cutoff_hz, fps)
    for i in range(1, len(values)):
        speed = speed + speed_factor * ((values[i] - out[i - 1]) * fps - speed)
        factor = smoothing_factor(min_cutoff_hz + beta * np.abs(speed), fps)
        out[i] = out[i - 1] + factor * (values[i] - out[i - 1])
    return out


def smoothed(values: np.ndarray, fps: float, min_cutoff_hz: float, beta: float) -> np.ndarray:
    """`one_euro` forward over the clip, then backward over the result: no lag, the ends kept."""
    forward = one_euro(values, fps, min_cutoff_hz, beta)
    return one_euro(forward[::-1], fps, min_cutoff_hz, beta)[::-1]
