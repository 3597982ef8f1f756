"""Properties: the add-on's settings, stored on the scene as `scene.vr_avatar`."""
import bpy
from bpy.props import PointerProperty, StringProperty


def _is_armature(_settings, obj):
    return obj.type == 'ARMATURE'


class VRAvatarSettings(bpy.types.PropertyGroup):
    target_armature: PointerProperty(
        name="Target Armature",
        description="Armature that the avatar's motion drives",
        type=bpy.types.Object,
        poll=_is_armature,
    )
    mocap_path: StringProperty(
        name="Motion Capture",
        description="Motion capture file or folder to use as the motion database",
        subtype='FILE_PATH',
    )


classes = (VRAvatarSettings,)


_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.Scene.vr_avatar = PointerProperty(type=VRAvatarSettings)


def unregister():
    del bpy.types.Scene.vr_avatar
    _unregister_classes()
