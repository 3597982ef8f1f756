"""What every solving method shares: the solver interface, a solve's result (`Solution`), the output's timeline,
the standing-height calibration and the finite check.

The methods (matching/, n3p/, hybrid/) implement `Solver`; core/solve.py drives them offline and makes them
from one configuration. A solve's output has one frame per step of `fps` from the stream's first sample to its
last (`ThreePointStream.frames_at`), whatever the method and the stream's own rate and clock.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .anim.motion import Motion
from .anim.skeleton import Skeleton
from .config import DeviceOffsets
from .devices.calibration import StreamCalibration
from .devices.plausibility import usable_samples
from .devices.standing_height import measured_standing_height
from .files.stream import ThreePointStream


Progress = Callable[[float], None]
"""Told the share of an offline solve done so far (0 to 1) as it goes: the command line's and the add-on's
progress."""

PROGRESS_REPORTS = 50
"""About how many times a loop over a solve's frames tells its progress."""


def progress_between(progress: Progress | None, start: float, end: float) -> Progress | None:
    """`progress` for a part of the work that takes the share done from `start` to `end`."""
    if progress is None:
        return None
    return lambda share: progress(start + (end - start) * share)


def with_progress(steps: range, progress: Progress | None) -> Iterator[int]:
    """`steps`, telling `progress` the share of them done about PROGRESS_REPORTS times on the way, and 1 at the end."""
    every = max(1, len(steps) // PROGRESS_REPORTS)
    for k, step in enumerate(steps):
        if progress is not None and k % every == 0:
            progress(k / len(steps))
        yield step
    if progress is not None:
        progress(1.0)


class Solver(Protocol):
    """A solving method: devices in, a full-body motion on `skeleton` out, at `fps`."""

    method: str
    """Its name in METHODS (core/solve.py)."""
    fps: float
    """The output's rate: live steps are expected at about it, offline output is on its timeline."""
    skeleton: Skeleton
    devices: DeviceOffsets
    waiting_for_hmd: bool
    """True until a live step brings the HMD's first usable pose (`waits_for_hmd`); `reset` sets it again."""
    standing_height_m: float | None
    """The user's standing HMD height as the live steps have measured it (devices/standing_height.py; None before
    the first)."""

    def reset(self, standing_hmd_height_m: float | None = None) -> None:
        """Forget the user: the next step starts a new avatar where the devices are."""

    def step(self, positions: np.ndarray, rotations: np.ndarray, tracked: np.ndarray, dt: float) -> Motion:
        """One live frame from device poses (3, 3), (3, 4), tracking flags (3,) and the seconds since the last."""

    def solve(self, stream: ThreePointStream, progress: Progress | None = None) -> "Solution":
        """The offline solve of a calibrated stream: a motion with `stream.frames_at(fps)` frames (`progress` told
        the share done as it goes)."""

    def standing_motion(self) -> Motion:
        """The skeleton standing: where retargeting reads its standing reference."""


def waits_for_hmd(step):
    """A Solver's `step` that waits for the HMD: until a step brings the HMD's first usable pose (tracked, finite,
    a rotation) the solver is not stepped, `waiting_for_hmd` stays True and the step returns the skeleton
    standing at the origin, one frame; device data never makes it raise. A frame at the time of the last one, or
    before it (`repeats_last_frame`), returns the last frame's pose again and advances nothing."""

    @functools.wraps(step)
    def waiting_step(solver, positions, rotations, tracked, dt: float) -> Motion:
        if solver.waiting_for_hmd:
            if not usable_samples(np.asarray(positions)[0], np.asarray(rotations)[0], np.asarray(tracked)[0]):
                return standing_at_origin(solver)
            solver.waiting_for_hmd = False
            solver._last_step = None
        last = getattr(solver, "_last_step", None)
        if last is not None and repeats_last_frame(dt):
            return last
        solver._last_step = step(solver, positions, rotations, tracked, dt)
        return solver._last_step

    return waiting_step


def repeats_last_frame(dt: float) -> bool:
    """Whether a live frame `dt` seconds after the last is no later than it: a sample delivered twice, or a clock
    stepping back. (A time step that is not finite is a pause: plausibility.step_seconds.)"""
    return bool(np.isfinite(dt) and dt <= 0.0)


def standing_at_origin(solver: Solver) -> Motion:
    """One frame of the solver's standing reference with its root over the origin (kept on the solver)."""
    if getattr(solver, "_standing_at_origin", None) is None:
        standing = solver.standing_motion()[0]
        positions = standing.positions.copy()
        positions[:, 0, [0, 2]] = 0.0
        solver._standing_at_origin = Motion(standing.skeleton, standing.rotations, positions, solver.fps,
                                            "waiting for the HMD")
    return solver._standing_at_origin


@dataclass
class Solution:
    """An offline solve: the motion and what the solver did each frame."""

    motion: Motion
    stream: ThreePointStream
    """The stream as solved: on the output's timeline (resampled to the solver's rate)."""
    databases: np.ndarray
    frames: np.ndarray
    targets: np.ndarray
    searches: np.ndarray
    standing_height_m: float
    method: str = "mm"
    """The solver's method. Where motion matching played the body ('mm', the hybrid's matched legs) databases,
    frames and searches say what it played; otherwise they are zero."""
    calibration: StreamCalibration | None = None
    """What calibration.py found in the stream's first minute (and applied), or None if not asked."""
    contacts: np.ndarray | None = None
    """(T, 2) the feet's contacts as the solver has them per frame (n3p: the predicted ones), where it keeps them."""
    physics: dict | None = None
    """With the physics pass (core/solve.py `with_physics`): its figures (core/physics/metrics.py); the motion is
    then the simulated body's."""


def standing_height(stream: ThreePointStream, seconds: float) -> float:
    """The user's standing HMD height over the whole stream (devices/standing_height.py): the mean of the tracked
    HMD over the stream's first `seconds`, raised where the user stood up later."""
    return measured_standing_height(stream.times, stream.positions[:, 0, 1], stream.tracked[:, 0], seconds)


def require_finite(motion: Motion, stream: ThreePointStream) -> None:
    """Refuse a solved motion with a non-finite value (ValueError naming the first such frame and its stream time):
    nothing non-finite is ever written or cached."""
    bad = ~(np.isfinite(motion.rotations).all(axis=(1, 2)) & np.isfinite(motion.positions).all(axis=(1, 2)))
    if bad.any():
        frame = int(np.argmax(bad))
        raise ValueError(f"the solve went non-finite at frame {frame} (t = {stream.times[frame]:.3f} s of the stream): "
                         f"check the stream's samples there and the database; nothing was written")
