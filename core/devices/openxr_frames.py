"""OpenXR poses and location flags into stream frames, without a runtime.

OpenXR poses come as XrPosef lays them out (quaternion x, y, z, w, then position); stream poses are
position, then quaternion w, x, y, z. OpenXR's world convention (+Y up, devices look along -Z,
metres) is the stream's (SPEC §2), so no axis changes; only the quaternion order differs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..files.stream import DEVICES, ThreePointStream
from ..math import quat
from .plausibility import usable_samples

# XrSpaceLocationFlags and XrViewStateFlags share these bits.
ORIENTATION_VALID, POSITION_VALID, ORIENTATION_TRACKED, POSITION_TRACKED = 0x1, 0x2, 0x4, 0x8
# A controller counts as tracked only when the runtime measures both halves of its pose: a hand pose
# that is valid but not tracked is the runtime's guess (often the last known position, frozen in the air).
TRACKED_FLAGS = ORIENTATION_VALID | POSITION_VALID | ORIENTATION_TRACKED | POSITION_TRACKED
# The head counts as tracked with a measured orientation and a valid position, measured or inferred:
# headsets infer position from their inertial sensors through short optical dropouts (and 3-DoF
# headsets from a neck model), which keeps the avatar standing where losing the head would stop it.
HEAD_FLAGS = ORIENTATION_VALID | POSITION_VALID | ORIENTATION_TRACKED

# Preferred first: STAGE has its floor at y = 0, as the stream wants; LOCAL has it at the first head position.
REFERENCE_SPACES = ("STAGE", "LOCAL_FLOOR", "LOCAL")


def posef_array(pose) -> np.ndarray:
    """An XrPosef (pyopenxr structure) as an array (7,) in its own layout: qx, qy, qz, qw, px, py, pz."""
    return np.array([*pose.orientation, *pose.position], dtype=float)


def stream_poses(xr_poses: np.ndarray) -> np.ndarray:
    """OpenXR poses (..., 7) as XrPosef lays them out (qx, qy, qz, qw, px, py, pz) to stream poses (..., 7):
    (px, py, pz, qw, qx, qy, qz), quaternions renormalised (runtimes hand over float32)."""
    xr_poses = np.asarray(xr_poses, dtype=float)
    rotations = quat.normalize(xr_poses[..., [3, 0, 1, 2]])
    return np.concatenate([xr_poses[..., 4:7], rotations], axis=-1)


def is_tracked(flags) -> np.ndarray:
    """Location or view-state flags to tracked (bool, same shape): every valid and tracked bit set."""
    return (np.asarray(flags, dtype=np.int64) & TRACKED_FLAGS) == TRACKED_FLAGS


def devices_tracked(flags) -> np.ndarray:
    """The head's, left and right grip's flags (3,) to the stream's `*_valid` (3,): HEAD_FLAGS for the head,
    every bit (TRACKED_FLAGS) for the controllers."""
    flags = np.asarray(flags, dtype=np.int64)
    return (flags & [HEAD_FLAGS, TRACKED_FLAGS, TRACKED_FLAGS]) == [HEAD_FLAGS, TRACKED_FLAGS, TRACKED_FLAGS]


def pick_reference_space(offered, preferred=REFERENCE_SPACES) -> str:
    """The first of `preferred` that the runtime offers (names of XrReferenceSpaceType); LOCAL, which every
    runtime offers, when none is."""
    return next((name for name in preferred if name in offered), "LOCAL")


def head_from_eyes(eye_poses: np.ndarray) -> np.ndarray:
    """The view pose, centre between the eyes, from the eye views' stream poses (..., eyes, 7).

    Position: the mean of the eyes'. Orientation: their mean, which is either eye's on displays
    that face forward, and halfway between them on canted ones.
    """
    eye_poses = np.asarray(eye_poses, dtype=float)
    position = eye_poses[..., :3].mean(axis=-2)
    rotation = quat.mean(eye_poses[..., 3:], axis=-2)
    return np.concatenate([position, rotation], axis=-1)


@dataclass
class Frame:
    """One located sample: `time_ns` (runtime clock, XrTime), `positions` (3, 3), `rotations` (3, 4)
    as (w, x, y, z) and `tracked` (3,), devices in DEVICES order; untracked devices hold NaN.
    `flags` (3,) are the runtime's location flags; `located_s` is `time.perf_counter()` just before
    the first locate call (latency is measured from it); `button` whether the record button is held on
    either controller (openxr_source.RECORD_BUTTONS)."""

    time_ns: int
    positions: np.ndarray
    rotations: np.ndarray
    tracked: np.ndarray
    flags: np.ndarray | None = None
    located_s: float = 0.0
    button: bool = False


def frame_from_poses(time_ns: int, poses: np.ndarray, flags, located_s: float = 0.0, button: bool = False) -> Frame:
    """A frame from stream poses (3, 7) of head, left and right grip, their location flags (3,) and whether the
    record button is held.

    A device is tracked as `devices_tracked` says and only with a finite pose: a runtime handing
    over NaN or infinity with its flags set is not believed.
    """
    poses = np.array(poses, dtype=float)
    flags = np.asarray(flags, dtype=np.int64)
    if poses.shape != (len(DEVICES), 7) or flags.shape != (len(DEVICES),):
        raise ValueError(f"a frame needs poses shaped (3, 7) and flags (3,), got {poses.shape} and {flags.shape}")
    tracked = usable_samples(poses[:, :3], poses[:, 3:], devices_tracked(flags))  # the flags and the numbers agree
    poses[~tracked] = np.nan
    return Frame(int(time_ns), poses[:, :3], poses[:, 3:], tracked, flags, located_s, bool(button))


def frames_to_stream(frames: list[Frame], rate: float | None = None) -> ThreePointStream:
    """Frames to a stream whose times start at 0 s; with `rate`, at most one frame per 1/rate tick.

    Thinning keeps the first frame in each tick of a grid from the first frame's time, so the mean
    rate is `rate` even when the runtime's rate is not a multiple of it. A frame no later than one before it (a
    runtime may hand out the same display time twice, or an earlier one) is dropped.
    """
    if not frames:
        raise ValueError("no frames to make a stream of: nothing was tracked")
    times_ns = np.array([f.time_ns for f in frames], dtype=np.int64)
    keep = np.ones(len(frames), dtype=bool)
    keep[1:] = times_ns[1:] > np.maximum.accumulate(times_ns)[:-1]
    if rate:
        ticks = ((times_ns - times_ns[0]) * rate // 1_000_000_000).astype(np.int64)
        keep[1:] &= ticks[1:] > np.maximum.accumulate(ticks)[:-1]
    kept = [f for f, k in zip(frames, keep) if k]
    return ThreePointStream((times_ns[keep] - times_ns[0]) * 1e-9,
                            np.stack([f.positions for f in kept]), np.stack([f.rotations for f in kept]),
                            np.stack([f.tracked for f in kept]))
