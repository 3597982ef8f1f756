"""The motion library: motion capture imported into armatures and actions (BVH through core, FBX and glTF through
Blender's importers) and motion databases built from it, saved beside the .blend. The operators in
operators/library.py gather their options and call `import_mocap` and `build_database`."""
from functools import partial
from pathlib import Path

import bpy
import numpy as np

from . import core
from .armature import action_motion, build_armature, motion_channels
from .errors import USER_ERRORS, VRAvatarError
from .keyframes import action_fcurves, new_action
from .properties import mark_solve_stale
from .scene_timing import fit_scene_timing, has_timed_content, kept_rate_note, scene_fps

# Custom property that marks an armature as a motion of the library.
LIBRARY_TAG = "vr_avatar_library_motion"
# A database is saved beside the .blend as //<blend name><DATABASE_SUFFIX>.
DATABASE_SUFFIX = ".vr_avatar_db.npz"
# HMD-height ratio at or above which the range has no upper bound (the settings' maximum).
UNBOUNDED_HEIGHT = 2.0
# Motion capture formats read by Blender's own importers: extension -> (operator, add-on that provides it).
BLENDER_IMPORTERS = {".fbx": ("fbx", "FBX format"), ".glb": ("gltf", "glTF 2.0 format"),
                     ".gltf": ("gltf", "glTF 2.0 format")}
# Motion capture files a database is built from.
MOCAP_EXTENSIONS = (".bvh", *BLENDER_IMPORTERS)


def import_bvh_motion(context, path: Path):
    """A new armature with an action playing the BVH file (read by core), the scene set to its rate unless it holds
    a solve or animation (then the motion is keyed resampled to the scene's rate, so it plays at its own speed);
    raises BVHError before creating anything, and ValueError naming the file, with everything it made removed, if
    building the armature fails."""
    motion = core.files.bvh.read_bvh(path)
    keep_rate = has_timed_content(context.scene)
    keyed = motion.resampled(scene_fps(context.scene)) if keep_rate else motion
    before = set(bpy.data.user_map())
    try:
        obj = build_armature(context, motion.skeleton, motion.name or path.stem)
        for pose_bone in obj.pose.bones:
            pose_bone.rotation_mode = 'QUATERNION'
        new_action(obj.name, obj, motion_channels(obj, keyed), context.scene.frame_start)
        fit_scene_timing(context.scene, motion.fps, len(keyed), keep_rate)
    except Exception as error:  # nothing half-made stays behind
        if context.object is not None and context.object.mode != 'OBJECT':
            bpy.ops.object.mode_set(mode='OBJECT')
        bpy.data.batch_remove(set(bpy.data.user_map()) - before)
        raise ValueError(f"{path}: cannot build its armature: {error}") from None
    obj["vr_avatar_frames"] = len(motion)
    obj["vr_avatar_fps"] = float(motion.fps)
    obj["vr_avatar_source"] = str(path.resolve())
    obj[LIBRARY_TAG] = True
    return obj, motion


def _importer_message(path: Path, error: Exception) -> str:
    """The importer's error as one line that names the file."""
    message = str(error).removeprefix("Error: ").strip()
    return message if message.startswith(str(path)) else f"{path}: {' '.join(message.split())}"


def _retimed(actions, factor: float) -> None:
    """Every key (and its handles) of the actions moved from frame f to s + (f - s) · factor, s the first key's frame
    of them all: the clip starts where the importer put it and plays `factor` times as many frames."""
    curves = [curve for action in actions for curve in action_fcurves(action) if len(curve.keyframe_points)]
    if not curves:
        return
    start = min(curve.keyframe_points[0].co.x for curve in curves)
    for curve in curves:
        for name in ("co", "handle_left", "handle_right"):
            values = np.empty(len(curve.keyframe_points) * 2, dtype=np.float32)
            curve.keyframe_points.foreach_get(name, values)
            values[::2] = start + (values[::2] - start) * factor
            curve.keyframe_points.foreach_set(name, values)
        curve.update()


