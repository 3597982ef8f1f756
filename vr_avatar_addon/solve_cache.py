"""Solve cache: the solved, retargeted motion kept in the .blend (scene ID properties), read back per frame.

Arrays are stored flat as float32 ID-property arrays, which Blender saves with the file and hands
back through the buffer protocol without copying. Such views die with the ID property (a new
solve, a file load), so `load` copies; `cached_frame`, for the frame-change handler, copies one
frame only. The armature is kept by reference as well as by name, so that the cache follows it when it is
renamed and is not taken for another of its name (a local one and one linked from a library can share a name).
"""
import json
from dataclasses import dataclass

import bpy
import numpy as np
from idprop.types import IDPropertyArray

from .scene_timing import scene_fps

KEY = "vr_avatar_solve"


@dataclass(frozen=True)
class SolveCache:
    """The cached solve of one target armature."""

    armature: str
    bones: list
    """Bone names in core's order (parents first)."""
    frame_start: int
    basis: np.ndarray
    """(F, J, 4) pose-bone rotation_quaternion values."""
    locations: np.ndarray
    """(F, J, 3) pose-bone location values."""
    scales: np.ndarray
    """(F, J, 3) pose-bone scale values."""
    positions: np.ndarray
    """(F, J, 3) bone heads in the world, core's frame (+Y up), as core computed them."""
    wrist_targets: np.ndarray
    """(F, 2, 3) the controller-implied wrists, core's frame; NaN where untracked."""
    head_targets: np.ndarray
    """(F, 3) the headset-implied head joint, core's frame; NaN where untracked."""
    report: dict
    fps: float | None = None
    """The scene's frame rate the solve was made at (None: not known, a cache made by an earlier version)."""
    object_transform: np.ndarray | None = None
    """(10,) the armature object's own location, rotation (a quaternion) and scale the solve was made with (None: a
    cache made by an earlier version)."""
    rest: tuple | None = None
    """The armature's bones at rest as the solve read them (`scene_solve.rest_bones`; None: a cache made by an
    earlier version)."""

    @property
    def frames(self) -> int:
        return len(self.basis)

    def frame_index(self, frame: int) -> int:
        """The cached frame shown at scene frame `frame` (held at the ends)."""
        return int(np.clip(frame - self.frame_start, 0, self.frames - 1))


def store(scene, cache: SolveCache, obj) -> None:
    """Write the cache of armature `obj` onto the scene, replacing any previous one."""
    scene[KEY] = {
        "armature": cache.armature, "object": obj, "bones": list(cache.bones),
        "frame_start": cache.frame_start, "frames": cache.frames, "joints": len(cache.bones),
        "basis": cache.basis.astype(np.float32).ravel(),
        "locations": cache.locations.astype(np.float32).ravel(),
        "scales": cache.scales.astype(np.float32).ravel(),
        "positions": cache.positions.astype(np.float32).ravel(),
        "wrist_targets": cache.wrist_targets.astype(np.float32).ravel(),
        "head_targets": cache.head_targets.astype(np.float32).ravel(),
        "report": json.dumps(cache.report),
        **({"fps": float(cache.fps)} if cache.fps is not None else {}),
        **({"object_transform": np.asarray(cache.object_transform, dtype=np.float64)}
           if cache.object_transform is not None else {}),
        **(rest_properties(cache.rest) if cache.rest is not None else {}),
    }


REST_KEYS = ("rest_names", "rest_parents", "rest_matrices", "rest_tails")
"""Where `store` keeps the parts of a cache's `rest`."""


def rest_properties(rest: tuple) -> dict:
    """A cache's `rest` as the ID properties `store` keeps (REST_KEYS)."""
    names, parents, matrices, tails = rest
    return dict(zip(REST_KEYS, (list(names), list(parents), np.asarray(matrices, dtype=np.float64).ravel(),
                                np.asarray(tails, dtype=np.float64).ravel())))


def stored_rest(data) -> tuple | None:
    """The `rest` of a stored cache, or None where it has none."""
    if any(key not in data for key in REST_KEYS):
        return None
    names, parents, matrices, tails = (data[key] for key in REST_KEYS)
    return (tuple(str(n) for n in names), tuple(str(p) for p in parents),
            np.array(matrices, dtype=float).reshape(-1, 4, 4), np.array(tails, dtype=float).reshape(-1, 3))


