"""Evaluating body-orientation prediction (MMVR §7.4): the network, HMD-forward and the r = 1 ablation.

Streams are simulated from mocap with look-around; the error is the absolute yaw difference
between the predicted facing and the virtual root's (SPEC §5 `angle_deg`), per frame, starting
every clip from its first frame alone (what a live session knows when it starts): the network settles
on that frame from HMD-forward (orientation.SETTLE_STEPS).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from . import quat
from .atomic import check_outputs, save_figure
from .metrics import angle_deg
from .mocap import add_data_arguments, evaluation_files
from .orientation import SHIPPED_MODEL, OrientationModel
from .train_orientation import TRAINING_LOOK_AROUND_DEG, angle_errors_deg, prepare_clips

SHIPPED_MODEL_R1 = SHIPPED_MODEL.with_name("orientation_r1.npz")
"""The r = 1 ablation, trained like the shipped model but with one rollout step."""
PLOT_BIN_S = 10.0


def hmd_forward_errors_deg(clip) -> np.ndarray:
    """The baseline: the body faces where the HMD looks (the heading frame's +Z)."""
    return angle_deg(quat.yaw_of_direction(clip.headings[:, :, 2]), clip.truth_yaw)


def evaluate(files, models: dict[str, OrientationModel], look_around_deg: float, seed: int = 10_000):
    """Per-method per-frame errors over all clips (in file order) and per-file summaries."""
    clips = prepare_clips(files, look_around_deg, seed=seed)
    errors = {name: [angle_errors_deg(model, c) for c in clips] for name, model in models.items()}
    errors["hmd_forward"] = [hmd_forward_errors_deg(c) for c in clips]
    summary = {name: {"mean_deg": float(np.concatenate(e).mean()), "std_deg": float(np.concatenate(e).std())}
               for name, e in errors.items()}
    summary["files"] = {c.name: {name: round(float(e[i].mean()), 3) for name, e in errors.items()}
                        for i, c in enumerate(clips)}
    summary["frames"] = int(sum(len(c.features) for c in clips))
    summary["look_around_deg"] = look_around_deg
    return summary, {name: np.concatenate(e) for name, e in errors.items()}


def plot_errors(errors: dict[str, np.ndarray], path: Path, fps: float = 60.0) -> None:
    """Average error per PLOT_BIN_S seconds of the concatenated clips, one line per method (cf. MMVR Fig. 9)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 4))
    bin_frames = int(PLOT_BIN_S * fps)
    for name, e in errors.items():
        bins = len(e) // bin_frames
        means = e[: bins * bin_frames].reshape(bins, bin_frames).mean(axis=1)
        axes.plot(np.arange(bins) * PLOT_BIN_S / 60.0, means, label=f"{name} (mean {e.mean():.1f}°)")
    axes.set_xlabel("time through the evaluation clips (minutes)")
    axes.set_ylabel(f"mean angle error per {PLOT_BIN_S:g} s (degrees)")
    axes.set_title("Body orientation error (simulated streams, Bandai validation files)")
    axes.legend()
    axes.grid(alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    try:
        save_figure(path, figure, dpi=120)
    finally:
        plt.close(figure)


def run(args) -> int:
    """Angle error of the shipped network, HMD-forward and the r = 1 network on simulated streams."""
    check_outputs([args.plot], [args.model, args.model_r1], make_folders=True)
    files = evaluation_files(args)
    models = {"network": OrientationModel.load(args.model)}
    if Path(args.model_r1).exists():
        models["r1"] = OrientationModel.load(args.model_r1)
    else:
        print(f"eval orientation: no r = 1 model at {args.model_r1}; skipping that method", file=sys.stderr)
    print(f"eval orientation: {len(files)} files, look-around ±{args.look_around:g}°", file=sys.stderr)
    summary, errors = evaluate(files, models, args.look_around)
    if args.plot:
        plot_errors(errors, Path(args.plot))
        summary["plot"] = str(args.plot)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for name in ("network", "hmd_forward", "r1"):
            if name in summary:
                print(f"{name:12s} {summary[name]['mean_deg']:6.2f} ± {summary[name]['std_deg']:.2f} deg")
    return 0


def add_command(eval_group) -> None:
    parser = eval_group.add_parser("orientation", help=run.__doc__, description=__doc__)
    add_data_arguments(parser)
    parser.add_argument("--model", default=str(SHIPPED_MODEL), help="network (default: the shipped model)")
    parser.add_argument("--model-r1", default=str(SHIPPED_MODEL_R1), help="the r = 1 ablation network")
    parser.add_argument("--look-around", type=float, default=TRAINING_LOOK_AROUND_DEG, metavar="DEG",
                        help="look-around of the simulated streams (default 60)")
    parser.add_argument("--plot", default="out/orientation_error.png", help="error-over-time plot (PNG)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
