"""Motion library operators: importing motion capture into armatures and actions, building motion databases."""
from pathlib import Path

import bpy
import numpy as np
from bpy.props import EnumProperty, StringProperty
from bpy_extras.io_utils import ImportHelper

from .. import bone_space, core
from ..axes import y_up_from_z_up, y_up_rotation_from_z_up, z_up_from_y_up
from ..keyframes import new_action
from ..properties import mark_solve_stale

# Length of a leaf bone that has no child and no End Site to point at, in metres.
STUB_LENGTH = 0.05
# Bones shorter than this would be deleted by Blender, so they get a stub instead.
MIN_BONE_LENGTH = 1e-4
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


def rest_positions(skeleton) -> np.ndarray:
    """(J, 3) global joint positions of the skeleton's rest layout, Blender axes (+Z up)."""
    identity = core.math.quat.identity(len(skeleton))
    _, positions = core.anim.motion.forward_kinematics(skeleton.parents, identity, skeleton.offsets)
    return z_up_from_y_up(positions)


def _tails(skeleton, heads: np.ndarray) -> np.ndarray:
    """Each bone's tail: its first child that is not on top of it, else its End Site, else a stub."""
    end_sites = {j: z_up_from_y_up(offset) for j, offset in skeleton.end_sites}
    tails = np.empty_like(heads)
    for j, head in enumerate(heads):
        targets = [heads[c] - head for c in skeleton.children(j)] + [end_sites.get(j, np.zeros(3))]
        step = next((t for t in targets if np.linalg.norm(t) > MIN_BONE_LENGTH), None)
        if step is None:  # continue the parent bone's direction, or point up from a lone root
            parent = skeleton.parents[j]
            along = head - heads[parent] if parent >= 0 else np.zeros(3)
            norm = np.linalg.norm(along)
            step = along / norm * STUB_LENGTH if norm > MIN_BONE_LENGTH else np.array([0.0, 0.0, STUB_LENGTH])
        tails[j] = head + step
    return tails


def build_armature(context, skeleton, name: str):
    """A new armature object, linked to the active collection, whose bones follow the skeleton at rest."""
    if context.object is not None and context.object.mode != 'OBJECT':
        bpy.ops.object.mode_set(mode='OBJECT')
    armature = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, armature)
    context.collection.objects.link(obj)
    context.view_layer.objects.active = obj
    heads = rest_positions(skeleton)
    tails = _tails(skeleton, heads)
    bpy.ops.object.mode_set(mode='EDIT')
    bones = []
    for j, joint in enumerate(skeleton.names):
        bone = armature.edit_bones.new(joint)
        bone.head, bone.tail = heads[j], tails[j]
        if skeleton.parents[j] >= 0:
            bone.parent = bones[skeleton.parents[j]]
        bones.append(bone)
    bpy.ops.object.mode_set(mode='OBJECT')
    return obj


def motion_channels(obj, motion) -> list:
    """Action channels (data path, values, group) that play `motion` on its armature built by build_armature.

    Core's joint frames are world-aligned at rest, so bone j's world orientation is G_j · rest_j; a joint
    whose offset is animated (BVH position channels) gets a location channel as well as the root.
    """
    bones = obj.data.bones
    order = [motion.skeleton.index(bone.name) for bone in bones]
    global_rotations, _ = motion.global_transforms()
    rest = bone_space.rest_rotations(obj)
    parents = bone_space.parents(obj)
    basis = bone_space.basis_rotations(core.math.quat.multiply(global_rotations[:, order], rest), rest, parents)
    displacements = motion.positions[:, order] - motion.skeleton.offsets[order]
    locations = bone_space.basis_locations(displacements, rest)
    roots = parents < 0
    for j in np.flatnonzero(roots):
        locations[:, j] = bone_space.basis_root_location(motion.positions[:, order[j]], obj, bones[j])
    moving = roots | (np.abs(displacements).max(axis=(0, 2)) > 1e-6)
    paths = [f'pose.bones["{bpy.utils.escape_identifier(bone.name)}"]' for bone in bones]
    channels = [(f"{path}.rotation_quaternion", basis[:, j], bone.name)
                for j, (path, bone) in enumerate(zip(paths, bones))]
    channels += [(f"{paths[j]}.location", locations[:, j], bones[j].name) for j in np.flatnonzero(moving)]
    return channels


def fit_scene_timing(scene, fps: float, frames: int) -> None:
    """Play the scene at `fps` and make its range hold `frames` frames from its start (never shorter)."""
    scene.render.fps = max(1, round(fps))
    scene.render.fps_base = scene.render.fps / fps
    scene.frame_end = max(scene.frame_end, scene.frame_start + frames - 1)


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


def action_motion(scene, obj):
    """The armature's action sampled into a core Motion (metres, +Y up), one pose per scene frame of the action.

    Joint frames are world-aligned at rest: a joint's global rotation is its bone's world orientation
    times the bone's rest orientation inverted, so the skeleton's offsets are the rest heads' differences.
    """
    action = obj.animation_data.action
    bones = obj.data.bones
    parents = bone_space.parents(obj)
    start, end = (int(round(frame)) for frame in action.frame_range)
    order = [obj.pose.bones.find(bone.name) for bone in bones]
    world = np.array(obj.matrix_world, dtype=float)
    flat = np.empty(len(bones) * 16, dtype=np.float32)
    matrices = np.empty((end - start + 1, len(bones), 4, 4))
    current = scene.frame_current
    for i, frame in enumerate(range(start, end + 1)):
        scene.frame_set(frame)
        obj.pose.bones.foreach_get("matrix", flat)
        matrices[i] = flat.reshape(-1, 4, 4).transpose(0, 2, 1)[order]
    scene.frame_set(current)
    matrices = world @ matrices
    orientations = y_up_rotation_from_z_up(bone_space.matrix_rotations(matrices))
    global_rotations = core.math.quat.multiply_inverse(orientations, bone_space.rest_rotations(obj))
    heads = y_up_from_z_up(matrices[..., :3, 3])

    rest_heads = bone_space.rest_positions(obj)
    child = parents >= 0
    offsets = rest_heads.copy()
    offsets[child] -= rest_heads[parents[child]]
    tails = np.empty(len(bones) * 3, dtype=np.float32)
    bones.foreach_get("tail_local", tails)
    tails = y_up_from_z_up(tails.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3])
    leaves = sorted(set(range(len(bones))) - set(parents.tolist()))
    end_sites = tuple((j, tuple(float(v) for v in tails[j] - rest_heads[j])) for j in leaves)
    skeleton = core.anim.skeleton.Skeleton(tuple(bone.name for bone in bones), parents, offsets, end_sites)

    positions = heads.copy()
    positions[:, child] = core.math.quat.inverse_rotate(global_rotations[:, parents[child]],
                                                   heads[:, child] - heads[:, parents[child]])
    rotations = core.anim.motion.local_from_global(parents, global_rotations)
    fps = scene.render.fps / scene.render.fps_base
    return core.anim.motion.Motion(skeleton, rotations, positions, fps, action.name)


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


def database_paths(settings) -> list[str]:
    """Absolute paths of the scene's motion databases; settings: scene.vr_avatar or its library section."""
    library = getattr(settings, "library", settings)
    return [bpy.path.abspath(item.path) for item in library.databases]


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

    def execute(self, context):
        if not bpy.data.filepath:
            self.report({'ERROR'}, "Save the .blend file first: the motion database is saved beside it")
            return {'CANCELLED'}
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
