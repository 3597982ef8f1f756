"""Solve operators: the avatar's bone mapping, solving a stream into the cache, baking it as a new action."""
import threading
import time
from pathlib import Path

import bpy
from bpy.props import BoolProperty, CollectionProperty, EnumProperty, FloatProperty, StringProperty
from bpy_extras.io_utils import ImportHelper

from .. import bake, batch, cleanup, core
from ..armature import target_armature
from ..bone_map import fill_bone_map, report_mapping
from ..errors import VRAvatarError, polled
from ..scene_solve import SceneSolve, solve_scene

STABILISATION = core.config.FootStabilisation()


class VR_AVATAR_OT_map_bones(bpy.types.Operator):
    """Match the target armature's bones to the humanoid joints by name, else by hierarchy and rest geometry (edit the list to correct it)"""
    bl_idname = "vr_avatar.map_bones"
    bl_label = "Map Bones"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return polled(cls, target_armature, context)

    def execute(self, context):
        try:
            obj = target_armature(context)
        except VRAvatarError as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        report_mapping(self, context.scene.vr_avatar, obj, fill_bone_map(context.scene.vr_avatar, obj))
        return {'FINISHED'}


class BesideBlender:
    """What an operator that works beside Blender (modal, on a timer) needs: the progress bar and status text while
    it runs, and the running instance on the class for tests to reach."""

    _running = None

    def _begin(self, context, interval_s: float):
        self.timer = context.window_manager.event_timer_add(interval_s, window=context.window)
        context.window_manager.modal_handler_add(self)
        context.window_manager.progress_begin(0.0, 1.0)
        type(self)._running = self
        return {'RUNNING_MODAL'}

    def _progress(self, context, share: float, text: str) -> None:
        context.window_manager.progress_update(share)
        if context.workspace is not None:
            context.workspace.status_text_set(f"VR Avatar: {text} (Esc cancels)")

    def _end(self, context) -> None:
        type(self)._running = None
        context.window_manager.event_timer_remove(self.timer)
        context.window_manager.progress_end()
        if context.workspace is not None:
            context.workspace.status_text_set(None)


class VR_AVATAR_OT_solve_stream(BesideBlender, bpy.types.Operator):
    """Solve the loaded stream into the avatar's full-body motion, cached in this .blend for scrubbing"""
    bl_idname = "vr_avatar.solve_stream"
    bl_label = "Solve"
    bl_options = {'REGISTER', 'UNDO'}


    @classmethod
    def poll(cls, context):
        return polled(cls, target_armature, context)

    beside: BoolProperty(name="Beside Blender", description="Solve beside Blender, its progress in the status bar "
                         "(Esc cancels; nothing is cached then); off, the call returns when the solve is done",
                         default=False, options={'HIDDEN', 'SKIP_SAVE'})

    def invoke(self, context, _event):
        self.beside = True  # from the panel: Blender stays responsive
        return self.execute(context)

    def execute(self, context):
        if self.beside:
            return self._start(context)
        try:
            cache = solve_scene(context, self.report)
        except VRAvatarError as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        self._solved(cache)
        return {'FINISHED'}

    def _start(self, context):
        """The solve on another thread, the operator modal until it ends."""
        try:
            self._solve = SceneSolve.prepare(context)
        except VRAvatarError as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        if self._solve.stream_note:
            self.report({'INFO'}, self._solve.stream_note)
        self._started = time.perf_counter()
        self._thread = threading.Thread(target=self._solve.compute, name="VR Avatar solve", daemon=True)
        self._thread.start()
        return self._begin(context, 0.1)

    def cancel(self, context):
        """Blender ends the solve (another file loaded, its window closed): nothing is cached, as with Esc."""
        if type(self)._running is self:  # once: Blender may call this again as it frees the file's data
            self._end(context)

    def modal(self, context, event):
        if event.type == 'ESC':
            self._end(context)
            self.report({'INFO'}, "Solve cancelled: nothing was cached")
            return {'CANCELLED'}
        if event.type != 'TIMER':
            return {'PASS_THROUGH'}
        solve = self._solve
        if self._thread.is_alive():
            self._progress(context, solve.done, f"{solve.phase} the stream onto '{solve.armature}', {solve.done:.0%}, "
                           f"{time.perf_counter() - self._started:.0f} s")
            return {'RUNNING_MODAL'}
        self._end(context)
        try:
            cache = solve.finish(context)
        except VRAvatarError as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        self._solved(cache)
        return {'FINISHED'}

    def _solved(self, cache) -> None:
        figures = cache.report["figures"]
        self.report({'INFO'}, f"Solved {cache.frames} frames onto '{cache.armature}'; avatar hands "
                              f"{figures['avatar_hand_cm']} cm from the controllers on average")


