"""Recording a three-point stream: the headset and controller poses sampled from Blender's VR session or from an
OpenXR runtime (core's pyopenxr source) and written to the Record To file when the recording stops."""
import time
from pathlib import Path

import bpy

from . import core
from .errors import VRAvatarError
from .stream_files import scene_inputs, write_stream_or_report
from .stream_objects import stream_from_xr_poses, xr_poses

RECORD_INTERVAL_S = 1.0 / 90.0
"""Seconds between two samples of the VR session while recording (the session itself runs at ~90 Hz)."""
NO_VR_SESSION = ("No VR session is running: start one with the VR Scene Inspection add-on "
                 "(View3D › Sidebar › VR) and a connected headset")


def vr_session_running(context) -> bool:
    """Whether Blender's VR session (OpenXR) is running in this window manager."""
    session_type = getattr(bpy.types, "XrSessionState", None)
    return (session_type is not None and context.window_manager.xr_session_state is not None
            and session_type.is_running(context))


def recording_warnings(session_settings) -> list[str]:
    """What in Blender's VR session settings keeps a recording from measuring the body in the room."""
    warnings = []
    if not session_settings.use_positional_tracking:
        warnings.append("Positional Tracking is off: the headset's movement is not recorded")
    if not session_settings.use_absolute_tracking:
        warnings.append("Absolute Tracking is off: positions start at the base pose, so heights are not "
                        "measured from the floor")
    return warnings


def take_path(record_to: Path) -> Path:
    """The next take's file: Record To's name numbered, the first number not taken in its folder."""
    number = 1
    while (path := record_to.with_name(f"{record_to.stem}_{number:03d}{record_to.suffix or '.csv'}")).exists():
        number += 1
    return path


def record_target(context) -> Path:
    """The next take's file (`take_path` of Record To); VRAvatarError where it cannot be written or would replace
    one of the scene's inputs (refused before recording, not after)."""
    record_path = context.scene.vr_avatar.stream.record_path
    if not record_path or (record_path.startswith("//") and not bpy.data.is_saved):
        raise VRAvatarError("Save the .blend file first, or set an absolute Record To path")
    path = take_path(Path(bpy.path.abspath(record_path)))
    if not path.parent.is_dir():
        raise VRAvatarError(f"Record To folder {path.parent} does not exist")
    try:
        core.files.atomic.check_outputs([path], scene_inputs(context))
    except ValueError as error:
        raise VRAvatarError(str(error)) from None
    return path


class Recording:
    """One recording from `source` ('BLENDER_VR' or 'OPENXR') to `path`: `sample` each timer tick, `write` at the
    end. VRAvatarError, before anything starts, where the source or the file is not there."""

    current: "Recording | None" = None
    """The recording in progress, if any: a live preview keys the avatar while it samples."""

    def __init__(self, context, source: str, report):
        if source == 'BLENDER_VR' and not vr_session_running(context):
            raise VRAvatarError(NO_VR_SESSION)
        self.path = record_target(context)
        if context.window is None:
            raise VRAvatarError("Recording needs a Blender window")
        self.openxr, self.frames = None, []
        if source == 'OPENXR':
            try:
                self.openxr = core.devices.openxr_source.OpenXRSource()
            except core.devices.openxr_source.OpenXRUnavailable as error:
                raise VRAvatarError(str(error)) from None
        else:
            for warning in recording_warnings(context.window_manager.xr_session_settings):
                report({'WARNING'}, warning)
        self.times, self.positions, self.rotations = [], [], []
        self.countdown_s = context.scene.vr_avatar.stream.countdown_s
        self.start = time.perf_counter() + self.countdown_s
        self.takes = context.scene.vr_avatar.stream.takes
        where = 'the VR session' if self.openxr is None else 'from the OpenXR runtime'
        report({'INFO'}, f"Recording {where} to {self.path.name}" + (f" in {self.countdown_s:g} s" if self.countdown_s
                                                                     else "") + ": press Esc or Record again to stop")
        Recording.current = self

    @property
    def sampling(self) -> bool:
        """Whether the countdown is over."""
        return time.perf_counter() >= self.start

    def ended(self, context) -> bool:
        """Whether the source has gone (the VR session stopped, the OpenXR session ended)."""
        return self.openxr.finished if self.openxr is not None else not vr_session_running(context)

    def sample(self, context) -> None:
        """The devices' poses now (OpenXR: the frame the runtime has, if any); nothing during the countdown."""
        if time.perf_counter() < self.start:
            if self.openxr is not None:
                self.openxr.poll()  # the session goes on; its frames are not kept
            return
        if self.openxr is not None:
            frame = self.openxr.poll()
            if frame is not None:
                self.frames.append(frame)
            return
        now = time.perf_counter() - self.start
        if not self.times or now > self.times[-1]:
            positions, rotations = xr_poses(context, context.window_manager.xr_session_state)
            self.times.append(now)
            self.positions.append(positions)
            self.rotations.append(rotations)

    def write(self, report) -> set:
        """Stop the source and write what was recorded (nothing recorded: a warning, no file)."""
        Recording.current = None
        if self.openxr is not None:
            self.openxr.close()
        if not (self.frames or self.times):
            report({'WARNING'}, "Nothing recorded: the " + (
                "VR session gave no poses" if self.openxr is None else "OpenXR runtime located nothing (" +
                (core.devices.openxr_lifecycle.tracking_status(self.openxr.lifecycle)
                 or "the session never became visible") + ")"))
            return {'CANCELLED'}
        if self.openxr is not None:
            stream = core.devices.openxr_frames.frames_to_stream(self.frames)
            comments = ["recorded from an OpenXR runtime by the VR Avatar add-on, reference space "
                        f"{self.openxr.reference_space}"]
        else:
            stream = stream_from_xr_poses(self.times, self.positions, self.rotations)
            comments = ["recorded from Blender's VR session by the VR Avatar add-on"]
        if not write_stream_or_report(report, self.path, stream, comments):
            return {'CANCELLED'}
        take = listed_take(self.takes, self.path, stream)
        report({'INFO'}, f"Recorded take '{take.name}': {len(stream)} samples ({stream.duration:.1f} s) to "
               f"{self.path}" + ("; calibration gesture found" if take.calibrated else ""))
        return {'FINISHED'}


def listed_take(takes, path: Path, stream):
    """The take at `path` added to the scene's take list with its length and calibration (and made active)."""
    take = takes.add()
    take.name, take.path = path.stem, bpy.path.relpath(str(path)) if bpy.data.is_saved else str(path)
    take.samples, take.duration_s = len(stream), float(stream.duration)
    calibration = core.devices.calibration.calibrate_stream(stream)
    take.calibrated = calibration.found
    try:
        take.height_m = calibration.standing_hmd_height_m if calibration.found else core.solution.standing_height(
            stream, core.config.CalibrationConfig().search_s)
    except ValueError:  # the headset never tracked: no height to show
        take.height_m = 0.0
    takes.id_data.vr_avatar.stream.takes_index = len(takes) - 1
    return take
