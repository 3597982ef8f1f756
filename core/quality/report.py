"""Quality report of a solve: root error, hand error and foot skating over time, as JSON figures and a PNG plot.

With a ground truth (evaluation), the root error is the horizontal distance between solved and
true hips; without one (a user's stream), it is the distance between the avatar's hips and the
target under the head, which is what the user sees. Hand error is the distance between the hand
joints and the hand positions the controllers imply. Foot skating is SPEC §5's weighted toe speed
per frame. The PNG is drawn with numpy alone (raster_plot.py), in Blender as on the command line.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..anim.motion import Motion
from ..devices.attachments import implied_joint_positions
from ..files.atomic import write_bytes, write_text
from ..rig.humanoid import find_mapping
from ..anim.contacts import floor_height
from .metrics import foot_skate_per_frame
from .raster_plot import plot_panels, png_bytes


def quality_series(motion: Motion, implied_hands: np.ndarray, hands_tracked: np.ndarray,
                   reference_hips: np.ndarray, truth: Motion | None = None) -> dict[str, np.ndarray]:
    """Per-frame series (cm, cm/s) of a solved motion; `reference_hips` (T, 3) are the targets or the truth's hips."""
    mapping = find_mapping(motion.skeleton)
    positions = motion.global_positions()
    hips = positions[:, mapping["hips"]]
    root = np.hypot(*(hips - reference_hips)[:, [0, 2]].T) * 100.0
    hands = np.linalg.norm(positions[:, [mapping["l_hand"], mapping["r_hand"]]] - implied_hands, axis=-1) * 100.0
    hands = np.where(hands_tracked, hands, np.nan)
    toes = positions[:, [mapping["l_toes"], mapping["r_toes"]]]
    floor = None
    if truth is not None:
        true_mapping = find_mapping(truth.skeleton)
        true_toes = truth.global_positions()[:, [true_mapping["l_toes"], true_mapping["r_toes"]]]
        floor = floor_height(true_toes[..., 1])
    skate = np.concatenate([[0.0], foot_skate_per_frame(toes, motion.fps, floor).mean(axis=1) * 100.0])
    return {"time_s": np.arange(len(motion)) / motion.fps, "root_cm": root, "hand_cm": hands,
            "foot_skate_cm_s": skate}


def summarise(series: dict[str, np.ndarray]) -> dict[str, float]:
    """Mean, 95th percentile and maximum of each series."""
    out = {}
    for name, values in series.items():
        if name == "time_s":
            continue
        finite = values[np.isfinite(values)]
        if finite.size:
            out[name] = {"mean": round(float(finite.mean()), 3), "p95": round(float(np.percentile(finite, 95)), 3),
                         "max": round(float(finite.max()), 3)}
    return out


def write_report(stem: str | Path, series: dict[str, np.ndarray], figures: dict, title: str = "") -> dict:
    """`<stem>.report.json` (figures, summaries and the series) and `<stem>.report.png`; returns the JSON written."""
    stem = Path(stem)
    report = {"title": title, "figures": figures, "summary": summarise(series),
              "series": {k: json_values(values) for k, values in series.items()}}
    png = stem.with_name(stem.name + ".report.png")
    plot_series(png, series, title)
    report["plot"] = str(png)
    path = stem.with_name(stem.name + ".report.json")
    write_text(path, json.dumps(report, indent=1))
    report["json"] = str(path)
    return report


def json_values(values: np.ndarray) -> list:
    """An array as nested lists rounded to 4 decimals, NaN as null."""
    cells = np.round(values, 4).astype(object)
    cells[~np.isfinite(values)] = None
    return cells.tolist()


def plot_series(path: Path, series: dict[str, np.ndarray], title: str) -> None:
    """Three stacked plots over time, a PNG drawn with numpy alone (raster_plot): root error, hand error, foot
    skating."""
    panels = []
    for key, label in (("root_cm", "root error (cm)"), ("hand_cm", "hand error (cm)"),
                       ("foot_skate_cm_s", "foot skating (cm/s)")):
        values = np.asarray(series[key], dtype=float)
        panels.append((label, [("left", values[:, 0]), ("right", values[:, 1])] if values.ndim == 2 else
                       [(key, values)]))
    write_bytes(path, png_bytes(plot_panels(np.asarray(series["time_s"], dtype=float), panels, title)))


def solution_quality(solution) -> tuple[dict[str, np.ndarray], dict]:
    """(per-frame series, figures) of an offline solve (a solver.Solution): root and hand errors, foot skating."""
    series = quality_series(solution.motion, implied_joint_positions(solution.stream)[:, 1:],
                            solution.stream.tracked[:, 1:], solution.targets)
    figures = {"frames": len(solution.motion), "fps": solution.motion.fps,
               "standing_hmd_height_m": round(solution.standing_height_m, 4), "method": solution.method}
    if getattr(solution, "physics", None):
        figures["physics"] = solution.physics
    if solution.method == "mm":
        figures["searches"] = int(solution.searches.sum())
        figures["poses_used"] = len(set(zip(solution.databases.tolist(), solution.frames.tolist())))
    return series, figures


def write_solution_report(stem: str | Path, solution, title: str = "") -> dict:
    """The quality report of an offline solve, written as `write_report` does."""
    series, figures = solution_quality(solution)
    return write_report(stem, series, figures, title)