class VR_AVATAR_OT_bake_action(BesideBlender, bpy.types.Operator):
    """Write the cached solve onto the target armature as a new action (existing actions are kept untouched)"""
    bl_idname = "vr_avatar.bake_action"
    bl_label = "Bake Action"
    bl_options = {'REGISTER', 'UNDO'}

    beside: BoolProperty(name="Beside Blender", description="Bake beside Blender, its progress in the status bar "
                         "(Esc cancels and takes the new action back); off, the call returns when the bake is done",
                         default=False, options={'HIDDEN', 'SKIP_SAVE'})
    tick_s = 0.05
    """Beside Blender, the bake measures frames for this long a timer tick."""

    @classmethod
    def poll(cls, context):
        return polled(cls, bake.bake_target, context)

    def invoke(self, context, _event):
        self.beside = True  # from the panel: Blender stays responsive
        return self.execute(context)

    def execute(self, context):
        try:
            if not self.beside:
                bake.bake(context, self.report)
                return {'FINISHED'}
            self._bake = bake.Bake(context)
        except VRAvatarError as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        return self._begin(context, 0.05)

    def cancel(self, context):
        """Blender ends the bake (another file loaded, its window closed): taken back as Esc does."""
        if type(self)._running is self:  # once: Blender may call this again as it frees the file's data
            self._end(context)
            self._bake.cancel()

    def modal(self, context, event):
        if event.type == 'ESC':
            self._end(context)
            self._bake.cancel()
            self.report({'INFO'}, "Bake cancelled: the new action was taken back")
            return {'CANCELLED'}
        if event.type != 'TIMER':
            return {'PASS_THROUGH'}
        if (lost := self._bake.lost()) is not None:
            self._end(context)
            self._bake.cancel()
            self.report({'ERROR'}, f"Bake stopped: {lost} while it was measured; nothing was baked")
            return {'CANCELLED'}
        until = time.perf_counter() + self.tick_s
        while True:  # at least a frame a tick, as many as fit in it
            done = self._bake.step()
            if done is None:
                self._end(context)
                self._bake.finish(self.report)
                return {'FINISHED'}
            if time.perf_counter() >= until:
                break
        self._progress(context, done, f"measuring the baked '{self._bake.obj.name}', {done:.0%}")
        return {'RUNNING_MODAL'}


class VR_AVATAR_OT_bake_batch(bpy.types.Operator, ImportHelper):
    """Solve and bake each chosen stream onto each selected armature (or the Target Armature), one action a pair"""
    bl_idname = "vr_avatar.bake_batch"
    bl_label = "Batch Bake"
    bl_options = {'REGISTER', 'UNDO'}

    filter_glob: StringProperty(default="*.csv", options={'HIDDEN'})
    files: CollectionProperty(type=bpy.types.OperatorFileListElement, options={'HIDDEN', 'SKIP_SAVE'})
    directory: StringProperty(subtype='DIR_PATH', options={'HIDDEN', 'SKIP_SAVE'})

    @classmethod
    def poll(cls, context):
        if not batch_armatures(context):
            cls.poll_message_set("Select one or more armatures, or pick the Target Armature")
            return False
        return True

    def execute(self, context):
        folder = Path(self.directory or Path(self.filepath).parent)
        streams = [folder / item.name for item in self.files if item.name] or [Path(self.filepath)]
        return batch.bake_batch(context, self.report, streams, batch_armatures(context))


