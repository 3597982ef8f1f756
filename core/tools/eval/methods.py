"""Side by side: motion matching (MMVR) and the Neural3Points predictor (direct mode) on the same simulated streams.

Each clip becomes a stream with look-around; every method solves it; the output is scored with SPEC
§5 against the clip. Methods (SPEC §4 keys): `hybrid` (the default method, core/hybrid: the predictor's
body with the orientation model's facing and the foot lock), `mm` (the motion-matching solver with its defaults),
`n3p` (the shipped predictor with its IK) and `n3p_hmd_only` (the same model ignoring the
controllers, §8.2). With `--attachment-noise` every method also solves streams whose controllers are
held differently from what the solvers assume (random per clip: up to 3 cm off the grip, turned up
to 15°), each starting with the calibration gesture (calibration.py), as `<method>+noise` (calibrated,
as solve does by default) and `<method>+noise_uncalibrated`; the gesture's frames are not scored. With
`--device-noise` every method also solves the streams as a real headset writes them (config.DeviceNoise: 72-120
Hz, jittered millisecond timestamps 10-30 ms late, gaps, position noise, rounded quaternions, controller
dropouts), as `<method>+device_noise`; with both, also held off and calibrated from the gesture read through
the device's noise, as `<method>+noise+device_noise`. With `--two-handed M` every method also solves the streams with the left
controller tied to the right one on a shared object, M metres along the right fist, as `<method>+two_handed`: its
`hand_cm` is over the frames the person could reach (the clip's arm's length plus 10 cm of torso turn from its
shoulder; `reachable` says how many). With `--grip NAME` every method also solves the streams with the controllers
reported as the named grip (devices/grips.py: SteamVR's device pose of an Index controller, ...), not told, as
`<method>+NAME`. With `--physics` every method also solves with the physics pass after it (core/physics: a simulated
body tracking the solve), as `<method>+physics`, with its floor penetration, float (while the solver has a foot
planted), root residual and balance figures.
Figures are frame-weighted means over the clips, per activity and per file, with `foot_skate_ratio`
(the method's foot skating over the truth's);
`ms_per_frame` is per frame of each method's own rate (`fps`: 60 for mm, 30 for n3p). The plot is
the paper's Figures 6-7 for these methods: foot skating per test set (here each activity of the
validation files), the ground truth's beside it, contacts from the toe height (Figure 7's reading).
"""
from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from ...config import CalibrationConfig, DeviceNoise, N3PConfig, SimulationConfig, MatchingConfig
from ...devices.grips import GRIPS
from ...files.atomic import check_outputs, save_figure
from ...files.mocap import find_bvh_files
from ..mocap_split import default_database_files, read_humanoid
from ...hybrid.solver import HybridSolver
from ...matching.pose_database import PoseDatabase, build_database
from ...matching.solver import MatchingDatabase, MotionMatchingSolver
from ...n3p.model import SHIPPED_MODEL as N3P_MODEL, N3PModel
from ...n3p.solver import N3PSolver
from ...orientation.window_model import load_orientation_model
from ..arguments import (add_data_arguments, add_json_argument, add_selection_arguments, print_progress, scored_clips,
                         selected_files)
from ...solve import physics_pass
from ...anim.motion import Motion
from ...solution import Solution, progress_between, standing_height, with_progress
from .matching import LOOK_AROUND_DEG, METRICS, PHYSICS, score_solvers

METHODS = ("hybrid", "mm", "n3p", "n3p_hmd_only")
DEFAULT_METHODS = METHODS
ATTACHMENT_NOISE = {"attachment_noise_m": 0.03, "attachment_noise_deg": 15.0, "calibration_pose_s": 2.0}
"""Issue 28's devices held differently (per clip, random), and the calibration gesture before each clip."""
NOISE_ROWS = {"+noise": CalibrationConfig(), "+noise_uncalibrated": None}
PLOTTED = {"foot_skate_cm_s": "foot skating (cm/s, SPEC §5)", "mpjpe_cm": "MPJPE (cm)"}
PAPER = {"mpjpe_cm": 5.52, "mpjpe_cm_upper": 3.76, "mpjpe_cm_lower": 7.88}
"""Neural3Points Table 2, direct mode, on its own data (a 30 s held-out walk with waving)."""


