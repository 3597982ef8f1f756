"""Properties: the add-on's settings, stored on the scene as `scene.vr_avatar`, grouped by panel section.

Defaults come from core's configuration dataclasses (core/config.py), so the add-on and the
command line start from the same values, taken from the papers.
"""
import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty, FloatVectorProperty,
                       IntProperty, PointerProperty, StringProperty)

from . import core
from .root_motion import ROOT_MOTION_MODES

SOLVER = core.config.MatchingConfig()


def _is_armature(_settings, obj):
    return obj.type == 'ARMATURE'


def mark_solve_stale(scene) -> None:
    """The cached solve no longer matches the scene's settings, stream or databases (if there is one)."""
    solve = scene.vr_avatar.solve
    if solve.has_cache:
        solve.cache_stale = True


def _mark_stale(_settings, context):
    """A setting that changes the solve marks the cached solve stale."""
    mark_solve_stale(context.scene)


def _bone_changed(item, context):
    """A bone picked by hand is no longer a guess; the cached solve is stale."""
    if item.guessed:
        item.guessed = False
    mark_solve_stale(context.scene)


class VRAvatarBoneMapItem(bpy.types.PropertyGroup):
    """One canonical humanoid joint (SPEC §6) and the target armature's bone that plays it."""
    joint: StringProperty(name="Joint", description="Canonical humanoid joint")
    bone: StringProperty(name="Bone", description="Bone of the target armature that plays this joint",
                         update=_bone_changed)
    guessed: BoolProperty(name="Guessed", description="Placed by the armature's hierarchy and rest geometry, "
                          "not confirmed by the bone's name: check it", default=False)


class VRAvatarDatabaseItem(bpy.types.PropertyGroup):
    """One motion database of the scene and the HMD-height ratios it serves (MMVR §5.5)."""
    path: StringProperty(name="Database", description="Motion database file (.npz), relative to the .blend",
                         subtype='FILE_PATH', options={'PATH_SUPPORTS_BLEND_RELATIVE'}, update=_mark_stale)
    height_min: FloatProperty(name="Height Ratio Min", description="Lowest HMD-height ratio this database serves",
                              default=0.0, min=0.0, max=2.0)
    height_max: FloatProperty(name="Height Ratio Max", description="Highest HMD-height ratio this database serves "
                              "(2 means no upper bound)", default=2.0, min=0.0, max=2.0)
    poses: IntProperty(name="Poses", description="Poses in the database", default=0, min=0)


class VRAvatarLibrarySettings(bpy.types.PropertyGroup):
    """Motion library: mocap imports and the motion databases."""
    mocap_path: StringProperty(
        name="Motion Capture", description="Motion capture file or folder to build the motion database from",
        subtype='FILE_PATH', options={'PATH_SUPPORTS_BLEND_RELATIVE'})
    databases: CollectionProperty(type=VRAvatarDatabaseItem, name="Motion Databases",
                                  description="Motion databases, each for a range of HMD heights")
    databases_index: IntProperty(name="Active Database", default=0)
    height_min: FloatProperty(
        name="Height Ratio Min", description="Lowest ratio of HMD height to standing height this database serves",
        default=0.0, min=0.0, max=2.0)
    height_max: FloatProperty(
        name="Height Ratio Max", description="Highest ratio of HMD height to standing height this database serves "
        "(2 means no upper bound)",
        default=2.0, min=0.0, max=2.0)
    mirror: BoolProperty(name="Mirror", description="Add a left-right mirrored copy of every clip", default=False)
    locomotion_only: BoolProperty(
        name="Locomotion Only", description="Keep only walking, running and turning clips from a folder",
        default=True)


class VRAvatarTake(bpy.types.PropertyGroup):
    """One recorded take: its stream file, its length, and what the calibration gesture at its start told."""
    name: StringProperty(name="Take", description="The take's name: its stream file's name")
    path: StringProperty(name="File", description="The take's stream CSV", subtype='FILE_PATH',
                         options={'PATH_SUPPORTS_BLEND_RELATIVE'})
    samples: IntProperty(name="Samples", min=0)
    duration_s: FloatProperty(name="Length", description="Seconds from its first sample to its last", min=0.0)
    calibrated: BoolProperty(name="Calibrated", description="The take starts with the calibration gesture")
    height_m: FloatProperty(name="Standing HMD Height", description="From the calibration gesture, else the first "
                            "seconds", unit='LENGTH')


