"""Solve operators: the avatar's bone mapping, solving a stream into the cache, baking, live preview."""
import bpy

classes = ()


register, unregister = bpy.utils.register_classes_factory(classes)
