"""The rig as users leave it when they bake, in the real bpy: an unmapped bone the replaced action posed, the armature
object moved by that action, its rest pose edited (in Edit Mode or out of it), the armature hidden, bones under
constraints or drivers."""
import numpy as np
import pytest

from test_addon_solve import MIXAMO
from test_addon_user_data import _solved, stream as short_stream
from test_addon_user_scenes import _heads_at, _loaded

stream = short_stream
"""The fixture walk's first seconds as a stream file (test_addon_user_data's fixture)."""

FRAMES = [1, 20, 45]
"""Frames the baked pose is checked at."""


def _on_the_solve(bpy, installed, obj, atol: float = 1e-3) -> None:
    """Every bone head where the cached solve put it at FRAMES."""
    cache = installed.solve_cache.load(bpy.context.scene)
    np.testing.assert_allclose(_heads_at(bpy, obj, cache.bones, FRAMES),
                               cache.positions[[cache.frame_index(frame) for frame in FRAMES]], atol=atol)


def test_mapped_bones_only_keys_an_in_between_bone_the_replaced_action_posed(bpy, installed, stream):
    """The user's own action bends the unmapped Spine1 (between the mapped spine and chest): a Mapped Bones Only bake
    that replaces it keys Spine1 as solved, so the chest, arms and head land where the solve put them (without:
    14 cm off); the other unmapped bones stay unkeyed."""
    obj = _solved(bpy, stream)
    scene = bpy.context.scene
    bent = np.tile([np.cos(0.2), np.sin(0.2), 0.0, 0.0], (2, 1))
    installed.keyframes.new_action("Idle", obj, [('pose.bones["mixamorig:Spine1"].rotation_quaternion', bent,
                                                  "mixamorig:Spine1")], 1)
    scene.vr_avatar.solve.preview = False
    scene.frame_set(10)
    scene.vr_avatar.bake.only_mapped = True
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    keyed = {c.data_path.split('"')[1] for c in installed.keyframes.action_fcurves(obj.animation_data.action)}
    assert keyed == set(MIXAMO.values()) | {"mixamorig:Spine1"}
    _on_the_solve(bpy, installed, obj)


def _walkabout(installed, obj) -> object:
    """An action of the user's that walks the armature object 2 m along X and turns it 1 rad over frames 1-60."""
    action, _ = installed.keyframes.new_action("Walkabout", obj, [
        ("location", np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]]), "Object Transforms"),
        ("rotation_euler", np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]), "Object Transforms")], 1)
    for curve in installed.keyframes.action_fcurves(action):
        point = curve.keyframe_points[1]
        point.co = (60.0, point.co.y)
    return action


def test_an_armature_moved_by_the_action_the_bake_replaces_is_keyed_where_it_was_solved(bpy, installed, stream):
    """The user's action moves and turns the armature object; solved at frame 20 and baked at frame 50, with the
    travel on the hips or on the object, the baked avatar is where the solve put it at every frame (without: 1.3 m
    off, by where the action left the object at the frame of the bake)."""
    obj = _loaded(bpy, stream)
    scene = bpy.context.scene
    walkabout = _walkabout(installed, obj)
    scene.frame_set(20)
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    for mode in ("HIPS", "OBJECT"):
        obj.animation_data.action = walkabout
        obj.animation_data.action_slot = walkabout.slots[0]
        scene.frame_set(50)
        scene.vr_avatar.bake.root_motion = mode
        assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
        _on_the_solve(bpy, installed, obj)


def test_the_scrub_preview_holds_an_armature_its_own_action_walks_where_it_was_solved(bpy, installed, stream):
    """The preview poses the bones from the solve while the user's action walks the object: the object is held where
    the solve was made with it, as the bake keys it, so every bone is where the solve put it at every frame (without:
    1.1 m off)."""
    obj = _loaded(bpy, stream)
    scene = bpy.context.scene
    _walkabout(installed, obj)
    scene.frame_set(20)
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    assert scene.vr_avatar.solve.preview
    _on_the_solve(bpy, installed, obj)


