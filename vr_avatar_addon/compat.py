"""What each supported Blender needs where its Python API differs (4.5 LTS, 5.0, 5.x).

- F-curves in a layered action's channelbag: 5.0 creates a curve and its group in one call
  (`fcurves.new(data_path, index=, group_name=)`); 4.5's `new` takes no group, which is made with
  `channelbag.groups.new` and assigned to the curve.
"""
import bpy

FCURVE_NEW_TAKES_GROUP = "group_name" in bpy.types.ActionChannelbagFCurves.bl_rna.functions["new"].parameters


def new_fcurve(channelbag, data_path: str, index: int, group_name: str):
    """A new f-curve in `channelbag`, in the group of that name (made if missing)."""
    if FCURVE_NEW_TAKES_GROUP:
        return channelbag.fcurves.new(data_path, index=index, group_name=group_name)
    curve = channelbag.fcurves.new(data_path, index=index)
    if group_name:
        curve.group = channelbag.groups.get(group_name) or channelbag.groups.new(group_name)
    return curve
