"""Stream files in Blender: a three-point stream CSV loaded as animated empties, the empties exported as one, and
outputs refused where they would replace what the scene was made from."""
from pathlib import Path

import bpy
import numpy as np

from . import core
from .axes import z_up_from_y_up
from .keyframes import action_fcurves
from .scene_timing import scene_fps
from .stream_objects import TIME_START, empties_from_stream, remove_stream_empties, stream_from_empties

EDITED_M = 0.01
"""Stream empties keyed farther than this from the scene's stream file were edited by hand."""


def format_error(error) -> str:
    """A StreamFormatError as "<file>, line N: problem"."""
    prefix = f"{error.path}:{error.line}: " if error.line else f"{error.path}: "
    message = str(error).removeprefix(prefix)
    where = f"{Path(error.path).name}, line {error.line}" if error.line else Path(error.path).name
    return f"Cannot load stream {where}: {message}"


def scene_inputs(context) -> list[str]:
    """The files the scene was made from, which no output may replace: the loaded stream and the .blend."""
    stream = context.scene.vr_avatar.stream.stream_path
    return [bpy.path.abspath(stream) if stream else None, bpy.data.filepath or None]


def write_stream_or_report(report, path, stream, comments) -> bool:
    """Write `stream` to `path` unless it is one of the scene's inputs; a refusal or failure is one error report."""
    try:
        core.files.atomic.check_outputs([path], scene_inputs(bpy.context))
        core.files.stream.write_stream(path, stream, comments)
    except (OSError, ValueError) as error:  # core's OutputError says the path and what happened
        report({'ERROR'}, f"Cannot write {path}: {error}" if isinstance(error, OSError) else str(error))
        return False
    return True


def load_stream(context, report, filepath: str) -> set:
    """The stream at `filepath` as the scene's HMD and controller empties at the scene's rate, replacing the
    previous ones (its implausible samples dropped, with a warning each)."""
    try:
        stream = core.files.stream.read_stream(filepath)
        warnings = core.devices.plausibility.check_stream(stream, filepath)
    except core.files.stream.StreamFormatError as error:
        report({'ERROR'}, format_error(error))
        return {'CANCELLED'}
    for warning in warnings:
        report({'WARNING'}, warning)
    scene = context.scene
    stream = core.devices.plausibility.without_unusable_samples(stream)[0].resampled(scene_fps(scene))
    remove_stream_empties(scene)
    settings = scene.vr_avatar.stream
    settings.head, settings.left, settings.right = empties_from_stream(scene, stream, scene.frame_start)
    settings.stream_path = bpy.path.relpath(filepath) if bpy.data.is_saved else filepath
    scene.frame_end = max(scene.frame_end, scene.frame_start + len(stream) - 1)
    untracked = np.count_nonzero(~stream.tracked, axis=0)
    report({'INFO'}, f"Loaded {len(stream)} frames ({stream.duration:.1f} s) at {scene_fps(scene):g} fps; "
           "untracked frames HMD {}, left {}, right {}".format(*untracked))
    return {'FINISHED'}


def export_stream(context, report, filepath: str) -> set:
    """The stream empties' world poses over their animated frames (else the scene's range) written to
    `filepath` as a three-point stream CSV."""
    scene = context.scene
    settings = scene.vr_avatar.stream
    devices = (settings.head, settings.left, settings.right)
    ranges = [obj.animation_data.action.frame_range for obj in devices
              if obj.animation_data and obj.animation_data.action]
    first, last = ((min(r[0] for r in ranges), max(r[1] for r in ranges)) if ranges
                   else (scene.frame_start, scene.frame_end))
    frames = np.arange(int(round(first)), int(round(last)) + 1)
    stream = stream_from_empties(*devices, frames, scene_fps(scene), settings.head.get(TIME_START, 0.0))
    comments = [f"exported from {bpy.data.filepath or 'an unsaved file'} by the VR Avatar add-on"]
    if not write_stream_or_report(report, filepath, stream, comments):
        return {'CANCELLED'}
    report({'INFO'}, f"Exported {len(stream)} frames to {filepath}")
    return {'FINISHED'}


def keyed_locations(obj) -> tuple[np.ndarray, np.ndarray] | None:
    """The frames (K,) and values (K, 3) of the object's location keys, each curve read in one call; None where
    it has no location keys or its three curves are not keyed on the same frames."""
    action = obj.animation_data.action if obj is not None and obj.animation_data is not None else None
    curves = {c.array_index: c for c in action_fcurves(action) if c.data_path == "location"} if action else {}
    if len(curves) < 3:
        return None
    keys = []
    for index in range(3):
        points = curves[index].keyframe_points
        co = np.empty(2 * len(points), dtype=np.float64)
        points.foreach_get("co", co)
        keys.append(co.reshape(-1, 2))
    if any(len(k) != len(keys[0]) or not np.array_equal(k[:, 0], keys[0][:, 0]) for k in keys):
        return None
    return keys[0][:, 0], np.stack([k[:, 1] for k in keys], axis=-1)


def empties_edited(scene) -> str:
    """A warning line where the stream empties are keyed more than 1 cm from the scene's stream file (the solve
    reads the file, so hand edits to them would be missed); else ''."""
    settings = scene.vr_avatar.stream
    devices = (settings.head, settings.left, settings.right)
    if not settings.stream_path or None in devices or settings.head.animation_data is None:
        return ""
    path = bpy.path.abspath(settings.stream_path)
    try:
        stream = core.files.stream.read_stream(path)
    except (OSError, core.files.stream.StreamFormatError):
        return ""
    stream = core.devices.plausibility.without_unusable_samples(stream)[0].resampled(scene_fps(scene))
    positions = z_up_from_y_up(stream.positions)
    for device, obj in enumerate(devices):
        keyed = keyed_locations(obj)
        if keyed is None or len(keyed[0]) != len(stream):  # loaded at another rate, or keyed by the user throughout
            continue
        frames, locations = keyed
        gaps = np.where(stream.tracked[:, device], np.linalg.norm(locations - positions[:, device], axis=-1), 0.0)
        if gaps.max() > EDITED_M:
            worst = int(np.argmax(gaps))
            return (f"The stream empty '{obj.name}' is {gaps[worst] * 100:.0f} cm from {Path(path).name} at frame "
                    f"{int(frames[worst])}: the solve reads the file, so Export Stream to a new file and load it to "
                    "solve the edits")
    return ""
