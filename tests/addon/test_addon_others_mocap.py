"""Motion capture and characters from other studios and tools in the Motion Library, Batch Bake and Stitching: the
real captures of ../shared/data/other (100STYLE: Xsens names, 60 fps, cm; Perfume: MotionBuilder names, 40 fps, cm)
cut short, resampled and passed through Blender's own exporters in a temporary folder."""
from pathlib import Path

import pytest

from conftest import SHARED

from core.files.bvh import read_bvh, write_bvh

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
