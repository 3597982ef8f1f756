"""Stream files in Blender: a three-point stream CSV loaded as animated empties, the empties exported as one, and
outputs refused where they would replace what the scene was made from."""
from pathlib import Path

import bpy
import numpy as np

from . import core
from .scene_timing import scene_fps
from .stream_objects import TIME_START, empties_from_stream, remove_stream_empties, stream_from_empties


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