class VRAvatarStreamSettings(bpy.types.PropertyGroup):
    """Three-point stream: the loaded CSV and its empties, and recording."""
    stream_path: StringProperty(name="Stream", description="Three-point stream CSV (SPEC §3)", subtype='FILE_PATH',
                                options={'PATH_SUPPORTS_BLEND_RELATIVE'}, update=_mark_stale)
    head: PointerProperty(name="HMD", description="Empty that carries the headset pose", type=bpy.types.Object)
    left: PointerProperty(name="Left", description="Empty that carries the left controller's grip",
                          type=bpy.types.Object)
    right: PointerProperty(name="Right", description="Empty that carries the right controller's grip",
                           type=bpy.types.Object)
    record_path: StringProperty(name="Record To", description="Where takes are recorded: each take is its own "
                                "CSV beside it, numbered (vr_stream_001.csv, vr_stream_002.csv, ...)",
                                subtype='FILE_PATH', options={'PATH_SUPPORTS_BLEND_RELATIVE'},
                                default="//vr_stream.csv")
    countdown_s: FloatProperty(name="Countdown", description="Seconds between Record and the first sample: time to "
                               "put the headset on and take the calibration pose", default=3.0, min=0.0, max=30.0,
                               unit='TIME_ABSOLUTE')
    record_rate: EnumProperty(
        name="Rate", description="The take's samples a second: as the source gave them, or resampled (positions "
        "linear, rotations slerped) onto a regular timeline",
        items=[('0', "As Sampled", "Every sample the source gave (Blender's VR session ~90 Hz, an OpenXR runtime its "
                "display rate)"), ('30', "30 Hz", ""), ('60', "60 Hz", ""), ('72', "72 Hz", ""), ('90', "90 Hz", ""),
               ('120', "120 Hz", "")], default='0')
    record_by_button: BoolProperty(
        name="Controller Button", description="Record OpenXR starts listening: each press of a controller's record "
        "button (A on Index, A or X on Touch and HP Reverb, Menu on others) starts or stops a take, after the "
        "countdown; Esc or Stop Recording ends", default=False)
    takes: CollectionProperty(type=VRAvatarTake, name="Takes")
    takes_index: IntProperty(name="Active Take", default=0)
    grip: EnumProperty(
        name="Controller Poses", description="The pose the stream's controllers report (core/devices/grips.py)",
        items=[('openxr', "OpenXR Grip", "OpenXR's grip pose: OpenXR runtimes and this add-on's recordings"),
               ('index-openvr', "SteamVR Index", "SteamVR's device pose of a Valve Index controller"),
               ('touch-openvr', "SteamVR Touch", "SteamVR's device pose of a Meta Quest Touch controller"),
               ('vive-wand-openvr', "SteamVR Vive Wand", "SteamVR's device pose of an HTC Vive wand")],
        default='openxr', update=_mark_stale)


class VRAvatarText(bpy.types.PropertyGroup):
    """One line of text (a warning)."""
    text: StringProperty(name="Text")


class VRAvatarCalibration(bpy.types.PropertyGroup):
    """What the last solve's device calibration found (core.devices.calibration.StreamCalibration), for the panel."""
    solved: BoolProperty(name="Solved", description="The last solve calibrated the devices", default=False)
    found: BoolProperty(name="Found", description="The calibration gesture was found", default=False)
    pose: StringProperty(name="Pose", description="The calibration pose found: T (arms level) or A (arms down)",
                         default="T")
    pose_s: FloatVectorProperty(name="Pose Time", description="Start and end of the pose, stream seconds", size=2)
    standing_hmd_height_m: FloatProperty(name="Standing HMD Height", unit='LENGTH')
    arm_span_m: FloatProperty(name="Arm Span", description="Wrist to wrist with the arms level (from an A-pose: "
                              "estimated)", unit='LENGTH')
    left_offset_m: FloatVectorProperty(name="Left Grip", description="The left grip's origin from the wrist, in the "
                                       "grip's frame (NaN: not measured)", size=3)
    right_offset_m: FloatVectorProperty(name="Right Grip", description="The right grip's origin from the wrist, in "
                                        "the grip's frame (NaN: not measured)", size=3)
    grip_tilt_deg: FloatVectorProperty(name="Grip Tilts", description="Each grip's tilt, degrees (left, right)", size=2)


class VRAvatarBakedQuality(bpy.types.PropertyGroup):
    """The last bake's avatar, measured in Blender (avatar_quality.py): the figures the panel lists (NaN: not
    measured, as the mesh figures of a rig without a mesh) and its warnings."""
    measured: BoolProperty(name="Measured", default=False)
    mesh_below_floor_frames: FloatProperty(name="Mesh Under the Floor", description="Share of frames")
    toe_below_rest_cm: FloatProperty(name="Planted Toes Under Rest", description="Centimetres")
    foot_slide_cm_s: FloatProperty(name="Foot Sliding", description="Centimetres a second")
    hand_cm: FloatProperty(name="Hands to Controllers", description="Centimetres")
    head_cm: FloatProperty(name="Head to Headset", description="Centimetres")
    hips_height_ratio: FloatVectorProperty(name="Hips Height", description="Lowest and highest, over rest", size=2)
    warnings: CollectionProperty(type=VRAvatarText)


