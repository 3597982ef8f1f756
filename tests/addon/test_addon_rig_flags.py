"""Rigs whose bone or object settings change how Blender poses them, in the real bpy: bones with Local Location off,
a hips bone connected to a root bone below it, an FBX rig (+Y up armature space) smoothed with Grounding, Smooth
Solve after an Object bake, and an armature object scaled unevenly."""
import numpy as np
import pytest

from test_addon_solve import MIXAMO, RIGIFY
from test_addon_user_data import stream as short_stream
from test_addon_user_scenes import _heads_at, _loaded

stream = short_stream
"""The fixture walk's first seconds as a stream file (test_addon_user_data's fixture)."""
FRAMES = [1, 20, 45, 60]


def _cached(installed, bpy):
    """The scene's cached solve."""
    return installed.solve_cache.load(bpy.context.scene)


def _bake(bpy, mode: str) -> None:
    """A bake with `mode`'s root motion, from the placement the solve was made at."""
    bpy.context.scene.vr_avatar.bake.root_motion = mode
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}


def _lands_as_solved(bpy, installed, obj, names=None, atol: float = 1e-4, label: str = "") -> None:
    """The bones `names` (every cached one where None) stand where the cached solve put them, at FRAMES."""
    cache = _cached(installed, bpy)
    names = list(cache.bones) if names is None else names
    columns = [cache.bones.index(name) for name in names]
    expected = cache.positions[[cache.frame_index(frame) for frame in FRAMES]][:, columns]
    np.testing.assert_allclose(_heads_at(bpy, obj, names, FRAMES), expected, atol=atol, err_msg=label)


LOCAL_LOCATION_OFF = ("mixamorig:Hips", "mixamorig:LeftUpLeg", "mixamorig:RightFoot", "mixamorig:Spine1")
"""Bones with Local Location off (their pose location along their parent's axes, a root's along the armature's)."""


def _local_location_off(obj) -> None:
    """LOCAL_LOCATION_OFF's bones (and the root, where there is one) with Local Location off; the foot's also with
    Inherit Rotation off, the Spine1's with Inherit Scale None."""
    for name in LOCAL_LOCATION_OFF + ("root",):
        if name in obj.data.bones:
            obj.data.bones[name].use_local_location = False
    obj.data.bones["mixamorig:RightFoot"].use_inherit_rotation = False
    obj.data.bones["mixamorig:Spine1"].inherit_scale = 'NONE'


def test_bones_with_local_location_off_land_where_the_solve_put_them(bpy, installed, stream):
    """Scrubbed and baked with the travel on the hips and on the object: every bone head where the solve put it, to
    0.1 mm (the hips, whose location carries the travel, landed up to 2.9 m off before)."""
    obj = _loaded(bpy, stream, setup=_local_location_off)
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    _lands_as_solved(bpy, installed, obj, label="scrubbed")
    for mode in ("HIPS", "OBJECT"):
        _bake(bpy, mode)
        _lands_as_solved(bpy, installed, obj, label=mode)
    assert not any(obj.data.bones[name].use_local_location for name in LOCAL_LOCATION_OFF)


def _rigify_local_location_off(obj) -> None:
    """The root bone and the hips with Local Location off."""
    for name in ("root", "DEF-spine"):
        obj.data.bones[name].use_local_location = False


def test_a_root_bone_with_local_location_off_carries_the_travel(bpy, installed, stream):
    """A root bone above the hips, both with Local Location off: Root Bone root motion puts every bone but the root
    where the solve put it."""
    obj = _loaded(bpy, stream, RIGIFY, extra_root=True, setup=_rigify_local_location_off)
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    body = [bone.name for bone in obj.data.bones if bone.name != "root"]
    for mode in ("HIPS", "ROOT_BONE"):
        _bake(bpy, mode)
        _lands_as_solved(bpy, installed, obj, body, label=mode)


def _hips_connected_to_root(bpy, obj) -> None:
    """The root bone drawn from the floor up to the hips, the hips connected to it (a root extruded to the pelvis)."""
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode='EDIT')
    bones = obj.data.edit_bones
    bones["root"].tail = bones["DEF-spine"].head
    bones["DEF-spine"].parent, bones["DEF-spine"].use_connect = bones["root"], True
    bpy.ops.object.mode_set(mode='OBJECT')


def test_a_hips_bone_connected_to_a_root_bone_below_it_travels_with_it(bpy, installed, stream):
    """Blender holds a connected bone's head at its parent's tail and ignores its location: the root bone below the
    hips carries their move, so scrubbed and baked in every mode every bone but the root stands where the solve put
    it, to 0.1 mm (the hips' travel was lost before, 2.9 m; Root Bone lost their bob, 4.7 cm), and the hips stay
    connected."""
    obj = _loaded(bpy, stream, RIGIFY, extra_root=True, setup=lambda rig: _hips_connected_to_root(bpy, rig))
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    body = [bone.name for bone in obj.data.bones if bone.name != "root"]
    _lands_as_solved(bpy, installed, obj, body, label="scrubbed")
    placement = obj.matrix_world.copy()
    for mode in ("HIPS", "ROOT_BONE", "OBJECT"):
        obj.animation_data_create().action, obj.matrix_world = None, placement
        _bake(bpy, mode)
        _lands_as_solved(bpy, installed, obj, body, label=mode)
    bone = obj.data.bones["DEF-spine"]
    assert bone.use_connect and bone.parent.name == "root"