def armature_name(data) -> str:
    """The name of the armature a stored cache is for, now: its referenced object's (renamed or not), else the name
    stored (a cache made by an earlier version, or its armature removed)."""
    obj = data.get("object")
    return obj.name if obj is not None else str(data["armature"])


def cached_object(scene):
    """The armature the scene's cached solve is for: its referenced object, else the one of the name stored (a cache
    made by an earlier version); None without a cache or that armature."""
    data = scene.get(KEY)
    if data is None or "head_targets" not in data:
        return None
    obj = data.get("object")
    return obj if obj is not None else bpy.data.objects.get(str(data["armature"]))


def load(scene) -> SolveCache | None:
    """The scene's cached solve (a copy), or None."""
    data = scene.get(KEY)
    if data is None or "head_targets" not in data:  # none, or made by a version that kept less
        return None
    frames, joints = int(data["frames"]), int(data["joints"])
    return SolveCache(
        armature_name(data), [str(b) for b in data["bones"]], int(data["frame_start"]),
        np.array(data["basis"]).reshape(frames, joints, 4),
        np.array(data["locations"]).reshape(frames, joints, 3),
        np.array(data["scales"]).reshape(frames, joints, 3),
        np.array(data["positions"]).reshape(frames, joints, 3),
        np.array(data["wrist_targets"]).reshape(frames, 2, 3),
        np.array(data["head_targets"]).reshape(frames, 3),
        json.loads(data["report"]), float(data["fps"]) if "fps" in data else None,
        np.array(data["object_transform"], dtype=float) if "object_transform" in data else None, stored_rest(data))


@dataclass(frozen=True)
class CachedFrame:
    """One frame of the cached solve: what the frame-change handler needs."""

    armature: str
    bones: list
    basis: np.ndarray
    """(J, 4)"""
    locations: np.ndarray
    """(J, 3)"""
    scales: np.ndarray
    """(J, 3)"""
    object_transform: np.ndarray | None = None
    """As SolveCache's."""


def cached_armature(scene) -> str | None:
    """The name of the armature the scene's cached solve is for (cheap: nothing else is read), or None."""
    data = scene.get(KEY)
    return None if data is None or "head_targets" not in data else armature_name(data)


def made_at_another_rate(scene) -> float | None:
    """The frame rate the scene's cached solve was made at, where the scene now plays at another; else None (no
    cache, the same rate, or a cache made by a version that kept no rate)."""
    data = scene.get(KEY)
    fps = data.get("fps") if data is not None else None
    return None if fps is None or abs(fps - scene_fps(scene)) <= 1e-3 else float(fps)


def cached_frame(scene, frame: int) -> CachedFrame | None:
    """The cached pose shown at scene frame `frame` (held at the ends), or None without a cache."""
    data = scene.get(KEY)
    if data is None or "head_targets" not in data:
        return None
    frames, joints = int(data["frames"]), int(data["joints"])
    index = int(np.clip(frame - int(data["frame_start"]), 0, frames - 1))
    basis, locations, scales = (np.asarray(data[key]).reshape(frames, joints, -1)[index].copy()
                                for key in ("basis", "locations", "scales"))
    transform = np.array(data["object_transform"], dtype=float) if "object_transform" in data else None
    return CachedFrame(armature_name(data), [str(b) for b in data["bones"]], basis, locations, scales, transform)


def clear(scene) -> None:
    if KEY in scene:
        del scene[KEY]


def kept(scene) -> dict | None:
    """A copy of the scene's cached solve as stored (whatever version made it), for `put_back`; None without one."""
    data = scene.get(KEY)
    if data is None:
        return None
    return {key: np.array(value) if isinstance(value, IDPropertyArray) else value for key, value in data.items()}


def put_back(scene, copy: dict | None) -> None:
    """The scene's cached solve as `kept` copied it: none where there was none."""
    clear(scene)
    if copy is not None:
        scene[KEY] = copy
