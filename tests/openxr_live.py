"""Scenarios against the running OpenXR runtime (Monado), one per process: `python tests/openxr_live.py NAME [ARG]`.

Monado reads its environment (simulated controllers, compositor) once, when the first instance is
created, so each configuration runs in its own process with the environment xr_runtime.environment
gives. Each scenario prints one JSON object on stdout; tests/test_openxr_runtime.py asserts on it.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WALK_1 = ROOT.parent / "shared/data/bandai/Bandai-Namco-Research-Motiondataset-1/dataset-1_walk_normal_001.bvh"
sys.path.insert(0, str(ROOT))

import xr  # noqa: E402

from core.openxr_source import OpenXRSource, tracking_status  # noqa: E402


def raw_stream_pose(xr_pose) -> np.ndarray:
    """An XrPosef as the stream lays a pose out (px, py, pz, qw, qx, qy, qz), written out field by field."""
    o, p = xr_pose.orientation, xr_pose.position
    return np.array([p.x, p.y, p.z, o.w, o.x, o.y, o.z])


def pose_errors(frame_poses: np.ndarray, expected: np.ndarray) -> tuple[float, float]:
    """Largest position error (m) and rotation error (degrees) between two (n, 7) pose lists."""
    position = np.linalg.norm(frame_poses[:, :3] - expected[:, :3], axis=-1).max()
    q = expected[:, 3:] / np.linalg.norm(expected[:, 3:], axis=-1, keepdims=True)
    dots = np.clip(np.abs(np.sum(frame_poses[:, 3:] * q, axis=-1)), 0.0, 1.0)
    return float(position), float(np.degrees(2.0 * np.arccos(dots)).max())


def session(graphics: str, seconds: float = 1.0, reference_spaces=None) -> dict:
    """Open a source, run it `seconds`, check each frame's poses against the runtime's own xrLocateSpace, close."""
    kwargs = {"reference_spaces": tuple(reference_spaces)} if reference_spaces else {}
    started = time.perf_counter()
    with OpenXRSource(graphics=graphics, **kwargs) as source:
        opened_s = time.perf_counter() - started
        frames, worst = [], (0.0, 0.0)
        end = time.monotonic() + seconds
        while time.monotonic() < end and not source.finished:
            frame = source.poll()
            if frame is None:
                continue
            frames.append(frame)
            spaces = [source._view, *source._grips]
            expected = np.array([raw_stream_pose(xr.locate_space(s, source._base, frame.time_ns).pose) for s in spaces])
            seen = frame.tracked
            if seen.any():
                got = np.concatenate([frame.positions, frame.rotations], axis=1)[seen]
                errors = pose_errors(got, expected[seen])
                worst = (max(worst[0], errors[0]), max(worst[1], errors[1]))
        last = frames[-1] if frames else None
        result = {
            "graphics": source.graphics, "opened_s": opened_s, "reference_space": source.reference_space,
            "offered_spaces": source.offered_spaces, "profiles": source.profiles,
            "current_profiles": source.current_profiles(), "frames": len(frames),
            "rate_hz": (len(frames) - 1) / ((frames[-1].time_ns - frames[0].time_ns) * 1e-9) if len(frames) > 2 else 0,
            "times_increase": bool(np.all(np.diff([f.time_ns for f in frames]) > 0)),
            "flags": None if last is None else [int(f) for f in last.flags],
            "tracked": None if last is None else [bool(t) for t in last.tracked],
            "positions": None if last is None else last.positions.tolist(),
            "tracked_all": [bool(f.tracked.all()) for f in frames].count(True),
            "status": tracking_status(source.lifecycle, None if last is None else last.tracked),
            "max_position_error_m": worst[0], "max_rotation_error_deg": worst[1],
        }
        if source.reference_space != "STAGE" and "STAGE" in source.offered_spaces and last is not None:
            stage = source._reference(xr.ReferenceSpaceType.STAGE)
            head_in_stage = raw_stream_pose(xr.locate_space(source._view, stage, last.time_ns).pose)
            base_in_stage = raw_stream_pose(xr.locate_space(source._base, stage, last.time_ns).pose)
            result["head_in_stage"], result["base_in_stage"] = head_in_stage.tolist(), base_in_stage.tolist()
            result["head_in_base"] = np.concatenate([last.positions[0], last.rotations[0]]).tolist()
            xr.destroy_space(stage)
    result["states"] = [state.name for state, _ in source.lifecycle.history]
    result["stop_reason"] = source.lifecycle.stop_reason
    result["closed"] = source.session is None and source.instance is None
    return result


def lifecycle(graphics: str) -> dict:
    """Two sessions one after the other in one process: the first closed and destroyed, the second made anew."""
    return {"runs": [session(graphics, 1.5), session(graphics, 0.5)]}


def fallback() -> dict:
    """STAGE left out of the preferences: LOCAL_FLOOR (not offered without XR_EXT_local_floor), then LOCAL."""
    return session("headless", 0.3, ("LOCAL_FLOOR", "LOCAL"))


def live(graphics: str, seconds: float, lose_hands: str = "") -> dict:
    """core's Solver stepped from every located frame; with `lose_hands` "A:B", the hands' tracking is dropped
    (flags cleared) from frame A to B of the run, then returns."""
    from core.bvh import read_bvh
    from core.devices import joints_from_devices
    from core.live import run_live
    from core.orientation import SHIPPED_MODEL, OrientationModel
    from core.pose_database import build_database
    from core.solver import Solver

    solver = Solver([build_database([read_bvh(WALK_1)])], orientation_model=OrientationModel.load(SHIPPED_MODEL))
    first, last = (int(v) for v in lose_hands.split(":")) if lose_hands else (-1, -1)
    count, hand_errors = [0], []

    def drop_hands(frame):
        count[0] += 1
        if first <= count[0] < last:
            frame.tracked = frame.tracked & [True, False, False]
            frame.positions[1:], frame.rotations[1:] = np.nan, np.nan
        return frame

    def follows(frame, positions):
        if frame.tracked.all():
            wrists = joints_from_devices(frame.positions, frame.rotations, solver.offsets)[1:]
            hands = positions[[solver.mapping.joints["l_hand"], solver.mapping.joints["r_hand"]]]
            hand_errors.append((count[0], float(np.linalg.norm(hands - wrists, axis=-1).max())))

    with OpenXRSource(graphics=graphics) as source:
        run = run_live(source, solver, seconds, follows, drop_hands)
        period = 1.0 / 90.0 if source.headless else None
        if period is None:
            period = float(np.median(np.diff(run.display_times_ns))) * 1e-9
    return {"located": run.located, "stepped": run.stepped, "skipped": run.skipped(period), "period_s": period,
            "statuses": run.statuses, **run.latency_ms(), "hand_errors": hand_errors}


SCENARIOS = {"lifecycle": lifecycle, "fallback": fallback, "session": session, "live": live}

if __name__ == "__main__":
    name, *arguments = sys.argv[1:]
    if name == "live":
        arguments[1] = float(arguments[1])
    elif name == "session" and len(arguments) > 1:
        arguments[1] = float(arguments[1])
    print(json.dumps(SCENARIOS[name](*arguments)))
