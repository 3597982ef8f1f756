"""The live loop: a solver stepped from a live source frame by frame, timed from the locate call to the posed skeleton."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

LONGEST_LIVE_STEP_S = 0.1  # a longer gap (the session paused) is stepped as this, so the body does not leap


@dataclass
class LiveRun:
    """What a live run did: frames the source located, frames stepped, their display times (ns) and
    the latency (s) of each step from the first locate call to the posed skeleton's joint positions."""

    located: int = 0
    stepped: int = 0
    display_times_ns: list[int] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)

    def skipped(self, period_s: float) -> int:
        """Frames the runtime displayed between two stepped ones: display-time gaps past 1.5 periods."""
        gaps = np.diff(np.array(self.display_times_ns, dtype=np.int64)) * 1e-9
        return int(np.sum(np.round(gaps / period_s) - 1, where=gaps > 1.5 * period_s))

    def latency_ms(self) -> dict:
        """Latency percentiles (p50, p99, max) in milliseconds."""
        latencies = np.array(self.latencies_s) * 1000.0
        return {"latency_ms_p50": round(float(np.percentile(latencies, 50)), 3),
                "latency_ms_p99": round(float(np.percentile(latencies, 99)), 3),
                "latency_ms_max": round(float(latencies.max()), 3)}


def run_live(source, solver, seconds: float, on_pose=None, frame_filter=None) -> LiveRun:
    """Poll `source` (an OpenXRSource) and step `solver` with every located frame for `seconds`.

    Frames before the head's first usable pose are skipped (the solver needs it to place the body; a headset may
    report itself tracked at an absurd pose first);
    after that every frame is stepped, untracked hands held by the solver. Each step ends with the
    skeleton's global joint positions (`on_pose(frame, positions)` receives them). `frame_filter`
    may rewrite a frame before it is stepped (a test's injected tracking loss).
    """
    from .openxr_lifecycle import tracking_status
    from .plausibility import usable_samples

    run, last_ns = LiveRun(), None
    end = time.monotonic() + seconds
    while time.monotonic() < end and not source.finished:
        frame = source.poll()
        status = tracking_status(source.lifecycle, None if frame is None else frame.tracked)
        if status and (not run.statuses or run.statuses[-1] != status):
            run.statuses.append(status)
        if frame is None:
            continue
        run.located += 1
        if frame_filter is not None:
            frame = frame_filter(frame)
        if last_ns is None and not usable_samples(frame.positions[:1], frame.rotations[:1], frame.tracked[:1])[0]:
            continue  # the avatar is placed at the first usable headset pose: wait for it
        dt = LONGEST_LIVE_STEP_S if last_ns is None else min(max((frame.time_ns - last_ns) * 1e-9, 1e-4), LONGEST_LIVE_STEP_S)
        motion = solver.step(frame.positions, frame.rotations, frame.tracked, dt)
        positions = motion.global_positions()[0]
        run.latencies_s.append(time.perf_counter() - frame.located_s)
        run.stepped += 1
        run.display_times_ns.append(frame.time_ns)
        last_ns = frame.time_ns
        if on_pose is not None:
            on_pose(frame, positions)
    return run
