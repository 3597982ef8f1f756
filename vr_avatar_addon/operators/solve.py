"""Solve operators: the avatar's bone mapping, solving a stream into the cache, baking it as a new action."""
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np
from bpy.props import BoolProperty, CollectionProperty, EnumProperty, FloatProperty, StringProperty
from bpy_extras.io_utils import ImportHelper

from .. import bake, batch, bone_space, cleanup, core, root_motion, solve_cache, stream_files
from ..armature import object_by_uid, target_armature
from ..bone_map import fill_bone_map, report_mapping
from ..errors import VRAvatarError, polled
from ..handlers import pose_frame
from ..scene_solver import avatar_target, device_calibration, keep_calibration, read_stream, require_physics, \
    solver_for_scene
from ..scene_timing import scene_fps

STABILISATION = core.config.FootStabilisation()


@dataclass
class SceneSolve:
    """One solve of the scene's stream: what is read from Blender first (`prepare`), the core work, which touches
    no Blender data and may run on another thread (`compute`), and the cache made from it (`finish`)."""

    armature: str
    """The armature's name when the solve began, for messages."""
    armature_uid: int
    """The armature's `session_uid`, which a rename keeps: `finish` caches onto it whatever it is called by then."""
    target: object
    solver: object
    stream: object
    calibration: object
    fps: float
    stride_scaled: bool
    avatar_size: str
    physics: bool
    stream_path: str = ""
    stream_note: str = ""
    """Where the stream comes from when it is not the file as it is (`scene_solver.read_stream`)."""
    frame_start: int = 1
    """The scene frame of the stream's first sample: where its empties were keyed, whatever the scene's start now."""
    rest: tuple = ()
    """The armature's bones as the solve read them (`rest_bones`): `finish` refuses bones edited meanwhile."""
    phase: str = "solving"
    done: float = 0.0
    """The share of the work done (0-1): the progress bar's."""
    solution: object = None
    retargeted: object = None
    error: str | None = None

    @classmethod
    def prepare(cls, context) -> "SceneSolve":
        """Everything the solve reads from the scene; VRAvatarError for what stops it."""
        scene, settings = context.scene, context.scene.vr_avatar
        root_motion.restore_placement(target_armature(context))  # not moved on by an Object bake's travel
        obj, target = avatar_target(context)
        require_physics(settings)  # said before the solve runs, not after it
        stream, note = read_stream(scene)
        return cls(obj.name, obj.session_uid, target, solver_for_scene(context), stream, device_calibration(settings),
                   scene_fps(scene), settings.solve.stride_scaled, settings.solve.avatar_size.lower(),
                   settings.solve.physics, bpy.path.abspath(settings.stream.stream_path), note,
                   stream_files.stream_start_frame(scene), rest_bones(obj))

    def tell(self, share: float) -> None:
        """Keep the share of the work done (core's progress, called from the solve's thread)."""
        self.done = share

    def compute(self) -> None:
        """The solve and its retargeting onto the target (core alone), telling `done` as it goes; an error is kept
        in `error`."""
        solved = SOLVED_SHARE_WITH_PHYSICS if self.physics else SOLVED_SHARE
        try:
            self.solution = core.solve.solve(self.stream, self.solver, self.calibration,
                                             core.solution.progress_between(self.tell, 0.0, solved))
            if self.physics:
                self.phase = "simulating"
                self.solution = core.solve.with_physics(
                    self.solution, progress=core.solution.progress_between(self.tell, solved, SIMULATED_SHARE))
            self.phase = "retargeting"
            self.retargeted = core.retarget.retargeting.retarget_solution(self.solution, self.target, self.fps,
                                                                  self.stride_scaled, self.avatar_size)
            self.phase = "done"
            self.tell(1.0)
        except ValueError as error:
            where = f"stream {self.stream_path}" if self.solution is None else f"armature '{self.armature}'"
            self.error = f"{where}: {error}"
            self.phase = "failed"

    def finish(self, context) -> solve_cache.SolveCache:
        """The computed solve as the scene's cache (stored, the armature posed); VRAvatarError if it failed."""
        if self.error is not None:
            raise VRAvatarError(self.error)
        scene = context.scene
        obj = object_by_uid(self.armature_uid)
        if obj is None or scene not in obj.users_scene:
            name = self.armature if obj is None else obj.name
            raise VRAvatarError(f"Armature '{name}' was removed during the solve: nothing was cached")
        if not same_rest_bones(rest_bones(obj), self.rest):
            raise VRAvatarError(f"Armature '{obj.name}''s bones were edited during the solve: nothing was cached; "
                                "solve again")
        solution, retargeted = self.solution, self.retargeted
        root_motion.restore_placement(obj)  # where `prepare` read it, whatever frame the scene is on now
        basis, locations, scales = pose_values(obj, self.target, retargeted)
        cache = solve_cache.SolveCache(obj.name, list(self.target.names), self.frame_start, basis, locations, scales,
                                       retargeted.positions, retargeted.wrist_targets, retargeted.head_targets,
                                       solution_figures(solution, retargeted), self.fps)
        if not all(np.isfinite(a).all() for a in (cache.basis, cache.locations, cache.scales, cache.positions)):
            raise VRAvatarError(f"The solve onto '{obj.name}' went non-finite: nothing was cached")
        keep_calibration(scene.vr_avatar.solve.found_calibration, solution.calibration)
        solve_cache.store(scene, cache, obj)
        settings = scene.vr_avatar.solve
        settings.has_cache, settings.cache_stale, settings.preview = True, False, True
        scene.frame_end = max(scene.frame_end, cache.frame_start + cache.frames - 1)
        pose_frame(obj, solve_cache.cached_frame(scene, scene.frame_current))
        return cache


