"""Panels: the VR Avatar tab in the 3D view's sidebar."""
import bpy

from .operators import VR_AVATAR_OT_import_bvh


class VIEW3D_PT_vr_avatar(bpy.types.Panel):
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "VR Avatar"
    bl_label = "VR Avatar"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        layout.prop(context.scene.vr_avatar, "target_armature")
        layout.operator(VR_AVATAR_OT_import_bvh.bl_idname, icon='IMPORT')


classes = (VIEW3D_PT_vr_avatar,)


register, unregister = bpy.utils.register_classes_factory(classes)
