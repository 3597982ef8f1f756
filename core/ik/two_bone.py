"""Two-bone IK for a leg or an arm: turn the thigh and shin (upper arm and forearm) so the ankle (wrist) reaches a
target, keeping the knee's (elbow's) plane.

The knee bends the way the pose bends it: in the plane through the hip, the target and the pose's knee,
or, for an arm, the pose's plane (through shoulder, elbow and wrist) swung with the arm from the pose's
wrist onto the target, so that a target passing by the pose's elbow does not flip it (a leg's knee keeps
pointing where the pose's does); the cosine rule places it, and each bone takes the shortest rotation onto
its new direction. A target out of reach straightens the leg toward it. The end joint (foot, hand)
keeps its global rotation (`chain_locals`). Several chains solve in one call: the legs and arms of a
frame, or of every frame of a solve.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..math import quat
from ..math.vector import length, reject, unit_or


SOFT_SLACK_LIMIT = 50.0
"""Past this many soft lengths beyond full - soft the eased distance is full (e^-50 of a soft length: nothing)."""


def soft_reach(distance: np.ndarray, full: np.ndarray, soft_m) -> np.ndarray:
    """The hip-to-ankle distance a chain of length `full` takes toward a target `distance` away, easing into full
    extension over its last `soft_m` (Nicholls' soft IK): past full - soft_m, full - soft_m e^(-(d - full + soft_m) /
    soft_m). The knee's offset from the hip-target line grows as the square root of the slack near a straight
    leg, so a target that comes within reach bends it at once; eased, it bends as the target comes nearer."""
    soft = np.broadcast_to(np.asarray(soft_m, dtype=float), np.shape(distance))
    if not soft.any():
        return distance
    start = full - soft
    slack = np.minimum(np.maximum(distance - start, 0.0) / np.where(soft > 0.0, soft, 1.0), SOFT_SLACK_LIMIT)
    return np.where((soft > 0.0) & (distance > start), start + soft * (1.0 - np.exp(-slack)), distance)


def knee_position(hip: np.ndarray, knee: np.ndarray, target: np.ndarray, thigh_m: np.ndarray, shin_m: np.ndarray,
                  soft_m=0.0, ankle: np.ndarray | None = None, swung=False):
    """Where the knee goes (..., 3) for the ankle to reach `target` (or as near as the leg allows; `soft_m`:
    `soft_reach`), bending the way the pose does: in the plane of the pose's knee, or (`swung`, per chain) of its
    knee swung with the hip-to-`ankle` line onto the hip-to-target line."""
    reach = np.clip(soft_reach(length(target - hip), thigh_m + shin_m, soft_m), np.abs(thigh_m - shin_m) + 1e-6,
                    thigh_m + shin_m - 1e-6)
    along = unit_or(target - hip, knee - hip)
    if ankle is not None and np.any(swung):
        knee = np.where(np.asarray(swung)[..., None],
                        hip + quat.rotate(quat.between(ankle - hip, target - hip), knee - hip), knee)
    bend = unit_or(reject(knee - hip, along), np.array([0.0, 0.0, 1.0]))
    # Cosine rule: the thigh's angle at the hip between the hip-target line and the thigh.
    cos_hip = np.clip((thigh_m ** 2 + reach ** 2 - shin_m ** 2) / np.maximum(2.0 * thigh_m * reach, 1e-12), -1.0, 1.0)
    sin_hip = np.sqrt(1.0 - cos_hip ** 2)
    return hip + thigh_m[..., None] * (cos_hip[..., None] * along + sin_hip[..., None] * bend)


def two_bone_ik(hip, knee, ankle, target, thigh_rotation, shin_rotation, soft_m=0.0, swung=False):
    """New global rotations of thigh and shin (..., 4) that put the ankle at `target` where reachable (`soft_m`,
    per chain: within that of full extension, short of it by up to soft_m / e, `soft_reach`); `swung` (per chain):
    the bend's plane swung with the chain onto the target (arms), else the pose's as it is (legs)."""
    thigh, shin = knee - hip, ankle - knee
    thigh_m, shin_m = length(thigh), length(shin)
    new_knee = knee_position(hip, knee, target, thigh_m, shin_m, soft_m, ankle, swung)
    thigh_turn = quat.between(thigh, new_knee - hip)
    # The shin turns onto the line from the new knee to the target: a target out of reach lies on it too.
    shin_turn = quat.between(quat.rotate(thigh_turn, shin), target - new_knee)
    return (quat.multiply(thigh_turn, thigh_rotation),
            quat.multiply(shin_turn, quat.multiply(thigh_turn, shin_rotation)))



def chain_locals(parent_rotations, upper_rotations, lower_rotations, end_rotations) -> np.ndarray:
    """The local rotations (..., 3, 4) of a chain's upper, lower and end joints from the global rotations of its
    parent, its upper and lower joints (the IK's) and its end (kept)."""
    return quat.inverse_multiply(np.stack([parent_rotations, upper_rotations, lower_rotations], axis=-2),
                                 np.stack([upper_rotations, lower_rotations, end_rotations], axis=-2))


REACH_WINDOW_S = 60.0
"""The arms' length is read off the controllers' reach over the first minute of a session."""
REACH_PERCENTILE = 98.0
"""... as this percentile of the shoulder-to-wrist distances (the arm nearly straight, glitches left out) ..."""
MAX_STRETCH = 1.2
"""... stretching the skeleton's arms by at most this much (a fifth: the spread of adult arm-to-height ratios with
the shoulders placed a little off); arms are never shortened."""
HANDS_TOGETHER_M = 0.45
"""Frames whose wrists are nearer each other than this count only the nearer hand's reach: hands on one object (a
bat, a rifle, a wheel) are where the object is, and the torso turns to bring the far one there
(ik/torso_reach.py)."""


def arm_stretch(shoulders: np.ndarray, wrists: np.ndarray, tracked: np.ndarray, arm_length: float) -> float:
    """How much longer (1 to MAX_STRETCH) arms of `arm_length` must be to reach the tracked wrists (T, 2, 3) from
    the shoulders (T, 2, 3) (tracked (T, 2)): the REACH_PERCENTILE of their distances over the arm's length, the
    frames with the hands together counting the nearer hand alone."""
    with np.errstate(invalid="ignore"):
        together = tracked.all(axis=-1) & (np.linalg.norm(wrists[:, 0] - wrists[:, 1], axis=-1) < HANDS_TOGETHER_M)
    distances = np.linalg.norm(wrists - shoulders, axis=-1)
    reach = np.concatenate([distances[tracked & ~together[:, None]], distances[together].min(axis=-1)])
    if len(reach) < 2:
        return 1.0
    return float(np.clip(np.percentile(reach, REACH_PERCENTILE) / arm_length, 1.0, MAX_STRETCH))


@dataclass(frozen=True)
class Arms:
    """Both arms of a skeleton as chains shoulder > upper arm > forearm > hand, left then right."""

    chains: np.ndarray
    """(2, 4) joint indices: the upper arm's parent, upper arm, forearm, hand."""

    @classmethod
    def of(cls, skeleton, mapping) -> "Arms":
        joints = np.array([[mapping[f"{s}_{j}"] for j in ("upper_arm", "forearm", "hand")] for s in "lr"])
        if np.any(skeleton.parents[joints[:, 1:]] != joints[:, :-1]):
            raise ValueError("the arm IK needs each arm as a chain: upper arm > forearm > hand")
        return cls(np.column_stack([skeleton.parents[joints[:, 0]], joints]))

    def length(self, skeleton) -> float:
        """The mean of both arms' lengths, upper arm plus forearm, on `skeleton`'s rest offsets."""
        joints = self.chains[:, 2:]
        return float(np.linalg.norm(skeleton.offsets[joints], axis=-1).sum(axis=-1).mean())

    def stretched(self, positions: np.ndarray, stretch: float) -> np.ndarray:
        """Local positions (..., J, 3) with the forearms' and hands' offsets (the upper arms' and forearms' lengths)
        times `stretch`."""
        if stretch == 1.0:
            return positions
        positions = positions.copy()
        positions[..., self.chains[:, 2:], :] *= stretch
        return positions

    @staticmethod
    def stretched_poses(poses, stretch: float):
        """The arm chains' global (rotations, positions) (T, 2, 4, ...) with the arms `stretch` times as long."""
        if stretch == 1.0:
            return poses
        rotations, positions = poses
        shoulders, elbows, wrists = positions[:, :, 1], positions[:, :, 2], positions[:, :, 3]
        stretched = positions.copy()
        stretched[:, :, 2] = shoulders + stretch * (elbows - shoulders)
        stretched[:, :, 3] = stretched[:, :, 2] + stretch * (wrists - elbows)
        return rotations, stretched

    def set(self, rotations: np.ndarray, global_rotations: np.ndarray, upper: np.ndarray, fore: np.ndarray,
            tracked: np.ndarray) -> None:
        """Write the arms' local rotations into poses (T, J, 4) where `tracked` (T, 2): from the chains' global
        rotations (T, 2, 4, 4) and the IK's new upper arms and forearms (T, 2, 4); the hands keep theirs, and each
        rotation keeps the pose's sign."""
        joints = self.chains[:, 1:]
        posed = rotations[:, joints]
        turned = quat.nearest_sign(chain_locals(global_rotations[:, :, 0], upper, fore, global_rotations[:, :, 3]),
                                   posed)
        rotations[:, joints] = np.where(tracked[..., None, None], turned, posed)
