"""Motion capture and characters from other studios and tools in the Motion Library, Batch Bake and Stitching: the
real captures of ../shared/data/other (100STYLE: Xsens names, 60 fps, cm; Perfume: MotionBuilder names, 40 fps, cm)
cut short, resampled and passed through Blender's own exporters in a temporary folder."""
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED

from core.files.bvh import read_bvh, write_bvh
from core.matching.pose_database import PoseDatabase, global_transforms

OTHER = SHARED / "data" / "other"
STYLE_WALK = OTHER / "100style" / "angry_reference.bvh"
"""100STYLE's angry walk: Xsens names, 60 fps, centimetres."""
DANCE = OTHER / "perfume" / "A_test.bvh"
"""Perfume's dance take A: MotionBuilder names, 40 fps, centimetres."""


def _clip(tmp_path: Path, source: Path, seconds: float, fps: float | None = None, name: str | None = None) -> Path:
    """The first `seconds` of a shared capture, resampled to `fps`, written as a centimetre BVH in tmp_path."""
    motion = read_bvh(source)
    motion = motion[: int(seconds * motion.fps) + 1]
    motion = motion.resampled(fps) if fps else motion
    path = tmp_path / f"{name or source.stem}.bvh"
    write_bvh(path, motion, scale=100.0)
    return path


def _import(bpy, path: Path) -> list:
    before = set(bpy.data.objects)
    assert bpy.ops.vr_avatar.import_mocap(filepath=str(path)) == {'FINISHED'}
    return [obj for obj in set(bpy.data.objects) - before if obj.type == 'ARMATURE']


def _played_seconds(bpy, installed, obj) -> float:
    """How long the armature's action plays in the scene, read as the library reads it."""
    motion = installed.armature.action_motion(bpy.context.scene, obj)
    return (len(motion) - 1) / motion.fps


# --- frame rates -----------------------------------------------------------------------------


@pytest.mark.parametrize("fps", [24.0, 120.0])
def test_a_bvh_at_another_rate_than_the_scenes_plays_at_its_own_speed(bpy, installed, empty_scene, tmp_path, fps):
    first = _clip(tmp_path, STYLE_WALK, 2.0)
    second = _clip(tmp_path, DANCE, 3.0, fps)
    _import(bpy, first)  # the scene takes its 60 fps, and now holds an animation
    (dance,) = _import(bpy, second)
    assert empty_scene.render.fps == 60
    assert _played_seconds(bpy, installed, dance) == pytest.approx(3.0, abs=1.5 / fps)


def _exported(bpy, bvh: Path, extension: str, **options) -> Path:
    """The BVH imported into a fresh scene and written by Blender's own FBX or glTF exporter; the scene is then left
    empty again."""
    bpy.ops.wm.read_homefile(use_empty=True)
    (obj,) = _import(bpy, bvh)
    scene = bpy.context.scene
    scene.frame_end = int(obj.animation_data.action.frame_range[1])  # the exporters bake the scene's range
    bpy.ops.object.select_all(action='DESELECT')
    obj.select_set(True)
    path = bvh.with_suffix(extension)
    if extension == ".fbx":
        bpy.ops.export_scene.fbx(filepath=str(path), use_selection=True, add_leaf_bones=False, **options)
    else:
        bpy.ops.export_scene.gltf(filepath=str(path), export_format='GLB', use_selection=True, **options)
    bpy.ops.wm.read_homefile(use_empty=True)
    return path


@pytest.mark.parametrize("extension", [".fbx", ".glb"])
def test_fbx_and_gltf_into_an_animated_scene_keep_its_rate_and_play_at_their_speed(bpy, installed, empty_scene,
                                                                                  tmp_path, extension):
    dance = _exported(bpy, _clip(tmp_path, DANCE, 3.0), extension)  # 40 fps
    _import(bpy, _clip(tmp_path, STYLE_WALK, 2.0))  # the scene takes its 60 fps, and now holds an animation
    scene = bpy.context.scene
    (imported,) = _import(bpy, dance)
    assert scene.render.fps / scene.render.fps_base == pytest.approx(60.0)
    assert _played_seconds(bpy, installed, imported) == pytest.approx(3.0, abs=1 / 40)
    if extension == ".fbx":  # retimed to the scene's rate, it starts where the importer put it (about frame 0: 1.5)
        assert imported.animation_data.action.frame_range[0] == pytest.approx(scene.frame_start, abs=1e-3)


# --- Build Database from FBX and glTF files ----------------------------------------------------


def _saved(bpy, tmp_path: Path) -> None:
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "library.blend"))


