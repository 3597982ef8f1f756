"""Inertialization (Bollo 2017): hide a jump between two poses behind an offset that decays away.

At a transition the offset takes the difference between where the source pose was going and where
the destination pose starts, in value and in velocity; each frame the offset decays with a
critically damped spring (spring.decay_toward_zero) and is added to the destination as it plays.
The output is therefore continuous in position and velocity across the switch. Works on any
number of joints at once: rotations (J, 4), angular velocities (J, 3), positions and velocities (J, 3).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..math import quat
from ..math.spring import decay_toward_zero


@dataclass
class Inertializer:
    """Per-joint offsets and their rates, zero until a transition: offsets (2, J, 3) holds the rotation offsets
    as rotation vectors and the position offsets, rates (2, J, 3) the angular velocity and velocity offsets.
    Both kinds decay with one spring call."""

    offsets: np.ndarray
    rates: np.ndarray

    @classmethod
    def at_rest(cls, joints: int) -> "Inertializer":
        return cls(np.zeros((2, joints, 3)), np.zeros((2, joints, 3)))

    def transition(self, source, destination) -> None:
        """Switch from the `source` pose to the `destination` pose; each is (rotations, angular velocities,
        positions, velocities) as output before the offsets (the source as it would continue)."""
        src_q, src_w, src_p, src_v = source
        dst_q, dst_w, dst_p, dst_v = destination
        # New offset = (old offset applied to the source) relative to the destination, the shorter way round.
        rotation = quat.multiply_inverse(quat.multiply(quat.from_rotation_vector(self.offsets[0]), src_q), dst_q)
        self.offsets = np.array([quat.to_rotation_vector(rotation), self.offsets[1] + src_p - dst_p])
        self.rates = self.rates + np.array([src_w - dst_w, src_v - dst_v])

    def update(self, pose, halflife: float, dt: float):
        """Decay the offsets by `dt` and return `pose` (rotations, angular velocities, positions,
        velocities) with them applied."""
        q, w, p, v = pose
        self.offsets, self.rates = decay_toward_zero(self.offsets, self.rates, halflife, dt)
        return (quat.multiply(quat.from_rotation_vector(self.offsets[0]), q), w + self.rates[0],
                p + self.offsets[1], v + self.rates[1])


def quintic_offsets(x0: np.ndarray, v0: np.ndarray, frames: int) -> np.ndarray:
    """Bollo's inertialization curve, offsets (frames, ...) from x0 at frame 0 to zero at frame `frames`.

    Per dimension x(t) = A t^5 + B t^4 + C t^3 + a0 t^2 / 2 + v0 t + x0 reaches zero with zero
    velocity and acceleration at t1 = `frames` (units of frames). As Bollo does, a starting velocity
    that moves away from zero is dropped and t1 is shortened to -5 x0 / v0 when the offset would
    otherwise overshoot.
    """
    x0, v0 = np.asarray(x0, float), np.asarray(v0, float)
    v0 = np.where(x0 * v0 > 0.0, 0.0, v0)
    t1 = np.full(x0.shape, float(frames))
    shorten = v0 != 0.0
    t1[shorten] = np.minimum(t1[shorten], -5.0 * x0[shorten] / v0[shorten])
    t1 = np.maximum(t1, 1e-6)
    a0 = (-8.0 * v0 * t1 - 20.0 * x0) / t1 ** 2
    a = -(a0 * t1 ** 2 + 6.0 * v0 * t1 + 12.0 * x0) / (2.0 * t1 ** 5)
    b = (3.0 * a0 * t1 ** 2 + 16.0 * v0 * t1 + 30.0 * x0) / (2.0 * t1 ** 4)
    c = -(3.0 * a0 * t1 ** 2 + 12.0 * v0 * t1 + 20.0 * x0) / (2.0 * t1 ** 3)
    t = np.arange(frames, dtype=float).reshape((frames,) + (1,) * x0.ndim)
    t = np.minimum(t, t1)
    return a * t ** 5 + b * t ** 4 + c * t ** 3 + 0.5 * a0 * t ** 2 + v0 * t + x0


def blend_seam(values: np.ndarray, seam: int, frames: int, source: np.ndarray | None = None) -> np.ndarray:
    """Values (T, ...) with the jump at `seam` hidden by inertialization over `frames` frames.

    The source is where values[seam - 2], values[seam - 1] were heading (or the two frames given as
    `source`); the destination is values[seam], values[seam + 1]. Their difference in value and
    velocity decays to zero along the quintic curve and is added from the seam on.
    """
    if seam < 1 or seam >= len(values):
        return values
    before = values[max(seam - 2, 0):seam] if source is None else source
    source_velocity = before[-1] - before[0] if len(before) > 1 else np.zeros_like(before[-1])
    target_velocity = values[seam + 1] - values[seam] if seam + 1 < len(values) else np.zeros_like(values[seam])
    x0 = before[-1] + source_velocity - values[seam]
    v0 = source_velocity - target_velocity
    count = min(frames, len(values) - seam)
    out = values.copy()
    out[seam:seam + count] += quintic_offsets(x0, v0, frames)[:count]
    return out
