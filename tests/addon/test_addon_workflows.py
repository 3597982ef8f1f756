"""Workflows over a session, in the real bpy: the target armature deleted after its solve."""
import pytest

from test_addon_user_data import _solved, stream as short_stream

stream = short_stream
"""The fixture walk's first seconds as a stream file (test_addon_user_data's fixture)."""


def test_a_target_armature_deleted_after_its_solve_is_refused_in_one_line(bpy, installed, stream):
    """Deleted from the scene (the Target Armature setting still holds it, so it stays in the file): Solve and Map
    Bones say so in one line, as the bake does, instead of solving onto an armature no scene shows and that no bake
    can then reach."""
    obj = _solved(bpy, stream)
    bpy.ops.object.select_all(action='DESELECT')
    obj.select_set(True)
    assert bpy.ops.object.delete() == {'FINISHED'}
    scene = bpy.context.scene
    assert scene.vr_avatar.target_armature == obj
    for operator in (bpy.ops.vr_avatar.solve_stream, bpy.ops.vr_avatar.map_bones):
        with pytest.raises(RuntimeError, match=r"Target Armature 'Avatar' is not in scene 'Scene' \(deleted, or in "
                                               r"another scene\): pick another or link it back"):
            operator()
    with pytest.raises(RuntimeError, match="The cached solve is for armature 'Avatar', which is gone: solve again"):
        bpy.ops.vr_avatar.bake_action()
    scene.collection.objects.link(obj)  # linked back, it solves and bakes
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}

