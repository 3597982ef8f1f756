"""Stream operators: a three-point stream as animated empties, and recording one from Blender's VR session."""
import bpy

classes = ()


register, unregister = bpy.utils.register_classes_factory(classes)
