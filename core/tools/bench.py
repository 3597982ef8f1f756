"""Speed figures (SPEC §4 `bench`): BVH parsing, FK, stream simulation and reading, orientation, IK, search, solver."""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..devices.attachments import implied_joint_positions
from ..devices.simulate import simulate_stream
from ..files.bvh import read_bvh
from .mocap_split import default_database_files, default_mocap_dir, find_mocap_files
from ..files.stream import read_stream, write_stream
from ..ik.upper_body_ik import UpperBodyCalibration, solve_upper_body
from ..hybrid.solver import HybridSolver
from ..matching.pose_database import build_database
from ..matching.search import FeatureIndex
from ..matching.solver import MotionMatchingSolver
from ..solve import solve
from ..n3p.model import N3PModel
from ..n3p.solver import N3PSolver
from ..orientation.mmvr import MMVR_MODEL
from ..orientation.window_model import load_orientation_model
from .arguments import add_json_argument, add_mocap_argument

IK_FRAMES = 100_000
SOLVER_RUNS = 3
"""The solver is timed over the clip this many times, live and offline, and the fastest run reported:
this machine's other load only ever slows a run down."""
LARGE_DATABASE = 100_000


def measure(mocap: Path) -> dict:
    """Parse every BVH file under `mocap`, then time FK, simulation and stream reading on one clip."""
    files = find_mocap_files([mocap])
    size = sum(f.stat().st_size for f in files)
    frames = 0
    start = time.perf_counter()
    for f in files:
        frames += len(read_bvh(f))
    parse_s = time.perf_counter() - start
    clip = max(files[: min(len(files), 200)], key=lambda f: f.stat().st_size)
    motion = read_bvh(clip)
    start = time.perf_counter()
    for _ in range(5):
        motion.global_transforms()
    fk_s = (time.perf_counter() - start) / 5
    start = time.perf_counter()
    simulated = simulate_stream(motion)
    simulate_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as folder:
        csv = Path(folder) / "stream.csv"
        write_stream(csv, simulated.stream)
        start = time.perf_counter()
        read_stream(csv)
        read_s = time.perf_counter() - start
        csv_mb = csv.stat().st_size / 1e6
    stream = simulated.stream
    model = load_orientation_model()
    offline_s, live_s = time_orientation(model, stream)
    mmvr_offline_s, mmvr_live_s = time_orientation(load_orientation_model(MMVR_MODEL), stream)
    ik_s, ik_one_s = time_upper_body_ik(stream)
    matching = time_matching(files, simulated.stream, model)
    return {
        "cores": os.cpu_count(),
        "bvh_files": len(files),
        "bvh_mb": round(size / 1e6, 2),
        "bvh_frames": frames,
        "bvh_parse_s": round(parse_s, 3),
        "bvh_parse_mb_s": round(size / 1e6 / parse_s, 2),
        "fk_us_per_frame": round(fk_s / len(motion) * 1e6, 3),
        "simulate_us_per_frame": round(simulate_s / len(simulated.stream) * 1e6, 3),
        "stream_read_mb_s": round(csv_mb / read_s, 2),
        "orientation_us_per_frame": round(offline_s / len(stream) * 1e6, 2),
        "orientation_live_step_us": round(live_s / len(stream) * 1e6, 2),
        "orientation_mmvr_us_per_frame": round(mmvr_offline_s / len(stream) * 1e6, 2),
        "orientation_mmvr_live_step_us": round(mmvr_live_s / len(stream) * 1e6, 2),
        "ik_frames_per_s": round(IK_FRAMES / ik_s),
        "ik_live_frame_us": round(ik_one_s * 1e6, 1),
        **matching,
        "clip": clip.name,
    }


def time_orientation(model, stream) -> tuple[float, float]:
    """Seconds for an orientation model over the stream offline (`predict`) and stepped live, frame by frame."""
    start = time.perf_counter()
    model.predict(stream.positions, stream.rotations, stream.rate)
    offline_s = time.perf_counter() - start
    live = model.predictor()
    start = time.perf_counter()
    for t in range(len(stream)):
        live.step(stream.positions[t], stream.rotations[t], 1.0 / 60.0)
    return offline_s, time.perf_counter() - start


