"""Stream operators: a three-point stream as animated empties, and recording one from Blender's VR session
or from an OpenXR runtime through core's pyopenxr source."""
import time
from pathlib import Path

import bpy
import numpy as np
from bpy.props import EnumProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from .. import core
from ..scene_timing import scene_fps
from ..stream_objects import (TIME_START, empties_from_stream, remove_stream_empties, stream_from_empties,
                             stream_from_xr_poses, xr_poses)

# Seconds between two samples of the VR session while recording (the session itself runs at ~90 Hz).
RECORD_INTERVAL_S = 1.0 / 90.0
NO_VR_SESSION = ("No VR session is running: start one with the VR Scene Inspection add-on "
                 "(View3D › Sidebar › VR) and a connected headset")


def _format_error(error) -> str:
    """A StreamFormatError as "<file>, line N: problem"."""
    prefix = f"{error.path}:{error.line}: " if error.line else f"{error.path}: "
    message = str(error).removeprefix(prefix)
    where = f"{Path(error.path).name}, line {error.line}" if error.line else Path(error.path).name
    return f"Cannot load stream {where}: {message}"


def scene_inputs(context) -> list[str]:
    """The files the scene was made from, which no output may replace: the loaded stream and the .blend."""
    stream = context.scene.vr_avatar.stream.stream_path
    return [bpy.path.abspath(stream) if stream else None, bpy.data.filepath or None]


def write_stream_or_report(operator, path, stream, comments) -> bool:
    """Write `stream` to `path` unless it is one of the scene's inputs; a refusal or failure is one error report."""
    try:
        core.files.atomic.check_outputs([path], scene_inputs(bpy.context))
        core.files.stream.write_stream(path, stream, comments)
    except (OSError, ValueError) as error:  # core's OutputError says the path and what happened
        operator.report({'ERROR'}, f"Cannot write {path}: {error}" if isinstance(error, OSError) else str(error))
        return False
    return True


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


class VR_AVATAR_OT_load_stream(bpy.types.Operator, ImportHelper):
    """Load a three-point stream CSV as animated HMD, left and right controller empties, replacing the previous ones"""
    bl_idname = "vr_avatar.load_stream"
    bl_label = "Load Stream"
    bl_options = {'REGISTER', 'UNDO'}

    filename_ext = ".csv"
    filter_glob: StringProperty(default="*.csv", options={'HIDDEN'})

    def execute(self, context):
        try:
            stream = core.files.stream.read_stream(self.filepath)
            warnings = core.devices.plausibility.check_stream(stream, self.filepath)
        except core.files.stream.StreamFormatError as error:
            self.report({'ERROR'}, _format_error(error))
            return {'CANCELLED'}
        for warning in warnings:
            self.report({'WARNING'}, warning)
        scene = context.scene
        stream = core.devices.plausibility.without_unusable_samples(stream)[0].resampled(scene_fps(scene))
        remove_stream_empties(scene)
        settings = scene.vr_avatar.stream
        settings.head, settings.left, settings.right = empties_from_stream(scene, stream, scene.frame_start)
        settings.stream_path = bpy.path.relpath(self.filepath) if bpy.data.is_saved else self.filepath
        scene.frame_end = max(scene.frame_end, scene.frame_start + len(stream) - 1)
        untracked = np.count_nonzero(~stream.tracked, axis=0)
        self.report({'INFO'}, f"Loaded {len(stream)} frames ({stream.duration:.1f} s) at {scene_fps(scene):g} fps; "
                    "untracked frames HMD {}, left {}, right {}".format(*untracked))
        return {'FINISHED'}


class VR_AVATAR_OT_export_stream(bpy.types.Operator, ExportHelper):
    """Export the stream empties' world poses over their animated frames as a three-point stream CSV"""
    bl_idname = "vr_avatar.export_stream"
    bl_label = "Export Stream"
    bl_options = {'REGISTER'}

    filename_ext = ".csv"
    filter_glob: StringProperty(default="*.csv", options={'HIDDEN'})

    @classmethod
    def poll(cls, context):
        settings = context.scene.vr_avatar.stream
        if None in (settings.head, settings.left, settings.right):
            cls.poll_message_set("Load a stream first, or set the HMD, Left and Right empties")
            return False
        return True

    def execute(self, context):
        scene = context.scene
        settings = scene.vr_avatar.stream
        devices = (settings.head, settings.left, settings.right)
        ranges = [obj.animation_data.action.frame_range for obj in devices
                  if obj.animation_data and obj.animation_data.action]
        first, last = ((min(r[0] for r in ranges), max(r[1] for r in ranges)) if ranges
                       else (scene.frame_start, scene.frame_end))
        frames = np.arange(int(round(first)), int(round(last)) + 1)
        stream = stream_from_empties(*devices, frames, scene_fps(scene), settings.head.get(TIME_START, 0.0))
        if not write_stream_or_report(self, self.filepath, stream, [f"exported from {bpy.data.filepath or 'an unsaved file'} "
                                                                    "by the VR Avatar add-on"]):
            return {'CANCELLED'}
        self.report({'INFO'}, f"Exported {len(stream)} frames to {self.filepath}")
        return {'FINISHED'}


