"""Scenes and rigs as users have them, in the real bpy: a scene whose range is moved after the stream was loaded
(studios start at 1001), a rig imported from FBX (armature space +Y up under an object turned 90° about X and
scaled 0.01), bones that do not inherit their parent's rotation or scale, an armature renamed after its solve."""
import numpy as np
import pytest

from conftest import FIXTURE_WALK_1
from test_addon_solve import MIXAMO, RIGIFY, _world_heads, build_rig
from test_addon_user_data import SECONDS, stream as short_stream

stream = short_stream
"""The fixture walk's first seconds as a stream file (test_addon_user_data's fixture)."""


def _loaded(bpy, stream, names: dict = MIXAMO, extra_root: bool = False, fbx_units: bool = False, setup=None):
    """An empty 30 fps scene with the stream loaded and a rig named as `names` say mapped as the target
    (`setup(rig)` first): the rig."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 30, 1.0
    assert bpy.ops.vr_avatar.load_stream(filepath=str(stream)) == {'FINISHED'}
    obj = build_rig(bpy, FIXTURE_WALK_1, "Avatar", names, 0.9, 30.0, extra_root, seed=1, fbx_units=fbx_units)
    if setup is not None:
        setup(obj)
    scene.vr_avatar.target_armature = obj
    assert bpy.ops.vr_avatar.map_bones() == {'FINISHED'}
    return obj


def _heads_at(bpy, obj, names, frames) -> np.ndarray:
    """(frames, bones, 3) the bones' heads in the world at each scene frame."""
    heads = []
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        heads.append(_world_heads(bpy, obj, names))
    return np.array(heads)


def test_a_scene_started_at_1001_after_loading_keeps_the_avatar_with_its_stream_empties(bpy, installed, stream):
    """The stream loaded at frame 1, the scene's range then moved to start at 1001: the solve starts where the
    empties' keys start, so the avatar moves with them as it did before the range moved."""
    obj = _loaded(bpy, stream)
    scene = bpy.context.scene
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    names, frames = [bone.name for bone in obj.data.bones], [1, 20, 45]
    expected = _heads_at(bpy, obj, names, frames)
    scene.frame_start = 1001
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    assert installed.solve_cache.load(scene).frame_start == 1
    np.testing.assert_allclose(_heads_at(bpy, obj, names, frames), expected, atol=1e-4)
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    assert tuple(obj.animation_data.action.frame_range) == (1, int(SECONDS * 30))


def _in_place_travel(obj, installed) -> np.ndarray:
    """In Place's T at this frame in armature space: the property's x, y and heading are along the world's floor and
    about its vertical, in armature space turned upright (an FBX rig's: turned by its object's rotation)."""
    x, y, heading = obj[installed.root_motion.TRAVEL_PROPERTY]
    c, s = np.cos(heading), np.sin(heading)
    upright = np.eye(4)
    world = np.array(obj.matrix_world)
    upright[:3, :3] = world[:3, :3] / np.linalg.norm(world[:3, :3], axis=0)
    return upright.T @ np.array([[c, -s, 0.0, x], [s, c, 0.0, y], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]) @ upright


def test_root_motion_on_an_fbx_rig_travels_over_the_floor_and_turns_about_the_vertical(bpy, installed, stream):
    """A Rigify-named rig with a root bone as FBX imports it (armature space +Y up, the object turned 90° about X
    and scaled 0.01): In Place keeps the hips over their rest place, Object turns the object about the world's
    vertical alone, Root Bone keeps the root on the floor; every bone but the root lands where the hips' bake puts
    it."""
    obj = _loaded(bpy, stream, RIGIFY, extra_root=True, fbx_units=True)
    scene, settings = bpy.context.scene, bpy.context.scene.vr_avatar.bake
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    hips = {item.joint: item.bone for item in scene.vr_avatar.bone_map}["hips"]
    rest_hips = np.array(obj.data.bones[hips].head_local)
    body = [bone.name for bone in obj.data.bones if bone.name != "root"]
    placement, frames = obj.matrix_world.copy(), [1, 30, 60]
    found = {}
    for mode in ("HIPS", "IN_PLACE", "OBJECT", "ROOT_BONE"):
        obj.animation_data_create().action, obj.matrix_world = None, placement
        settings.root_motion = mode
        assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
        heads = []
        for frame in frames:
            scene.frame_set(frame)
            bpy.context.view_layer.update()
            world = np.array(obj.matrix_world)
            carried = _in_place_travel(obj, installed) if mode == "IN_PLACE" else np.eye(4)
            local = np.array([list(obj.pose.bones[name].head) + [1.0] for name in body])
            heads.append((local @ carried.T @ world.T)[:, :3])
            if mode == "IN_PLACE":  # over the rest place: armature X and Z are the floor's (cm)
                assert np.hypot(*(np.array(obj.pose.bones[hips].head) - rest_hips)[[0, 2]]) < 1.0
            if mode == "OBJECT":  # the armature's +Y still the world's up
                np.testing.assert_allclose(world[:3, 1] / np.linalg.norm(world[:3, 1]), [0.0, 0.0, 1.0], atol=1e-5)
            if mode == "ROOT_BONE":  # the root on the floor
                assert abs((world @ [*obj.pose.bones["root"].head, 1.0])[2]) < 1e-4
        found[mode] = np.array(heads)
    assert np.ptp(found["HIPS"][:, body.index(hips), :2], axis=0).max() > 0.3  # the walk goes somewhere
    for mode in ("IN_PLACE", "OBJECT", "ROOT_BONE"):
        np.testing.assert_allclose(found[mode], found["HIPS"], atol=1e-4, err_msg=mode)