def solvers(methods, database: PoseDatabase | None, model: N3PModel) -> dict:
    """One solver per method (`database` for `mm` only); the orientation model is loaded once for `mm` and
    `hybrid`."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method {unknown[0]!r}; methods are {', '.join(METHODS)}")
    orientation = load_orientation_model()
    made = {}
    for method in methods:
        if method == "mm":
            made[method] = MotionMatchingSolver([MatchingDatabase.prepare(database, MatchingConfig())], MatchingConfig(),
                                                orientation)
        elif method == "n3p":
            made[method] = N3PSolver(model)
        elif method == "n3p_hmd_only":
            made[method] = N3PSolver(model, N3PConfig(hmd_only=True))
        else:
            made[method] = HybridSolver(N3PSolver(model), orientation)
    return made


class Wrapped:
    """A solver that solves another way: everything but `solve` is the inner solver's."""

    def __init__(self, solver):
        self.inner = solver

    def __getattr__(self, name):
        return getattr(self.inner, name)


class WithPhysics(Wrapped):
    """A solver whose offline solve is followed by the physics pass (core.solve.with_physics)."""

    def __init__(self, solver):
        super().__init__(solver)
        self.result = None
        """The last solve's PhysicsResult (its simulated body: score_solvers counts float and balance with it)."""

    def solve(self, stream, progress=None):
        solution, self.result = physics_pass(self.inner.solve(stream, progress_between(progress, 0.0, 0.5)),
                                             progress=progress_between(progress, 0.5, 1.0))
        return solution


class LiveSteps(Wrapped):
    """A solver whose solve steps it live, one `step` per sample with the sample's interval, as the add-on's Live
    Preview and the OpenXR loop drive it: the output has a frame per sample."""

    def __init__(self, solver):
        super().__init__(solver)
        self.fps = solver.fps
        """The output's rate: the last stream's sampling rate (its frames are the samples)."""

    def solve(self, stream, progress=None):
        self.inner.reset()
        intervals = np.diff(stream.times, prepend=stream.times[0] - float(np.median(np.diff(stream.times))))
        self.fps = 1.0 / float(np.median(intervals))
        frames, contacts = [], []
        for k in with_progress(range(len(stream)), progress):
            frames.append(self.inner.step(stream.positions[k], stream.rotations[k], stream.tracked[k],
                                          float(intervals[k])))
            contacts.append(getattr(self.inner, "contacts", None))
        motion = Motion(frames[0].skeleton, np.concatenate([f.rotations for f in frames]),
                        np.concatenate([f.positions for f in frames]), self.fps, "live")
        count = len(motion)
        return Solution(motion, stream, np.zeros(count, int), np.zeros(count, int), np.zeros((count, 3)),
                        np.zeros(count, bool), standing_height(stream, 0.5), self.inner.method,
                        contacts=None if any(c is None for c in contacts) else np.array(contacts, dtype=float))


