"""Side by side: motion matching (MMVR) and the Neural3Points predictor (direct mode) on the same simulated streams.

Each clip becomes a stream with look-around; every method solves it; the output is scored with SPEC
§5 against the clip. Methods (SPEC §4 keys): `mm` (the motion-matching solver with its defaults),
`n3p` (the shipped predictor with its IK) and `n3p_hmd_only` (the same model ignoring the
controllers, §8.2). Figures are frame-weighted means over the clips, per activity and per file;
`ms_per_frame` is per frame of each method's own rate (`fps`: 60 for mm, 30 for n3p). The plot is
the paper's Figures 6-7 for these methods: foot skating per test set (here each activity of the
validation files), the ground truth's beside it, contacts from the toe height (Figure 7's reading).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from .atomic import check_outputs, save_figure
from .bvh import read_bvh
from .config import N3PConfig, SimulationConfig, SolverConfig
from .eval_matching import LOOK_AROUND_DEG, METRICS, score_solvers
from .mocap import add_data_arguments, add_selection_arguments, default_database_files, find_bvh_files, \
    print_progress, selected_files
from .n3p_model import SHIPPED_MODEL as N3P_MODEL, N3PModel
from .n3p_solver import N3PSolver
from .orientation_window import load_orientation_model
from .pose_database import PoseDatabase, build_database
from .solver import Solver

METHODS = ("mm", "n3p", "n3p_hmd_only")
PAPER = {"mpjpe_cm": 5.52, "mpjpe_cm_upper": 3.76, "mpjpe_cm_lower": 7.88}
"""Neural3Points Table 2, direct mode, on its own data (a 30 s held-out walk with waving)."""


def solvers(methods, database: PoseDatabase | None, model: N3PModel) -> dict:
    made = {}
    for method in methods:
        if method == "mm":
            made[method] = Solver([database], SolverConfig(), load_orientation_model())
        elif method == "n3p":
            made[method] = N3PSolver(model)
        elif method == "n3p_hmd_only":
            made[method] = N3PSolver(model, N3PConfig(hmd_only=True))
        else:
            raise ValueError(f"unknown method {method!r}; methods are {', '.join(METHODS)}")
    return made


def evaluate(files, database: PoseDatabase | None, model: N3PModel, methods=METHODS,
             simulation: SimulationConfig = SimulationConfig(look_around_deg=LOOK_AROUND_DEG), progress=None) -> dict:
    """Figures per method, per activity and per file."""
    result = score_solvers(files, solvers(methods, database, model), simulation, progress)
    result["paper_n3p_direct"] = PAPER
    return result


def plot_foot_skating(result: dict, methods, path: Path) -> None:
    """Grouped bars: foot skating per activity for each method and the ground truth (Figures 6-7)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    activities = list(result[methods[0]]["activities"])
    series = {m: [result[m]["activities"][a]["foot_skate_cm_s"] for a in activities] for m in methods}
    series["ground truth"] = [result[methods[0]]["activities"][a]["foot_skate_gt_cm_s"] for a in activities]
    figure, axes = pyplot.subplots(figsize=(max(7.0, 0.55 * len(activities) + 3), 4.5))
    width = 0.8 / len(series)
    x = np.arange(len(activities))
    for k, (name, values) in enumerate(series.items()):
        axes.bar(x + (k - (len(series) - 1) / 2) * width, values, width, label=name)
    axes.set_xticks(x, activities, rotation=30, ha="right")
    axes.set_ylabel("foot skating (cm/s, SPEC §5)")
    axes.set_title("Foot contact stability per test set (validation activities)")
    axes.legend()
    figure.tight_layout()
    try:
        save_figure(path, figure, dpi=100)
    finally:
        pyplot.close(figure)


def run(args) -> int:
    """Solve simulated streams with motion matching and Neural3Points; score both against the clips (SPEC §5)."""
    check_outputs([args.plot], [args.db, args.model], make_folders=True)
    database = PoseDatabase.load(args.db) if "mm" in args.methods and args.db else None
    files = selected_files(args)
    if "mm" in args.methods:
        if database is None:
            chosen = default_database_files(find_bvh_files(args.data))
            print(f"eval full: building the default database from {len(chosen)} training clips (--db to reuse one)",
                  file=sys.stderr)
            database = build_database([read_bvh(f) for f in chosen])
    model = N3PModel.load(args.model or N3P_MODEL)
    print(f"eval full: {len(files)} clips, methods {', '.join(args.methods)}", file=sys.stderr)
    result = evaluate(files, database, model, args.methods, SimulationConfig(look_around_deg=args.look_around),
                      print_progress)
    for method in args.methods:
        figures = result[method]
        print(f"{method:13s} " + " ".join(f"{k}={figures[k]}" for k in METRICS + (
            "foot_skate_gt_cm_s", "ms_per_frame")), file=sys.stderr)
    if args.plot:
        try:
            plot_foot_skating(result, list(args.methods), Path(args.plot))
            result["plot"] = str(args.plot)
        except ImportError as error:
            result["plot_missing"] = f"matplotlib is not installed ({error})"
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


def add_command(eval_group) -> None:
    parser = eval_group.add_parser("full", help=run.__doc__, description=__doc__)
    add_data_arguments(parser)
    parser.add_argument("--db", help="motion-matching database (default: built from the data's training locomotion)")
    parser.add_argument("--model", help="Neural3Points model file (default: the shipped assets/n3p.npz)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS, help="methods to run")
    parser.add_argument("--look-around", type=float, default=LOOK_AROUND_DEG, metavar="DEG",
                        help=f"look-around added to the simulated streams (default {LOOK_AROUND_DEG:g})")
    add_selection_arguments(parser)
    parser.add_argument("--plot", default="out/eval_full_foot_skate.png", help="foot-skating plot (PNG; '' for none)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