def _user_scene(bpy):
    """A user's scene: a 30 fps range of 1-100 at frame 7, a selected cube that is active, an unselected empty."""
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 30, 1, 100
    scene.frame_set(7)
    bpy.ops.mesh.primitive_cube_add()
    bpy.ops.object.empty_add()
    empty = bpy.context.object
    empty.select_set(False)
    cube = bpy.data.objects["Cube"]
    cube.select_set(True)
    bpy.context.view_layer.objects.active = cube
    return scene


def _scene_state(bpy) -> dict:
    scene = bpy.context.scene
    return {"fps": (scene.render.fps, scene.render.fps_base), "range": (scene.frame_start, scene.frame_end),
            "frame": scene.frame_current, "selected": sorted(o.name for o in bpy.context.selected_objects),
            "active": bpy.context.view_layer.objects.active.name, "mode": bpy.context.view_layer.objects.active.mode,
            "data": {name: len(getattr(bpy.data, name)) for name in ("objects", "armatures", "actions", "meshes",
                                                                      "collections", "materials")}}


def _folder(tmp_path: Path, name: str, files) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for file in files:
        (folder / file.name).symlink_to(file)
    return folder


def test_database_from_an_fbx_and_gltf_folder_reads_them_and_leaves_the_scene_as_it_was(bpy, installed, empty_scene,
                                                                                      tmp_path):
    clips = [_exported(bpy, _clip(tmp_path, DANCE, 2.0, name=f"dance_{i}"), extension)
             for i, extension in enumerate((".fbx", ".glb"))]
    scene = _user_scene(bpy)
    _saved(bpy, tmp_path)
    bpy.ops.object.mode_set(mode='EDIT')  # the user editing the cube: the imports need Object Mode, then it is back
    state = _scene_state(bpy)
    library = scene.vr_avatar.library
    library.mocap_path, library.locomotion_only = str(_folder(tmp_path, "mocap", clips)), False
    assert bpy.ops.vr_avatar.build_database() == {'FINISHED'}
    assert _scene_state(bpy) == state
    bpy.ops.object.mode_set(mode='OBJECT')

    database = PoseDatabase.load(tmp_path / "library.vr_avatar_db.npz")
    assert len(database.clip_names) == 2 and len(database) == pytest.approx(2 * 2.0 * database.fps, abs=4)
    _, positions = global_transforms(database)
    heights = positions[:, 1:, 1].max(axis=1) - positions[:, 1:, 1].min(axis=1)
    assert 1.3 < np.median(heights) < 1.6  # the dancer, upright, in metres


def test_database_from_a_gltf_with_several_animations_reads_each_once(bpy, installed, empty_scene, tmp_path):
    bpy.ops.wm.read_homefile(use_empty=True)
    (dancer,) = _import(bpy, _clip(tmp_path, DANCE, 2.0, name="dance_a"))
    (other,) = _import(bpy, _clip(tmp_path, OTHER / "perfume" / "B_test.bvh", 1.0, name="dance_b"))
    second = other.animation_data.action
    bpy.data.objects.remove(other)
    dancer.animation_data.nla_tracks.new().strips.new(second.name, 1, second)
    bpy.ops.object.select_all(action='DESELECT')
    dancer.select_set(True)
    path = tmp_path / "dances.glb"
    bpy.ops.export_scene.gltf(filepath=str(path), export_format='GLB', use_selection=True,
                              export_animation_mode='ACTIONS')
    bpy.ops.wm.read_homefile(use_empty=True)
    _saved(bpy, tmp_path)
    library = bpy.context.scene.vr_avatar.library
    library.mocap_path = str(path)
    assert bpy.ops.vr_avatar.build_database() == {'FINISHED'}
    database = PoseDatabase.load(tmp_path / "library.vr_avatar_db.npz")
    assert sorted(database.clip_names) == ["dance_a", "dance_b"]
    assert len(database) == pytest.approx(3.0 * database.fps, abs=4)


@pytest.mark.parametrize("content, message", [
    ("no armature", r"prop\.fbx: no animated armature in this file"),
    ("not a file", r"prop\.fbx: .*ASCII FBX files are not supported"),
])
def test_a_folder_with_an_fbx_it_cannot_use_is_one_error_and_leaves_nothing(bpy, installed, empty_scene, tmp_path,
                                                                           content, message):
    dance = _clip(tmp_path, DANCE, 2.0)
    bpy.ops.wm.read_homefile(use_empty=True)
    prop = tmp_path / "prop.fbx"
    if content == "no armature":
        bpy.ops.mesh.primitive_cube_add()
        bpy.ops.export_scene.fbx(filepath=str(prop))
        bpy.ops.wm.read_homefile(use_empty=True)
    else:
        prop.write_bytes(b"garbage" * 10)
    _user_scene(bpy)
    _saved(bpy, tmp_path)
    state = _scene_state(bpy)
    library = bpy.context.scene.vr_avatar.library
    library.mocap_path, library.locomotion_only = str(_folder(tmp_path, "mocap", [dance, prop])), False
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.vr_avatar.build_database()
    assert _scene_state(bpy) == state
    assert not (tmp_path / "library.vr_avatar_db.npz").exists() and not len(library.databases)


