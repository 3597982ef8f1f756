"""Live Preview operator: a modal timer ticks a live_preview.LivePreview until Esc or the source ends."""
import bpy
from bpy.props import EnumProperty

from ..armature import target_armature
from ..errors import VRAvatarError, polled
from ..live_preview import TICK_S, LivePreview


class VR_AVATAR_OT_preview_live(bpy.types.Operator):
    """Drive the target armature live from the headset and controllers (Esc stops)"""
    bl_idname = "vr_avatar.preview_live"
    bl_label = "Live Preview"

    source: EnumProperty(
        name="Source", description="Where the live device poses come from",
        items=[('BLENDER_VR', "Blender VR Session", "The running VR session: the avatar is seen in the headset"),
               ('OPENXR', "OpenXR Runtime", "An OpenXR runtime through pyopenxr, outside Blender's VR session")],
        default='BLENDER_VR')

    _running = None  # the running preview, so that tests and a second call can reach it

    @classmethod
    def poll(cls, context):
        return polled(cls, target_armature, context)

    @classmethod
    def running(cls):
        return cls._running

    def execute(self, context):
        if type(self)._running is not None:
            self.report({'ERROR'}, "Live Preview is already running: press Esc to stop it first")
            return {'CANCELLED'}
        try:
            self.live = LivePreview(context, self.source)
        except VRAvatarError as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        self._timer = context.window_manager.event_timer_add(TICK_S, window=context.window)
        context.window_manager.modal_handler_add(self)
        type(self)._running = self
        return {'RUNNING_MODAL'}

    def modal(self, context, event):
        if event.type == 'ESC':
            return self._stop(context, "Live preview stopped")
        if event.type != 'TIMER':
            return {'PASS_THROUGH'}
        try:
            if not self.live.tick(context, self.report):
                ended = self.live.source.status(None) or "the VR session ended"
                return self._stop(context, f"Live preview stopped: {ended}", 'WARNING')
        except VRAvatarError as error:
            return self._stop(context, f"Live preview stopped: {error}", 'ERROR')
        return {'RUNNING_MODAL'}

    def cancel(self, context):
        """Blender ends the preview (another file loaded, its window closed): the source closed as Esc closes it."""
        if type(self)._running is self:  # once: Blender may call this again as it frees the file's data
            context.window_manager.event_timer_remove(self._timer)
            type(self)._running = None
            self.live.stop(context)

    def _stop(self, context, message: str, kind: str = 'INFO'):
        context.window_manager.event_timer_remove(self._timer)
        type(self)._running = None
        self.live.stop(context, self.report)
        self.report({kind}, message)
        return {'FINISHED'}


classes = (VR_AVATAR_OT_preview_live,)


register, unregister = bpy.utils.register_classes_factory(classes)
