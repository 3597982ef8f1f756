"""The solver that the scene's settings describe: its configuration, databases, stream, calibration and target."""
from dataclasses import replace
from pathlib import Path

import bpy

from . import avatar, core
from .armature import target_armature
from .bone_map import bone_map, fill_bone_map
from .errors import VRAvatarError


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
    """A core solver with the panel's method, settings and calibration (the default and motion matching: over the
    scene's databases)."""
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
        raise VRAvatarError("Build or add a motion database first (VR Avatar › Motion Library): the method "
                            f"{'Predictor + Motion Matching' if solve.method == 'HYBRID' else 'Motion Matching'} takes "
                            "its facing and steps from it; Neural3Points needs none")
    missing = [p for p in paths if not Path(p).is_file()]
    if missing:
        raise VRAvatarError(f"motion database not found: {missing[0]}")
    orientation = None if solve.orientation == 'NETWORK' else solve.orientation.lower()
    try:
        if solve.method == 'HYBRID':
            config = core.config.HybridConfig(legs="matched" if solve.matched_legs else "predicted",
                                              foot_lock=solve.foot_lock, matching=solver_config(solve))
            return core.hybrid.solver.load_hybrid_solver(paths, config, orientation, None,
                                                         solve.user_height if explicit else None)
        return core.matching.solver.load_calibrated_solver(
            paths, solver_config(solve), orientation,
            solve.user_height if explicit else None, solve.arm_span if explicit else None)
    except (core.matching.pose_database.DatabaseError, ValueError) as error:
        raise VRAvatarError(str(error)) from None


def database_paths(settings) -> list[str]:
    """Absolute paths of the scene's motion databases; settings: scene.vr_avatar or its library section."""
    library = getattr(settings, "library", settings)
    return [bpy.path.abspath(item.path) for item in library.databases]