INHERITING = {"mixamorig:LeftForeArm": (False, 'FULL'), "mixamorig:Neck": (False, 'FULL'),
              "mixamorig:RightForeArm": (False, 'NONE'), "mixamorig:RightLeg": (True, 'NONE'),
              "mixamorig:Spine": (True, 'AVERAGE')}
"""Bones that do not inherit their parent's rotation (Inherit Rotation off) or scale: (inherit rotation, inherit
scale)."""


def _not_inheriting(obj) -> None:
    """The bones of INHERITING set as it says."""
    for name, (rotation, scale) in INHERITING.items():
        bone = obj.data.bones[name]
        bone.use_inherit_rotation, bone.inherit_scale = rotation, scale


def test_bones_that_do_not_inherit_their_parents_rotation_or_scale_land_where_the_solve_put_them(bpy, installed,
                                                                                                   stream):
    """Scrubbed, baked, and baked with the travel on the object: every bone head where the solve put it, to 1 mm (the
    avatar is sized to the user by a scale the hinged bones do not all inherit)."""
    obj = _loaded(bpy, stream, setup=_not_inheriting)
    scene = bpy.context.scene
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    cache = installed.solve_cache.load(scene)
    frames = [1, 20, 45]
    expected = cache.positions[[cache.frame_index(frame) for frame in frames]]
    np.testing.assert_allclose(_heads_at(bpy, obj, cache.bones, frames), expected, atol=1e-3)
    for mode in ("HIPS", "OBJECT"):
        scene.vr_avatar.bake.root_motion = mode
        assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
        np.testing.assert_allclose(_heads_at(bpy, obj, cache.bones, frames), expected, atol=1e-3, err_msg=mode)


def test_an_armature_renamed_after_its_solve_still_scrubs_and_bakes_after_a_reload(bpy, installed, stream, tmp_path):
    """Renamed after the solve, saved and reloaded: scrubbing still poses it as solved, and the bake goes onto it under
    its new name; deleted, the bake is refused in one line."""
    obj = _loaded(bpy, stream)
    scene = bpy.context.scene
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    obj.name = "Hero"
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "renamed.blend"))
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "renamed.blend"))
    scene, obj = bpy.context.scene, bpy.data.objects["Hero"]
    cache = installed.solve_cache.load(scene)
    frames = [1, 20, 45]
    expected = cache.positions[[cache.frame_index(frame) for frame in frames]]
    np.testing.assert_allclose(_heads_at(bpy, obj, cache.bones, frames), expected, atol=1e-3)
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    assert obj.animation_data.action.name == "Hero VR Avatar"
    bpy.data.objects.remove(obj)
    with pytest.raises(RuntimeError, match="The cached solve is for armature '.*', which is gone: solve again"):
        bpy.ops.vr_avatar.bake_action()


def test_a_mapping_edited_by_hand_follows_its_armature_through_a_rename(bpy, installed, stream, tmp_path):
    """A row of the bone mapping cleared by hand, the armature then renamed (and the file saved and reloaded): the
    solve and the bake use the edited mapping, not a new automatic one (the mapping knew its armature by name
    only, and a rename made the next solve map it anew)."""
    obj = _loaded(bpy, stream)
    settings = bpy.context.scene.vr_avatar
    row = next(item for item in settings.bone_map if item.joint == "chest")
    assert row.bone
    row.bone = ""
    obj.name = "Hero"
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "renamed.blend"))
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "renamed.blend"))
    settings = bpy.context.scene.vr_avatar
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    mapped = {item.joint: item.bone for item in settings.bone_map}
    assert mapped["chest"] == "" and mapped["hips"] and installed.bone_map.mapped_armature(settings) == "Hero"
