"""Solving a stream: the one factory of solvers (`load_solver`) and the offline driver (`solve`), for every method.

The command line and the add-on both describe a solve with a SolveConfig and call these; the methods and their
shared interface are in core/solution.py, core/hybrid, core/matching and core/n3p.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .anim.contacts import planted
from .anim.motion import Motion
from .config import CalibrationConfig, PhysicsConfig, SolveConfig
from .devices.calibration import StreamCalibration, calibrate_stream
from .devices.dropouts import dropouts_bridged
from .devices.plausibility import without_unusable_samples
from .files.stream import HELD_GAP_S, MAX_GAP_S, ThreePointStream
from .hybrid.solver import HybridSolver
from .matching.solver import load_matching_solver
from .n3p.model import N3PModel
from .n3p.solver import N3PSolver
from .orientation.facing import load_facing_model
from .solution import Progress, Solution, Solver

if TYPE_CHECKING:  # the physics pass's packages are optional (require_physics)
    from .physics.tracking import PhysicsResult


class DatabaseNeeded(ValueError):
    """The method asked for takes poses from motion databases and none was given."""


def load_solver(config: SolveConfig = SolveConfig(), database_paths=()) -> Solver:
    """The solver `config` describes; `database_paths` are the motion databases of motion matching and the hybrid's
    matched legs (DatabaseNeeded when they need one and none is given; unused by the other methods)."""
    database_paths = list(database_paths or ())
    if config.needs_database and not database_paths:
        what = "motion matching (mm)" if config.method == "mm" else "the hybrid with matched legs"
        raise DatabaseNeeded(f"{what} takes poses from a motion database: build one (python -m core db build) and "
                             "give it, or solve with the default method (hybrid), which needs none")
    height = config.standing_hmd_height_m
    if config.method == "mm":
        return load_matching_solver(database_paths, config.matching, config.orientation, height, config.arm_span_m)
    predictor = N3PSolver(N3PModel.load(config.model) if config.model else N3PModel.load(), config.n3p, height)
    if config.method == "n3p":
        return predictor
    if config.needs_database:
        matching = load_matching_solver(database_paths, config.matching, config.orientation, height)
        return HybridSolver(predictor, None, config.hybrid, matching)
    return HybridSolver(predictor, load_facing_model(config.orientation), config.hybrid)


def solve(stream: ThreePointStream, solver: Solver,
          calibration: CalibrationConfig | StreamCalibration | None = CalibrationConfig(),
          progress: Progress | None = None) -> Solution:
    """The offline driver: calibrate the devices (calibration.py: a calibration found in the stream's first
    seconds, or the one given, re-expresses the controllers as held the way the solver assumes; None: as they
    are), then the solver's own offline solve, `progress` told the share of it done. The result has one frame per
    1/fps s of the stream (`ThreePointStream.frames_at`) whatever the method."""
    if isinstance(calibration, CalibrationConfig):
        calibration = calibrate_stream(without_unusable_samples(stream)[0], calibration, solver.devices)
    if calibration is not None:
        stream = calibration.apply(stream, solver.devices)
    stream = dropouts_bridged(stream)
    gaps = LongGaps.of(stream)
    solution = solver.solve(gaps.closed(stream), progress)
    expected = gaps.closed(stream).frames_at(solver.fps)
    if len(solution.motion) != expected:
        raise RuntimeError(f"the {solver.method} solve made {len(solution.motion)} frames where the stream's timeline "
                           f"at {solver.fps:g} fps has {expected}")
    solution = gaps.reopened(solution, stream)
    solution.calibration = calibration
    return solution


def solver_contacts(solution: Solution) -> np.ndarray | None:
    """(F, 2) where the solver had each foot planted, frame by frame, or None where it keeps no contacts."""
    contacts = solution.contacts
    if contacts is None or len(contacts) != len(solution.motion):
        return None
    return planted(contacts)


def with_physics(solution: Solution, config: PhysicsConfig = PhysicsConfig(),
                 progress: Progress | None = None) -> Solution:
    """The solve with its motion replaced by a simulated body's that tracks it (core/physics/), and that pass's
    figures; the body holds the feet the solver has planted (its own contacts), and the figures count them as
    planted (else the solved toes' contact weights); `progress` told the share of frames simulated. Needs the
    `physics` requirements (mujoco, daqp): PhysicsUnavailable names them; the extension carries them."""
    return physics_pass(solution, config, progress)[0]


def physics_pass(solution: Solution, config: PhysicsConfig = PhysicsConfig(),
                 progress: Progress | None = None) -> tuple[Solution, PhysicsResult]:
    """(`with_physics`'s solution, the PhysicsResult it was made from: the simulated body, for figures an
    evaluation counts on the truth's contacts)."""
    require_physics()
    from .physics.tracked_points import track_to_the_devices
    from .physics.metrics import physics_figures, toe_contacts

    planted = solver_contacts(solution)
    result = track_to_the_devices(solution.motion, config, planted, progress)
    if planted is None:
        planted = toe_contacts(solution.motion)
    return replace(solution, motion=result.motion, physics=physics_figures(result, planted)), result


PHYSICS_PACKAGES = ("mujoco", "daqp")
"""What the physics pass imports beyond numpy."""


def require_physics() -> None:
    """PhysicsUnavailable, naming them, where the physics pass's packages do not import (not installed, or, as
    mujoco without its mujoco-core library on a platform it has no wheel for, installed in part)."""
    missing = []
    for name in PHYSICS_PACKAGES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise PhysicsUnavailable(f"the physics pass needs mujoco and daqp ({', '.join(missing)} not installed): "
                                 "pip install mujoco daqp")


class PhysicsUnavailable(ValueError):
    """The physics pass's packages are not installed."""


CLOSED_GAP_S = HELD_GAP_S + 1.0
"""A gap in the stream longer than this is solved as if it were this long (the avatar holds its pose through the
rest), so that a long gap costs no more than a short one; longer than HELD_GAP_S, so that a gap the devices are
interpolated across is never shortened."""


@dataclass(frozen=True)
class LongGaps:
    """The gaps between a stream's samples longer than CLOSED_GAP_S: where each starts and how much of it the solve
    skips."""

    starts: np.ndarray
    """Time of the last sample before each gap."""
    skipped: np.ndarray
    """Seconds of each gap beyond CLOSED_GAP_S."""

    @classmethod
    def of(cls, stream: ThreePointStream) -> "LongGaps":
        steps = np.diff(stream.times)
        found = np.flatnonzero(steps > CLOSED_GAP_S)
        too_long = found[steps[found] > MAX_GAP_S]
        if len(too_long):
            k = int(too_long[0])
            raise ValueError(f"the stream has no sample for {steps[k]:.0f} s after t = {stream.times[k]:.3f} s (more "
                             f"than {MAX_GAP_S / 60:g} minutes): cut it there and solve the parts")
        return cls(stream.times[found], steps[found] - CLOSED_GAP_S)

    def closed(self, stream: ThreePointStream) -> ThreePointStream:
        """The stream with each long gap shortened to CLOSED_GAP_S."""
        if not len(self.starts):
            return stream
        shift = np.searchsorted(self.starts, stream.times, side="left")
        offsets = np.concatenate([[0.0], np.cumsum(self.skipped)])[shift]
        return ThreePointStream(stream.times - offsets, stream.positions, stream.rotations, stream.tracked)

    def reopened(self, solution: Solution, stream: ThreePointStream) -> Solution:
        """A solution of the closed stream on the full stream's timeline: inside the skipped part of a gap the
        avatar holds the pose it had there."""
        if not len(self.starts):
            return solution
        fps = solution.motion.fps
        times = stream.times[0] + np.arange(stream.frames_at(fps)) / fps
        before = np.searchsorted(self.starts, times, side="right")  # gaps wholly or partly before each time
        cumulative = np.concatenate([[0.0], np.cumsum(self.skipped)])
        into = times - np.concatenate([[-np.inf], self.starts])[before]  # time since the last gap's start
        within = (before > 0) & (into <= CLOSED_GAP_S + self.skipped[np.maximum(before - 1, 0)])
        closed_times = np.where(within, times - cumulative[np.maximum(before - 1, 0)]
                                - np.maximum(0.0, into - CLOSED_GAP_S), times - cumulative[before])
        frames = np.clip(np.rint((closed_times - stream.times[0]) * fps).astype(int), 0, len(solution.motion) - 1)
        motion = solution.motion
        stepped = solution.stream
        tracked = stepped.tracked[frames] & ~(within & (into > CLOSED_GAP_S))[:, None]
        return replace(solution, motion=Motion(motion.skeleton, motion.rotations[frames], motion.positions[frames],
                                               motion.fps, motion.name),
                       stream=ThreePointStream(times, stepped.positions[frames], stepped.rotations[frames], tracked),
                       databases=solution.databases[frames], frames=solution.frames[frames],
                       targets=solution.targets[frames], searches=solution.searches[frames],
                       contacts=None if solution.contacts is None else solution.contacts[frames])