def import_with_blender(context, path: Path) -> tuple[list, float]:
    """The animated armatures that Blender's own importer reads from an FBX or glTF file, tagged as library motions,
    and the file's frame rate. A scene that holds a solve or animation keeps its rate (the FBX importer sets the
    file's): the keys are moved to play at their own speed in it.

    Raises ValueError with the importer's message; then every data-block the importer made is removed.
    """
    operator_name, addon = BLENDER_IMPORTERS[path.suffix.lower()]
    importer = getattr(bpy.ops.import_scene, operator_name)
    if not hasattr(bpy.types, importer.idname()):
        raise ValueError(f"Blender's {addon} importer is not available: enable the '{addon}' add-on")
    if context.object is not None and context.object.mode != 'OBJECT':
        bpy.ops.object.mode_set(mode='OBJECT')
    scene = context.scene
    keep_rate, rate = has_timed_content(scene), (scene.render.fps, scene.render.fps_base)
    before = set(bpy.data.user_map())
    try:
        if importer(filepath=str(path)) != {'FINISHED'}:
            raise ValueError(f"{path}: Blender's {addon} importer cancelled")
        armatures = [obj for obj in set(bpy.data.objects) - before if obj.type == 'ARMATURE'
                     and obj.animation_data is not None and obj.animation_data.action is not None]
        if not armatures:
            raise ValueError(f"{path}: no animated armature in this file")
    except (RuntimeError, ValueError) as error:
        bpy.data.batch_remove(set(bpy.data.user_map()) - before)
        scene.render.fps, scene.render.fps_base = rate
        raise ValueError(_importer_message(path, error)) from None
    file_fps = scene_fps(scene)
    if keep_rate:
        scene.render.fps, scene.render.fps_base = rate
        _retimed(set(bpy.data.actions) - before, scene_fps(scene) / file_fps)
    for obj in armatures:
        obj[LIBRARY_TAG] = True
        obj["vr_avatar_source"] = str(path.resolve())
    return armatures, file_fps


def mocap_files(library) -> list[Path]:
    """The BVH, FBX and glTF files that the library's motion capture path names (a folder honours Locomotion Only)."""
    if not library.mocap_path:
        raise core.files.mocap.MocapNotFound("choose a motion capture file or folder first")
    path = Path(bpy.path.abspath(library.mocap_path))
    if not path.is_dir():
        return core.files.mocap.find_bvh_files([path])
    files = sorted(p for p in path.rglob("*") if p.suffix.lower() in MOCAP_EXTENSIONS and p.is_file())
    if not files:
        raise core.files.mocap.MocapNotFound(f"no {', '.join(MOCAP_EXTENSIONS)} files in {path}")
    if library.locomotion_only:
        files = core.files.mocap.locomotion_files(files)
        if not files:
            raise core.files.mocap.MocapNotFound(f"no locomotion clips among the motion capture files in {path}; "
                                                 "untick Locomotion Only to use them all")
    return files


def _armature_actions(obj, actions) -> list:
    """Those of `actions` that move a bone of the armature: its active action first."""
    paths = {f'pose.bones["{bpy.utils.escape_identifier(bone.name)}"]' for bone in obj.data.bones}
    moving = [action for action in actions
              if any(curve.data_path.rpartition(".")[0] in paths for curve in action_fcurves(action))]
    return sorted(moving, key=lambda action: action is not obj.animation_data.action)