def test_a_clip_whose_importer_lists_the_joints_in_another_order_pools_with_the_others(tmp_path):
    """Blender 5's glTF importer lists a bone's children in another order than its FBX importer does."""
    from core.anim.motion import Motion
    from core.anim.skeleton import Skeleton
    from core.matching.pose_database import build_database
    dance = read_bvh(_clip(tmp_path, DANCE, 2.0))
    skeleton = dance.skeleton
    order = [0] + sorted(range(1, len(skeleton)), key=lambda j: (len(skeleton.names[j]), j))
    order = sorted(order, key=lambda j: (j != 0, _depth(skeleton.parents, j)))
    parents = [order.index(skeleton.parents[j]) if skeleton.parents[j] >= 0 else -1 for j in order]
    listed = Skeleton(tuple(skeleton.names[j] for j in order), np.array(parents), skeleton.offsets[order],
                      tuple((order.index(j), offset) for j, offset in skeleton.end_sites))
    reordered = Motion(listed, dance.rotations[:, order], dance.positions[:, order], dance.fps, "reordered")
    assert listed.names != skeleton.names
    database = build_database([dance, reordered])
    half = len(database) // 2
    np.testing.assert_allclose(database.rotations[half:], database.rotations[:half], atol=1e-6)


def _depth(parents, joint: int) -> int:
    return 0 if parents[joint] < 0 else 1 + _depth(parents, parents[joint])


# --- Build Database from selected actions ------------------------------------------------------


def test_database_from_an_action_in_centimetres_is_refused_naming_it(bpy, installed, empty_scene, tmp_path):
    """Blender's own BVH importer at its default scale keeps a centimetre capture's numbers: a 142 m dancer."""
    bpy.ops.import_anim.bvh(filepath=str(_clip(tmp_path, DANCE, 2.0)))
    giant = bpy.context.object
    giant.select_set(True)
    _saved(bpy, tmp_path)
    with pytest.raises(RuntimeError, match=r"Armature 'A_test'.* 1\d\d m tall.*centimetres.*0\.01"):
        bpy.ops.vr_avatar.build_database(source='ACTIONS')
    assert not (tmp_path / "library.vr_avatar_db.npz").exists()
    giant.scale = (0.01, 0.01, 0.01)
    assert bpy.ops.vr_avatar.build_database(source='ACTIONS') == {'FINISHED'}


def test_an_action_played_by_two_selected_armatures_is_one_clip(bpy, installed, empty_scene, tmp_path):
    (dancer,) = _import(bpy, _clip(tmp_path, DANCE, 2.0))
    dancer.select_set(True)
    bpy.ops.object.duplicate(linked=True)
    copy = bpy.context.object
    assert copy is not dancer and copy.animation_data.action == dancer.animation_data.action
    dancer.select_set(True)
    _saved(bpy, tmp_path)
    assert bpy.ops.vr_avatar.build_database(source='ACTIONS') == {'FINISHED'}
    assert len(PoseDatabase.load(tmp_path / "library.vr_avatar_db.npz").clip_names) == 1


def test_stitching_actions_in_centimetres_is_refused_naming_the_armature(bpy, installed, empty_scene, tmp_path):
    """Stitch reads the actions as Build Database does: a centimetre capture imported at scale 1 (a 142 m dancer) is
    refused in one line naming it, nothing made; scaled to metres, it stitches."""
    armatures = []
    for name in ("first", "second"):
        bpy.ops.import_anim.bvh(filepath=str(_clip(tmp_path, DANCE, 2.0, name=name)))
        armatures.append(bpy.context.object)
    for obj in armatures:
        obj.select_set(True)
    actions = len(bpy.data.actions)
    with pytest.raises(RuntimeError, match=r"Armature 'first'.* 1\d\d m tall.*centimetres.*0\.01"):
        bpy.ops.vr_avatar.stitch_actions(method='concat')
    assert len(bpy.data.actions) == actions
    for obj in armatures:
        obj.scale = (0.01, 0.01, 0.01)
    assert bpy.ops.vr_avatar.stitch_actions(method='concat') == {'FINISHED'}

