"""Motion library operators: importing motion capture into Blender through `core`."""
from pathlib import Path

import bpy
import numpy as np
from bpy.props import StringProperty
from bpy_extras.io_utils import ImportHelper

from . import core
from .axes import z_up_from_y_up

# Length of a leaf bone that has no child and no End Site to point at, in metres.
STUB_LENGTH = 0.05
# Bones shorter than this would be deleted by Blender, so they get a stub instead.
MIN_BONE_LENGTH = 1e-4


def rest_positions(skeleton) -> np.ndarray:
    """(J, 3) global joint positions of the skeleton's rest layout, Blender axes (+Z up)."""
    identity = core.quat.identity(len(skeleton))
    _, positions = core.motion.forward_kinematics(skeleton.parents, identity, skeleton.offsets)
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


class VR_AVATAR_OT_import_bvh(bpy.types.Operator, ImportHelper):
    """Import a BVH file's skeleton as an armature in its rest layout, read by the VR Avatar core"""
    bl_idname = "vr_avatar.import_bvh"
    bl_label = "Import BVH"
    bl_options = {'REGISTER', 'UNDO'}

    filename_ext = ".bvh"
    filter_glob: StringProperty(default="*.bvh", options={'HIDDEN'})

    def execute(self, context):
        try:
            motion = core.bvh.read_bvh(self.filepath)
        except core.bvh.BVHError as error:
            self.report({'ERROR'}, str(error))
            return {'CANCELLED'}
        obj = build_armature(context, motion.skeleton, motion.name or Path(self.filepath).stem)
        obj["vr_avatar_frames"] = len(motion)
        obj["vr_avatar_fps"] = float(motion.fps)
        obj["vr_avatar_source"] = str(Path(self.filepath).resolve())
        self.report({'INFO'}, f"Imported {len(motion.skeleton)} joints, {len(motion)} frames at {motion.fps:g} fps")
        return {'FINISHED'}


classes = (VR_AVATAR_OT_import_bvh,)


register, unregister = bpy.utils.register_classes_factory(classes)