def _chains_connected(bpy, obj) -> None:
    """Every bone whose head is its parent's tail connected to it, as most characters are."""
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode='EDIT')
    for bone in obj.data.edit_bones:
        if bone.parent is not None and (bone.head - bone.parent.tail).length < 1e-6:
            bone.use_connect = True
    bpy.ops.object.mode_set(mode='OBJECT')


def test_connected_chains_keep_every_bone_where_the_solve_put_it(bpy, installed, stream):
    """Connected spines, arms and legs (the solve keeps their lengths): nothing is moved off its place to hold a
    connected bone, every bone lands where the solve put it and no connected bone is keyed a location."""
    obj = _loaded(bpy, stream, setup=lambda rig: _chains_connected(bpy, rig))
    assert sum(bone.use_connect for bone in obj.data.bones) > 10
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    _lands_as_solved(bpy, installed, obj, label="scrubbed")
    cache = _cached(installed, bpy)
    connected = [j for j, name in enumerate(cache.bones) if obj.data.bones[name].use_connect]
    assert not cache.locations[:, connected].any()


def test_grounding_on_an_fbx_rig_raises_the_ankles_along_the_worlds_up(bpy, installed, stream):
    """Smooth Solve's Grounding on a rig whose armature space is +Y up (the object turned 90° about X, scaled 0.01):
    no ankle lower than solved, scrubbed as the cache says (it sank up to 5.8 cm before, raised along armature Z,
    which is horizontal there)."""
    obj = _loaded(bpy, stream, fbx_units=True)
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    before = _cached(installed, bpy)
    assert bpy.ops.vr_avatar.clean_solve(foot_lock='GROUNDING', body_cutoff_hz=0.3, arms_cutoff_hz=0.3,
                                         legs_cutoff_hz=0.3) == {'FINISHED'}
    after = _cached(installed, bpy)
    ankles = [before.bones.index(MIXAMO[f"{side}_foot"]) for side in "lr"]
    assert (after.positions[:, ankles, 1] >= before.positions[:, ankles, 1] - 1e-4).all()
    assert np.abs(after.positions[:, ankles] - before.positions[:, ankles]).max() > 0.005  # the smoothing moved them
    _lands_as_solved(bpy, installed, obj, [before.bones[j] for j in ankles], label="scrubbed")


def test_smooth_solve_after_an_object_bake_does_not_depend_on_the_frame(bpy, installed, stream):
    """After an Object root-motion bake moves the armature object, Smooth Solve starts from where that bake was keyed
    from, as Solve and Bake do: the same smoothed solve on the first frame and the last (3 m apart before)."""
    _loaded(bpy, stream)
    scene = bpy.context.scene
    smoothed = []
    for frame in (1, 60):
        assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
        if not smoothed:
            _bake(bpy, 'OBJECT')
        scene.frame_set(frame)
        assert bpy.ops.vr_avatar.clean_solve(foot_lock='AUTO') == {'FINISHED'}
        smoothed.append(_cached(installed, bpy))
    first, last = smoothed
    np.testing.assert_allclose(last.basis, first.basis, atol=1e-6)
    np.testing.assert_allclose(last.locations, first.locations, atol=1e-6)
    np.testing.assert_allclose(last.positions, first.positions, atol=1e-6)


def test_object_root_motion_refuses_an_armature_scaled_unevenly_across_the_floor(bpy, installed, stream):
    """Scaled (1, 1.5, 1) and turned about Z, the object cannot turn about the vertical unsheared (its bones landed
    8-22 cm off before): the Object bake is refused in one line naming it, nothing made; scaled (1.2, 1.2, 0.8) it
    turns unsheared and bakes where the solve put it."""
    obj = _loaded(bpy, stream)
    obj.scale, obj.rotation_euler = (1.0, 1.5, 1.0), (0.0, 0.0, 0.7)
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    actions, placement = set(bpy.data.actions), obj.matrix_world.copy()
    bpy.context.scene.vr_avatar.bake.root_motion = 'OBJECT'
    with pytest.raises(RuntimeError, match=r"^Error: Armature 'Avatar' is scaled unevenly across the floor "
                                           r"\(1, 1\.5, 1\): Object root motion would shear it as it turns; choose "
                                           r"another mode or apply the scale\n?$"):
        bpy.ops.vr_avatar.bake_action()
    assert set(bpy.data.actions) == actions and obj.matrix_world == placement
    assert obj.animation_data is None or obj.animation_data.action is None
    obj.scale = (1.2, 1.2, 0.8)
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    _bake(bpy, 'OBJECT')
    _lands_as_solved(bpy, installed, obj, label="OBJECT")