def evaluate(files, database: PoseDatabase | None, model: N3PModel, methods=DEFAULT_METHODS,
             simulation: SimulationConfig = SimulationConfig(look_around_deg=LOOK_AROUND_DEG), progress=None,
             attachment_noise: bool = False, device_noise: bool = False, two_handed_m: float = 0.0,
             grip: str = "openxr", physics: bool = False, live_hz: float = 0.0) -> dict:
    """Figures per method (and with `attachment_noise` its NOISE_ROWS, with `device_noise` its +device_noise row,
    with both its +noise+device_noise row: held off, calibrated from the gesture read through the device's noise,
    with `two_handed_m` its +two_handed row, with a named `grip` its +grip row, with `physics` its +physics row,
    with `live_hz` its +live row: the streams simulated at that rate and stepped live), per activity and per file."""
    made = solvers(methods, database, model)
    result = score_solvers(files, made, simulation, progress)
    if physics:
        rows = score_solvers(files, {m + "+physics": WithPhysics(s) for m, s in made.items()}, simulation, progress)
        result.update({method + "+physics": rows[method + "+physics"] for method in made})
    if attachment_noise:
        noisy = replace(simulation, **ATTACHMENT_NOISE)
        for suffix, calibration in NOISE_ROWS.items():
            rows = score_solvers(files, made, noisy, progress, calibration)
            result.update({method + suffix: rows[method] for method in made})
    if device_noise:
        rows = score_solvers(files, made, replace(simulation, device_noise=DeviceNoise()), progress)
        result.update({method + "+device_noise": rows[method] for method in made})
        if attachment_noise:  # a real headset held differently: the gesture read through the device's noise
            rows = score_solvers(files, made, replace(simulation, device_noise=DeviceNoise(), **ATTACHMENT_NOISE),
                                 progress, CalibrationConfig())
            result.update({method + "+noise+device_noise": rows[method] for method in made})
    if two_handed_m > 0:
        rows = score_solvers(files, made, replace(simulation, two_handed_m=two_handed_m), progress)
        result.update({method + "+two_handed": rows[method] for method in made})
    if grip != "openxr":
        rows = score_solvers(files, made, replace(simulation, grip=grip), progress)
        result.update({f"{method}+{grip}": rows[method] for method in made})
    if live_hz > 0:
        rows = score_solvers(files, {m: LiveSteps(s) for m, s in made.items()}, replace(simulation, fps=live_hz),
                             progress)
        result.update({method + "+live": rows[method] for method in made})
    result["paper_n3p_direct"] = PAPER
    return result


def rows_of(result: dict) -> list[str]:
    """The method rows of an evaluate() result, in order."""
    return [key for key, value in result.items() if isinstance(value, dict) and "activities" in value]


