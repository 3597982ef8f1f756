"""Motion library operators: importing motion capture into armatures and actions, building motion databases."""
from pathlib import Path

import bpy
from bpy.props import EnumProperty, StringProperty
from bpy_extras.io_utils import ImportHelper

from .. import core
from ..armature import action_motion, build_armature, motion_channels
from ..errors import VRAvatarError, polled
from ..keyframes import new_action
from ..properties import mark_solve_stale
from ..scene_timing import fit_scene_timing

# Custom property that marks an armature as a motion of the library.
LIBRARY_TAG = "vr_avatar_library_motion"
# A database is saved beside the .blend as //<blend name><DATABASE_SUFFIX>.
DATABASE_SUFFIX = ".vr_avatar_db.npz"
# HMD-height ratio at or above which the range has no upper bound (the settings' maximum).
UNBOUNDED_HEIGHT = 2.0
# Motion capture formats read by Blender's own importers: extension -> (operator, add-on that provides it).
BLENDER_IMPORTERS = {".fbx": ("fbx", "FBX format"), ".glb": ("gltf", "glTF 2.0 format"),
                     ".gltf": ("gltf", "glTF 2.0 format")}
USER_ERRORS = (core.files.bvh.BVHError, core.matching.pose_database.DatabaseError, core.files.mocap.MocapNotFound,
               core.rig.humanoid.HumanoidMappingError)


def import_bvh_motion(context, path: Path):
    """A new armature with an action playing the BVH file (read by core); raises BVHError before creating anything,
    and ValueError naming the file, with everything it made removed, if building the armature fails."""
    motion = core.files.bvh.read_bvh(path)
    before = set(bpy.data.user_map())
    try:
        obj = build_armature(context, motion.skeleton, motion.name or path.stem)
        for pose_bone in obj.pose.bones:
            pose_bone.rotation_mode = 'QUATERNION'
        new_action(obj.name, obj, motion_channels(obj, motion), context.scene.frame_start)
        fit_scene_timing(context.scene, motion.fps, len(motion))
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


def _importer_message(error: Exception) -> str:
    return str(error).removeprefix("Error: ").strip()


def import_with_blender(context, path: Path) -> list:
    """The animated armatures that Blender's own importer reads from an FBX or glTF file, tagged as library motions.

    Raises ValueError with the importer's message; then every data-block the importer made is removed.
    """
    operator_name, addon = BLENDER_IMPORTERS[path.suffix.lower()]
    importer = getattr(bpy.ops.import_scene, operator_name)
    if not hasattr(bpy.types, importer.idname()):
        raise ValueError(f"Blender's {addon} importer is not available: enable the '{addon}' add-on")
    if context.object is not None and context.object.mode != 'OBJECT':
        bpy.ops.object.mode_set(mode='OBJECT')
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
        raise ValueError(_importer_message(error)) from None
    for obj in armatures:
        obj[LIBRARY_TAG] = True
        obj["vr_avatar_source"] = str(path.resolve())
    return armatures


class VR_AVATAR_OT_import_bvh(bpy.types.Operator, ImportHelper):
    """Import a BVH file as an armature with an action holding its motion, read by the VR Avatar core"""
    bl_idname = "vr_avatar.import_bvh"
    bl_label = "Import BVH"
    bl_options = {'REGISTER', 'UNDO'}

    filename_ext = ".bvh"
    filter_glob: StringProperty(default="*.bvh", options={'HIDDEN'})

    def execute(self, context):
        try:
            _, motion = import_bvh_motion(context, Path(self.filepath))
        except ValueError as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        self.report({'INFO'}, f"Imported {len(motion.skeleton)} joints, {len(motion)} frames at {motion.fps:g} fps")
        return {'FINISHED'}


class VR_AVATAR_OT_import_mocap(bpy.types.Operator, ImportHelper):
    """Import motion capture into the motion library: BVH through the VR Avatar core, FBX and glTF by Blender"""
    bl_idname = "vr_avatar.import_mocap"
    bl_label = "Import Motion Capture"
    bl_options = {'REGISTER', 'UNDO'}

    filter_glob: StringProperty(default="*.bvh;*.fbx;*.glb;*.gltf", options={'HIDDEN'})

    def execute(self, context):
        path = Path(self.filepath)
        extension = path.suffix.lower()
        try:
            if extension == ".bvh":
                armatures = [import_bvh_motion(context, path)[0]]
            elif extension in BLENDER_IMPORTERS:
                armatures = import_with_blender(context, path)
            else:
                raise ValueError(f"{path}: unknown motion capture format '{extension}'; choose a .bvh, .fbx, .glb "
                                 "or .gltf file")
        except ValueError as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        self.report({'INFO'}, f"Imported {', '.join(obj.name for obj in armatures)} into the motion library")
        return {'FINISHED'}


