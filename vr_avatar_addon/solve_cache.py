"""Solve cache: the solved, retargeted motion kept in the .blend (scene ID properties), read back per frame.

Arrays are stored flat as float32 ID-property arrays, which Blender saves with the file and hands
back through the buffer protocol without copying. Such views die with the ID property (a new
solve, a file load), so `load` copies; `cached_frame`, for the frame-change handler, copies one
frame only.
"""
import json
from dataclasses import dataclass

import numpy as np

KEY = "vr_avatar_solve"


@dataclass(frozen=True)
class SolveCache:
    """The cached solve of one target armature."""

    armature: str
    bones: list
    """Bone names in core's order (parents first)."""
    hips_bone: str
    frame_start: int
    basis: np.ndarray
    """(F, J, 4) pose-bone rotation_quaternion values."""
    hips_location: np.ndarray
    """(F, 3) the hips pose bone's location."""
    positions: np.ndarray
    """(F, J, 3) bone heads in the world, core's frame (+Y up), as core computed them."""
    wrist_targets: np.ndarray
    """(F, 2, 3) the controller-implied wrists, core's frame; NaN where untracked."""
    report: dict

    @property
    def frames(self) -> int:
        return len(self.basis)

    def frame_index(self, frame: int) -> int:
        """The cached frame shown at scene frame `frame` (held at the ends)."""
        return int(np.clip(frame - self.frame_start, 0, self.frames - 1))


def store(scene, cache: SolveCache) -> None:
    """Write the cache onto the scene, replacing any previous one."""
    scene[KEY] = {
        "armature": cache.armature, "bones": list(cache.bones), "hips_bone": cache.hips_bone,
        "frame_start": cache.frame_start, "frames": cache.frames, "joints": len(cache.bones),
        "basis": cache.basis.astype(np.float32).ravel(),
        "hips_location": cache.hips_location.astype(np.float32).ravel(),
        "positions": cache.positions.astype(np.float32).ravel(),
        "wrist_targets": cache.wrist_targets.astype(np.float32).ravel(),
        "report": json.dumps(cache.report),
    }


def load(scene) -> SolveCache | None:
    """The scene's cached solve (a copy), or None."""
    data = scene.get(KEY)
    if data is None:
        return None
    frames, joints = int(data["frames"]), int(data["joints"])
    return SolveCache(
        str(data["armature"]), [str(b) for b in data["bones"]], str(data["hips_bone"]), int(data["frame_start"]),
        np.array(data["basis"]).reshape(frames, joints, 4),
        np.array(data["hips_location"]).reshape(frames, 3),
        np.array(data["positions"]).reshape(frames, joints, 3),
        np.array(data["wrist_targets"]).reshape(frames, 2, 3),
        json.loads(data["report"]))


@dataclass(frozen=True)
class CachedFrame:
    """One frame of the cached solve: what the frame-change handler needs."""

    armature: str
    bones: list
    hips_bone: str
    basis: np.ndarray
    """(J, 4)"""
    hips_location: np.ndarray
    """(3,)"""


def cached_frame(scene, frame: int) -> CachedFrame | None:
    """The cached pose shown at scene frame `frame` (held at the ends), or None without a cache."""
    data = scene.get(KEY)
    if data is None:
        return None
    frames, joints = int(data["frames"]), int(data["joints"])
    index = int(np.clip(frame - int(data["frame_start"]), 0, frames - 1))
    basis = np.asarray(data["basis"]).reshape(frames, joints, 4)[index].copy()
    hips = np.asarray(data["hips_location"]).reshape(frames, 3)[index].copy()
    return CachedFrame(str(data["armature"]), [str(b) for b in data["bones"]], str(data["hips_bone"]), basis, hips)


def clear(scene) -> None:
    if KEY in scene:
        del scene[KEY]
