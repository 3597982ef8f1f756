"""Recording a three-point stream: the headset and controller poses sampled from Blender's VR session or from an
OpenXR runtime (core's pyopenxr source) and written to the Record To file when the recording stops."""
import dataclasses
import time
from pathlib import Path

import bpy

from . import core
from .errors import VRAvatarError
from .stream_files import scene_inputs, write_stream_or_report
from .openxr_session import SharedOpenXR
from .stream_objects import stream_from_xr_poses, xr_poses

RECORD_INTERVAL_S = 1.0 / 90.0
"""Seconds between two samples of the VR session while recording (the session itself runs at ~90 Hz)."""
NO_BUTTON_IN_BLENDER_VR = ("Controller Button works with Record OpenXR only: Blender's VR session does not hand its "
                           "controllers' buttons to add-ons")
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


class ButtonPresses:
    """The presses of a held button: `pressed(held)` is True on the first sample held after one that was not."""

    def __init__(self):
        self.held = False

    def pressed(self, held: bool) -> bool:
        pressed, self.held = held and not self.held, held
        return pressed


class Recording:
    """A recording from `source` ('BLENDER_VR' or 'OPENXR'): `sample` each timer tick, `write` at the end. Each take
    is its own file (`record_target`). With `by_button` (OpenXR only) takes start and stop with the controllers'
    record button (core.devices.openxr_source.RECORD_BUTTONS), as many as the user presses for; otherwise one take
    starts now. VRAvatarError, before anything starts, where the source or the file is not there."""

    current: "Recording | None" = None
    """The recording in progress, if any: a live preview keys the avatar while it samples."""
    live_calibration = None
    """What a running Live Preview's calibration found (a StreamCalibration), if it found the gesture: a take without
    a gesture of its own stores it, so its solve sees the controllers as the preview did."""

    def __init__(self, context, source: str, report, by_button: bool = False):
        if source == 'BLENDER_VR' and not vr_session_running(context):
            raise VRAvatarError(NO_VR_SESSION)
        if by_button and source != 'OPENXR':
            raise VRAvatarError(NO_BUTTON_IN_BLENDER_VR)
        self.path = record_target(context)
        if context.window is None:
            raise VRAvatarError("Recording needs a Blender window")
        self.openxr, self.frames, self.report, self.by_button = None, [], report, by_button
        if source == 'OPENXR':
            self.openxr = SharedOpenXR()  # a Live Preview (OpenXR) running shares it
        else:
            for warning in recording_warnings(context.window_manager.xr_session_settings):
                report({'WARNING'}, warning)
        self.times, self.positions, self.rotations = [], [], []
        self.countdown_s = context.scene.vr_avatar.stream.countdown_s
        self.rate = float(context.scene.vr_avatar.stream.record_rate)
        self.takes = context.scene.vr_avatar.stream.takes
        self.presses, self.pressed_once, self.written, self.refused = ButtonPresses(), False, 0, False
        self.start: float | None = None
        """perf_counter time of the take's first sample (after its countdown); None between button takes."""
        Recording.current = self
        if by_button:
            report({'INFO'}, "Press A (Index; right Touch or HP), X (left Touch or HP) or Menu (others) to start and "
                             "stop each take; Esc or Stop Recording ends")
        else:
            self.start_take(context)

    @property
    def sampling(self) -> bool:
        """Whether a take is recording, its countdown over."""
        return self.start is not None and time.perf_counter() >= self.start

    def ended(self, context) -> bool:
        """Whether the source has gone (the VR session stopped, the OpenXR session ended)."""
        return self.openxr.finished if self.openxr is not None else not vr_session_running(context)

    def start_take(self, context) -> None:
        """Start a take into the next numbered file, after the countdown."""
        self.path = record_target(context)
        self.start = time.perf_counter() + self.countdown_s
        where = 'the VR session' if self.openxr is None else 'from the OpenXR runtime'
        stop = "press the record button again" if self.by_button else "press Esc or Record again"
        self.report({'INFO'}, f"Recording {where} to {self.path.name}" + (
            f" in {self.countdown_s:g} s" if self.countdown_s else "") + f": {stop} to stop")

    def sample(self, context) -> None:
        """The devices' poses now (OpenXR: the frame the runtime has, if any; a press of the record button starts
        or ends a take); nothing is kept during a countdown or between takes."""
        if self.openxr is not None:
            for frame in self.openxr.frames():  # the session goes on through countdowns; those frames are not kept
                if self.by_button and self.presses.pressed(frame.button):
                    self.toggle_take(context)
                elif self.sampling:
                    self.frames.append(frame)
            return
        if not self.sampling:
            return
        now = time.perf_counter() - self.start
        if not self.times or now > self.times[-1]:
            positions, rotations = xr_poses(context, context.window_manager.xr_session_state)
            self.times.append(now)
            self.positions.append(positions)
            self.rotations.append(rotations)

    def toggle_take(self, context) -> None:
        """A press of the record button: start a take, or write the one recording."""
        self.pressed_once = True
        if self.start is None:
            try:
                self.start_take(context)
            except VRAvatarError as error:
                self.report({'ERROR'}, str(error))
        else:
            self.write_take()

    def write(self, report) -> set:
        """Stop the source and write the take in progress (nothing recorded in any take: a warning, no file)."""
        Recording.current = None
        if self.openxr is not None:
            self.openxr.close()
        if self.start is not None:
            self.write_take()
        if not self.written:
            if self.refused:
                return {'CANCELLED'}
            report({'WARNING'}, "Nothing recorded: " + (
                "the record button was never pressed" if self.by_button and not self.pressed_once else
                "the VR session gave no poses" if self.openxr is None else "the OpenXR runtime located nothing (" +
                (core.devices.openxr_lifecycle.tracking_status(self.openxr.lifecycle)
                 or "the session never became visible") + ")"))
            return {'CANCELLED'}
        return {'FINISHED'}

    def write_take(self) -> None:
        """Write the take recorded so far to its file and list it; the next take starts empty."""
        frames, times, positions, rotations = self.frames, self.times, self.positions, self.rotations
        self.frames, self.times, self.positions, self.rotations, self.start = [], [], [], [], None
        if not (frames or times):
            return
        if self.openxr is not None:
            stream = core.devices.openxr_frames.frames_to_stream(frames)
            comments = ["recorded from an OpenXR runtime by the VR Avatar add-on, reference space "
                        f"{self.openxr.reference_space}"]
        else:
            stream = stream_from_xr_poses(times, positions, rotations)
            comments = ["recorded from Blender's VR session by the VR Avatar add-on"]
        if self.rate:
            stream = stream.resampled(self.rate)
            comments.append(f"resampled to {self.rate:g} Hz")
        own = core.devices.calibration.calibrate_stream(stream)
        stored = None if own.found else preview_calibration()
        if stored is not None:
            comments += [f"calibration gesture read by Live Preview before this take ({stored.pose}-pose)",
                         stored.comment()]
        if not write_stream_or_report(self.report, self.path, stream, comments):
            self.refused = True
            return
        take = listed_take(self.takes, self.path, stream, stored or own)
        self.written += 1
        self.report({'INFO'}, f"Recorded take '{take.name}': {len(stream)} samples ({stream.duration:.1f} s) to "
                    f"{self.path}" + ("; calibration gesture found" if take.calibrated else ""))


def preview_calibration():
    """The running Live Preview's calibration, for a take without a gesture of its own (its pose's time, before the
    take began, stored as 0), or None."""
    found = Recording.live_calibration
    return None if found is None else dataclasses.replace(found, pose_s=(0.0, 0.0))


def listed_take(takes, path: Path, stream, calibration=None):
    """The take at `path` added to the scene's take list with its length and calibration (`calibration`, stored with
    it, else the gesture it starts with; and made active)."""
    take = takes.add()
    take.name, take.path = path.stem, bpy.path.relpath(str(path)) if bpy.data.is_saved else str(path)
    take.samples, take.duration_s = len(stream), float(stream.duration)
    calibration = calibration or core.devices.calibration.calibrate_stream(stream)
    take.calibrated = calibration.found
    try:
        take.height_m = calibration.standing_hmd_height_m if calibration.found else core.solution.standing_height(
            stream, core.config.N3PConfig().calibration_s)
    except ValueError:  # the headset never tracked: no height to show
        take.height_m = 0.0
    takes.id_data.vr_avatar.stream.takes_index = len(takes) - 1
    return take
