"""Mapping preset operators: save the avatar's bone mapping as a JSON preset, load one (or a VRM file's own
humanoid map), and apply a built-in preset (Mixamo, Rigify, VRoid, Unreal)."""
from pathlib import Path

import bpy
from bpy.props import EnumProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from .. import core
from ..armature import target_armature
from ..bone_map import bone_map, fill_bone_map, mapped_armature, report_mapping
from ..errors import VRAvatarError, polled

PRESET_ITEMS = [(name, label, f"Map the bones after the built-in preset: {label}")
                for name, label in core.rig.mapping_preset.builtin_presets().items()]


def apply_preset(operator, context, source) -> set:
    """Fill the mapping list from a preset (matched to the armature's bones), the rest found as Map Bones does."""
    settings = context.scene.vr_avatar
    try:
        obj = target_armature(context)
        preset = core.rig.mapping_preset.load_preset(source)
    except (VRAvatarError, core.rig.humanoid.HumanoidMappingError) as error:
        operator.report({'ERROR'}, str(error))
        return {'CANCELLED'}
    resolved, unresolved = core.rig.mapping_preset.preset_for_rig(preset, list(obj.data.bones.keys()))
    if not resolved:
        operator.report({'ERROR'}, f"{Path(str(source)).name}: none of its bones is in '{obj.name}'")
        return {'CANCELLED'}
    missing = fill_bone_map(settings, obj, resolved)
    report_mapping(operator, settings, obj, missing)
    if unresolved:
        operator.report({'WARNING'}, f"'{obj.name}' lacks the preset's bones for {', '.join(unresolved)}: "
                                     f"found by name or structure instead")
    return {'FINISHED'}


def mapped(context) -> None:
    """VRAvatarError unless the scene's avatar has a bone mapping."""
    if not context.scene.vr_avatar.bone_map:
        raise VRAvatarError("Nothing to save: map the bones first (VR Avatar › Avatar › Map Bones)")


class VR_AVATAR_OT_save_mapping_preset(bpy.types.Operator, ExportHelper):
    """Save the avatar's bone mapping as a JSON preset {joint: bone} to reuse on armatures named alike"""
    bl_idname = "vr_avatar.save_mapping_preset"
    bl_label = "Save Mapping Preset"
    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={'HIDDEN'})

    @classmethod
    def poll(cls, context):
        return polled(cls, mapped, context)

    def execute(self, context):
        settings = context.scene.vr_avatar
        guessed = [item.joint for item in settings.bone_map if item.guessed]
        try:
            core.files.atomic.check_outputs([self.filepath], [bpy.data.filepath or None])
            path = core.rig.mapping_preset.save_preset(self.filepath, bone_map(settings), rig=mapped_armature(settings),
                                                   guessed=guessed, notes=settings.bone_map_notes)
        except (OSError, ValueError) as error:  # HumanoidMappingError and core's OutputError are ValueErrors
            self.report({'ERROR'}, f"cannot save the mapping preset: {error}")
            return {'CANCELLED'}
        self.report({'INFO'}, f"Saved the bone mapping of '{mapped_armature(settings)}' to {path}")
        return {'FINISHED'}


class VR_AVATAR_OT_load_mapping_preset(bpy.types.Operator, ImportHelper):
    """Map the avatar's bones from a JSON preset, or from a VRM file's own humanoid map (.vrm, .glb)"""
    bl_idname = "vr_avatar.load_mapping_preset"
    bl_label = "Load Mapping Preset"
    bl_options = {'REGISTER', 'UNDO'}
    filter_glob: StringProperty(default="*.json;*.vrm;*.glb;*.gltf", options={'HIDDEN'})

    @classmethod
    def poll(cls, context):
        return polled(cls, target_armature, context)

    def execute(self, context):
        return apply_preset(self, context, self.filepath)


class VR_AVATAR_OT_apply_mapping_preset(bpy.types.Operator):
    """Map the avatar's bones after a built-in naming preset; joints the armature lacks are found as Map Bones does"""
    bl_idname = "vr_avatar.apply_mapping_preset"
    bl_label = "Apply Mapping Preset"
    bl_options = {'REGISTER', 'UNDO'}
    bl_property = "preset"
    preset: EnumProperty(name="Preset", description="Built-in mapping preset", items=PRESET_ITEMS)

    @classmethod
    def poll(cls, context):
        return polled(cls, target_armature, context)

    def execute(self, context):
        return apply_preset(self, context, self.preset)


classes = (VR_AVATAR_OT_save_mapping_preset, VR_AVATAR_OT_load_mapping_preset, VR_AVATAR_OT_apply_mapping_preset)


register, unregister = bpy.utils.register_classes_factory(classes)