def plot_per_activity(result: dict, methods, path: Path, metric: str = "foot_skate_cm_s") -> None:
    """Grouped bars: `metric` per activity for each method (Figures 6-7), the ground truth beside foot skating."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    activities = list(result[methods[0]]["activities"])
    series = {m: [result[m]["activities"][a][metric] for a in activities] for m in methods}
    if metric == "foot_skate_cm_s":
        series["ground truth"] = [result[methods[0]]["activities"][a]["foot_skate_gt_cm_s"] for a in activities]
    figure, axes = pyplot.subplots(figsize=(max(7.0, 0.2 * len(activities) * len(series) + 3), 4.5))
    width = 0.8 / len(series)
    x = np.arange(len(activities))
    for k, (name, values) in enumerate(series.items()):
        axes.bar(x + (k - (len(series) - 1) / 2) * width, values, width, label=name)
    axes.set_xticks(x, activities, rotation=30, ha="right")
    axes.set_ylabel(PLOTTED[metric])
    axes.set_title(f"{PLOTTED[metric].split(' (')[0]} per activity and method")
    axes.legend(fontsize="small")
    figure.tight_layout()
    try:
        save_figure(path, figure, dpi=100)
    finally:
        pyplot.close(figure)


def mpjpe_plot(path: str | None) -> str | None:
    """The MPJPE plot written beside the foot-skating plot `path`."""
    return str(Path(path).with_name(Path(path).stem + "_mpjpe.png")) if path else None


def run(args) -> int:
    """Solve simulated streams with motion matching and Neural3Points; score both against the clips (SPEC §5)."""
    check_outputs([args.plot or None, mpjpe_plot(args.plot)], [args.db, args.model], make_folders=True)
    database = PoseDatabase.load(args.db) if "mm" in args.methods and args.db else None
    files = scored_clips(selected_files(args))
    if "mm" in args.methods:
        if database is None:
            chosen = default_database_files(find_bvh_files(args.data))
            print(f"eval full: building the default database from {len(chosen)} training clips (--db to reuse one)",
                  file=sys.stderr)
            database = build_database([read_humanoid(f) for f in chosen], sources=chosen)
    model = N3PModel.load(args.model or N3P_MODEL)
    print(f"eval full: {len(files)} clips, methods {', '.join(args.methods)}", file=sys.stderr)
    result = evaluate(files, database, model, args.methods,
                      SimulationConfig(look_around_deg=args.look_around, body_scale=args.body_scale),
                      print_progress, args.attachment_noise, args.device_noise, args.two_handed, args.grip,
                      args.physics, args.live)
    for method in rows_of(result):
        figures = result[method]
        print(f"{method:26s} " + " ".join(f"{k}={figures[k]}" for k in METRICS + (
            "foot_skate_gt_cm_s", "foot_skate_ratio", "ms_per_frame") + PHYSICS if k in figures), file=sys.stderr)
    if args.plot:
        plots = {"foot_skate_cm_s": Path(args.plot), "mpjpe_cm": Path(mpjpe_plot(args.plot))}
        try:
            for metric, path in plots.items():
                plot_per_activity(result, rows_of(result), path, metric)
            result["plot"], result["plot_mpjpe"] = str(plots["foot_skate_cm_s"]), str(plots["mpjpe_cm"])
        except ImportError as error:
            result["plot_missing"] = f"matplotlib is not installed ({error})"
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


def add_command(eval_group) -> None:
    parser = eval_group.add_parser("full", help=run.__doc__, description=__doc__)
    add_data_arguments(parser)
    parser.add_argument("--db", help="mm: motion-matching database (default: built from the data's training locomotion)")
    parser.add_argument("--model", help="Neural3Points model file (default: the shipped assets/n3p.npz)")
    parser.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS), choices=METHODS,
                        help="methods to run (default: all; hybrid is the default method)")
    parser.add_argument("--look-around", type=float, default=LOOK_AROUND_DEG, metavar="DEG",
                        help=f"look-around added to the simulated streams (default {LOOK_AROUND_DEG:g})")
    parser.add_argument("--attachment-noise", action="store_true",
                        help="also solve with the controllers held up to 3 cm and 15 deg off, after the calibration "
                             "gesture: rows METHOD+noise (calibrated) and METHOD+noise_uncalibrated")
    parser.add_argument("--body-scale", type=float, default=1.0, metavar="S",
                        help="the people are S times the clips' actors' size (default 1)")
    parser.add_argument("--device-noise", action="store_true",
                        help="also solve the streams as a real headset writes them (stream simulate --device-noise): "
                             "rows METHOD+device_noise")
    parser.add_argument("--two-handed", type=float, default=0.0, metavar="M",
                        help="also solve the streams with the left controller tied to the right one, M metres along "
                             "the right fist (a two-handed hold): rows METHOD+two_handed, hand_cm over the frames "
                             "a person of the clip's size could reach (`reachable`)")
    parser.add_argument("--physics", action="store_true",
                        help="also every method followed by the physics pass (core/physics), as <method>+physics")
    parser.add_argument("--live", type=float, default=0.0, metavar="HZ",
                        help="also simulate the streams at HZ and step each method live, a sample at a time (the "
                             "add-on's Live Preview): rows METHOD+live")
    parser.add_argument("--grip", choices=GRIPS, default="openxr",
                        help="also solve the streams with the controllers reported as this named grip, the solvers "
                             "not told (no calibration gesture): rows METHOD+GRIP")
    add_selection_arguments(parser)
    parser.add_argument("--plot", default="out/eval_full_foot_skate.png",
                        help="foot-skating plot per activity (PNG; '' for none); the MPJPE plot goes beside it as "
                             "NAME_mpjpe.png")
    add_json_argument(parser)
    parser.set_defaults(run=run)
