"""Speed figures (SPEC §4 `bench`): BVH parsing, FK, stream simulation and reading, orientation inference, IK."""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .bvh import read_bvh
from .devices import implied_joint_positions
from .mocap import default_mocap_dir, find_bvh_files
from .orientation import SHIPPED_MODEL, OrientationModel, OrientationPredictor, predict_body_orientation
from .simulate import simulate_stream
from .stream import read_stream, write_stream
from .upper_body_ik import UpperBodyCalibration, solve_upper_body

IK_FRAMES = 100_000


def measure(mocap: Path) -> dict:
    """Parse every BVH file under `mocap`, then time FK, simulation and stream reading on one clip."""
    files = find_bvh_files([mocap])
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
    model = OrientationModel.load(SHIPPED_MODEL)
    start = time.perf_counter()
    predict_body_orientation(model, stream.positions, stream.rotations, stream.rate)
    offline_s = time.perf_counter() - start
    live = OrientationPredictor(model)
    start = time.perf_counter()
    for t in range(len(stream)):
        live.step(stream.positions[t], stream.rotations[t], 1.0 / 60.0)
    live_s = time.perf_counter() - start
    ik_s, ik_one_s = time_upper_body_ik(stream)
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
        "ik_frames_per_s": round(IK_FRAMES / ik_s),
        "ik_live_frame_us": round(ik_one_s * 1e6, 1),
        "clip": clip.name,
    }


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


def add_parser(groups) -> None:
    parser = groups.add_parser("bench", help=run.__doc__, description=measure.__doc__)
    parser.add_argument("--mocap", help="folder of BVH files (default: $VR_AVATAR_MOCAP or ../shared/data/bandai)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
