"""Motion library operators: importing motion capture into armatures and actions, building motion databases
(motion_library.py does the work)."""
from pathlib import Path

import bpy
from bpy.props import EnumProperty, StringProperty
from bpy_extras.io_utils import ImportHelper

from ..errors import polled
from ..motion_library import build_database, import_bvh_motion, import_mocap, saved_blend
from ..properties import mark_solve_stale
from ..scene_timing import kept_rate_note


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
        note = kept_rate_note(context.scene, motion.fps)
        self.report({'WARNING'} if note else {'INFO'},
                    f"Imported {len(motion.skeleton)} joints, {len(motion)} frames at {motion.fps:g} fps{note}")
        return {'FINISHED'}


class VR_AVATAR_OT_import_mocap(bpy.types.Operator, ImportHelper):
    """Import motion capture into the motion library: BVH through the VR Avatar core, FBX and glTF by Blender"""
    bl_idname = "vr_avatar.import_mocap"
    bl_label = "Import Motion Capture"
    bl_options = {'REGISTER', 'UNDO'}

    filter_glob: StringProperty(default="*.bvh;*.fbx;*.glb;*.gltf", options={'HIDDEN'})

    def execute(self, context):
        return import_mocap(context, self.report, Path(self.filepath))


class VR_AVATAR_OT_build_database(bpy.types.Operator):
    """Build a motion database from the mocap path or the selected armatures' actions, saved beside the .blend"""
    bl_idname = "vr_avatar.build_database"
    bl_label = "Build Motion Database"
    bl_options = {'REGISTER', 'UNDO'}

    source: EnumProperty(
        name="Source", description="Where the database's clips come from",
        items=[('FILES', "Files", "The BVH, FBX or glTF file or folder of the motion capture path"),
               ('ACTIONS', "Selected Actions", "The actions of the selected armatures")],
        default='FILES')

    @classmethod
    def poll(cls, context):
        return polled(cls, saved_blend, context)

    def execute(self, context):
        return build_database(context, self.report, self.source)


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
