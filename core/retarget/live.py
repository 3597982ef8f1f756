"""Live retargeting: a solver stepped one frame at a time onto a target skeleton, as the live preview drives it.

The retargeting is made on the first step (it sizes the avatar, `avatar_scale`, to the user's standing head as the
solver measures it; before the headset's first usable sample, at the avatar's own size), with the stances its feet
are held by, and, fitted to the user, made again if that height changes by more than REFIT_M (the user started bent
or crouched and stood up: devices/standing_height.py); each step solves the frame and carries it onto the target,
its head on the headset-implied head and its wrists on the controller-implied wrists.
"""
from __future__ import annotations

import numpy as np

from ..devices.attachments import joints_from_devices
from ..devices.live_calibration import LiveCalibration
from ..devices.plausibility import usable_poses
from .retargeting import Retargeting
from .stances import LiveStances
from .target import TargetSkeleton, avatar_scale


REFIT_M = 0.05
"""The avatar is sized anew when the user's measured standing head height moves this far from the one it was sized
for."""


class LiveRetargeting:
    """`solver` (a Solver) stepped onto `target`, sized by `size` ('fit' or 'keep'), the devices seen through
    `calibration` where one is given (devices/live_calibration.py)."""

    def __init__(self, solver, target: TargetSkeleton, size: str, calibration: LiveCalibration | None = None):
        self.solver, self.target, self.size, self.calibration = solver, target, size, calibration
        self.retargeting: Retargeting | None = None
        self.stances: LiveStances | None = None
        self.sized_for_m: float | None = None
        """The standing head height the retargeting was made for (NaN: none known then)."""

    def retargeting_for(self, head_height_m: float) -> Retargeting:
        """The retargeting onto the target, fitted (or not, by `size`) to the user's standing head height (this
        frame's head where the solver measures none), made once and again when that moves by REFIT_M."""
        standing = self.solver.standing_height_m
        if standing is not None:
            head_height_m = standing - self.solver.devices.hmd_from_head[1]
        if self.retargeting is None or self.size == "fit" and np.isfinite(head_height_m) and (
                not np.isfinite(self.sized_for_m) or abs(head_height_m - self.sized_for_m) > REFIT_M):
            self.sized_for_m = head_height_m
            known = np.isfinite(head_height_m)
            scale = avatar_scale(self.target, head_height_m if known else self.target.head_height(), self.size)
            standing = self.solver.standing_motion()
            self.retargeting = Retargeting.between(self.solver.skeleton, self.solver.mapping, self.target, standing,
                                                   scale)
            self.stances = LiveStances.of(standing)
        return self.retargeting

    def step(self, positions, rotations, tracked, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """(global rotations (1, J, 4), global positions (1, J, 3)) of the target this frame, core's frame; the
        devices' unusable samples count as untracked. The headset must be usable on the first step."""
        if self.calibration is not None:
            positions, rotations = self.calibration.step(positions, rotations, tracked, dt)
        positions, rotations, usable = usable_poses(positions, rotations, tracked)  # dropped here as by the solver
        motion = self.solver.step(positions, rotations, usable, dt)
        joints = joints_from_devices(positions, rotations, self.solver.offsets)
        heads = np.where(usable[0], joints[0], np.nan)
        retargeting = self.retargeting_for(float(joints[0, 1]))
        return retargeting.apply(motion, joints[None, 1:], head_targets=heads[None], stances=self.stances)
