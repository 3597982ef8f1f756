"""Evaluating body orientation (MMVR §7.4): the shipped window model, the paper's network, HMD-forward, r = 1.

Streams are simulated from mocap with look-around; the error is the absolute yaw difference
between the predicted facing and the virtual root's (SPEC §5 `angle_deg`), per frame, starting
every clip from its first frame alone (what a live session knows when it starts): the paper's
networks settle on that frame from HMD-forward (orientation.SETTLE_STEPS), the window model starts
with a window of that frame repeated.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from ...assets import asset
from ...files.atomic import check_outputs, save_figure
from ...files.mocap import activity
from ...orientation.mmvr import MMVR_MODEL, SHIPPED_MODEL
from ...orientation.window_model import load_orientation_model
from ...quality.metrics import angle_deg
from ..arguments import add_data_arguments, add_json_argument, evaluation_files
from ..train.orientation_window import TRAINING_LOOK_AROUND_DEG, angle_errors_deg, prepare_window_clips

SHIPPED_MODEL_R1 = asset("orientation_r1.npz")
"""The r = 1 ablation, the paper's network trained with one rollout step."""
METHODS = ("network", "mmvr", "hmd_forward", "r1")
PLOT_BIN_S = 10.0


def hmd_forward_errors_deg(clip) -> np.ndarray:
    """The baseline: the body faces where the HMD looks (the HMD frame's +Z)."""
    return angle_deg(clip.hmd_yaw, clip.truth_yaw)


def evaluate(files, models: dict, look_around_deg: float, seed: int = 10_000):
    """Per-method per-frame errors over all clips (in file order) and the summary: overall, per activity, per file."""
    clips = prepare_window_clips(files, look_around_deg, seed=seed)
    errors = {name: [angle_errors_deg(model, c) for c in clips] for name, model in models.items()}
    errors["hmd_forward"] = [hmd_forward_errors_deg(c) for c in clips]
    errors = {name: errors[name] for name in METHODS if name in errors}
    summary = {name: {"mean_deg": float(np.concatenate(e).mean()), "std_deg": float(np.concatenate(e).std())}
               for name, e in errors.items()}
    names = [activity(c.name) for c in clips]
    summary["activities"] = {
        a: {"frames": int(sum(len(c.vectors) for c, n in zip(clips, names) if n == a)),
            **{name: round(float(np.concatenate([x for x, n in zip(e, names) if n == a]).mean()), 3)
               for name, e in errors.items()}}
        for a in sorted(set(names))}
    summary["files"] = {c.name: {name: round(float(e[i].mean()), 3) for name, e in errors.items()}
                        for i, c in enumerate(clips)}
    summary["frames"] = int(sum(len(c.vectors) for c in clips))
    summary["look_around_deg"] = look_around_deg
    return summary, {name: np.concatenate(e) for name, e in errors.items()}


def plot_errors(errors: dict[str, np.ndarray], path: Path, title: str = "validation files", fps: float = 60.0) -> None:
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
    axes.set_title(f"Body orientation error (simulated streams, {title})")
    axes.legend()
    axes.grid(alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    try:
        save_figure(path, figure, dpi=120)
    finally:
        plt.close(figure)


def run(args) -> int:
    """Angle error of the shipped window model, the paper's network, HMD-forward and r = 1 on simulated streams."""
    check_outputs([args.plot], [args.model, args.model_mmvr, args.model_r1], make_folders=True)
    files = evaluation_files(args)
    models = {"network": load_orientation_model(args.model)}
    for name, path in (("mmvr", args.model_mmvr), ("r1", args.model_r1)):
        if Path(path).exists():
            models[name] = load_orientation_model(path)
        else:
            print(f"eval orientation: no {name} model at {path}; skipping that method", file=sys.stderr)
    print(f"eval orientation: {len(files)} files, look-around ±{args.look_around:g}°", file=sys.stderr)
    summary, errors = evaluate(files, models, args.look_around)
    if args.plot:
        plot_errors(errors, Path(args.plot), f"{args.split} files, look-around ±{args.look_around:g}°")
        summary["plot"] = str(args.plot)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        present = [name for name in METHODS if name in summary]
        for name in present:
            print(f"{name:12s} {summary[name]['mean_deg']:6.2f} ± {summary[name]['std_deg']:.2f} deg")
        print(f"{'activity':18s}" + "".join(f"{name:>12s}" for name in present))
        for name, row in summary["activities"].items():
            print(f"{name:18s}" + "".join(f"{row[m]:12.2f}" for m in present))
    return 0


def add_command(eval_group) -> None:
    parser = eval_group.add_parser("orientation", help=run.__doc__, description=__doc__)
    add_data_arguments(parser)
    parser.add_argument("--model", default=str(SHIPPED_MODEL), help="the `network` row (default: the shipped model)")
    parser.add_argument("--model-mmvr", default=str(MMVR_MODEL), help="the paper's network (the `mmvr` row)")
    parser.add_argument("--model-r1", default=str(SHIPPED_MODEL_R1), help="the r = 1 ablation network")
    parser.add_argument("--look-around", type=float, default=TRAINING_LOOK_AROUND_DEG, metavar="DEG",
                        help="look-around of the simulated streams (default 60)")
    parser.add_argument("--plot", default="out/orientation_error.png", help="error-over-time plot (PNG)")
    add_json_argument(parser)
    parser.set_defaults(run=run)
