"""How the predictor's body and motion matching's legs are put together, vectorised over frames (one frame live).

- the travel weight: how much the body travels, from the predicted hips' floor speed (smoothstep between a
  standing and a travelling speed): 0 keeps the predictor's legs, 1 takes the matched ones;
- the lower-body turn: hips and legs turned about the vertical through the spine's base so the hips face
  where the orientation model says, the spine turned back so the upper body keeps its world pose;
- the leg transfer: a matched leg joint's world rotation carried onto the predictor's skeleton, through
  the two skeletons' standing poses when they are not the same skeleton.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from ..math import quat
from ..math.angle import wrap_angle
from ..retarget.retargeting import Retargeting
from ..retarget.target import bvh_target

LEG_JOINTS = ("thigh", "shin", "foot", "toes")
"""The canonical joints of each leg that motion matching poses."""


def same_leg_rest(own, own_legs, matched, matched_legs, tolerance_deg: float = 0.5) -> bool:
    """Whether two skeletons' legs rest alike: each leg joint's offset from its parent, and the hips' rest frame
    (identity rotations at rest, as BVH skeletons have), point the same ways within `tolerance_deg`."""
    a, b = own.offsets[own_legs], matched.offsets[matched_legs]
    cos = np.sum(a * b, axis=-1) / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-12)
    return bool(np.all(cos > np.cos(np.radians(tolerance_deg))))


def centred_mean(values: np.ndarray, frames: float, starts: np.ndarray | None = None) -> np.ndarray:
    """Each of `values` (T,) averaged over a window of about `frames` centred on it, the ends held; with `starts`
    (T,), within each run of frames from one start to the next (nothing averaged across a jump)."""
    width = max(1, int(round(frames)))
    if starts is not None and starts[1:].any():
        return np.concatenate([centred_mean(piece, frames) for piece in np.split(values, np.flatnonzero(starts[1:]) + 1)])
    return np.convolve(np.pad(values, (width // 2, width - 1 - width // 2), mode="edge"), np.ones(width) / width,
                       "valid")


class TrailingMean:
    """The mean of the last `frames` values given to `add` (fewer at the start): a live, one-sided average."""

    def __init__(self, frames: float):
        self.values = deque(maxlen=max(1, int(round(frames))))

    def clear(self) -> None:
        """Forget the values given so far."""
        self.values.clear()

    def add(self, value: float) -> float:
        self.values.append(value)
        return sum(self.values) / len(self.values)


def floor_speeds(hips: np.ndarray, fps: float) -> np.ndarray:
    """The hips' (T, 3) speed on the floor (m/s) per frame, the first frame's 0."""
    return np.r_[0.0, np.linalg.norm(np.diff(hips[:, [0, 2]], axis=0), axis=-1) * fps]


def travel_weights(speed: np.ndarray, standing_m_s: float, travelling_m_s: float) -> np.ndarray:
    """How much the body travels (0 to 1) at floor speeds `speed`: smoothstep from standing to travelling."""
    w = np.clip((np.asarray(speed) - standing_m_s) / (travelling_m_s - standing_m_s), 0.0, 1.0)
    return w * w * (3.0 - 2.0 * w)


def unwrapped_after(previous: float, angle: float) -> float:
    """`angle` (radians) moved by whole turns to within half a turn of `previous`: a live np.unwrap."""
    return previous + float(wrap_angle(angle - previous))


def turn_lower_body(rotations: np.ndarray, positions: np.ndarray, lower, pivot: int, turns: np.ndarray) -> None:
    """Turn the joints `lower` (the hips and legs) of global rotations (T, J, 4) and positions (T, J, 3), in place,
    by `turns` (T,) radians about the vertical through joint `pivot`; the other joints keep their world pose."""
    turn = quat.from_yaw(turns)[:, None]
    centre = positions[:, pivot:pivot + 1]
    rotations[:, lower] = quat.multiply(turn, rotations[:, lower])
    positions[:, lower] = centre + quat.rotate(turn, positions[:, lower] - centre)


class LegTransfer:
    """Motion matching's leg joints (world rotations) as the predictor's skeleton's.

    Where both skeletons' legs have the same rest geometry a joint's world rotation is taken as it is. Else (a
    database built from other motion capture) through retargeting's per-joint alignment (retarget/retargeting.py:
    both skeletons' anatomical frames in their standing poses)."""

    def __init__(self, own: list[int], matched: list[int], offsets: np.ndarray | None = None):
        """`own`, `matched`: the leg joints' indices (8,) on each skeleton; `offsets` (8, 4) or None (same skeleton)."""
        self.own, self.matched, self.offsets = own, matched, offsets

    @classmethod
    def between(cls, own, matched) -> "LegTransfer":
        """From the predictor's solver to motion matching's (each with `skeleton`, `mapping`, `standing_motion`)."""
        own_legs = [own.mapping[f"{s}_{j}"] for s in "lr" for j in LEG_JOINTS]
        matched_legs = [matched.mapping[f"{s}_{j}"] for s in "lr" for j in LEG_JOINTS]
        if same_leg_rest(own.skeleton, own_legs, matched.skeleton, matched_legs):
            return cls(own_legs, matched_legs)
        target = bvh_target(own.standing_motion())
        alignment = Retargeting.between(matched.skeleton, matched.mapping, target, matched.standing_motion()).alignment
        return cls(own_legs, matched_legs, alignment[own_legs])

    def carry(self, matched_rotations: np.ndarray) -> np.ndarray:
        """The predictor's leg joints' world rotations (T, 8, 4) from the matched skeleton's (T, J, 4)."""
        legs = matched_rotations[:, self.matched]
        return legs if self.offsets is None else quat.multiply(legs, self.offsets)
