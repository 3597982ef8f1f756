"""A headset found again after a loss of tracking eases from where it was held onto its tracked pose.

While the headset is lost its last pose is held, and the person goes on moving; when it is tracked again it is
somewhere else. Stepped as it is, the avatar catches up in one frame (a headset lost for a sixth of a second
mid-walk moved the hips 17 cm at once, 61 cm after two thirds of a second). Instead the difference between the pose
the avatar was last given and the tracked one becomes an offset that decays with the inertialization spring
(spring.decay_toward_zero), starting at rest, over REGAINED_HALFLIFE_S. The losses eased are those offline bridges
(dropouts.py): at most DROPOUT_BRIDGE_S long, the headset moved no faster than a body carries it (jumps.py). After a
longer loss, or a teleport or a recentring, the avatar is placed where the headset now is, as at any jump.
Controllers are not eased here: while one is lost the solvers pose that hand themselves (the predictor's), not at a
held pose. Offline the short losses are bridged before the solve, so this eases only live.
"""
from __future__ import annotations

import numpy as np

from ..math import quat
from ..math.spring import decay_toward_zero
from .dropouts import DROPOUT_BRIDGE_S
from .jumps import jumped

REGAINED_HALFLIFE_S = 0.1
"""The half-life of the offset's spring: 60 % of it is left after 0.1 s, 24 % after 0.2 s (spring.py)."""


class RegainedHeadset:
    """The headset's offset (position, rotation vector) still eased off, and how long it has been lost."""

    def __init__(self):
        self.offsets = np.zeros((2, 3))
        """[0] the position offset, [1] the rotation offset as a rotation vector."""
        self.rates = np.zeros((2, 3))
        self.lost_s = 0.0
        """Seconds since the headset was last tracked (0 while it is)."""

    def eased(self, position: np.ndarray, rotation: np.ndarray, tracked: bool, dt: float,
              given: tuple | None) -> tuple[np.ndarray, np.ndarray]:
        """This frame's headset pose (held where untracked; `tracked`) with the offset applied, `dt` seconds after
        the frame whose headset pose (position, rotation) was `given` as this returned it (None on the first)."""
        if self.offsets.any():  # nothing to decay on every other live step
            self.offsets, self.rates = decay_toward_zero(self.offsets, self.rates, REGAINED_HALFLIFE_S, dt)
        if tracked and self.lost_s > 0.0 and given is not None:
            self.found_again(given, (position, rotation), self.lost_s + dt)
        self.lost_s = 0.0 if tracked else self.lost_s + dt
        if not self.offsets.any():
            return position, rotation
        return (position + self.offsets[0],
                quat.normalize(quat.multiply(quat.from_rotation_vector(self.offsets[1]), rotation)))

    def found_again(self, given: tuple, tracked: tuple, lost_s: float) -> None:
        """Ease from the pose (position, rotation) last `given` onto the `tracked` one, found again after `lost_s`
        seconds, unless the headset jumped (module docstring)."""
        step = given[0] - tracked[0]
        self.rates[:] = 0.0
        if lost_s > DROPOUT_BRIDGE_S + 1e-9 or jumped(step, lost_s):
            self.offsets[:] = 0.0
            return
        self.offsets[0] = step
        self.offsets[1] = quat.to_rotation_vector(quat.multiply_inverse(given[1], tracked[1]))

    def clear(self) -> None:
        """Drop the offset (a teleport: the avatar goes where the headset is)."""
        self.offsets[:] = 0.0
        self.rates[:] = 0.0
