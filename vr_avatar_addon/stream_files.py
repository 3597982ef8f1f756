"""Stream files in Blender: a three-point stream CSV loaded as animated empties, the empties exported as one, and
outputs refused where they would replace what the scene was made from."""
from pathlib import Path

import bpy
import numpy as np

from . import core
from .axes import z_up_from_y_up, z_up_rotation_from_y_up
from .scene_timing import scene_fps
from .stream_objects import FRAME_START, LOADED_FPS, TIME_START, device_poses, empties_from_stream, \
    remove_stream_empties, slot_fcurves, stream_from_empties

EDITED_M = 0.01
"""A stream empty farther than this from the scene's stream file was edited by hand ..."""
EDITED_DEG = 1.0
"""... or one turned more than this from it."""


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
    stream = as_loaded(stream, scene)
    remove_stream_empties(scene)
    settings = scene.vr_avatar.stream
    settings.head, settings.left, settings.right = empties_from_stream(scene, stream, scene.frame_start, scene_fps(scene))
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


def loaded_frames(settings, samples: int) -> np.ndarray:
    """The scene frames the loaded stream's `samples` samples were keyed at (its empties' first frame on)."""
    head = settings.head
    start = head.get(FRAME_START)
    if start is None:  # loaded by an earlier version: the first frame its keys reach
        action = head.animation_data.action if head.animation_data is not None else None
        start = round(action.frame_range[0]) if action is not None else bpy.context.scene.frame_start
    return int(start) + np.arange(samples)


def stream_start_frame(scene) -> int:
    """The scene frame the loaded stream's first sample is keyed at (its empties'), else the scene's first frame."""
    settings = scene.vr_avatar.stream
    return int(loaded_frames(settings, 1)[0]) if settings.head is not None else scene.frame_start


def loaded_at(scene, samples: int) -> bool:
    """Whether the stream empties were keyed at the scene's present rate (an earlier version's: one key a sample)."""
    head = scene.vr_avatar.stream.head
    fps = head.get(LOADED_FPS)
    if fps is not None:
        return abs(fps - scene_fps(scene)) < 1e-6
    curves = slot_fcurves(head)
    return ("location", 0) in curves and len(curves["location", 0].keyframe_points) == samples


def empties_edits(scene, loaded, devices=(0, 1, 2)) -> str:
    """Where the scene's stream empties (those of `devices`) no longer hold `loaded`, the stream as it was loaded
    (`as_loaded`): a position more than 1 cm away, a rotation more than 1 degree, or a frame marked tracked or
    untracked otherwise. A line naming the first empty and frame, or '' where they hold it."""
    settings = scene.vr_avatar.stream
    empties = (settings.head, settings.left, settings.right)
    if None in empties or not loaded_at(scene, len(loaded)):
        return ""
    frames = loaded_frames(settings, len(loaded))
    positions, rotations, tracked = device_poses(empties, frames)
    both = tracked & loaded.tracked
    moved = np.linalg.norm(positions - np.nan_to_num(z_up_from_y_up(loaded.positions)), axis=-1)
    cosine = np.abs(np.sum(rotations * np.nan_to_num(z_up_rotation_from_y_up(loaded.rotations)), axis=-1))
    turned = np.degrees(2.0 * np.arccos(np.clip(cosine, 0.0, 1.0)))
    edited = (both & ((moved > EDITED_M) | (turned > EDITED_DEG))) | (tracked != loaded.tracked)
    for device in devices:
        if edited[:, device].any():
            first = int(np.argmax(edited[:, device]))
            what = ("marked tracked" if tracked[first, device] else "marked untracked") \
                if tracked[first, device] != loaded.tracked[first, device] else \
                f"{moved[first, device] * 100:.0f} cm and {turned[first, device]:.0f} deg from the file"
            count = int(edited[:, device].sum())
            return (f"'{empties[device].name}' edited at frame {int(frames[first])} ({what}; "
                    f"{count} frame{'s' if count > 1 else ''} edited)")
    return ""


def as_loaded(stream, scene):
    """The stream as Load Stream keys it: its unusable samples dropped, at the scene's rate."""
    return core.devices.plausibility.without_unusable_samples(stream)[0].resampled(scene_fps(scene))


def solve_input(scene, stream, path: str, hmd_only: bool = False):
    """(the stream to solve, a line saying where it came from): `stream`, read from the scene's stream file at
    `path`, unless the scene's empties were edited away from it; then the empties' poses at the scene's rate,
    where the first edit is named (with `hmd_only`, the HMD's edits alone count and the controllers are
    untracked)."""
    loaded = as_loaded(stream, scene)
    edits = empties_edits(scene, loaded, (0,) if hmd_only else (0, 1, 2))
    if not edits:
        return stream, ""
    settings = scene.vr_avatar.stream
    empties = (settings.head, settings.left, settings.right)
    edited = stream_from_empties(*empties, loaded_frames(settings, len(loaded)), scene_fps(scene),
                                 settings.head.get(TIME_START, 0.0))
    if hmd_only:
        edited.tracked[:, 1:] = False
        edited.positions[:, 1:] = np.nan
        edited.rotations[:, 1:] = np.nan
    return edited, (f"Solving the stream empties as edited, not {Path(path).name}: {edits}; at the scene's "
                    f"{scene_fps(scene):g} fps")
