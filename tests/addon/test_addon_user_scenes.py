"""Scenes and rigs as users have them, in the real bpy: a scene whose range is moved after the stream was loaded
(studios start at 1001), a rig imported from FBX (armature space +Y up under an object turned 90° about X and
scaled 0.01), bones that do not inherit their parent's rotation or scale."""
import numpy as np
import pytest

from conftest import FIXTURE_WALK_1, FIXTURE_WALK_2
from test_addon_solve import MIXAMO, _world_heads, build_rig

from core.devices.simulate import simulate_stream
from core.files.bvh import read_bvh
from core.files.stream import write_stream

SECONDS = 2.0


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    """A short stream simulated from the fixture walk."""
    clip = read_bvh(FIXTURE_WALK_2)
    path = tmp_path_factory.mktemp("stream") / "walk.csv"
    write_stream(path, simulate_stream(clip[: int(SECONDS * clip.fps)]).stream)
    return path


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