def batch_armatures(context) -> list:
    """The armatures a Batch Bake bakes onto: the selected ones, else the Target Armature."""
    armatures = [obj for obj in context.selected_objects if obj.type == 'ARMATURE']
    target = context.scene.vr_avatar.target_armature
    return armatures or ([target] if target else [])


class VR_AVATAR_OT_clean_solve(bpy.types.Operator):
    """Smooth the cached solve (one-euro filter per bone group) keeping planted feet where they stood; scrub to
    preview, undo to take it back, Bake Action to key it"""
    bl_idname = "vr_avatar.clean_solve"
    bl_label = "Smooth Solve"
    bl_options = {'REGISTER', 'UNDO'}

    body_cutoff_hz: FloatProperty(name="Body", description="Minimum cutoff of the hips, spine and head (lower: "
                                  "smoother)", default=1.5, min=0.05, max=30.0, unit='NONE')
    arms_cutoff_hz: FloatProperty(name="Arms", description="Minimum cutoff of the shoulders, arms and hands",
                                  default=2.5, min=0.05, max=30.0)
    legs_cutoff_hz: FloatProperty(name="Legs", description="Minimum cutoff of the legs and feet", default=2.5,
                                  min=0.05, max=30.0)
    beta: FloatProperty(name="Speed Coefficient", description="How much faster motion raises the cutoff (one-euro "
                        "beta): higher keeps fast moves sharper", default=0.5, min=0.0, max=100.0)
    foot_lock: EnumProperty(name="Foot Lock", description="How the feet are held after smoothing (the legs "
                            "re-solved to hold them)", items=cleanup.FOOT_LOCKS, default='AUTO')
    lock_time_s: FloatProperty(name="Lock Time", description="A contact shorter than this is not held: a toe "
                               "brushing the floor is not a step", default=STABILISATION.lock_time_s,
                               min=0.0, max=10.0, unit='TIME_ABSOLUTE')
    lock_radius_m: FloatProperty(name="Lock Radius", description="A held foot stays where it landed while the "
                                 "solve's foot stays this near (0: the foot follows the solve's planted foot)",
                                 default=STABILISATION.lock_radius_m, min=0.0, max=10.0, unit='LENGTH')
    recovery_s: FloatProperty(name="Recovery", description="A released hold hands the foot back to the solve "
                              "over this time", default=STABILISATION.recovery_s,
                              min=0.0, max=10.0, unit='TIME_ABSOLUTE')

    @classmethod
    def poll(cls, context):
        return polled(cls, bake.bake_target, context)

    def execute(self, context):
        cutoffs = {"body": self.body_cutoff_hz, "arms": self.arms_cutoff_hz, "legs": self.legs_cutoff_hz}
        stabilisation = core.config.FootStabilisation(self.lock_time_s, self.lock_radius_m, self.recovery_s)
        return cleanup.clean_solve(context, self.report, cutoffs, self.beta, self.foot_lock, stabilisation)


class VR_AVATAR_OT_bake_takes(bpy.types.Operator):
    """Solve and bake every take onto the Target Armature, each on an NLA track of its own named after the take"""
    bl_idname = "vr_avatar.bake_takes"
    bl_label = "Bake Takes"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        if not context.scene.vr_avatar.stream.takes:
            cls.poll_message_set("No take: record one first")
            return False
        if context.scene.vr_avatar.target_armature is None:
            cls.poll_message_set("Pick the Target Armature the takes are baked onto")
            return False
        return True

    def execute(self, context):
        return batch.bake_takes(context, self.report)


classes = (VR_AVATAR_OT_map_bones, VR_AVATAR_OT_solve_stream, VR_AVATAR_OT_bake_action, VR_AVATAR_OT_bake_batch,
           VR_AVATAR_OT_bake_takes, VR_AVATAR_OT_clean_solve)


register, unregister = bpy.utils.register_classes_factory(classes)
