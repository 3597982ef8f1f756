"""Foot lock (MMVR §6.2): a foot in contact stays where it touched down while the root is dragged.

Per foot, per frame: a foot that the database marks in contact locks its contact point (the toe
joint) at its current output position; it stays there until the matched pose's toe is more than a
maximum distance away or the contact ends. A released foot does not jump back: the gap between the
lock and the pose's toe decays with a spring. A new contact (the next step) locks the foot at once,
where its output is, gap included, unless the gap is past the unlock distance: waiting for the gap to
close let the foot slide through the first frames of its step (docs/methods/motion_matching.md). A foot released because
the pose left it behind while its contact goes on locks again only once its gap has closed. The
answer is a target per toe; the solver moves the ankle by the same amount with the leg IK.

Deviation: §6.2 also unlocks "when Motion Matching changes the pose". Transitions come every few
frames, and feet released there spent about half of their contact time unlocked; keeping locks
through transitions (the new pose's contacts still end them) cut foot skating by a sixth on walking
clips (docs/methods/motion_matching.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..anim.motion import forward_kinematics
from ..math import quat
from ..math.spring import decay_toward_zero
from ..math.vector import length
from .two_bone import chain_locals, two_bone_ik

RELOCK_GAP_M = 0.01
"""A foot released while its contact goes on (too far from the pose) may lock again once its gap is below this."""


@dataclass
class FootLock:
    """Lock state of the left and right foot."""

    unlock_distance_m: float = 0.2
    release_halflife_s: float = 0.1
    lift_off_m: float = 0.0
    """Over 0: a locked foot whose contact ends keeps its place on the floor, rising with the pose, until its
    toe is this high over its lock; only then (in the air) does it move on to the pose's toe."""
    step_height: float = 0.0
    """Over 0: a released foot catches up with the pose in an arc, not along the floor: raised by this share of
    the gap it started with, most halfway (4 h g (g0 - g) / g0 for a horizontal gap g of g0)."""
    locked: np.ndarray = field(default_factory=lambda: np.zeros(2, bool))
    lock_positions: np.ndarray = field(default_factory=lambda: np.zeros((2, 3)))
    release_offsets: np.ndarray = field(default_factory=lambda: np.zeros((2, 3)))
    release_velocities: np.ndarray = field(default_factory=lambda: np.zeros((2, 3)))
    release_gaps: np.ndarray = field(default_factory=lambda: np.zeros(2))
    """The horizontal gap each foot's catch-up started with (for step_height)."""
    in_contact: np.ndarray = field(default_factory=lambda: np.zeros(2, bool))
    """The contacts of the previous frame: a contact that was not there then is a new step."""

    def reset(self) -> None:
        self.locked[:] = False
        self.in_contact[:] = False
        self.release_offsets[:] = 0.0
        self.release_velocities[:] = 0.0
        self.release_gaps[:] = 0.0

    def release(self, which: np.ndarray, feet: np.ndarray) -> None:
        """Unlock the feet flagged in `which` (2,), keeping their output where it is."""
        which = which & self.locked
        self.release_offsets[which] = self.lock_positions[which] - feet[which]
        self.release_gaps[which] = np.hypot(self.release_offsets[which, 0], self.release_offsets[which, 2])
        self.locked[which] = False

    def targets(self, feet: np.ndarray, contacts: np.ndarray, dt: float,
                unlock_distance_m: float | None = None) -> np.ndarray:
        """Targets (2, 3) for the matched pose's contact points `feet` (2, 3) given its contacts (2,) this frame;
        `unlock_distance_m` this frame's release distance (None: the lock's)."""
        unlock = self.unlock_distance_m if unlock_distance_m is None else unlock_distance_m
        far = length(feet - self.lock_positions) > unlock
        lifting = lifted = np.zeros(2, bool)
        if self.lift_off_m > 0.0:
            lifting = self.locked & ~contacts & ~far & (feet[:, 1] < self.lock_positions[:, 1] + self.lift_off_m)
            lifted = self.locked & ~contacts & ~lifting & ~far
        self.release(far | (~contacts & ~lifting), feet)
        self.release_offsets[lifted, 1] = 0.0
        self.release_offsets, self.release_velocities = decay_toward_zero(
            self.release_offsets, self.release_velocities, self.release_halflife_s, dt)
        free = feet + self.release_offsets
        gap = length(self.release_offsets)
        new_step = contacts & ~self.in_contact & (gap <= unlock)
        lock = contacts & ~self.locked & (new_step | (gap < RELOCK_GAP_M))
        self.in_contact = contacts.copy()
        self.lock_positions[lock] = free[lock]
        self.release_offsets[lock] = 0.0
        self.release_velocities[lock] = 0.0
        self.locked |= lock
        held = np.where(self.locked[:, None], self.lock_positions, free)
        held[lifting, 1] = np.maximum(held[lifting, 1], feet[lifting, 1])
        if self.step_height > 0.0:
            gap = np.hypot(self.release_offsets[:, 0], self.release_offsets[:, 2])
            start = np.maximum(self.release_gaps, gap)
            arc = 4.0 * self.step_height * gap * (start - gap) / np.maximum(start, 1e-9)
            held[:, 1] += np.where(self.locked, 0.0, arc)
        return held


