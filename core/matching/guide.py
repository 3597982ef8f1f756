"""A query guide: what another solver knows of the body this frame, put into motion matching's query (eq. 5-6) in
place of the played pose's own values, so the search follows that body (the hybrid's predictor) and not only the
headset's trajectory. World-oriented vectors; the solver turns them into its character space."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..math import quat
from .features import GROUPS


@dataclass(frozen=True)
class QueryGuide:
    """Any part left None keeps the played pose's value."""

    hips_velocity: np.ndarray | None = None
    """(3,) m/s."""
    feet_velocities: np.ndarray | None = None
    """(2, 3) m/s, left then right foot."""
    feet_offsets: np.ndarray | None = None
    """(2, 3) m: each foot from the body's ground point (its hips on the floor)."""

    def apply(self, pose_part: np.ndarray, root_rotation: np.ndarray) -> np.ndarray:
        """The pose part of a raw query (15,: z^v then z^l) with the guide's values, turned into the frame of a
        character whose root has `root_rotation`."""
        part = pose_part.copy()
        velocities = part[GROUPS["pose_velocities"]].reshape(3, 3)
        if self.feet_velocities is not None:
            velocities[:2] = quat.inverse_rotate(root_rotation, self.feet_velocities)
        if self.hips_velocity is not None:
            velocities[2] = quat.inverse_rotate(root_rotation, self.hips_velocity)
        part[GROUPS["pose_velocities"]] = velocities.ravel()
        if self.feet_offsets is not None:
            part[GROUPS["foot_positions"]] = quat.inverse_rotate(root_rotation, self.feet_offsets).ravel()
        return part