SOLVED_SHARE, SOLVED_SHARE_WITH_PHYSICS, SIMULATED_SHARE = 0.95, 0.6, 0.95
"""The share of a scene's solve done after core's solve (without and with the physics pass) and after the pass:
retargeting takes the rest (a 72 Hz walk's profile)."""


def rest_bones(obj) -> tuple:
    """The armature's bones as a solve reads them: names, parents' names and rest matrices."""
    bones = obj.data.bones
    return (tuple(b.name for b in bones), tuple(b.parent.name if b.parent else "" for b in bones),
            np.array([b.matrix_local for b in bones]).reshape(len(bones), 4, 4))


def same_rest_bones(now: tuple, then: tuple) -> bool:
    """Whether two `rest_bones` are the same bones in the same rest pose (to 0.01 mm)."""
    return now[:2] == then[:2] and np.allclose(now[2], then[2], rtol=0.0, atol=1e-5)


def solve_scene(context, report=None) -> solve_cache.SolveCache:
    """Solve the scene's stream with its settings onto the target armature, in one go: the cache, stored (`report`
    told where the stream is the edited empties')."""
    solve = SceneSolve.prepare(context)
    if solve.stream_note and report is not None:
        report({'INFO'}, solve.stream_note)
    solve.compute()
    return solve.finish(context)


def pose_values(obj, target, retargeted):
    """(rotation_quaternion, location, scale) per frame and bone (core's bone order) that pose `obj` as retargeted."""
    matrices = bone_space.armature_matrices(obj, retargeted.rotations, retargeted.positions, retargeted.scale)
    order = [obj.data.bones.find(name) for name in target.names]
    return bone_space.pose_basis(obj, matrices, order, target.parents)


def solution_figures(solution, retargeted) -> dict:
    """The quality report's figures and per-frame series, with the avatar's own wrist error added."""
    series, figures = core.quality.report.solution_quality(solution)
    gap = np.linalg.norm(retargeted.wrists - retargeted.wrist_targets, axis=-1)
    figures["avatar_hand_cm"] = round(float(np.nanmean(gap)) * 100.0, 3) if np.isfinite(gap).any() else None
    return {"figures": figures, "summary": core.quality.report.summarise(series),
            "series": {k: core.quality.report.json_values(v) for k, v in series.items()}}


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

    def execute(self, context):
        folder = Path(self.directory or Path(self.filepath).parent)
        streams = [folder / item.name for item in self.files if item.name] or [Path(self.filepath)]
        armatures = [obj for obj in context.selected_objects if obj.type == 'ARMATURE']
        target = context.scene.vr_avatar.target_armature
        return batch.bake_batch(context, self.report, streams, armatures or ([target] if target else []))


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
        return True

    def execute(self, context):
        return batch.bake_takes(context, self.report)


classes = (VR_AVATAR_OT_map_bones, VR_AVATAR_OT_solve_stream, VR_AVATAR_OT_bake_action, VR_AVATAR_OT_bake_batch,
           VR_AVATAR_OT_bake_takes, VR_AVATAR_OT_clean_solve)


register, unregister = bpy.utils.register_classes_factory(classes)
