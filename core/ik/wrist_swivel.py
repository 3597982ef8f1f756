"""The elbow turned about the shoulder-to-wrist line where the wrist would break (Parger et al. §3.3's elbow
rotation from wrist rotation).

Two-bone IK keeps the elbow in the plane the pose had; where that plane leaves the forearm pointing far from where
the hand does (a torso placed off the person's, the arm folded to reach the controller), the wrist bends past any
person's. The elbow then turns about the line from the shoulder to the wrist, the wrist staying where it is, toward
the place on its circle that lines the forearm up with the hand best, and only as far as brings the bend back to
BEND_START_DEG (all the way where even the best place bends more): an ordinary wrist keeps the pose's elbow, and the
turn grows from nothing as a wrist bends past that. On the elbow's circle the forearm's cosine with the hand is
middle - swing cos(t - worst), so each turn has a closed form.
"""
from __future__ import annotations

import numpy as np

from ..math import quat
from ..math.angle import wrap_angle
from ..math.vector import unit

BEND_START_DEG = 75.0
"""A wrist bent less than this (hand direction against forearm direction) leaves the elbow where it is."""
USEFUL_GAIN_DEG = 20.0
"""A turn that could straighten the wrist by less than this (the hand along the shoulder-to-wrist line, where every
elbow place is alike) is taken only in that share."""


def bend_deg(forearms: np.ndarray, fingers: np.ndarray) -> np.ndarray:
    """Angle (degrees, ...) between forearm directions (..., 3), elbow to wrist, and hand directions (..., 3)."""
    cosine = np.sum(unit(forearms) * unit(fingers), axis=-1)
    return np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))


def swivels(shoulders: np.ndarray, elbows: np.ndarray, wrists: np.ndarray, fingers: np.ndarray) -> np.ndarray:
    """Rotations (..., 4) about each shoulder-to-wrist line that turn the arm (upper arm and forearm alike) as the
    module docstring says; identity where the wrist bends less than BEND_START_DEG. Positions (..., 3); `fingers`
    the hands' directions (..., 3)."""
    axis = unit(wrists - shoulders)
    out = elbows - shoulders
    out = out - np.sum(out * axis, axis=-1, keepdims=True) * axis  # from the line to the elbow
    radius = np.linalg.norm(out, axis=-1)
    first = out / np.maximum(radius, 1e-9)[..., None]
    second = np.cross(axis, first)
    forearm = np.linalg.norm(wrists - elbows, axis=-1)
    # The forearm's cosine with the hand, the elbow turned by t: middle - swing * cos(t - worst).
    middle = np.sum((wrists - elbows + out) * fingers, axis=-1) / np.maximum(forearm, 1e-9)
    across = np.stack([np.sum(first * fingers, axis=-1), np.sum(second * fingers, axis=-1)], axis=-1)
    swing = radius * np.linalg.norm(across, axis=-1) / np.maximum(forearm, 1e-9)
    worst = np.arctan2(across[..., 1], across[..., 0])
    best = wrap_angle(worst + np.pi)
    wanted = np.minimum(np.cos(np.radians(BEND_START_DEG)), middle + swing)
    now = middle - swing * np.cos(worst)
    reach = np.arccos(np.clip((wanted - middle) / np.maximum(swing, 1e-12), -1.0, 1.0))  # wanted's distance from best
    turn = np.where(best >= 0.0, 1.0, -1.0) * np.maximum(np.abs(best) - reach, 0.0)  # toward best, stopping at wanted
    gain = np.degrees(np.arccos(np.clip(now, -1.0, 1.0)) - np.arccos(np.clip(middle + swing, -1.0, 1.0)))
    share = np.clip(gain / USEFUL_GAIN_DEG, 0.0, 1.0)
    turn = np.where((now < wanted) & (radius > 1e-6), share * turn, 0.0)
    return quat.from_rotation_vector(axis * turn[..., None])


def elbows_turned(chain_rotations: np.ndarray, chain_positions: np.ndarray, upper: np.ndarray, lower: np.ndarray,
                  hands: np.ndarray, tracked: np.ndarray, directions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two-bone IK's new global rotations of the upper arms and forearms (T, 2, 4) turned by `swivels`, where the
    controllers are tracked (T, 2): from the arm chains' global rotations and positions before the IK (T, 2, 4, ...:
    anchor, upper arm, forearm, hand), the hands' world rotations (T, 2, 4) and `directions` (2, 3), each hand's
    offset from its forearm as a unit vector in the forearm's frame: the forearm's direction, and the hand's at rest
    (a straight wrist)."""
    straight = np.sum(directions * quat.rotate(quat.inverse_multiply(lower, hands), directions), axis=-1)
    if not (straight < np.cos(np.radians(BEND_START_DEG))).any():
        return upper, lower  # the usual frame: no wrist near breaking
    shoulders, elbows, wrists = (chain_positions[..., k, :] for k in (1, 2, 3))
    new_elbows = shoulders + quat.rotate(quat.multiply_inverse(upper, chain_rotations[..., 1, :]), elbows - shoulders)
    reached = new_elbows + quat.rotate(lower, np.linalg.norm(wrists - elbows, axis=-1, keepdims=True) * directions)
    turns = np.where(np.asarray(tracked, dtype=bool)[..., None],
                     swivels(shoulders, new_elbows, reached, quat.rotate(hands, directions)), quat.identity())
    return quat.multiply(turns, upper), quat.multiply(turns, lower)