def mocap_files(library) -> list[Path]:
    """The BVH files that the library's motion capture path names (a folder honours Locomotion Only)."""
    if not library.mocap_path:
        raise core.files.mocap.MocapNotFound("choose a motion capture file or folder first")
    path = Path(bpy.path.abspath(library.mocap_path))
    files = core.files.mocap.find_bvh_files([path])
    if path.is_dir() and library.locomotion_only:
        files = core.files.mocap.locomotion_files(files)
        if not files:
            raise core.files.mocap.MocapNotFound(f"no locomotion clips among the BVH files in {path}; untick "
                                           "Locomotion Only to use them all")
    return files


def database_config(library):
    """core's DatabaseConfig from the library settings (a maximum of 2 means no upper bound)."""
    high = float("inf") if library.height_max >= UNBOUNDED_HEIGHT else library.height_max
    return core.config.DatabaseConfig(mirror=library.mirror, height_range=(library.height_min, high))


def saved_blend(_context) -> None:
    """VRAvatarError unless the .blend is saved (a motion database is saved beside it)."""
    if not bpy.data.filepath:
        raise VRAvatarError("Save the .blend file first: the motion database is saved beside it")


class VR_AVATAR_OT_build_database(bpy.types.Operator):
    """Build a motion database from the mocap path or the selected armatures' actions, saved beside the .blend"""
    bl_idname = "vr_avatar.build_database"
    bl_label = "Build Motion Database"
    bl_options = {'REGISTER', 'UNDO'}

    source: EnumProperty(
        name="Source", description="Where the database's clips come from",
        items=[('FILES', "Files", "The BVH file or folder of the motion capture path"),
               ('ACTIONS', "Selected Actions", "The actions of the selected armatures")],
        default='FILES')

    @classmethod
    def poll(cls, context):
        return polled(cls, saved_blend, context)

    def execute(self, context):
        library = context.scene.vr_avatar.library
        window_manager = context.window_manager
        try:
            if self.source == 'FILES':
                files = mocap_files(library)
                window_manager.progress_begin(0, len(files) + 1)
                motions = []
                for done, path in enumerate(files, 1):
                    motions.append(core.files.bvh.read_bvh(path))
                    window_manager.progress_update(done)
            else:
                armatures = [obj for obj in context.selected_objects if obj.type == 'ARMATURE'
                             and obj.animation_data is not None and obj.animation_data.action is not None]
                if not armatures:
                    raise core.matching.pose_database.DatabaseError("select the armatures whose actions make the database")
                window_manager.progress_begin(0, len(armatures) + 1)
                motions = []
                for done, obj in enumerate(armatures, 1):
                    motions.append(action_motion(context.scene, obj))
                    window_manager.progress_update(done)
            database = core.matching.pose_database.build_database(motions, database_config(library))
        except (*USER_ERRORS, ValueError) as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        finally:
            window_manager.progress_end()

        relative = f"//{Path(bpy.data.filepath).stem}{DATABASE_SUFFIX}"
        try:  # written beside the old file and renamed over it: a failed write leaves the old database as it was
            database.save(bpy.path.abspath(relative))
        except (OSError, ValueError) as error:
            self.report({'ERROR'}, f"cannot write the motion database: {error}")
            return {'CANCELLED'}
        item = next((item for item in library.databases if item.path == relative), None)
        if item is None:
            item = library.databases.add()
            item.path = relative
        item.height_min, item.height_max, item.poses = library.height_min, library.height_max, len(database)
        library.databases_index = list(library.databases).index(item)
        mark_solve_stale(context.scene)
        skipped = database.info["skipped_short_clips"]
        note = f" (skipped {len(skipped)} clips shorter than 1 s)" if skipped else ""
        self.report({'INFO'}, f"Motion database {relative}: {len(database)} poses from "
                              f"{len(database.clip_names)} clips{note}")
        return {'FINISHED'}


class VR_AVATAR_OT_remove_database(bpy.types.Operator):
    """Remove the active motion database from the scene's list (the file stays on disk)"""
    bl_idname = "vr_avatar.remove_database"
    bl_label = "Remove Motion Database"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        library = context.scene.vr_avatar.library
        return 0 <= library.databases_index < len(library.databases)

    def execute(self, context):
        library = context.scene.vr_avatar.library
        library.databases.remove(library.databases_index)
        library.databases_index = min(library.databases_index, len(library.databases) - 1)
        mark_solve_stale(context.scene)
        return {'FINISHED'}


classes = (VR_AVATAR_OT_import_bvh, VR_AVATAR_OT_import_mocap, VR_AVATAR_OT_build_database,
           VR_AVATAR_OT_remove_database)


register, unregister = bpy.utils.register_classes_factory(classes)