class VRAvatarSolveSettings(bpy.types.PropertyGroup):
    """Solver settings (core MatchingConfig, N3PConfig) and the cached solve."""
    method: EnumProperty(
        name="Method", description="How the full body is found from the three devices",
        items=[('HYBRID', "Hybrid", "The default, from the stream alone: the learned full-body predictor's pose "
                "with its feet held where they step and the hips facing where the orientation model says; Matched "
                "Legs takes motion matching's steps from the library's databases instead"),
               ('MM', "Motion Matching", "Motion matching over the library's databases, Parger IK for the arms "
                "(MMVR): few foot artefacts, the root within α of the headset"),
               ('N3P', "Neural3Points", "The learned full-body predictor (Ye et al., direct mode) with IK for "
                "hands and feet; needs no database, also runs from the headset alone")],
        default='HYBRID', update=_mark_stale)
    hmd_only: BoolProperty(name="Headset Only", description="Neural3Points: ignore the controllers and let the "
                           "predictor forecast the hands (§8.2); a stream without controller columns loads too",
                           default=False, update=_mark_stale)
    alpha_m: FloatProperty(
        name="Position Accuracy α", description="The avatar's root stays within this distance of the headset "
        "(MMVR §5.4: 0.3 m, 0.1 m for self-avatars)", default=SOLVER.alpha_m, min=0.01, max=2.0, unit='LENGTH',
        update=_mark_stale)
    search_interval: IntProperty(
        name="Search Interval", description="Frames between motion-matching searches (MMVR §5.3)",
        default=SOLVER.search_interval, min=1, max=120, update=_mark_stale)
    responsiveness_s: FloatProperty(
        name="Transition Half-life", description="Inertialization half-life: smaller answers faster, "
        "larger blends more smoothly", default=SOLVER.inertialization_halflife_s, min=0.01, max=1.0,
        unit='TIME_ABSOLUTE', update=_mark_stale)
    foot_lock: BoolProperty(name="Foot Lock", description="Hold a foot where it touched down (MMVR §6.2)",
                            default=SOLVER.foot_lock, update=_mark_stale)
    matched_legs: BoolProperty(name="Matched Legs", description="Hybrid: the legs step as motion matching's "
                               "poses from the library's databases do while the body travels (their clip's phase, "
                               "feet held on their contacts) instead of the predictor's own",
                               default=core.config.HybridConfig().legs == "matched", update=_mark_stale)
    arm_ik: BoolProperty(name="Arm IK", description="Pose neck, shoulders and arms from the headset and "
                         "controllers (Parger et al.); off keeps the matched upper body", default=True,
                         update=_mark_stale)
    elbow_constants: EnumProperty(
        name="Elbow Constants", description="Where the arm IK's elbow heuristics take their constants from",
        items=[('FITTED', "Fitted to Mocap", "Parger et al.'s heuristics refitted to the Bandai training mocap "
                "by the paper's own procedure: elbows 3.4 cm off instead of 5.9 cm on walking and waving"),
               ('PAPER', "Paper", "Parger et al.'s constants as printed")],
        default='FITTED', update=_mark_stale)
    orientation: EnumProperty(
        name="Body Orientation", description="How the body's facing is found",
        items=[('NETWORK', "Network", "The shipped orientation model: two seconds of device history"),
               ('MMVR', "MMVR Network", "The paper's network (MMVR §4): one frame and its previous answer"),
               ('HMD', "HMD Forward", "The body faces where the headset faces")],
        default='NETWORK', update=_mark_stale)
    calibration: EnumProperty(
        name="Calibration", description="Where the user's standing height and arm span come from",
        items=[('STREAM', "From Stream", "Standing pose in the stream's first half second"),
               ('EXPLICIT', "Explicit", "The height and arm span below")],
        default='STREAM', update=_mark_stale)
    calibrate_devices: BoolProperty(
        name="Calibrate Devices", description="Read how the controllers are held (grip to wrist, tilt) from the "
        "calibration gesture in the stream's first minute: a T- or A-pose with the wrists circling (or the calibration "
        "stored with the stream); off assumes the default grip", default=True, update=_mark_stale)
    user_height: FloatProperty(name="Standing HMD Height", description="The headset's height when the user stands",
                               default=1.6, min=0.5, max=2.5, unit='LENGTH', update=_mark_stale)
    arm_span: FloatProperty(name="Arm Span", description="Controller to controller distance in a T-pose",
                            default=1.5, min=0.5, max=2.5, unit='LENGTH', update=_mark_stale)
    has_cache: BoolProperty(name="Solved", description="A solve is cached in this .blend", default=False)
    preview: BoolProperty(name="Scrub Preview", description="Pose the target armature from the cached solve "
                          "when the frame changes", default=True)
    stride_scaled: BoolProperty(name="Scale Stride", description="Scale the root's horizontal motion by the "
                                "avatar's leg length too (the avatar then leaves the headset's track)",
                                default=False, update=_mark_stale)
    physics: BoolProperty(name="Physics", description="After the method, a simulated body tracks the solve and the "
                          "live preview (core physics pass: MuJoCo and one quadratic program a step): its feet "
                          "cannot float, sink or slide beyond a bounded root residual, and its head and hands are put "
                          "back on the headset and controllers. The extension carries mujoco "
                          "and daqp for Windows, Linux and Apple Silicon Macs",
                          default=False, update=_mark_stale)
    avatar_size: EnumProperty(
        name="Avatar Size", description="How an avatar of another size than the user meets the headset",
        items=[('FIT', "Fit to User", "Scale the avatar so its eyes meet the headset"),
               ('KEEP', "Keep Avatar's Size", "Scale the solve to the avatar instead: its eyes meet the headset "
                "scaled by the same factor, its hands reach toward the controllers as far as its arms allow")],
        default='FIT', update=_mark_stale)
    cache_stale: BoolProperty(name="Stale", description="A setting changed since the cached solve", default=False)
    report_path: StringProperty(name="Report", description="The last bake's quality report (plots)",
                                subtype='FILE_PATH', options={'PATH_SUPPORTS_BLEND_RELATIVE'})
    found_calibration: PointerProperty(type=VRAvatarCalibration)
    baked_quality: PointerProperty(type=VRAvatarBakedQuality)