def time_upper_body_ik(stream) -> tuple[float, float]:
    """Seconds for Parger's IK over IK_FRAMES frames in one call (the clip tiled), and for one frame."""
    tiles = -(-IK_FRAMES // len(stream))
    implied = np.tile(implied_joint_positions(stream), (tiles, 1, 1))[:IK_FRAMES]
    positions = np.tile(stream.positions, (tiles, 1, 1))[:IK_FRAMES]
    rotations = np.tile(stream.rotations, (tiles, 1, 1))[:IK_FRAMES]
    calibration = UpperBodyCalibration(float(positions[:30, 0, 1].mean()), 0.28, 0.26)
    start = time.perf_counter()
    solve_upper_body(positions[:, 0], rotations[:, 0], implied[:, 1:], rotations[:, 1:], calibration)
    batch_s = time.perf_counter() - start
    start = time.perf_counter()
    for t in range(200):
        solve_upper_body(positions[t, 0], rotations[t, 0], implied[t, 1:], rotations[t, 1:], calibration)
    return batch_s, (time.perf_counter() - start) / 200


def time_search(index: FeatureIndex, searches: list[tuple]) -> tuple[float, float]:
    """Mean seconds per search of brute force and of the box layers; they must agree on every search."""
    timings, answers = [], []
    for search in (index.nearest_brute, index.nearest):
        start = time.perf_counter()
        answers.append([search(*arguments) for arguments in searches])
        timings.append((time.perf_counter() - start) / len(searches))
    if answers[0] != answers[1]:
        raise AssertionError("accelerated search disagrees with brute force")
    return timings[0], timings[1]


def time_matching(files, stream, model) -> dict:
    """Search at the default database's size and replicated past 100k poses; the solver live and offline.

    The searches timed are those the solver made on the stream: its queries, with the cost of
    continuing the current clip as the bound to beat.
    """
    database = build_database([read_bvh(f) for f in default_database_files(files)])
    solver = MotionMatchingSolver([database], orientation_model=model)
    index = solver.databases[0].index
    searches = []
    accelerated = index.nearest

    def recorded(*arguments):
        searches.append(arguments)
        return accelerated(*arguments)

    index.nearest = recorded
    start = time.perf_counter()
    solve(stream, solver)
    offline_s = [time.perf_counter() - start]
    index.nearest = accelerated
    for _ in range(SOLVER_RUNS - 1):
        start = time.perf_counter()
        solve(stream, solver)
        offline_s.append(time.perf_counter() - start)
    brute, accelerated_s = time_search(index, searches)
    copies = -(-LARGE_DATABASE // len(database))
    large = FeatureIndex(np.tile(index.features, (copies, 1)), np.tile(index.searchable, copies))
    brute_large, accelerated_large = time_search(large, searches)
    runs = []
    for _ in range(SOLVER_RUNS):
        solver.reset()
        steps, searched = [], []
        for t in range(len(stream)):
            start = time.perf_counter()
            solver.step(stream.positions[t], stream.rotations[t], stream.tracked[t], 1.0 / 60.0)
            steps.append(time.perf_counter() - start)
            searched.append(solver.state.since_search == 1)
        runs.append(np.array(steps) * 1000.0)
    steps, searched = min(runs, key=np.mean), np.array(searched)
    return {
        **time_hybrid(stream, model),
        "poses": len(database),
        "searches": len(searches),
        "search_brute_us": round(brute * 1e6, 1),
        "search_accel_us": round(accelerated_s * 1e6, 1),
        "search_large_poses": len(large.features),
        "search_brute_100k_us": round(brute_large * 1e6, 1),
        "search_accel_100k_us": round(accelerated_large * 1e6, 1),
        "search_speedup_100k": round(brute_large / accelerated_large, 1),
        "pipeline_ms_mean": round(float(steps.mean()), 3),
        "pipeline_ms_p99": round(float(np.percentile(steps, 99)), 3),
        "pipeline_ms_p50_search_frames": round(float(np.median(steps[searched])), 3),
        "pipeline_ms_p50_other_frames": round(float(np.median(steps[~searched])), 3),
        "offline_frames_per_s": round(len(stream) / min(offline_s), 1),
    }


def time_hybrid(stream, model) -> dict:
    """The hybrid, the default method (no database), with the same orientation model: stepped live, frame by frame at
    the stream's 60 Hz (the fastest of SOLVER_RUNS runs), and offline."""
    solver = HybridSolver(N3PSolver(N3PModel.load()), model)
    start = time.perf_counter()
    solve(stream, solver)
    offline_s = time.perf_counter() - start
    runs = []
    for _ in range(SOLVER_RUNS):
        solver.reset()
        steps = []
        for t in range(len(stream)):
            start = time.perf_counter()
            solver.step(stream.positions[t], stream.rotations[t], stream.tracked[t], 1.0 / 60.0)
            steps.append(time.perf_counter() - start)
        runs.append(np.array(steps) * 1000.0)
    steps = min(runs, key=np.mean)
    return {"hybrid_live_ms_mean": round(float(steps.mean()), 3),
            "hybrid_live_ms_p99": round(float(np.percentile(steps, 99)), 3),
            "hybrid_offline_frames_per_s": round(len(stream) / offline_s, 1)}


def run(args) -> int:
    """Measure and print speed figures."""
    mocap = Path(args.mocap) if args.mocap else default_mocap_dir()
    print(f"bench: parsing every BVH file under {mocap} ...", file=sys.stderr)
    result = measure(mocap)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")
    return 0


def add_command(groups) -> None:
    parser = groups.add_parser("bench", help=run.__doc__, description=measure.__doc__)
    add_mocap_argument(parser)
    add_json_argument(parser)
    parser.set_defaults(run=run)
