"""Stream operators: loading a three-point stream as animated empties, exporting the empties as one, recording one
(stream_files.py and recording.py do the work)."""
import bpy
from bpy.props import EnumProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from .. import recording
from ..errors import VRAvatarError, polled
from ..stream_files import export_stream, load_stream


class VR_AVATAR_OT_load_stream(bpy.types.Operator, ImportHelper):
    """Load a three-point stream CSV as animated HMD, left and right controller empties, replacing the previous ones"""
    bl_idname = "vr_avatar.load_stream"
    bl_label = "Load Stream"
    bl_options = {'REGISTER', 'UNDO'}

    filename_ext = ".csv"
    filter_glob: StringProperty(default="*.csv", options={'HIDDEN'})

    def execute(self, context):
        return load_stream(context, self.report, self.filepath)


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
        return export_stream(context, self.report, self.filepath)


class VR_AVATAR_OT_record_stream(bpy.types.Operator):
    """Record the headset and controller poses to the Record To file; Esc or run again to stop. With Controller
    Button (OpenXR), each press of a controller's record button starts or stops a take"""
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
        if type(self)._recording is not None:
            type(self)._recording.stop_requested = True
            return {'FINISHED'}
        try:
            self.recording = recording.Recording(context, self.source, self.report,
                                                 context.scene.vr_avatar.stream.record_by_button)
        except VRAvatarError as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        self.stop_requested = False
        self.timer = context.window_manager.event_timer_add(recording.RECORD_INTERVAL_S, window=context.window)
        context.window_manager.modal_handler_add(self)
        type(self)._recording = self
        return {'RUNNING_MODAL'}

    def modal(self, context, event):
        if (event.type == 'ESC' and event.value == 'PRESS') or self.stop_requested or self.recording.ended(context):
            return self.finish(context)
        if event.type == 'TIMER' and event.timer == self.timer:
            self.recording.sample(context)
        return {'PASS_THROUGH'}

    def cancel(self, context):
        self.finish(context)

    def finish(self, context):
        """Stop sampling and write what was recorded."""
        context.window_manager.event_timer_remove(self.timer)
        type(self)._recording = None
        return self.recording.write(self.report)


def active_take(context):
    """The take list's active take; VRAvatarError where the list is empty."""
    stream = context.scene.vr_avatar.stream
    if not 0 <= stream.takes_index < len(stream.takes):
        raise VRAvatarError("No take: record one first (Record VR Session or Record OpenXR)")
    return stream.takes[stream.takes_index]


class VR_AVATAR_OT_load_take(bpy.types.Operator):
    """Load the active take's stream as the scene's stream"""
    bl_idname = "vr_avatar.load_take"
    bl_label = "Load Take"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return polled(cls, active_take, context)

    def execute(self, context):
        return load_stream(context, self.report, bpy.path.abspath(active_take(context).path))


class VR_AVATAR_OT_remove_take(bpy.types.Operator):
    """Remove the active take from the list (its file stays on disk)"""
    bl_idname = "vr_avatar.remove_take"
    bl_label = "Remove Take"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return polled(cls, active_take, context)

    def execute(self, context):
        stream = context.scene.vr_avatar.stream
        stream.takes.remove(stream.takes_index)
        stream.takes_index = min(stream.takes_index, len(stream.takes) - 1)
        return {'FINISHED'}


classes = (VR_AVATAR_OT_load_stream, VR_AVATAR_OT_export_stream, VR_AVATAR_OT_record_stream, VR_AVATAR_OT_load_take,
           VR_AVATAR_OT_remove_take)


register, unregister = bpy.utils.register_classes_factory(classes)