def metre_motion(scene, obj, where: str = ""):
    """The armature's action as a core motion (action_motion); ValueError naming the armature (after `where`) where
    its body's size says it is not in metres (a centimetre capture imported at scale 1 is a 150 m figure)."""
    motion = action_motion(scene, obj)
    scale, unit = core.files.bvh.guess_units(motion)
    if scale != 1.0:
        positions = motion[:: max(1, len(motion) // 50)].global_positions()
        height = float(np.median(np.ptp(positions[..., 1], axis=1)))
        raise ValueError(f"{where}Armature '{obj.name}' is {height:.3g} m tall: its action looks to be in {unit}; "
                         f"scale the armature by {scale:g} to metres")
    return motion


def file_motions(context, path: Path) -> list:
    """Every action that Blender's importer reads from an FBX or glTF file (a glTF's several animations each), read
    as core motions; what the import made is removed, and the scene's rate, range, frame, selection, active object and
    its mode (the import needs Object Mode) are put back. ValueError naming the file where it holds no animated
    armature or does not import."""
    scene, view_layer = context.scene, context.view_layer
    timing = (scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end, scene.frame_current)
    selected, active = list(context.selected_objects), view_layer.objects.active
    mode = active.mode if active is not None else 'OBJECT'
    before = set(bpy.data.user_map())
    try:
        armatures, _ = import_with_blender(context, path)
        made = set(bpy.data.actions) - before
        motions = []
        for obj in armatures:
            obj.animation_data.use_nla = False  # each action alone, not under the glTF importer's NLA tracks
            for action in _armature_actions(obj, made):
                obj.animation_data.action = action
                motions.append(metre_motion(scene, obj, f"{path}: "))
        return motions
    finally:
        bpy.data.batch_remove(set(bpy.data.user_map()) - before)
        scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end, current = timing
        scene.frame_set(current)
        for obj in view_layer.objects:
            obj.select_set(obj in selected)
        view_layer.objects.active = active
        if active is not None and active.mode != mode:
            bpy.ops.object.mode_set(mode=mode)


def database_config(library):
    """core's DatabaseConfig from the library settings (a maximum of 2 means no upper bound)."""
    high = float("inf") if library.height_max >= UNBOUNDED_HEIGHT else library.height_max
    return core.config.DatabaseConfig(mirror=library.mirror, height_range=(library.height_min, high))


def saved_blend(_context) -> None:
    """VRAvatarError unless the .blend is saved (a motion database is saved beside it)."""
    if not bpy.data.filepath:
        raise VRAvatarError("Save the .blend file first: the motion database is saved beside it")


def import_mocap(context, report, path: Path) -> set:
    """A BVH, FBX or glTF file into the motion library: its animated armatures, tagged; one error line if not."""
    extension = path.suffix.lower()
    note = ""
    try:
        if extension == ".bvh":
            obj, motion = import_bvh_motion(context, path)
            armatures, note = [obj], kept_rate_note(context.scene, motion.fps)
        elif extension in BLENDER_IMPORTERS:
            armatures, fps = import_with_blender(context, path)
            note = kept_rate_note(context.scene, fps)
        else:
            raise ValueError(f"{path}: unknown motion capture format '{extension}'; choose a .bvh, .fbx, .glb "
                             "or .gltf file")
    except ValueError as error:
        report({'ERROR'}, str(error))
        return {'CANCELLED'}
    report({'WARNING'} if note else {'INFO'},
           f"Imported {', '.join(obj.name for obj in armatures)} into the motion library{note}")
    return {'FINISHED'}


def animated_armatures(context) -> list:
    """The selected armatures that play an action."""
    return [obj for obj in context.selected_objects if obj.type == 'ARMATURE'
            and obj.animation_data is not None and obj.animation_data.action is not None]


def library_motions(context, source: str) -> tuple[list, list]:
    """The clips a database is built from, and where each comes from (its file, or its action and armature): the
    mocap path's files ('FILES') or the selected armatures' actions ('ACTIONS', each once however many armatures
    play it), read under the window's progress bar."""
    if source == 'FILES':
        items, read = mocap_files(context.scene.vr_avatar.library), partial(file_clips, context)
    else:
        players = {}
        for obj in animated_armatures(context):
            players.setdefault(obj.animation_data.action, obj)
        items, read = list(players.values()), partial(action_clips, context.scene)
        if not items:
            raise core.matching.pose_database.DatabaseError("select the armatures whose actions make the database")
    window_manager = context.window_manager
    window_manager.progress_begin(0, len(items) + 1)
    try:
        motions, sources = [], []
        for done, item in enumerate(items, 1):
            read_here = read(item)
            motions += read_here
            where = str(item) if source == 'FILES' else f"action '{item.animation_data.action.name}' of '{item.name}'"
            sources += [where] * len(read_here)
            window_manager.progress_update(done)
        return motions, sources
    finally:
        window_manager.progress_end()


def action_clips(scene, obj) -> list:
    """The armature's action as the one motion of a list, in metres (metre_motion)."""
    return [metre_motion(scene, obj)]


def file_clips(context, path: Path) -> list:
    """The motions of one motion capture file: a BVH read by core, an FBX or glTF through Blender's importer."""
    if path.suffix.lower() in BLENDER_IMPORTERS:
        return file_motions(context, path)
    return [core.files.bvh.read_bvh(path)]


def listed_database(library, relative: str, database) -> None:
    """The database file in the scene's list (added, or its entry updated) and made active."""
    item = next((item for item in library.databases if item.path == relative), None)
    if item is None:
        item = library.databases.add()
        item.path = relative
    item.height_min, item.height_max, item.poses = library.height_min, library.height_max, len(database)
    library.databases_index = list(library.databases).index(item)


def database_path(scene) -> str:
    """The file a scene's Build Database writes: //<blend name>.vr_avatar_db.npz, the scene's own database rebuilt in
    place; where another scene of the file lists that one, //<blend name>.<scene name>.vr_avatar_db.npz, so that one
    scene's build never replaces another's database."""
    stem = Path(bpy.data.filepath).stem
    shared = f"//{stem}{DATABASE_SUFFIX}"
    others = {item.path for other in bpy.data.scenes if other != scene for item in other.vr_avatar.library.databases}
    return shared if shared not in others else f"//{stem}.{bpy.path.clean_name(scene.name)}{DATABASE_SUFFIX}"


def build_database(context, report, source: str) -> set:
    """A motion database from `source` ('FILES' or 'ACTIONS'), saved as `database_path` (written beside the old file
    and renamed over it: a failed write leaves the old database as it was) and listed."""
    library = context.scene.vr_avatar.library
    try:
        motions, sources = library_motions(context, source)
        database = core.matching.pose_database.build_database(motions, database_config(library), sources=sources)
    except USER_ERRORS as error:
        report({'ERROR'}, str(error))
        return {'CANCELLED'}
    relative = database_path(context.scene)
    try:
        database.save(bpy.path.abspath(relative))
    except (OSError, ValueError) as error:
        report({'ERROR'}, f"cannot write the motion database: {error}")
        return {'CANCELLED'}
    listed_database(library, relative, database)
    mark_solve_stale(context.scene)
    skipped = database.info["skipped_short_clips"]
    note = f" (skipped {len(skipped)} clips shorter than 1 s)" if skipped else ""
    report({'INFO'}, f"Motion database {relative}: {len(database)} poses from {len(database.clip_names)} clips{note}")
    return {'FINISHED'}
