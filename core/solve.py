"""Solving a stream: the one factory of solvers (`load_solver`) and the offline driver (`solve`), for every method.

The command line and the add-on both describe a solve with a SolveConfig and call these; the methods and their
shared interface are in core/solution.py, core/hybrid, core/matching and core/n3p.
"""
from __future__ import annotations

from .config import CalibrationConfig, SolveConfig
from .devices.calibration import StreamCalibration, calibrate_stream
from .devices.plausibility import without_unusable_samples
from .files.stream import ThreePointStream
from .hybrid.solver import HybridSolver
from .matching.solver import load_matching_solver
from .n3p.model import N3PModel
from .n3p.solver import N3PSolver
from .orientation.facing import load_facing_model
from .solution import Solution, Solver


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
          calibration: CalibrationConfig | StreamCalibration | None = CalibrationConfig()) -> Solution:
    """The offline driver: calibrate the devices (calibration.py: a calibration found in the stream's first
    seconds, or the one given, re-expresses the controllers as held the way the solver assumes; None: as they
    are), then the solver's own offline solve. The result has one frame per 1/fps s of the stream
    (`ThreePointStream.frames_at`) whatever the method."""
    if isinstance(calibration, CalibrationConfig):
        calibration = calibrate_stream(without_unusable_samples(stream)[0], calibration, solver.devices)
    if calibration is not None:
        stream = calibration.apply(stream, solver.devices)
    solution = solver.solve(stream)
    expected = stream.frames_at(solver.fps)
    if len(solution.motion) != expected:
        raise RuntimeError(f"the {solver.method} solve made {len(solution.motion)} frames where the stream's timeline "
                           f"at {solver.fps:g} fps has {expected}")
    solution.calibration = calibration
    return solution
