"""Solve operators: the avatar's bone mapping, solving a stream into the cache, baking it as a new action."""
import json
from pathlib import Path

import bpy
import numpy as np

from .. import avatar_quality, bone_space, core, keyframes, solve_cache
from ..armature import target_armature
from ..bone_map import bone_map, fill_bone_map, report_mapping
from ..errors import VRAvatarError
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

    def execute(self, context):
        scene = context.scene
        cache = solve_cache.load(scene)
        if cache is None:
            self.report({'ERROR'}, "Nothing to bake: solve the stream first")
            return {'CANCELLED'}
        obj = bpy.data.objects.get(cache.armature)
        if obj is None or set(cache.bones) != set(obj.data.bones.keys()):
            self.report({'ERROR'}, f"The cached solve is for armature '{cache.armature}', which is gone or has "
                                   f"other bones now: solve again")
            return {'CANCELLED'}
        for pose_bone in obj.pose.bones:
            pose_bone.rotation_mode = 'QUATERNION'
        channels = bake_channels(cache)
        action, previous = keyframes.new_action(f"{obj.name} VR Avatar", obj, channels, cache.frame_start)
        scene.vr_avatar.solve.preview = False  # the new action drives the armature from here on
        quality = measure_avatar(scene, obj, cache)
        try:
            report = write_report(scene, obj, cache, quality)
        except (OSError, ValueError) as error:
            self.report({'WARNING'}, f"Baked {cache.frames} frames into new action '{action.name}'; the report was "
                                     f"not written: {error}")
            return {'FINISHED'}
        scene.vr_avatar.solve.report_path = report
        kept = f"; '{previous.name}' is kept (fake user)" if previous else ""
        self.report({'INFO'}, f"Baked {cache.frames} frames into new action '{action.name}'{kept}; report {report}")
        for warning in quality["warnings"]:
            self.report({'WARNING'}, f"On '{obj.name}', {warning}")
        return {'FINISHED'}


def bake_channels(cache) -> list:
    """Action channels of a cached solve: every bone's rotation, and location and scale where they leave rest."""
    channels = []
    for j, name in enumerate(cache.bones):
        path = f'pose.bones["{bpy.utils.escape_identifier(name)}"]'
        channels.append((f"{path}.rotation_quaternion", cache.basis[:, j], name))
        if np.abs(cache.locations[:, j]).max() > 1e-5:
            channels.append((f"{path}.location", cache.locations[:, j], name))
        if np.abs(cache.scales[:, j] - 1.0).max() > 1e-5:
            channels.append((f"{path}.scale", cache.scales[:, j], name))
    return channels


MEASURED_FRAMES = 300
"""The bake's avatar quality report measures at most this many frames, evenly spread."""


def measure_avatar(scene, obj, cache) -> dict:
    """The baked avatar measured in Blender (avatar_quality): figures, warnings and per-frame series, kept on
    the scene for the panel; the scene is put back on its frame."""
    current = scene.frame_current
    step = max(1, -(-cache.frames // MEASURED_FRAMES))
    index = np.arange(0, cache.frames, step)
    tracked = np.stack([np.isfinite(cache.head_targets).all(-1), *np.isfinite(cache.wrist_targets).all(-1).T], -1)
    settings = scene.vr_avatar
    if not settings.bone_map or settings.bone_map_armature != obj.name:
        fill_bone_map(settings, obj)
    try:
        figures, series = avatar_quality.measure(obj, bone_map(settings), cache.head_targets[index], cache.wrist_targets[index],
                                                 tracked[index], scene_fps(scene) / step, cache.frame_start + index)
    finally:
        scene.frame_set(current)
    quality = {"figures": figures, "warnings": avatar_quality.warnings(figures),
               "series": {k: core.quality.report.json_values(v) for k, v in series["per_frame"].items()},
               "time_s": (index / scene_fps(scene)).tolist()}
    scene[avatar_quality.SCENE_KEY] = json.dumps(quality)
    return quality


def write_report(scene, obj, cache, quality: dict) -> str:
    """The quality report's plots and JSON beside the .blend (or in Blender's temporary folder if unsaved), with
    the baked avatar's own figures and series under "avatar"."""
    folder = Path(bpy.path.abspath("//")) if bpy.data.filepath else Path(bpy.app.tempdir)
    stem = folder / f"{Path(bpy.data.filepath).stem or 'untitled'}.{bpy.path.clean_name(obj.name)}"
    series = {k: np.array(v, dtype=float) for k, v in cache.report["series"].items()}
    figures = {**cache.report["figures"], "avatar": quality["figures"], "avatar_warnings": quality["warnings"]}
    written = core.quality.report.write_report(stem, series, figures, f"VR Avatar bake of '{obj.name}'")
    return written.get("plot", written["json"])


classes = (VR_AVATAR_OT_map_bones, VR_AVATAR_OT_solve_stream, VR_AVATAR_OT_bake_action)


register, unregister = bpy.utils.register_classes_factory(classes)
