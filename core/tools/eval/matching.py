"""Evaluating the three-point solver (MMVR §7.2-7.3) on simulated streams against the mocap they came from.

Each clip becomes a stream with look-around (SimulationConfig), is solved, and the solved motion is
scored with SPEC §5 against the clip. Methods (SPEC §4 keys): `mm` (defaults), `hmd_forward` (the
body faces where the HMD looks), `db10` / `db25` (the database cut to 10 % / 25 % of its poses, the
paper's Figure 7) and `alpha_0.1` (alpha = 0.1 m instead of 0.3 m, Figure 8). Figures are means
over all frames of all clips; `poses_used` counts the distinct database poses played.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import replace

import numpy as np

from ...config import CalibrationConfig, SimulationConfig, MatchingConfig
from ...devices.attachments import joints_from_devices
from ...devices.simulate import simulate_stream
from ..mocap_split import read_humanoid
from ...files.mocap import activity
from ...matching.pose_database import PoseDatabase
from ...matching.solver import MatchingDatabase, MotionMatchingSolver
from ...solve import solve
from ...orientation.window_model import load_orientation_model
from ...quality.metrics import score_motion, within_reach
from ..arguments import (add_data_arguments, add_json_argument, add_selection_arguments, print_progress, scored_clips,
                         selected_files)

METHODS = ("mm", "hmd_forward", "db10", "db25", "alpha_0.1")
LOOK_AROUND_DEG = 30.0
"""Head yaw added to the simulated streams: users look around, actors mostly do not."""
PAPER = {"root_cm": {"mm": 19.0, "db25": 22.0, "db10": 27.0}, "poses_used": {"mm": 6932, "alpha_0.1": 5715}}
"""MMVR §7.2-7.3: mean positional error per database size; distinct poses used at alpha 0.3 / 0.1 m."""
METRICS = ("root_cm", "angle_deg", "mpjpe_cm", "mpjpe_cm_upper", "mpjpe_cm_lower", "head_cm", "hand_cm",
           "hand_turn_deg", "foot_skate_cm_s", "jitter")
PHYSICS = ("floor_penetration_cm", "body_penetration_cm", "float_cm", "residual_force_n", "residual_torque_nm",
           "balance_frames", "balance_frames_gt", "reset_frames")
"""The physics pass's own figures (core/physics/metrics.py), frame-weighted where a row has them; float and balance
counted on the frames where the truth has its feet planted (SPEC §5's float), and weighted by the frames they count
(COUNTED_OVER);
`balance_frames_gt`: the truth's own balance by the same rule (its own body, soles and toe contacts);
`reset_frames`: the share of frames after the first where the simulation was put back onto its target."""
COUNTED_OVER = {"float_cm": "float_counted_frames", "balance_frames": "balance_counted_frames",
                "balance_frames_gt": "balance_counted_frames"}
"""The figures counted over some frames only, and the per-clip count of those frames they are weighted by."""


def solvers(database: PoseDatabase, config: MatchingConfig, model, methods) -> dict[str, MotionMatchingSolver]:
    """One solver per method; those over the whole database share its features and index."""
    made = {}
    whole = MatchingDatabase.prepare(database, config)
    for method in methods:
        if method == "mm":
            made[method] = MotionMatchingSolver([whole], config, model)
        elif method == "hmd_forward":
            made[method] = MotionMatchingSolver([whole], replace(config, orientation="hmd"))
        elif method in ("db10", "db25"):
            made[method] = MotionMatchingSolver([database.subset(int(method[2:]) / 100.0)], config, model)
        elif method == "alpha_0.1":
            made[method] = MotionMatchingSolver([whole], replace(config, alpha_m=0.1), model)
        else:
            raise ValueError(f"unknown method {method!r}; methods are {', '.join(METHODS)}")
    return made


def evaluate(files, database: PoseDatabase, config: MatchingConfig = MatchingConfig(), methods=METHODS,
             simulation: SimulationConfig = SimulationConfig(look_around_deg=LOOK_AROUND_DEG), model=None,
             progress=None) -> dict:
    """Figures per method (frame-weighted means over the clips), per activity and per file."""
    model = model or load_orientation_model()
    made = solvers(database, config, model, methods)
    result = score_solvers(files, made, simulation, progress)
    for method, solver in made.items():
        result[method]["database_poses"] = len(solver.databases[0].poses)
    result["paper"] = PAPER
    return result


def score_solvers(files, made: dict, simulation: SimulationConfig, progress=None,
                  calibration: CalibrationConfig | None = CalibrationConfig()) -> dict:
    """Every solver on every clip's simulated stream, scored against the clip (SPEC §5).

    Per method: frame-weighted figures, then per activity and per file; the time is the solve's alone.
    `calibration` as `solve` takes it. The hands are scored against the wrists the stream's controllers imply as
    really held (SimulatedStream.offsets) where it tracks them; frames of a calibration gesture before the clip
    are solved, not scored. With device noise the output's frame at stream time t is scored against the truth's
    at t minus the latency (a constant latency shifts a recording's clock; live it delays the avatar by as much).
    """
    rows = {m: [] for m in made}
    for i, path in enumerate(files):
        simulated = simulate_stream(read_humanoid(path), simulation)
        stream, clip = simulated.stream, slice(simulated.clip_start, None)
        on_truth = stream if simulated.exact is None else stream.sampled_at(simulated.exact.times + simulated.latency_s)
        implied = joints_from_devices(on_truth.positions, on_truth.rotations, simulated.offsets)[clip, 1:]
        hands_tracked = on_truth.tracked[clip, 1:]
        truth = simulated.truth[clip]
        reachable, truth_physics = None, {}
        if simulation.two_handed_m > 0:  # a hold the person's arms could not reach is no hand's failure
            reachable = within_reach(truth, implied)
            hands_tracked = hands_tracked[:len(reachable)] & reachable
        for method, solver in made.items():
            start = time.perf_counter()
            solution = solve(stream, solver, calibration)
            seconds = time.perf_counter() - start
            solved = solution.motion.resampled(truth.fps)[clip] if simulated.clip_start else solution.motion
            scores = score_motion(solved, truth, implied, hands_tracked)
            scores["foot_skate_gt_cm_s"] = scores.pop("foot_skate_cm_s_truth")
            scores["frames"] = len(solution.motion) - round(simulated.clip_start * solution.motion.fps / truth.fps)
            scores["seconds"] = seconds
            if reachable is not None:
                scores["reachable"] = float(reachable.mean())
            if solution.method == "mm":
                scores["poses"] = set(zip(solution.databases.tolist(), solution.frames.tolist()))
            if solution.physics:
                metrics = physics_metrics()
                scores.update({k: solution.physics[k] for k in PHYSICS if solution.physics.get(k) is not None})
                for name, value in metrics.on_truth_contacts(solution.motion.resampled(truth.fps)[clip],
                                                             solver.result.body, truth).items():  # a WithPhysics
                    scores.pop(name, None)
                    if value is not None:
                        scores[name] = value
                if "balance" not in truth_physics:  # once per clip, for the first method with physics
                    truth_physics["balance"] = metrics.truth_balance(truth)
                if truth_physics["balance"] is not None:
                    scores["balance_frames_gt"] = truth_physics["balance"]
            rows[method].append((path.stem, scores))
        if progress:
            progress(i + 1, len(files), path.stem)
    result = {}
    for method, r in rows.items():
        result[method] = summarise([s for _, s in r])
        result[method]["fps"] = made[method].fps
        groups: dict[str, list] = {}
        for name, scores in r:
            groups.setdefault(activity(name), []).append(scores)
        result[method]["activities"] = {a: summarise(g) for a, g in sorted(groups.items())}
        result[method]["files"] = {name: summarise([s]) for name, s in r}
    result["clips"] = len(files)
    return result


def physics_metrics():
    """core/physics/metrics.py, imported where a row has physics figures (its packages are there then): the
    truth-counted float and balance (`on_truth_contacts`) and the truth's own balance (`truth_balance`)."""
    from ...physics import metrics

    return metrics


def summarise(scores: list[dict]) -> dict:
    """Frame-weighted means of the per-clip figures, distinct poses used (where known) and the solve time per frame."""
    frames = np.array([s["frames"] for s in scores], dtype=float)
    out = {k: round(float(np.average([s[k] for s in scores], weights=frames)), 3)
           for k in METRICS + ("foot_skate_gt_cm_s", "jitter_truth")}
    out["foot_skate_ratio"] = round(out["foot_skate_cm_s"] / max(out["foot_skate_gt_cm_s"], 1e-9), 3)
    for key in PHYSICS:
        known = [(s[key], s.get(COUNTED_OVER.get(key), f)) for s, f in zip(scores, frames) if key in s]
        if known and sum(f for _, f in known) > 0:
            out[key] = round(float(np.average([v for v, _ in known], weights=[f for _, f in known])), 3)
    if all("reachable" in s for s in scores):
        reach = np.array([s["reachable"] for s in scores]) * frames
        hands = np.array([s["hand_cm"] for s in scores])
        known = reach > 0
        out["reachable"] = round(float(reach.sum() / frames.sum()), 3)
        out["hand_cm"] = round(float(np.average(hands[known], weights=reach[known])), 3) if known.any() else None
    if all("poses" in s for s in scores):
        out["poses_used"] = len(set().union(*(s["poses"] for s in scores)))
    out["ms_per_frame"] = round(1000.0 * sum(s["seconds"] for s in scores) / frames.sum(), 3)
    out["frames"] = int(frames.sum())
    return out


def run(args) -> int:
    """Solve simulated streams of mocap clips and score them against the clips (SPEC §5)."""
    database = PoseDatabase.load(args.db)  # a missing or damaged database is named before the clips are sought
    files = scored_clips(selected_files(args))
    config = MatchingConfig(alpha_m=args.alpha)
    print(f"eval matching: {len(files)} clips, database {args.db} ({len(database)} poses)", file=sys.stderr)

    model = load_orientation_model(args.orientation) if args.orientation else None
    result = evaluate(files, database, config, args.methods, SimulationConfig(look_around_deg=args.look_around),
                      model, print_progress)
    for method in args.methods:
        figures = result[method]
        print(f"{method:12s} " + " ".join(f"{k}={figures[k]}" for k in METRICS + (
            "foot_skate_gt_cm_s", "poses_used", "ms_per_frame")), file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


def add_command(eval_group) -> None:
    parser = eval_group.add_parser("matching", help=run.__doc__, description=__doc__)
    add_data_arguments(parser)
    parser.add_argument("--db", required=True, help="pose database (python -m core db build)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS, help="methods to run")
    parser.add_argument("--alpha", type=float, default=MatchingConfig.alpha_m, help="position accuracy, m (default 0.3)")
    parser.add_argument("--orientation", help="orientation model file (default: the shipped network)")
    parser.add_argument("--look-around", type=float, default=LOOK_AROUND_DEG, metavar="DEG",
                        help=f"look-around added to the simulated streams (default {LOOK_AROUND_DEG:g})")
    add_selection_arguments(parser)
    add_json_argument(parser)
    parser.set_defaults(run=run)
