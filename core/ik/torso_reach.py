"""The torso helps a hand that its arm cannot bring to the target: the chest twists, then the shoulder girdle turns.

With the head held on the headset, leaning the chest moves the shoulders away from a target in front, so the
torso's part in reaching is a twist about the spine between the chest and the neck (the head and neck stay put)
and the clavicle's turn about the shoulder joint (Parger §3.2 turns it by a fixed gain; here by what the reach
needs). Both are the least that brings each shoulder within its arm's length of its target, within their limits;
a target the arm reaches turns nothing, and one still too far is left to the arm's IK, which straightens toward it.

Twist: a shoulder at radius r from the spine's axis, turned by phi, is at distance d from the target with
    d^2 = h^2 + q^2 + r^2 - 2 q r cos(psi - phi)
(q the target's radius, h their separation along the axis, psi the angle between them about it): the arm
reaches length L where |psi - phi| <= arccos((h^2 + q^2 + r^2 - L^2) / (2 q r)). Each arm allows an interval of
twists; the twist is the one nearest zero in both (or midway between them when they do not meet). The clavicle
turns about its joint the same way, in the plane of the upper arm's joint and the target.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..math import quat
from ..math.vector import dot, length, reject, unit, unit_or

def allowed_turns(radial: np.ndarray, target_radial: np.ndarray, along_m: np.ndarray, axis: np.ndarray,
                  reach_m: np.ndarray):
    """Per arm (...,): the turn psi (radians, about `axis`) that points the shoulder's radial vector at the
    target's, and the half-width of the turns about it that bring the shoulder within `reach_m` (pi: any)."""
    r, q = length(radial), length(target_radial)
    psi = np.arctan2(dot(np.cross(radial, target_radial), axis), dot(radial, target_radial))
    k = (along_m ** 2 + q ** 2 + r ** 2 - reach_m ** 2) / np.maximum(2.0 * q * r, 1e-9)
    return psi, np.arccos(np.clip(k, -1.0, 1.0))


def twist_angles(psi: np.ndarray, half_width: np.ndarray, tracked: np.ndarray, limit_rad: float) -> np.ndarray:
    """The twist (...,) nearest zero within every tracked arm's allowed interval (psi +- half_width, arms on the
    last axis), midway between the intervals where they do not meet, within +- limit_rad."""
    low = np.where(tracked, psi - half_width, -np.pi).max(axis=-1)
    high = np.where(tracked, psi + half_width, np.pi).min(axis=-1)
    nearest = np.clip(0.0, low, high)
    return np.clip(np.where(low <= high, nearest, 0.5 * (low + high)), -limit_rad, limit_rad)


def turn_toward(pivot: np.ndarray, point: np.ndarray, target: np.ndarray, reach_m: np.ndarray,
                limit_rad: float) -> np.ndarray:
    """The least rotation (..., 4) about `pivot` (at most limit_rad) that brings `point` within `reach_m` of
    `target`, turning it in the plane of the three (identity where it is already within reach)."""
    arm, aim = point - pivot, target - pivot
    up = np.array([0.0, 1.0, 0.0])
    axis = unit_or(np.cross(unit_or(arm, up), unit_or(aim, up)), up)  # directions: a short arm turns toward it too
    full = np.arctan2(length(np.cross(arm, aim)), dot(arm, aim))
    _, half_width = allowed_turns(arm, aim, np.zeros_like(full), axis, reach_m)
    angle = np.clip(full - half_width, 0.0, limit_rad)
    return quat.from_rotation_vector(axis * angle[..., None])


@dataclass(frozen=True)
class TorsoReach:
    """The joints the torso reaches with on one skeleton: chest, neck, each arm's clavicle and upper arm."""

    chest: int
    neck: int
    clavicles: np.ndarray
    """(2,) the upper arms' parents, left then right."""
    upper_arms: np.ndarray

    @classmethod
    def of(cls, skeleton, mapping, arm_chains: np.ndarray) -> "TorsoReach":
        """From the humanoid mapping and the arms' chains (ik/two_bone.py's Arms.chains)."""
        clavicles = arm_chains[:, 0]
        if np.any(skeleton.parents[clavicles] != mapping["chest"]):
            raise ValueError("the torso's reach needs each arm's clavicle (the upper arm's parent) on the chest")
        return cls(mapping["chest"], mapping["neck"], clavicles, arm_chains[:, 1])

    def turns(self, positions: np.ndarray, targets: np.ndarray, arm_m: np.ndarray, tracked: np.ndarray,
              twist_limit_rad: float, clavicle_limit_rad: float):
        """The chest's twist (T, 4) and each clavicle's turn after it (T, 2, 4), world rotations, from global
        positions (T, J, 3), wrist targets (T, 2, 3), the arms' lengths (T, 2) and where a target is tracked (T, 2)."""
        chest, shoulders = positions[:, self.chest], positions[:, self.upper_arms]
        axis = unit(positions[:, self.neck] - chest)[:, None]
        radial, target_radial = reject(shoulders - chest[:, None], axis), reject(targets - chest[:, None], axis)
        along = dot(targets - shoulders, axis)
        psi, half_width = allowed_turns(radial, target_radial, along, axis, arm_m)
        phi = twist_angles(psi, half_width, tracked, twist_limit_rad)
        twist = quat.from_rotation_vector(axis[:, 0] * phi[:, None])
        clavicles = chest[:, None] + quat.rotate(twist[:, None], positions[:, self.clavicles] - chest[:, None])
        turned = chest[:, None] + quat.rotate(twist[:, None], shoulders - chest[:, None])
        clavicle = turn_toward(clavicles, turned, targets, arm_m, clavicle_limit_rad)
        return twist, np.where(tracked[..., None], clavicle, quat.identity())

    def apply(self, local: np.ndarray, rotations: np.ndarray, twist: np.ndarray, clavicle: np.ndarray) -> None:
        """Write the chest's and clavicles' new local rotations into `local` (T, J, 4), and the neck's that keeps
        its world rotation (the head stays on the headset), from the global rotations (T, J, 4) before the turns."""
        chest = quat.multiply(twist, rotations[:, self.chest])
        neck = quat.multiply(rotations[:, self.chest], local[:, self.neck])
        clavicles = quat.multiply(clavicle, quat.multiply(twist[:, None], rotations[:, self.clavicles]))
        parent = quat.inverse_multiply(rotations[:, self.chest], chest)  # the chest's change in its parent's frame
        local[:, self.chest] = quat.nearest_sign(quat.multiply(local[:, self.chest], parent), local[:, self.chest])
        local[:, self.neck] = quat.nearest_sign(quat.inverse_multiply(chest, neck), local[:, self.neck])
        local[:, self.clavicles] = quat.nearest_sign(quat.inverse_multiply(chest[:, None], clavicles),
                                                     local[:, self.clavicles])
