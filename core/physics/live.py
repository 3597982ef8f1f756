"""The physics pass live: a solver's every step followed by the simulated body, frame by frame, with the
PhysicsTracker the offline pass uses (the add-on's Live Preview with Physics on)."""
from __future__ import annotations

import numpy as np

from ..anim.contacts import planted
from ..anim.motion import Motion
from ..config import PhysicsConfig
from ..solution import repeats_last_frame
from .body import simulated_body
from .tracked_points import on_the_devices, tracked_chains
from .tracking import PhysicsTracker, motion_of, target_poses


REBUILT_M = 0.01
"""The body is built anew when the solver's skeleton has changed this much (it fits the user's arms to the reach
it sees over the first seconds)."""
REBUILT_EVERY_S = 0.5
"""Not more often than this (stream time): while a headset is lifted from a table to the head, the skeleton fitted to
the user changes every step, and a rebuild costs more than a 90 Hz frame."""


class PhysicalSolver:
    """`solver` (a Solver) whose live steps come out as the simulated body's poses; everything else is the solver's.
    The body is built from the skeleton the solver steps (fitted to the user), its soles under the feet of the
    solver's standing motion where that has the same skeleton, else of the step's."""

    def __init__(self, solver, config: PhysicsConfig = PhysicsConfig()):
        self.solver, self.config = solver, config
        self.body, self.tracker, self.neck, self.arms = None, None, None, None
        self.last: Motion | None = None
        """The last frame's pose, given again for a frame no later than it."""
        self.residual_force_n = 0.0
        """The root's residual force over the last step (N)."""
        self.since_built_s = 0.0
        """Stream time since the body was last built."""

    def __getattr__(self, name: str):
        return getattr(self.solver, name)

    def rebuild(self, motion: Motion) -> None:
        """The body built for the skeleton `motion` is on; a body already moving goes on from its pose and speed."""
        standing, earlier = self.solver.standing_motion(), self.tracker
        self.body = simulated_body(motion.skeleton, self.config,
                                   standing if standing.skeleton == motion.skeleton else motion)
        self.tracker = PhysicsTracker(self.body, self.config)
        self.neck, self.arms = tracked_chains(motion)
        self.since_built_s = 0.0
        if earlier is not None:
            self.tracker.go_on_from(earlier)

    def reset(self, standing_hmd_height_m: float | None = None) -> None:
        """Forget the user; the next step builds the body anew on the solver's pose."""
        self.solver.reset(standing_hmd_height_m)
        self.body, self.tracker, self.last = None, None, None

    def step(self, positions: np.ndarray, rotations: np.ndarray, tracked: np.ndarray, dt: float) -> Motion:
        """The solver's step, followed by the simulated body for `dt` seconds (a frame no later than the last:
        the last pose again)."""
        if self.last is not None and repeats_last_frame(dt):
            return self.last
        motion = self.solver.step(positions, rotations, tracked, dt)
        if np.isfinite(dt) and dt > 0.0:
            self.since_built_s += dt
        if self.body is None or (self.since_built_s >= REBUILT_EVERY_S and
                                 np.abs(self.body.skeleton.offsets - motion.skeleton.offsets).max() > REBUILT_M):
            self.rebuild(motion)
        contacts = getattr(self.solver, "contacts", None)
        step = self.tracker.step(target_poses(motion, self.body)[0], dt,
                                 None if contacts is None else planted(contacts))
        self.residual_force_n = step.residual_force_n
        self.last = on_the_devices(motion_of(step.qpos[None], motion, self.body), motion, self.config, self.neck,
                                   self.arms)
        return self.last
