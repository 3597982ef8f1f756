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

from . import quat
from .spring import decay_toward_zero, rotation_decay_toward_identity


@dataclass
class Inertializer:
    """Per-joint offsets in rotation and position and their velocities; identity and zero until a transition."""

    rotation_offset: np.ndarray
    angular_velocity_offset: np.ndarray
    position_offset: np.ndarray
    velocity_offset: np.ndarray

    @classmethod
    def at_rest(cls, joints: int) -> "Inertializer":
        return cls(quat.identity(joints), np.zeros((joints, 3)), np.zeros((joints, 3)), np.zeros((joints, 3)))

    def transition(self, source, destination) -> None:
        """Switch from the `source` pose to the `destination` pose; each is (rotations, angular velocities,
        positions, velocities) as output before the offsets (the source as it would continue)."""
        src_q, src_w, src_p, src_v = source
        dst_q, dst_w, dst_p, dst_v = destination
        # New offset = (old offset applied to the source) relative to the destination.
        self.rotation_offset = quat.positive_hemisphere(
            quat.multiply_inverse(quat.multiply(self.rotation_offset, src_q), dst_q))
        self.angular_velocity_offset = self.angular_velocity_offset + src_w - dst_w
        self.position_offset = self.position_offset + src_p - dst_p
        self.velocity_offset = self.velocity_offset + src_v - dst_v

    def update(self, pose, halflife: float, dt: float):
        """Decay the offsets by `dt` and return `pose` (rotations, angular velocities, positions,
        velocities) with them applied."""
        q, w, p, v = pose
        self.rotation_offset, self.angular_velocity_offset = rotation_decay_toward_identity(
            self.rotation_offset, self.angular_velocity_offset, halflife, dt)
        self.position_offset, self.velocity_offset = decay_toward_zero(
            self.position_offset, self.velocity_offset, halflife, dt)
        return (quat.multiply(self.rotation_offset, q), w + self.angular_velocity_offset,
                p + self.position_offset, v + self.velocity_offset)