@pytest.mark.parametrize("mode", ["EDIT", "OBJECT"])
def test_a_rest_pose_edited_after_the_solve_refuses_the_bake_in_one_line(bpy, installed, stream, mode):
    """A bone moved in Edit Mode after the solve, the armature still in Edit Mode or back out of it: the bake says
    which bone in one line and makes nothing (without: baked 28 cm off the solve)."""
    obj = _solved(bpy, stream)
    actions = set(bpy.data.actions)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode='EDIT')
    arm = obj.data.edit_bones["mixamorig:LeftArm"]
    arm.head = (arm.head[0] + 0.15, arm.head[1], arm.head[2] + 0.1)
    bpy.ops.object.mode_set(mode=mode)
    with pytest.raises(RuntimeError, match=r"^Error: The rest pose of bone 'mixamorig:LeftArm' of armature 'Avatar' "
                                           r"changed since the solve: solve again\n?$"):
        bpy.ops.vr_avatar.bake_action()
    assert set(bpy.data.actions) == actions and obj.mode == mode
    bpy.ops.object.mode_set(mode='OBJECT')


def test_a_solve_in_edit_mode_reads_the_bones_as_edited(bpy, installed, stream):
    """Solved in Edit Mode with a bone moved and not yet written back: the solve reads the bones as edited, so the
    armature scrubs as solved once out of Edit Mode (without: 11 cm off)."""
    obj = _loaded(bpy, stream)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode='EDIT')
    arm = obj.data.edit_bones["mixamorig:LeftArm"]
    arm.head = (arm.head[0] + 0.1, arm.head[1], arm.head[2])
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    bpy.ops.object.mode_set(mode='OBJECT')
    _on_the_solve(bpy, installed, obj)


def _hidden(bpy, obj, how: str) -> None:
    """`obj` left out of the depsgraph as `how` says: disabled in viewports, in an excluded collection or in one
    disabled in viewports."""
    if how == "disabled":
        obj.hide_viewport = True
        return
    collection = bpy.data.collections.new("Characters")
    bpy.context.scene.collection.children.link(collection)
    bpy.context.scene.collection.objects.unlink(obj)
    collection.objects.link(obj)
    if how == "excluded":
        bpy.context.view_layer.layer_collection.children["Characters"].exclude = True
    else:
        collection.hide_viewport = True


@pytest.mark.parametrize("how", ["disabled", "excluded", "collection_disabled"])
def test_a_hidden_armature_is_measured_as_baked_and_left_hidden(bpy, installed, stream, how):
    """An armature the depsgraph leaves out is measured as baked (hands and head on the devices, no warning;
    without: 17 and 15 cm off, one pose for every frame) and is left as hidden as it was."""
    obj = _solved(bpy, stream)
    _hidden(bpy, obj, how)
    state = (obj.hide_viewport, [c.name for c in obj.users_collection], obj.visible_get())
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    quality = bpy.context.scene.vr_avatar.solve.baked_quality
    assert quality.hand_cm < 1.0 and quality.head_cm < 2.0 and not quality.warnings
    assert (obj.hide_viewport, [c.name for c in obj.users_collection], obj.visible_get()) == state


def _constrained(obj) -> None:
    """A Limit Rotation on the left forearm, a driver on the neck's rotation and a muted constraint on the spine."""
    limit = obj.pose.bones["mixamorig:LeftForeArm"].constraints.new('LIMIT_ROTATION')
    limit.use_limit_x = True
    obj.pose.bones["mixamorig:Spine"].constraints.new('LIMIT_ROTATION').mute = True
    obj.pose.bones["mixamorig:Neck"].driver_add("rotation_quaternion", 1).driver.expression = "0.1"


def test_constraints_and_drivers_on_baked_bones_are_named_in_one_warning(bpy, installed, stream):
    """The bake still keys the solve, and one warning names the bones whose unmuted constraints or drivers pose them
    otherwise (without: no line names them)."""
    obj = _solved(bpy, stream, setup=_constrained)
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    named = [w.text for w in bpy.context.scene.vr_avatar.solve.baked_quality.warnings if "constraints" in w.text]
    assert named == ["constraints on 'mixamorig:LeftForeArm' and drivers on 'mixamorig:Neck' pose those bones "
                     "otherwise than the baked keys: mute them to see the bake as solved"]
    cache = installed.solve_cache.load(bpy.context.scene)
    forearm = cache.bones.index("mixamorig:LeftForeArm")
    keyed = installed.keyframes.fcurve_values(obj.animation_data.action, obj,
                                              'pose.bones["mixamorig:LeftForeArm"].rotation_quaternion', 4)
    np.testing.assert_allclose(keyed, cache.basis[:, forearm], atol=1e-6)
