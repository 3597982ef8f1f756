"""Solve operators: the avatar's bone mapping, solving a stream into the cache, baking it as a new action."""
import json

import bpy
import numpy as np

from .. import bake, bone_space, core, solve_cache
from ..armature import target_armature
from ..bone_map import fill_bone_map, report_mapping
from ..errors import VRAvatarError, polled
from ..handlers import pose_frame
from ..scene_solver import CALIBRATION_KEY, avatar_target, device_calibration, load_solver, read_stream
from ..scene_timing import scene_fps


def solve_scene(context, progress=lambda share: None) -> solve_cache.SolveCache:
    """Solve the scene's stream with its settings and retarget it onto the target armature."""
    scene, settings = context.scene, context.scene.vr_avatar
    obj, target = avatar_target(context)
    solver = load_solver(context)
    stream = read_stream(settings)
    progress(0.1)
    try:
        solution = core.solve.solve(stream, solver, device_calibration(settings))
    except ValueError as error:
        raise VRAvatarError(str(error)) from None
    if solution.calibration is not None:
        scene[CALIBRATION_KEY] = json.dumps(solution.calibration.describe())
    elif CALIBRATION_KEY in scene:
        del scene[CALIBRATION_KEY]
    progress(0.8)
    try:
        retargeted = core.rig.retarget.retarget_solution(solution, target, scene_fps(scene), settings.solve.stride_scaled,
                                                     settings.solve.avatar_size.lower())
    except ValueError as error:
        raise VRAvatarError(f"armature '{obj.name}': {error}") from None
    report = solution_figures(solution, retargeted)
    basis, locations, scales = pose_values(obj, target, retargeted)
    cache = solve_cache.SolveCache(obj.name, list(target.names), scene.frame_start, basis, locations, scales,
                                   retargeted.positions, retargeted.wrist_targets, retargeted.head_targets, report)
    if not all(np.isfinite(a).all() for a in (cache.basis, cache.locations, cache.scales, cache.positions)):
        raise VRAvatarError(f"The solve onto '{obj.name}' went non-finite: nothing was cached")
    return cache


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


class VR_AVATAR_OT_solve_stream(bpy.types.Operator):
    """Solve the loaded stream into the avatar's full-body motion, cached in this .blend for scrubbing"""
    bl_idname = "vr_avatar.solve_stream"
    bl_label = "Solve"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return polled(cls, target_armature, context)

    def execute(self, context):
        window_manager = context.window_manager
        window_manager.progress_begin(0.0, 1.0)
        try:
            cache = solve_scene(context, window_manager.progress_update)
        except VRAvatarError as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        finally:
            window_manager.progress_end()
        scene = context.scene
        solve_cache.store(scene, cache)
        solve = scene.vr_avatar.solve
        solve.has_cache, solve.cache_stale, solve.preview = True, False, True
        scene.frame_end = max(scene.frame_end, cache.frame_start + cache.frames - 1)
        pose_frame(bpy.data.objects[cache.armature], solve_cache.cached_frame(scene, scene.frame_current))
        figures = cache.report["figures"]
        self.report({'INFO'}, f"Solved {cache.frames} frames onto '{cache.armature}'; avatar hands "
                              f"{figures['avatar_hand_cm']} cm from the controllers on average")
        return {'FINISHED'}


class VR_AVATAR_OT_bake_action(bpy.types.Operator):
    """Write the cached solve onto the target armature as a new action (existing actions are kept untouched)"""
    bl_idname = "vr_avatar.bake_action"
    bl_label = "Bake Action"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return polled(cls, bake.bake_target, context)

    def execute(self, context):
        try:
            bake.bake(context, self.report)
        except VRAvatarError as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        return {'FINISHED'}


classes = (VR_AVATAR_OT_map_bones, VR_AVATAR_OT_solve_stream, VR_AVATAR_OT_bake_action)


register, unregister = bpy.utils.register_classes_factory(classes)
