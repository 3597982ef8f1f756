"""The head goes where the headset is: a user who crouches or bends to the floor, as nobody in the training data did.

The predictor's poses are its training capture's, in which nobody crouches: where the headset went lower than the
predicted head, the avatar stood on above it (a user reaching to the floor left its head up to a metre from the
headset and its hands far from the controllers). Here the torso is one segment from the spine joint to the neck, the
head keeping its world rotation on the neck, and three moves bring the head to the headset:

- **the body** goes the head's way along the floor (MMVR §5.4's position clamp with nothing left to the clamp: the
  predicted body lags a walk's start, where its head is tens of centimetres from the headset);
- **the hips** go down until the neck's target is no lower than the spine joint (the torso at most level), then
  move the least that puts the target the torso's length from the spine joint: straight down under a target above
  (a crouch), back and down from one ahead (a bow's hips go back), nothing where it is that far already; no lower in
  all than leaves each hip MIN_LEG_SHARE of its leg's length from its ankle (a deep squat), and from there back
  along the floor as far as still needed (sitting back into the squat);
- **the torso** turns about the spine joint to point the neck at its target, at most MAX_BEND_DEG.

The legs' IK, run after, bends the knees over the feet where they stand, and the arms reach from the shoulders where
the torso put them. A headset above the torso's reach raises nothing: the feet stay on the floor.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..anim.one_euro import OneEuroFilter
from ..math import quat
from ..math.vector import length

HEADSET_MIN_CUTOFF_HZ, HEADSET_BETA = 1.0, 10.0
"""The head's way from the predicted head to the headset's goes through a one-euro filter (core/anim/one_euro.py)
with these settings: a real headset's millimetres of noise would shake the torso that follows it, while a crouch is
followed within tens of milliseconds (the filter passes the way, not the head, so walking does not lag)."""
MIN_LEG_SHARE = 0.4
"""The hips go down until each is this share of its leg's length (thigh and shin) from its ankle: a deep squat."""
MAX_BEND_DEG = 90.0
"""The torso turns toward the headset at most this much about the spine joint."""


def headset_filter() -> OneEuroFilter:
    """The filter the head's way to the headset goes through (HEADSET_MIN_CUTOFF_HZ, HEADSET_BETA)."""
    return OneEuroFilter(HEADSET_MIN_CUTOFF_HZ, HEADSET_BETA)


def hips_moves(pivot: np.ndarray, neck: np.ndarray, neck_targets: np.ndarray, hip_joints: np.ndarray,
               ankles: np.ndarray, legs_m: np.ndarray) -> np.ndarray:
    """How the hips move (T, 3) so that the torso, from the pivot joint (T, 3) to the neck (T, 3), reaches the neck's
    target (T, 3) with a turn: first down until the target is no lower than the pivot (the torso at most level), then
    the least move that puts the target the torso's length away (straight away from it: down under a target above,
    back and down from one ahead), no lower in all than leaves each hip joint (T, 2, 3) MIN_LEG_SHARE of its leg's
    length (2,) from its ankle (T, 2, 3), and from there back along the floor as far as still needed (sitting back
    into the squat). A target above the pivot and the torso's length away or farther moves nothing."""
    torso_m = length(neck - pivot)
    apart = hip_joints - ankles
    shortest = MIN_LEG_SHARE * legs_m
    room = np.maximum((apart[..., 1] - np.sqrt(np.maximum(shortest ** 2 - apart[..., 0] ** 2 - apart[..., 2] ** 2,
                                                          0.0))).min(axis=-1), 0.0)
    move = np.zeros(pivot.shape)
    move[..., 1] = -np.clip(pivot[..., 1] - neck_targets[..., 1], 0.0, room)
    away = pivot + move - neck_targets
    gap = length(away)
    step = away * np.where(gap > 1e-9, np.maximum(torso_m - gap, 0.0) / np.maximum(gap, 1e-9), 0.0)[..., None]
    step[..., 1] = -np.clip(-step[..., 1], 0.0, room + move[..., 1])
    move += step
    moved = away + step
    across = np.hypot(moved[..., 0], moved[..., 2])
    back = np.maximum(np.sqrt(np.maximum(torso_m ** 2 - moved[..., 1] ** 2, 0.0)) - across, 0.0)
    direction = np.where((across > 0.0)[..., None], moved, pivot - neck)[..., [0, 2]]
    norm = np.hypot(direction[..., 0], direction[..., 1])
    direction = np.where((norm > 0.0)[..., None], direction, [0.0, 1.0]) / np.where(norm > 0.0, norm, 1.0)[..., None]
    move[..., 0] += back * direction[..., 0]
    move[..., 2] += back * direction[..., 1]
    return move


