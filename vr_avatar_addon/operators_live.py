"""Live preview: a modal timer steps core's solver from a live three-point source and poses the avatar.

Two sources: Blender's own VR session (the avatar is then seen in the headset) and an OpenXR
runtime through core's pyopenxr source. Without a headset neither can start; the operator says
which and changes nothing.
"""
import time

import bpy
import numpy as np
from bpy.props import EnumProperty

from . import bone_space, core, solve_cache
from .handlers import pose_frame
from .operators_solve import VRAvatarError, avatar_target, load_solver
from .stream_objects import stream_from_xr_poses, xr_poses

TICK_S = 1.0 / 90.0  # a headset's refresh, roughly


class BlenderVRSource:
    """Device poses from Blender's VR session (VR Scene Inspection add-on)."""

    def __init__(self, context):
        state = context.window_manager.xr_session_state
        if state is None or not bpy.types.XrSessionState.is_running(context):
            raise VRAvatarError("No VR session is running: start one with the VR Scene Inspection add-on "
                                "(View3D › Sidebar › VR) and a connected headset")
        self.state = state

    def read(self, context):
        """(positions (3, 3), rotations (3, 4), tracked (3,)) in core's frame, or None once the session ended."""
        if not bpy.types.XrSessionState.is_running(context):
            return None
        positions, rotations = xr_poses(context, self.state)
        stream = stream_from_xr_poses([time.perf_counter()], positions[None], rotations[None])
        return stream.positions[0], stream.rotations[0], stream.tracked[0]

    def close(self):
        pass


class OpenXRRuntimeSource:
    """Device poses from an OpenXR runtime through core's pyopenxr source."""

    def __init__(self, _context):
        try:
            self.source = core.openxr_source.OpenXRSource().__enter__()
        except core.openxr_source.OpenXRUnavailable as error:
            raise VRAvatarError(str(error)) from None

    def read(self, _context):
        if self.source.finished:
            return None
        frame = self.source.poll()
        return None if frame is None else (frame.positions, frame.rotations, frame.tracked)

    def close(self):
        self.source.close()


SOURCES = {'BLENDER_VR': BlenderVRSource, 'OPENXR': OpenXRRuntimeSource}


class LiveAvatar:
    """The solver and the retargeting onto one armature, stepped one frame at a time."""

    def __init__(self, context):
        self.obj, target = avatar_target(context)
        self.solver = load_solver(context)
        self.target = target
        self.retargeting = core.retarget.Retargeting.between(self.solver.skeleton, self.solver.mapping, target)
        self.hips_bone = self.obj.data.bones[target.names[target.mapping["hips"]]]

    def step(self, positions, rotations, tracked, dt: float) -> None:
        usable = core.plausibility.usable_samples(positions, rotations, tracked)
        positions = np.where(usable[:, None], positions, np.nan)  # the solver drops such samples; so do the wrists
        motion = self.solver.step(positions, rotations, usable, dt)
        wrists = core.devices.joints_from_devices(positions, rotations, self.solver.offsets)[1:]
        global_rotations, global_positions = self.retargeting.apply(motion, wrists[None])
        hips = self.target.mapping["hips"]
        frame = solve_cache.CachedFrame(
            self.obj.name, list(self.target.names), self.hips_bone.name,
            bone_space.basis_rotations(global_rotations, self.target.rest_rotations, self.target.parents)[0],
            bone_space.basis_root_location(global_positions[:, hips], self.obj, self.hips_bone)[0])
        pose_frame(self.obj, frame)


class VR_AVATAR_OT_live_preview(bpy.types.Operator):
    """Drive the target armature live from the headset and controllers (Esc stops)"""
    bl_idname = "vr_avatar.live_preview"
    bl_label = "Live Preview"

    source: EnumProperty(
        name="Source", description="Where the live device poses come from",
        items=[('BLENDER_VR', "Blender VR Session", "The running VR session: the avatar is seen in the headset"),
               ('OPENXR', "OpenXR Runtime", "An OpenXR runtime through pyopenxr, outside Blender's VR session")],
        default='BLENDER_VR')

    def execute(self, context):
        try:
            self._source = SOURCES[self.source](context)
        except VRAvatarError as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        try:
            self._avatar = LiveAvatar(context)
        except VRAvatarError as error:
            self._source.close()
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        context.scene.vr_avatar.solve.preview = False  # the live pose, not the cache, drives the armature
        self._last = time.perf_counter()
        self._timer = context.window_manager.event_timer_add(TICK_S, window=context.window)
        context.window_manager.modal_handler_add(self)
        return {'RUNNING_MODAL'}

    def modal(self, context, event):
        if event.type == 'ESC':
            return self._stop(context, "Live preview stopped")
        if event.type != 'TIMER':
            return {'PASS_THROUGH'}
        devices = self._source.read(context)
        if devices is None:
            return self._stop(context, "The VR session ended: live preview stopped")
        now = time.perf_counter()
        positions, rotations, tracked = (np.asarray(a) for a in devices)
        if core.plausibility.usable_samples(positions[0], rotations[0], tracked[0]):
            self._avatar.step(positions, rotations, tracked, now - self._last)
        self._last = now
        return {'RUNNING_MODAL'}

    def _stop(self, context, message: str):
        context.window_manager.event_timer_remove(self._timer)
        self._source.close()
        self.report({'INFO'}, message)
        return {'FINISHED'}


classes = (VR_AVATAR_OT_live_preview,)


register, unregister = bpy.utils.register_classes_factory(classes)
