"""Solve operators: the avatar's bone mapping, solving a stream into the cache, baking it as a new action."""
import json
from dataclasses import replace
from pathlib import Path

import bpy
import numpy as np

from .. import avatar, avatar_quality, bone_space, core, keyframes, solve_cache
from ..handlers import pose_frame
from .library import database_paths


class VRAvatarError(Exception):
    """Something the user can fix; its message becomes the operator's error report."""


def scene_fps(scene) -> float:
    return scene.render.fps / scene.render.fps_base


def target_armature(context):
    obj = context.scene.vr_avatar.target_armature
    if obj is None or obj.type != 'ARMATURE':
        raise VRAvatarError("Select an armature as the Target Armature (VR Avatar › Avatar)")
    if not obj.data.bones:
        raise VRAvatarError(f"Armature '{obj.name}' has no bones: give it a humanoid skeleton or pick another")
    return obj


def bone_map(settings) -> dict[str, str]:
    return {item.joint: item.bone for item in settings.bone_map}


def fill_bone_map(settings, obj, override: dict[str, str] | None = None) -> int:
    """Replace the mapping list with the automatic mapping of `obj` (`override` entries kept); returns how many
    required joints are unmapped."""
    found, guessed, notes = avatar.automatic_mapping(obj, override)
    settings.bone_map.clear()
    settings.bone_map_armature = obj.name
    settings.bone_map_notes = notes
    for joint, bone in found.items():
        item = settings.bone_map.add()
        item.joint, item.bone = joint, bone
        item.guessed = joint in guessed
    return sum(1 for joint, bone in found.items() if not bone and joint in avatar.REQUIRED_JOINTS)


def solver_config(solve) -> "core.config.SolverConfig":
    """The solver settings of the panel as core's SolverConfig (the command line's defaults elsewhere)."""
    return replace(core.config.SolverConfig(), alpha_m=solve.alpha_m, search_interval=solve.search_interval,
                   inertialization_halflife_s=solve.responsiveness_s, foot_lock=solve.foot_lock,
                   arm_ik=solve.arm_ik, orientation="hmd" if solve.orientation == 'HMD' else "network",
                   upper_body=core.ik.upper_body_ik.ik_constants(solve.elbow_constants.lower()))


CALIBRATION_KEY = "vr_avatar_calibration"
"""The scene's custom property holding the last solve's device calibration (JSON), shown by the Solve panel."""


def device_calibration(settings):
    """What the solve calibrates the devices with: the stream file's stored calibration, else the gesture
    searched in its first seconds, or None when *Calibrate Devices* is off."""
    if not settings.solve.calibrate_devices:
        return None
    try:
        stored = core.devices.calibration.stored_calibration(bpy.path.abspath(settings.stream.stream_path))
    except (OSError, ValueError) as error:
        raise VRAvatarError(str(error)) from None
    return stored or core.config.CalibrationConfig()


def read_stream(settings):
    path = bpy.path.abspath(settings.stream.stream_path)
    if not settings.stream.stream_path:
        raise VRAvatarError("Load a three-point stream first (VR Avatar › Stream)")
    try:
        stream = core.files.stream.read_stream(path, hmd_only=settings.solve.method == 'N3P' and settings.solve.hmd_only)
        core.devices.plausibility.check_stream(stream, path)  # units a solve cannot use; warnings were given on loading
    except (OSError, core.files.stream.StreamFormatError) as error:
        raise VRAvatarError(str(error)) from None
    return stream


def avatar_target(context):
    """(armature, core TargetSkeleton) of the scene's target with its bone mapping (made anew for a new target)."""
    settings = context.scene.vr_avatar
    obj = target_armature(context)
    if not settings.bone_map or settings.bone_map_armature != obj.name:
        fill_bone_map(settings, obj)
    try:
        return obj, avatar.target_skeleton(obj, bone_map(settings))
    except avatar.MappingError as error:
        raise VRAvatarError(str(error)) from None


def load_solver(context):
    """A core solver with the panel's method, settings and calibration (motion matching: over the scene's databases)."""
    settings = context.scene.vr_avatar
    solve = settings.solve
    explicit = solve.calibration == 'EXPLICIT'
    if solve.method == 'N3P':
        config = core.config.N3PConfig(hmd_only=solve.hmd_only, foot_lock=solve.foot_lock, hand_ik=solve.arm_ik)
        try:
            return core.n3p.solver.load_n3p_solver(None, config, solve.user_height if explicit else None)
        except ValueError as error:
            raise VRAvatarError(str(error)) from None
    paths = database_paths(settings)
    if not paths:
        raise VRAvatarError("Build or add a motion database first (VR Avatar › Motion Library)")
    missing = [p for p in paths if not Path(p).is_file()]
    if missing:
        raise VRAvatarError(f"motion database not found: {missing[0]}")
    try:
        return core.matching.solver.load_calibrated_solver(
            paths, solver_config(solve), None if solve.orientation == 'NETWORK' else solve.orientation.lower(),
            solve.user_height if explicit else None, solve.arm_span if explicit else None)
    except (core.matching.pose_database.DatabaseError, ValueError) as error:
        raise VRAvatarError(str(error)) from None


def solve_scene(context, progress=lambda share: None) -> solve_cache.SolveCache:
    """Solve the scene's stream with its settings and retarget it onto the target armature."""
    scene, settings = context.scene, context.scene.vr_avatar
    obj, target = avatar_target(context)
    solver = load_solver(context)
    stream = read_stream(settings)
    progress(0.1)
    try:
        solution = core.matching.solver.solve(stream, solver, device_calibration(settings))
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


def report_mapping(operator, settings, obj, missing: int) -> None:
    """The operator's report on a freshly filled mapping: unmapped required joints, guesses, notes."""
    guessed = sum(1 for item in settings.bone_map if item.guessed)
    mapped = sum(1 for item in settings.bone_map if item.bone)
    extra = (f"; {guessed} placed by structure (marked guessed)" if guessed else "") + \
        (f"; {settings.bone_map_notes}" if settings.bone_map_notes else "")
    if missing:
        operator.report({'WARNING'}, f"{missing} required humanoid joint(s) found no bone in '{obj.name}': "
                                     f"pick them in the list{extra}")
    else:
        operator.report({'INFO'}, f"{mapped} of {len(avatar.CANONICAL_JOINTS)} humanoid joints mapped on "
                                  f"'{obj.name}'{extra}")


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