class VRAvatarBakeSettings(bpy.types.PropertyGroup):
    """How Bake Action keys the solve: where the travel goes, which frames and bones, the action or an NLA strip."""
    root_motion: EnumProperty(name="Root Motion", description="Where the avatar's travel over the floor and its "
                              "turn go; the avatar's world motion is the same in every mode",
                              items=ROOT_MOTION_MODES, default='HIPS')
    push_to_nla: BoolProperty(name="Push to NLA", description="Put the new action on an NLA track of its own, named "
                              "after it, and leave the armature's active action as it was", default=False)
    frame_range: EnumProperty(name="Frames", description="Which frames of the solve are keyed",
                              items=[('SOLVE', "Whole Solve", "Every frame of the solve"),
                                     ('SCENE', "Scene Range", "The solve's frames within the scene's frame range")],
                              default='SOLVE')
    only_mapped: BoolProperty(name="Mapped Bones Only", description="Key the bones of the mapping alone (and the "
                              "root bone where it carries the travel); other bones keep their own animation",
                              default=False)


class VRAvatarSettings(bpy.types.PropertyGroup):
    target_armature: PointerProperty(
        name="Target Armature", description="Armature that the avatar's motion drives", type=bpy.types.Object,
        poll=_is_armature, update=_mark_stale)
    bone_map: CollectionProperty(type=VRAvatarBoneMapItem)
    bone_map_index: IntProperty(name="Active Joint", default=0)
    bone_map_armature: StringProperty(name="Mapped Armature", description="The armature the bone mapping was made for")
    bone_map_object: PointerProperty(name="Mapped Armature Object", type=bpy.types.Object,
                                     description="The armature the bone mapping was made for, followed through renames")
    bone_map_notes: StringProperty(name="Mapping Notes", description="What the automatic mapping overruled "
                                   "(sides taken from the geometry, a foot outside its leg chain)")
    library: PointerProperty(type=VRAvatarLibrarySettings)
    stream: PointerProperty(type=VRAvatarStreamSettings)
    solve: PointerProperty(type=VRAvatarSolveSettings)
    bake: PointerProperty(type=VRAvatarBakeSettings)


classes = (VRAvatarBoneMapItem, VRAvatarDatabaseItem, VRAvatarLibrarySettings, VRAvatarTake, VRAvatarStreamSettings,
           VRAvatarText,
           VRAvatarCalibration, VRAvatarBakedQuality, VRAvatarSolveSettings, VRAvatarBakeSettings, VRAvatarSettings)


_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.Scene.vr_avatar = PointerProperty(type=VRAvatarSettings)


def unregister():
    del bpy.types.Scene.vr_avatar
    _unregister_classes()