class VR_AVATAR_OT_record_stream(bpy.types.Operator):
    """Record the headset and controller poses to the Record To file; Esc or run again to stop"""
    bl_idname = "vr_avatar.record_stream"
    bl_label = "Record Stream"
    bl_options = {'REGISTER'}

    source: EnumProperty(
        name="Source", description="Where the recorded device poses come from",
        items=[('BLENDER_VR', "Blender VR Session", "The running VR session (VR Scene Inspection add-on)"),
               ('OPENXR', "OpenXR Runtime", "An OpenXR runtime through pyopenxr, outside Blender's VR session")],
        default='BLENDER_VR')

    _recording = None  # the running recorder, so that a second call stops it

    @classmethod
    def is_recording(cls) -> bool:
        return cls._recording is not None

    def invoke(self, context, _event):
        return self.execute(context)

    def execute(self, context):
        recording = type(self)._recording
        if recording is not None:
            recording.stop_requested = True
            return {'FINISHED'}
        if self.source == 'BLENDER_VR' and not vr_session_running(context):
            self.report({'ERROR'}, NO_VR_SESSION)
            return {'CANCELLED'}
        record_path = context.scene.vr_avatar.stream.record_path
        if not record_path or (record_path.startswith("//") and not bpy.data.is_saved):
            self.report({'ERROR'}, "Save the .blend file first, or set an absolute Record To path")
            return {'CANCELLED'}
        self.path = Path(bpy.path.abspath(record_path))
        if not self.path.parent.is_dir():
            self.report({'ERROR'}, f"Record To folder {self.path.parent} does not exist")
            return {'CANCELLED'}
        try:  # refused before recording, not after
            core.files.atomic.check_outputs([self.path], scene_inputs(context))
        except ValueError as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        if context.window is None:
            self.report({'ERROR'}, "Recording needs a Blender window")
            return {'CANCELLED'}
        self.openxr, self.frames = None, []
        if self.source == 'OPENXR':
            try:
                self.openxr = core.devices.openxr_source.OpenXRSource()
            except core.devices.openxr_source.OpenXRUnavailable as error:
                self.report({'ERROR'}, str(error))
                return {'CANCELLED'}
        self.times, self.positions, self.rotations = [], [], []
        self.stop_requested = False
        self.start = time.perf_counter()
        self.timer = context.window_manager.event_timer_add(RECORD_INTERVAL_S, window=context.window)
        context.window_manager.modal_handler_add(self)
        type(self)._recording = self
        if self.openxr is None:
            for warning in recording_warnings(context.window_manager.xr_session_settings):
                self.report({'WARNING'}, warning)
        self.report({'INFO'}, f"Recording {'the VR session' if self.openxr is None else 'from the OpenXR runtime'}: "
                    "press Esc or Record again to stop")
        return {'RUNNING_MODAL'}

    def _source_ended(self, context) -> bool:
        return self.openxr.finished if self.openxr is not None else not vr_session_running(context)

    def modal(self, context, event):
        if (event.type == 'ESC' and event.value == 'PRESS') or self.stop_requested or self._source_ended(context):
            return self.finish(context)
        if event.type == 'TIMER' and event.timer == self.timer and self.openxr is not None:
            frame = self.openxr.poll()
            if frame is not None:
                self.frames.append(frame)
        elif event.type == 'TIMER' and event.timer == self.timer:
            now = time.perf_counter() - self.start
            if not self.times or now > self.times[-1]:
                positions, rotations = xr_poses(context, context.window_manager.xr_session_state)
                self.times.append(now)
                self.positions.append(positions)
                self.rotations.append(rotations)
        return {'PASS_THROUGH'}

    def cancel(self, context):
        self.finish(context)

    def finish(self, context):
        """Stop sampling and write what was recorded."""
        context.window_manager.event_timer_remove(self.timer)
        type(self)._recording = None
        if self.openxr is not None:
            self.openxr.close()
            space = self.openxr.reference_space
        if not (self.frames or self.times):
            self.report({'WARNING'}, "Nothing recorded: the " + ("VR session gave no poses" if self.openxr is None else
                        "OpenXR runtime located nothing (" + (core.devices.openxr_lifecycle.tracking_status(self.openxr.lifecycle)
                                                         or "the session never became visible") + ")"))
            return {'CANCELLED'}
        if self.openxr is not None:
            stream = core.devices.openxr_frames.frames_to_stream(self.frames)
            comments = [f"recorded from an OpenXR runtime by the VR Avatar add-on, reference space {space}"]
        else:
            stream = stream_from_xr_poses(self.times, self.positions, self.rotations)
            comments = ["recorded from Blender's VR session by the VR Avatar add-on"]
        if not write_stream_or_report(self, self.path, stream, comments):
            return {'CANCELLED'}
        self.report({'INFO'}, f"Recorded {len(stream)} samples ({stream.duration:.1f} s) to {self.path}")
        return {'FINISHED'}


classes = (VR_AVATAR_OT_load_stream, VR_AVATAR_OT_export_stream, VR_AVATAR_OT_record_stream)


register, unregister = bpy.utils.register_classes_factory(classes)
