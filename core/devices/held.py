"""Device samples as the solvers step them, one frame at a time: unusable samples untracked, untracked devices held.

An unusable sample (not finite, absurd: plausibility.py) counts as untracked; an untracked HMD holds its last
pose in the world, an untracked controller its last pose relative to the HMD's frame; an HMD found again eases
onto its tracked pose from where it was held (regained.py); a time step that is not
finite, not positive or too long is a one-frame pause. Each frame also carries the target (the centre of the
head on the floor, MMVR §5.3) and whether the HMD jumped farther than a teleport in one step (or faster than a body
moves, or a recentring turned the devices: jumps.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..math import quat
from .attachments import head_on_floor, hmd_frame_rotations
from .jumps import hmd_may_have_jumped, jumped, turned_with_controllers
from .plausibility import step_seconds, usable_poses
from .regained import RegainedHeadset

HANDS_BEFORE_TRACKED = ((0.2, -0.6, 0.1), (-0.2, -0.6, 0.1))
"""Where an untracked controller is held, in the HMD frame, before any controller was seen with the HMD."""


class HMDNotTracked(ValueError):
    """The HMD has not been tracked yet: nothing places the avatar."""


@dataclass
class HeldFrame:
    """One frame of devices as a solver uses it."""

    positions: np.ndarray
    """(3, 3) HMD, left, right: tracked samples as they are, untracked ones held."""
    rotations: np.ndarray
    """(3, 4) likewise."""
    tracked: np.ndarray
    """(3,) the devices whose sample this frame was usable."""
    rejected: np.ndarray
    """(3,) the devices whose sample was flagged tracked but was not usable."""
    dt: float
    """Seconds since the previous frame (a pause: one nominal frame)."""
    target: np.ndarray
    """(3,) the centre of the head on the floor."""
    hmd_height: float
    """The HMD's height as held, not eased back (regained.py): what the user's standing height is measured from."""
    teleported: bool
    """The target moved farther than the teleport distance since the previous frame, or the devices jumped
    (jumps.py: faster than a body moves, or a recentring turned them)."""


def hands_in_hmd_frame(positions: np.ndarray, rotations: np.ndarray, hmd_frame: np.ndarray):
    """The controllers' positions (2, 3) and rotations (2, 4) in the frame `hmd_frame` (the HMD's, hmd_frame_rotations)."""
    return (quat.inverse_rotate(hmd_frame, positions[1:] - positions[0]),
            quat.inverse_multiply(hmd_frame, rotations[1:]))


class HeldDevices:
    """The live state of the three devices: the last HMD pose, the controllers' last poses in the HMD's frame, the
    last target; counts of rejected samples and paused steps."""

    def __init__(self, fps: float, head_centre_from_hmd, teleport_distance_m: float):
        self.nominal_dt = 1.0 / fps
        self.head_centre = np.asarray(head_centre_from_hmd, dtype=float)
        self.teleport_distance_m = teleport_distance_m
        self.reset()

    def reset(self) -> None:
        self.hmd: tuple | None = None
        """The HMD's pose (position, rotation) in the last frame it was tracked in."""
        self.last_tracked: tuple | None = None
        """The device poses of the last frame all three were tracked in, while they still are."""
        self.hands_in_hmd_frame: tuple | None = None
        self.previous_target: np.ndarray | None = None
        self.previous: tuple | None = None
        """The last frame's devices as held (positions, rotations, tracked)."""
        self.rejected_samples = 0
        """Device samples flagged tracked that were not usable (non-finite, absurd) and counted as untracked."""
        self.paused_steps = 0
        """Steps whose dt was not finite, not positive or too long, taken as one frame."""
        self.regained = RegainedHeadset()

    def step(self, positions, rotations, tracked, dt: float, jump: bool = False) -> HeldFrame:
        """This frame's devices (poses (3, 3), (3, 4), tracking flags (3,), seconds since the last frame) as held
        (`jump`: known to have jumped since the last frame, teleported whatever this step's own test says);
        HMDNotTracked before the HMD's first usable sample."""
        dt, paused = step_seconds(dt, self.nominal_dt)
        self.paused_steps += paused
        positions, rotations, usable = usable_poses(positions, rotations, tracked)
        rejected = np.asarray(tracked, dtype=bool) & ~usable
        self.rejected_samples += int(rejected.sum())
        tracked = usable
        positions, rotations = self.hold(positions, rotations, tracked)
        positions, rotations = positions.copy(), rotations.copy()  # hold() keeps its own
        hmd_height = float(positions[0, 1])
        positions[0], rotations[0] = self.regained.eased(positions[0], rotations[0], bool(tracked[0]), dt,
                                                         None if self.previous is None else
                                                         (self.previous[0][0], self.previous[1][0]))
        target = head_on_floor(positions[0], rotations[0], self.head_centre)
        teleported = self.previous is not None and (
            jump or np.linalg.norm(target - self.previous_target) > self.teleport_distance_m
            or hmd_may_have_jumped((self.previous[0][0], self.previous[1][0]), (positions[0], rotations[0]), dt)
            and (jumped(target - self.previous_target, dt)
                 or turned_with_controllers(self.previous, (positions, rotations, tracked), dt) != 0.0))
        if teleported:
            self.regained.clear()
        self.previous_target, self.previous = target, (positions, rotations, tracked)
        return HeldFrame(positions, rotations, tracked, rejected, dt, target, hmd_height, bool(teleported))

    def hold(self, positions, rotations, tracked):
        """Device poses with untracked ones held: the HMD in the world, controllers relative to the HMD's frame."""
        if tracked.all():  # nothing to hold; the hands' poses in the HMD frame are found if tracking is lost
            positions, rotations = positions.copy(), rotations.copy()
            self.last_tracked = (positions, rotations)
            self.hmd = (positions[0], rotations[0])
            return positions, rotations
        if tracked[0]:
            self.hmd = (positions[0].copy(), rotations[0].copy())
        elif self.hmd is None:
            raise HMDNotTracked("the HMD has not been tracked yet: the solver needs its pose to place the avatar")
        if self.last_tracked is not None:
            seen_positions, seen_rotations = self.last_tracked
            self.hands_in_hmd_frame = hands_in_hmd_frame(seen_positions, seen_rotations,
                                                         hmd_frame_rotations(seen_rotations[0]))
            self.last_tracked = None
        elif self.hands_in_hmd_frame is None:
            self.hands_in_hmd_frame = (np.array(HANDS_BEFORE_TRACKED), quat.identity(2))
        positions, rotations = positions.copy(), rotations.copy()
        positions[0], rotations[0] = self.hmd
        hmd_frame = hmd_frame_rotations(rotations[0])
        local_positions, local_rotations = hands_in_hmd_frame(positions, rotations, hmd_frame)
        held_positions, held_rotations = self.hands_in_hmd_frame
        hands = tracked[1:]
        held_positions = np.where(hands[:, None], local_positions, held_positions)
        held_rotations = np.where(hands[:, None], local_rotations, held_rotations)
        self.hands_in_hmd_frame = (held_positions, held_rotations)
        positions[1:] = positions[0] + quat.rotate(hmd_frame, held_positions)
        rotations[1:] = quat.multiply(hmd_frame, held_rotations)
        return positions, rotations