@dataclass(frozen=True)
class Crouch:
    """The joints one skeleton crouches and bends with: the hips, the spine joint the torso turns about, the neck
    that keeps its world rotation, the head, and each leg's hip joint, ankle and length."""

    hips: int
    pivot: int
    """The joint the torso turns about."""
    neck: int
    neck_parent: int
    head: int
    legs: np.ndarray
    """(2, 3) each leg's hip joint, knee and ankle."""
    turned: np.ndarray
    """The posed joints that turn with the torso: the pivot's and the joints below it, but the neck and the hands,
    which keep their world rotations."""
    torso: np.ndarray
    """The posed joints that the torso's turn carries: the pivot and every posed joint below it."""
    carried: np.ndarray
    """The posed joints that only move with the hips: the hips and their other posed descendants (the legs)."""

    @classmethod
    def of(cls, skeleton, mapping, leg_chains: np.ndarray, posed, kept) -> "Crouch":
        """From the humanoid mapping, the legs' chains (hips, thigh, shin, foot, toes; ik/foot_lock.py Legs), the
        joints whose global poses the solver keeps (`posed`) and those of them that keep their world rotations
        whatever the torso does (`kept`: the hands)."""
        neck, pivot, hips = mapping["neck"], mapping["spine"], mapping["hips"]
        posed = sorted(set(int(j) for j in posed))
        torso = [j for j in posed if skeleton.is_ancestor(pivot, j)]
        turned = [j for j in torso if j != neck and j not in set(int(k) for k in kept)]
        carried = [j for j in posed if skeleton.is_ancestor(hips, j) and j not in torso]
        return cls(hips, pivot, neck, int(skeleton.parents[neck]), mapping["head"], leg_chains[:, 1:4],
                   np.array(turned, int), np.array(torso, int), np.array(carried, int))

    def heads(self, rotations: np.ndarray, positions: np.ndarray, local_positions: np.ndarray) -> np.ndarray:
        """The head joint's places (T, 3) in poses of global rotations and positions (T, J, ...) posed down to the neck
        and local positions (T, J, 3)."""
        return positions[:, self.neck] + quat.rotate(rotations[:, self.neck], local_positions[:, self.head])

    def moves(self, positions: np.ndarray, ways: np.ndarray):
        """(the hips' move (T, 3), the torso's bend (T, 4), a world rotation about the spine joint) that take the head
        `ways` (T, 3) from where it is, from the posed joints' global positions (T, J, 3): the body goes the way along
        the floor, then the hips and the torso take the rest (`hips_moves`); the head keeps its place on the neck, so
        the neck goes the same way."""
        along = ways * [1.0, 0.0, 1.0]
        neck_targets = positions[:, self.neck] + ways
        neck, pivot = positions[:, self.neck] + along, positions[:, self.pivot] + along
        legs = positions[:, self.legs]
        legs_m = length(legs[:, :, 1] - legs[:, :, 0]) + length(legs[:, :, 2] - legs[:, :, 1])
        moves = along + hips_moves(pivot, neck, neck_targets, legs[:, :, 0] + along[:, None], legs[:, :, 2], legs_m)
        bends = quat.between(neck - pivot, neck_targets - positions[:, self.pivot] - moves)
        return moves, quat.at_most(bends, np.radians(MAX_BEND_DEG))

    def pose(self, rotations: np.ndarray, positions: np.ndarray, moves: np.ndarray, bends: np.ndarray):
        """The global rotations and positions (T, J, ...) of the posed joints after the moves (`moves` (T, 3) of the
        hips, `bends` (T, 4) about the pivot), from those before: what forward kinematics of `apply`'s local poses
        gives, without it."""
        rotations, positions = rotations.copy(), positions.copy()
        pivot = positions[:, self.pivot, None]
        positions[:, self.torso] = pivot + moves[:, None] + quat.rotate(bends[:, None], positions[:, self.torso] - pivot)
        positions[:, self.carried] += moves[:, None]
        rotations[:, self.turned] = quat.multiply(bends[:, None], rotations[:, self.turned])
        return rotations, positions

    def apply(self, local: np.ndarray, local_positions: np.ndarray, rotations: np.ndarray, moves: np.ndarray,
              bends: np.ndarray, hips_parent_rotations: np.ndarray | None) -> None:
        """Write the moves into the local poses (T, J, ...): the hips moved by `moves` (T, 3) (their parent's world
        rotations (T, 4), None for a root), the spine joint turned by `bends` (T, 4) and the neck keeping its world
        rotation, from the global rotations (T, J, 4) before the moves."""
        if hips_parent_rotations is not None:
            moves = quat.inverse_rotate(hips_parent_rotations, moves)
        local_positions[:, self.hips] += moves
        pivot = quat.multiply(bends, rotations[:, self.pivot])
        local[:, self.pivot] = quat.nearest_sign(
            quat.multiply(local[:, self.pivot], quat.inverse_multiply(rotations[:, self.pivot], pivot)),
            local[:, self.pivot])
        neck_parent = quat.multiply(bends, rotations[:, self.neck_parent])
        local[:, self.neck] = quat.nearest_sign(quat.inverse_multiply(neck_parent, rotations[:, self.neck]),
                                                local[:, self.neck])
