"""The solver that the scene's settings describe: its configuration, databases, stream, calibration and target."""
import math
from dataclasses import replace
from pathlib import Path

import bpy

from . import avatar, core, stream_files
from .armature import target_armature
from .bone_map import mapping_for
from .errors import VRAvatarError


def solver_config(solve) -> "core.config.MatchingConfig":
    """The solver settings of the panel as core's MatchingConfig (the command line's defaults elsewhere)."""
    return replace(core.config.MatchingConfig(), alpha_m=solve.alpha_m, search_interval=solve.search_interval,
                   inertialization_halflife_s=solve.responsiveness_s, foot_lock=solve.foot_lock,
                   arm_ik=solve.arm_ik, orientation="hmd" if solve.orientation == 'HMD' else "network",
                   upper_body=core.ik.upper_body_ik.ik_constants(solve.elbow_constants.lower()))




def device_calibration(settings):
    """What the solve calibrates the devices with: the stream file's stored calibration, else the gesture
    searched in its first minute, or None when *Calibrate Devices* is off."""
    if not settings.solve.calibrate_devices:
        return None
    try:
        stored = core.devices.calibration.stored_calibration(bpy.path.abspath(settings.stream.stream_path))
    except (OSError, ValueError) as error:
        raise VRAvatarError(str(error)) from None
    return stored or core.config.CalibrationConfig()


def read_stream(scene):
    """(the stream the scene's solve reads, a line saying so where it is the edited stream empties': else '').

    The scene's stream file, unless its empties were edited away from it (stream_files.solve_input); either way
    its controllers re-expressed as OpenXR grips from the stream's named grip."""
    settings = scene.vr_avatar
    path = bpy.path.abspath(settings.stream.stream_path)
    if not settings.stream.stream_path:
        raise VRAvatarError("Load a three-point stream first (VR Avatar › Stream)")
    hmd_only = settings.solve.method == 'N3P' and settings.solve.hmd_only
    try:
        stream = core.files.stream.read_stream(path, hmd_only=hmd_only)
        core.devices.plausibility.check_stream(stream, path)  # units a solve cannot use; warnings were given on loading
        stream, note = stream_files.solve_input(scene, stream, path, hmd_only)
        stream = core.devices.grips.as_openxr_grip(stream, settings.stream.grip)
    except (OSError, core.files.stream.StreamFormatError) as error:
        raise VRAvatarError(str(error)) from None
    return stream, note


def avatar_target(context):
    """(armature, core TargetSkeleton) of the scene's target with its bone mapping (made anew for a new target)."""
    settings = context.scene.vr_avatar
    obj = target_armature(context)
    try:
        return obj, avatar.target_skeleton(obj, mapping_for(settings, obj))
    except avatar.MappingError as error:
        raise VRAvatarError(str(error)) from None


METHODS = {'HYBRID': "hybrid", 'MM': "mm", 'N3P': "n3p"}
"""The panel's methods as core's (core.config.METHODS)."""


def solve_config(settings) -> "core.config.SolveConfig":
    """The panel's method, settings and calibration as core's SolveConfig (the command line's defaults elsewhere)."""
    solve = settings.solve
    explicit = solve.calibration == 'EXPLICIT'
    method = METHODS[solve.method]
    return core.config.SolveConfig(
        method, hybrid=core.config.HybridConfig(legs="matched" if solve.matched_legs else "predicted",
                                                foot_lock=solve.foot_lock),
        matching=solver_config(solve),
        n3p=core.config.N3PConfig(hmd_only=method == "n3p" and solve.hmd_only, foot_lock=solve.foot_lock,
                                  hand_ik=solve.arm_ik),
        orientation=None if solve.orientation == 'NETWORK' else solve.orientation.lower(),
        standing_hmd_height_m=solve.user_height if explicit else None, arm_span_m=solve.arm_span if explicit else None)


def solver_for_scene(context):
    """A core solver with the panel's method, settings and calibration (over the scene's databases where the method
    plays database poses)."""
    settings = context.scene.vr_avatar
    config = solve_config(settings)
    paths = database_paths(settings) if config.needs_database else []
    missing = [p for p in paths if not Path(p).is_file()]
    if missing:
        raise VRAvatarError(f"motion database not found: {missing[0]}")
    try:
        return core.solve.load_solver(config, paths)
    except core.solve.DatabaseNeeded as error:
        raise VRAvatarError(f"{error} (VR Avatar › Motion Library)") from None
    except (core.matching.pose_database.DatabaseError, ValueError) as error:
        raise VRAvatarError(str(error)) from None


def require_physics(settings) -> None:
    """VRAvatarError naming the missing packages where the scene asks for Physics and they do not import."""
    if settings.solve.physics:
        try:
            core.solve.require_physics()
        except core.solve.PhysicsUnavailable as error:
            raise VRAvatarError(str(error)) from None


def database_paths(settings) -> list[str]:
    """Absolute paths of the scene's motion databases; settings: scene.vr_avatar or its library section."""
    library = getattr(settings, "library", settings)
    return [bpy.path.abspath(item.path) for item in library.databases]


def keep_calibration(found, calibration) -> None:
    """The solve's calibration (a StreamCalibration, or None when not asked for) in the scene's `found` group."""
    found.solved = calibration is not None
    found.found = bool(calibration is not None and calibration.found)
    if not found.found:
        return
    found.pose, found.pose_s = calibration.pose, calibration.pose_s
    found.grip_tilt_deg = calibration.describe()["grip_tilt_deg"]
    found.standing_hmd_height_m, found.arm_span_m = calibration.standing_hmd_height_m, calibration.arm_span_m
    found.left_offset_m, found.right_offset_m = (
        (math.nan,) * 3 if offset is None else tuple(offset) for offset in calibration.grip_offsets_m)
