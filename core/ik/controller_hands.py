"""The hands turned as the controllers turn: what the user's hand does with a controller, the avatar's hand does.

MMVR (§6) orients the arms' end effectors by the controllers. Each tracked hand's world rotation is its
controller's with the grip's rotation in the hand taken out:

    hand = controller * grip_in_hand^-1

How a user's hand closes round a controller, and how a character's hand bone lies in it, are not known, so the grip
in the hand is the mean of the predicted hand's rotation against its controller (predicted^-1 * controller) so far:
an expanding mean over the first MEMORY_S seconds of tracking, then a trailing exponential mean with that time
constant (devices lying on a table before the session fade from it). The hand keeps the predictor's orientation
on average and follows every turn of the controller at once. The mean is sequential in time; offline and live run
the same frames in the same order, so they agree.
"""
from __future__ import annotations

import numpy as np

from ..math import quat

MEMORY_S = 10.0
"""The grip in the hand is averaged over about this long (the exponential mean's time constant)."""


class ControllerHands:
    """The grip in each hand (left, right), measured as frames come; `turned` gives the hands' world rotations."""

    def __init__(self, memory_s: float = MEMORY_S):
        self.memory_s = memory_s
        self.reset()

    def reset(self) -> None:
        """Forget the grips: the next tracked frame of each hand starts its mean."""
        self.grips = np.tile(quat.identity(), (2, 1))
        """(2, 4) the grip in each hand, as measured so far."""
        self.frames = np.zeros(2, int)
        """How many tracked frames each hand's mean holds."""

    def turned(self, predicted: np.ndarray, controllers: np.ndarray, tracked: np.ndarray, dts) -> np.ndarray:
        """The hands' world rotations (T, 2, 4) over frames in time order: each tracked one (tracked (T, 2)) its
        controller's (T, 2, 4) with the grip in the hand, measured up to that frame against the predicted hands
        (T, 2, 4), taken out; the others as predicted. `dts` (T,) or a number: the frames' time steps."""
        predicted = np.asarray(predicted, dtype=float)
        tracked = np.asarray(tracked, dtype=bool)
        controllers = quat.normalize(np.where(tracked[..., None], controllers, predicted))
        measured = quat.inverse_multiply(predicted, controllers)
        steps = np.broadcast_to(np.asarray(dts, dtype=float), (len(predicted),))
        shares = -np.expm1(-np.where(steps > 0.0, steps, 0.0) / self.memory_s)  # NaN > 0 is False
        grips = np.empty_like(measured)
        for t, sides in enumerate(tracked):
            if sides.any():
                self.update(sides, measured[t], shares[t])
            grips[t] = self.grips
        return np.where(tracked[..., None], quat.multiply_inverse(controllers, grips), predicted)

    def update(self, sides: np.ndarray, grips: np.ndarray, share: float) -> None:
        """One frame's grips (2, 4) into the means of the hands flagged in `sides` (2,): each the expanding mean's
        share, or `share` once that is larger."""
        self.frames += sides
        means = self.grips
        grips = quat.nearest_sign(grips, means)
        rates = np.maximum(share, 1.0 / np.maximum(self.frames, 1))[:, None]
        self.grips = np.where(sides[:, None], quat.normalize(means + rates * (grips - means)), means)