@dataclass(frozen=True)
class Legs:
    """Both legs of a skeleton as chains hips > thigh > shin > foot > toes, for planting feet with the leg IK."""

    chains: np.ndarray
    """(2, 5) joint indices, left then right."""
    parents: np.ndarray
    """The skeleton's parent indices."""

    @classmethod
    def of(cls, skeleton, mapping) -> "Legs":
        chains = np.array([[mapping[j] for j in ("hips", f"{s}_thigh", f"{s}_shin", f"{s}_foot", f"{s}_toes")]
                           for s in "lr"])
        if np.any(skeleton.parents[chains[:, 1:]] != chains[:, :-1]):
            raise ValueError("the foot lock needs each leg as a chain: hips > thigh > shin > foot > toes")
        return cls(chains, skeleton.parents)

    def transforms(self, rotations: np.ndarray, positions: np.ndarray):
        """Global rotations and positions (..., 2, 5, 4 or 3) of hips, thigh, shin, foot and toes from local poses
        (..., J, 4 or 3)."""
        global_rotations, global_positions = forward_kinematics(self.parents, rotations, positions, self.chains[:, -1])
        return global_rotations[..., self.chains, :], global_positions[..., self.chains, :]

    def plant(self, rotations: np.ndarray, positions: np.ndarray, lock: FootLock, contacts: np.ndarray,
              dt: float | np.ndarray, restarts: np.ndarray | None = None, global_pose=None,
              toe_heights: np.ndarray | None = None, unlock_distances: np.ndarray | None = None) -> None:
        """Leg IK toward the lock's toe targets; edits thigh, shin and foot rotations of poses (T, J, ...) in place.

        contacts (T, 2) per frame; dt (s) one for all frames or (T,); the lock is reset before each frame
        flagged in `restarts` (T,) (the avatar placed anew). The lock carries state, so it runs frame by
        frame in order; forward kinematics and the IK run over all frames at once (one frame live, a whole
        solve offline). A single pose (J, ...) with contacts (2,) works too. The foot keeps its global
        rotation, so moving the ankle by the toe's correction puts the toe on its lock. `global_pose`: the poses'
        global rotations and positions (T, J, ...) if already known, at least down the legs. `toe_heights` (T, 2):
        world heights the toes are put at before the lock (None: where the pose has them); `unlock_distances` (T,):
        each frame's release distance (None: the lock's).
        """
        if rotations.ndim == 2:
            return self.plant(rotations[None], positions[None], lock, np.asarray(contacts)[None], dt,
                              None if restarts is None else np.asarray(restarts)[None], None,
                              None if toe_heights is None else np.asarray(toe_heights)[None],
                              None if unlock_distances is None else np.asarray(unlock_distances).reshape(1))
        if global_pose is None:
            global_rotations, global_positions = self.transforms(rotations, positions)
        else:
            global_rotations, global_positions = global_pose[0][:, self.chains], global_pose[1][:, self.chains]
        ankles = self.ankle_targets(global_positions, lock, contacts, dt, restarts, toe_heights, unlock_distances)
        thigh, shin = two_bone_ik(global_positions[:, :, 1], global_positions[:, :, 2], global_positions[:, :, 3],
                                  ankles, global_rotations[:, :, 1], global_rotations[:, :, 2])
        self.set(rotations, global_rotations, thigh, shin)

    @staticmethod
    def ankle_targets(global_positions: np.ndarray, lock: FootLock, contacts: np.ndarray, dt,
                      restarts: np.ndarray | None = None, toe_heights: np.ndarray | None = None,
                      unlock_distances: np.ndarray | None = None) -> np.ndarray:
        """Where the ankles (T, 2, 3) go for the toes to meet the lock's targets, frame by frame in order, from the
        chains' global positions (T, 2, 5, 3); the rest as `plant` takes it."""
        ankles, toes = global_positions[:, :, 3], global_positions[:, :, 4]
        placed = toes
        if toe_heights is not None:
            placed = toes.copy()
            placed[..., 1] = toe_heights
        held = np.empty_like(toes)
        for t in range(len(toes)):
            if restarts is not None and restarts[t]:
                lock.reset()
            held[t] = lock.targets(placed[t], contacts[t], dt[t] if np.ndim(dt) else dt,
                                   None if unlock_distances is None else float(unlock_distances[t]))
        return ankles + held - toes

    def set(self, rotations: np.ndarray, global_rotations: np.ndarray, thigh: np.ndarray, shin: np.ndarray) -> None:
        """Write the legs' local rotations into poses (T, J, 4) from the chains' global rotations (T, 2, 5, 4) and the
        IK's new thighs and shins (T, 2, 4); the feet keep theirs, each rotation the pose's sign (forward kinematics
        of a few frames may return -q for q)."""
        solved = self.chains[:, 1:4]
        rotations[:, solved] = quat.nearest_sign(chain_locals(global_rotations[:, :, 0], thigh, shin,
                                                              global_rotations[:, :, 3]), rotations[:, solved])
