"""The demo: simulate a three-point stream from mocap, solve it, report the quality.

The mocap is the built-in default data (../shared/data/bandai, `--mocap` or $VR_AVATAR_MOCAP); where none of
those is there, as in a clone of the repository alone, the repository's own procedural walks
(tests/data/mocap, made by tests/data/make_fixtures.py).

It reads a held-out clip, simulates the devices (with look-around), writes the stream, a BVH copy
and the ground truth; builds the default motion-matching database (the training split's
locomotion clips, for the Blender scene's motion library); solves the stream as it was written with the default
method (`hybrid`: the predictor's pose, its feet held, the orientation model's facing; no database); and writes
the solved BVH with its quality report (PNG and JSON) and the SPEC §5 figures against the ground truth.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..config import SimulationConfig, SolveConfig, describe
from ..devices.attachments import implied_joint_positions
from ..devices.simulate import simulate_stream
from ..files.bvh import read_bvh, write_bvh
from ..files.mocap import find_bvh_files
from .mocap_split import ENVIRONMENT_VARIABLE, default_database_files, default_mocap_dir, \
    split_by_file
from ..files.stream import read_stream, write_stream
from ..matching.pose_database import build_database
from ..quality.metrics import score_motion
from ..quality.report import quality_series, write_report
from ..rig.humanoid import find_mapping
from ..solve import load_solver, solve
from .arguments import add_mocap_argument

DEMO_CLIP = "dataset-2_walk-turn-left_active_005.bvh"
"""A validation clip with walking and turning, if present; otherwise the first validation file."""
DEMO_LOOK_AROUND_DEG = 45.0
PROCEDURAL_WALKS = Path(__file__).resolve().parents[2] / "tests" / "data" / "mocap"
"""The repository's own walking clips: what the demo runs on without the shared motion capture."""


def demo_mocap(given: str | None) -> Path:
    """The mocap folder the demo reads: the one given, else the default data if it is there, else the procedural
    walks the repository carries."""
    if given:
        return Path(given)
    default = default_mocap_dir()
    if default.exists() or os.environ.get(ENVIRONMENT_VARIABLE):
        return default
    print(f"demo: {default} is not there; running on the repository's own procedural walks", file=sys.stderr)
    return PROCEDURAL_WALKS


def run_demo(mocap: Path, out: Path) -> dict:
    files = find_bvh_files([mocap])
    _, validation = split_by_file(files)
    clip = next((f for f in files if f.name == DEMO_CLIP), (validation or files)[0])
    print(f"demo: {len(files)} BVH files under {mocap}; clip {clip.name}", file=sys.stderr)
    motion = read_bvh(clip)
    mapping = find_mapping(motion.skeleton)
    config = SimulationConfig(look_around_deg=DEMO_LOOK_AROUND_DEG, seed=1)
    simulated = simulate_stream(motion, config, mapping)

    out.mkdir(parents=True, exist_ok=True)
    stream_path = out / f"{clip.stem}.stream.csv"
    copy_path = out / f"{clip.stem}.bvh"
    truth_path = out / f"{clip.stem}.truth.bvh"
    write_stream(stream_path, simulated.stream, [f"simulated from {clip.name}", f"config {json.dumps(describe(config))}"])
    write_bvh(copy_path, motion)
    write_bvh(truth_path, simulated.truth)

    # Read back what was written and check it against what was computed.
    stream = read_stream(stream_path)
    copy = read_bvh(copy_path, scale=1.0)
    roundtrip_m = float(abs(copy.global_positions() - motion.global_positions()).max())
    # The truth's own figures are the reference a solved motion is compared against; hand_cm
    # checks that the written stream's controllers imply the truth's wrists.
    implied = implied_joint_positions(stream)
    reference = score_motion(simulated.truth, simulated.truth, implied[:, 1:], stream.tracked[:, 1:])
    summary = {
        "clip": clip.name, "frames": len(motion), "fps": motion.fps, "convention": mapping.convention,
        "stream": str(stream_path), "stream_samples": len(stream), "stream_rate_hz": round(stream.rate, 3),
        "bvh_copy": str(copy_path), "bvh_roundtrip_max_error_m": roundtrip_m, "truth": str(truth_path),
        "look_around_max_deg": round(float(abs(simulated.look_around).max()) * 57.29578, 2),
        "truth_reference": {"foot_skate_cm_s": round(reference["foot_skate_cm_s_truth"], 3),
                            "jitter": round(reference["jitter_truth"], 3),
                            "hand_cm_from_written_stream": round(reference["hand_cm"], 6)},
    }
    summary["solved"] = solve_demo(files, clip, stream, simulated.truth, out)
    return summary


def solve_demo(files, clip: Path, stream, truth, out: Path) -> dict:
    """Build the default database (the Blender scene's library), solve the written stream with the default method
    (`hybrid`, which needs no database), write the solved BVH and its report."""
    chosen = default_database_files(files, clip)
    print(f"demo: building the database from {len(chosen)} clips ...", file=sys.stderr)
    database = build_database([read_bvh(f) for f in chosen])
    database_path = out / "default.db.npz"
    database.save(database_path)
    print(f"demo: solving {len(stream)} samples ...", file=sys.stderr)
    solution = solve(stream, load_solver(SolveConfig()))
    solved_path = out / f"{clip.stem}.solved.bvh"
    write_bvh(solved_path, solution.motion)
    implied = implied_joint_positions(solution.stream)[:, 1:]
    scores = score_motion(solution.motion, truth, implied, solution.stream.tracked[:, 1:])
    figures = {k: round(v, 3) for k, v in scores.items()}
    true_hips = truth.global_positions()[:, find_mapping(truth.skeleton)["hips"]]
    frames = min(len(true_hips), len(solution.motion))
    series = quality_series(solution.motion[:frames], implied[:frames], solution.stream.tracked[:frames, 1:],
                            true_hips[:frames], truth)
    report = write_report(out / f"{clip.stem}.solved", series, figures, f"{clip.stem}: solved vs ground truth")
    return {"bvh": str(solved_path), "database": str(database_path), "database_poses": len(database),
            "database_clips": len(database.clip_names), "report": report["json"], "plot": report.get("plot"),
            "figures": figures}


def run(args) -> int:
    """Run the demo and print what it wrote."""
    summary = run_demo(demo_mocap(args.mocap), Path(args.out))
    print(json.dumps(summary, indent=2))
    return 0


def add_command(groups) -> None:
    parser = groups.add_parser("demo", help=run.__doc__, description=__doc__)
    add_mocap_argument(parser)
    parser.add_argument("--out", default="out", help="output folder (default: out)")
    parser.set_defaults(run=run)
