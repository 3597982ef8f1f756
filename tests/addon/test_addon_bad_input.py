"""Bad input in the add-on (the real bpy): each operator reports one error naming the file and leaves nothing
half-made; a database rebuilt under a file-size limit leaves the previous one intact."""
import re
import resource
import signal
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURE_WALK_1 as WALK_1

from core.files.bvh import read_bvh
from core.matching.pose_database import PoseDatabase
from core.devices.simulate import simulate_stream
from core.files.stream import write_stream


def _data_counts(bpy):
    return {name: len(getattr(bpy.data, name)) for name in ("objects", "armatures", "actions", "collections")}


def _bad_bvh(tmp_path: Path, case: str) -> Path:
    text = WALK_1.read_bytes()
    if case == "frame time":
        text = re.sub(rb"Frame Time:\s*[0-9.]+", b"Frame Time: 1e-300", text)
    elif case == "repeated joint":
        text = text.replace(b"JOINT UpperLeg_R", b"JOINT UpperLeg_L")
    else:  # far longer than its one declared frame
        text = text[:text.index(b"Frames:")] + b"Frames: 1\n" + text[text.index(b"Frame Time"):]
    path = tmp_path / f"dataset-1_walk_{case.replace(' ', '-')}_001.bvh"  # a locomotion clip's name
    path.write_bytes(text)
    return path


@pytest.mark.parametrize("operator", ["import_bvh", "import_mocap"])
@pytest.mark.parametrize("case, message", [("frame time", "not a plausible frame time"),
                                           ("repeated joint", "joint name 'UpperLeg_L' repeats"),
                                           ("far too long", "far more than 1 frames")])
def test_bad_bvh_imports_report_the_file_and_create_nothing(bpy, installed, empty_scene, tmp_path, operator, case,
                                                            message):
    path = _bad_bvh(tmp_path, case)
    assert b"Frame Time" in path.read_bytes()
    counts = _data_counts(bpy)
    with pytest.raises(RuntimeError, match=f"{path.name}:[0-9]+: .*{message}"):
        getattr(bpy.ops.vr_avatar, operator)(filepath=str(path))
    assert _data_counts(bpy) == counts


def test_build_database_names_a_bad_file_and_writes_nothing(bpy, installed, empty_scene, tmp_path):
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    folder = tmp_path / "mocap"
    folder.mkdir()
    _bad_bvh(folder, "repeated joint")
    bpy.context.scene.vr_avatar.library.mocap_path = str(folder)
    with pytest.raises(RuntimeError, match="repeated-joint_001.bvh:[0-9]+: joint name"):
        bpy.ops.vr_avatar.build_database()
    assert not (tmp_path / "scene.vr_avatar_db.npz").exists() and len(bpy.context.scene.vr_avatar.library.databases) == 0


def test_a_database_rebuilt_under_a_file_size_limit_leaves_the_previous_one_intact(bpy, installed, empty_scene,
                                                                                   tmp_path):
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    library = bpy.context.scene.vr_avatar.library
    library.mocap_path = str(WALK_1)
    assert bpy.ops.vr_avatar.build_database() == {'FINISHED'}
    path = tmp_path / "scene.vr_avatar_db.npz"
    before = path.read_bytes()
    library.mirror = True  # a bigger database, which does not fit under the limit
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) // 2, hard))
    try:
        with pytest.raises(RuntimeError, match=f"cannot write the motion database: {path}: cannot write: File too large; "
                                               "the previous file is unchanged"):
            bpy.ops.vr_avatar.build_database()
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
    assert path.read_bytes() == before and len(PoseDatabase.load(path).clip_names) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scene.blend", "scene.vr_avatar_db.npz"]


@pytest.mark.parametrize("operator", ["map_bones", "solve_stream"])
def test_an_armature_without_bones_is_refused(bpy, installed, empty_scene, operator):
    obj = bpy.data.objects.new("Empty Rig", bpy.data.armatures.new("Empty Rig"))
    empty_scene.collection.objects.link(obj)
    empty_scene.vr_avatar.target_armature = obj
    with pytest.raises(RuntimeError, match="Armature 'Empty Rig' has no bones"):
        getattr(bpy.ops.vr_avatar, operator)()
    assert len(empty_scene.vr_avatar.bone_map) == 0


def _boneless_with_action(bpy, scene, name):
    obj = bpy.data.objects.new(name, bpy.data.armatures.new(name))
    scene.collection.objects.link(obj)
    obj.animation_data_create().action = bpy.data.actions.new(f"{name} Action")
    obj.select_set(True)
    return obj


@pytest.mark.parametrize("operator", ["build_database", "stitch_actions"])
def test_the_action_of_an_armature_without_bones_is_one_line(bpy, installed, empty_scene, tmp_path, operator):
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    scene = bpy.context.scene
    first = _boneless_with_action(bpy, scene, "Empty A")
    _boneless_with_action(bpy, scene, "Empty B")
    bpy.context.view_layer.objects.active = first
    before = _data_counts(bpy)
    options = {"source": 'ACTIONS'} if operator == "build_database" else {}
    with pytest.raises(RuntimeError, match=r"^Error: Armature 'Empty [AB]' has no bones: its action 'Empty [AB] "
                                           r"Action' moves nothing\n?$"):
        getattr(bpy.ops.vr_avatar, operator)(**options)
    assert _data_counts(bpy) == before and not list(tmp_path.glob("*.npz"))


@pytest.mark.parametrize("content, words", [(b'{"hips": "Hips", "flurb": "Spine"}', "'flurb' not among the canonical"),
                                            (b"[" * 5000, "preset.json: cannot read the joint mapping"),
                                            (b'{"hips": "Nope"}', "none of its bones is in")])
def test_a_bad_mapping_preset_is_one_line_and_the_mapping_stays(bpy, installed, empty_scene, tmp_path, content,
                                                                  words):
    bpy.ops.vr_avatar.import_bvh(filepath=str(WALK_1))
    settings = bpy.context.scene.vr_avatar
    settings.target_armature = bpy.context.object
    bpy.ops.vr_avatar.map_bones()
    mapped = [(item.joint, item.bone) for item in settings.bone_map]
    path = tmp_path / "preset.json"
    path.write_bytes(content)
    with pytest.raises(RuntimeError, match=re.escape(words)):
        bpy.ops.vr_avatar.load_mapping_preset(filepath=str(path))
    assert [(item.joint, item.bone) for item in settings.bone_map] == mapped


@pytest.fixture(scope="module")
def walk_stream():
    return simulate_stream(read_bvh(WALK_1)[:60]).stream


def test_load_stream_refuses_times_in_milliseconds_and_creates_nothing(bpy, installed, empty_scene, tmp_path,
                                                                       walk_stream):
    walk_stream.times = walk_stream.times * 1000.0
    path = tmp_path / "milliseconds.csv"
    write_stream(path, walk_stream)
    counts = _data_counts(bpy)
    with pytest.raises(RuntimeError, match="Cannot load stream milliseconds.csv: .*look like milliseconds"):
        bpy.ops.vr_avatar.load_stream(filepath=str(path))
    assert _data_counts(bpy) == counts
    walk_stream.times = walk_stream.times / 1000.0


def test_load_stream_accepts_a_byte_order_mark_and_warns_of_absurd_samples(bpy, installed, empty_scene, tmp_path,
                                                                           walk_stream):
    positions = walk_stream.positions.copy()
    positions[10, 1] = 1e300
    path = tmp_path / "absurd.csv"
    write_stream(path, type(walk_stream)(walk_stream.times, positions, walk_stream.rotations, walk_stream.tracked))
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert bpy.ops.vr_avatar.load_stream(filepath=str(path)) == {'FINISHED'}
    left = empty_scene.vr_avatar.stream.left
    keys = np.array([p.co[1] for c in left.animation_data.action.layers[0].strips[0].channelbags[0].fcurves
                     for p in c.keyframe_points])
    assert np.isfinite(keys).all() and np.abs(keys).max() < 10.0


@pytest.mark.parametrize("damage", ["not a zip", "zero quaternion"])
def test_solve_names_a_damaged_database_and_makes_no_cache(bpy, installed, empty_scene, tmp_path, walk_stream, damage):
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    scene = bpy.context.scene
    bpy.ops.vr_avatar.import_bvh(filepath=str(WALK_1))
    scene.vr_avatar.target_armature = bpy.context.object
    write_stream(tmp_path / "walk.csv", walk_stream)
    bpy.ops.vr_avatar.load_stream(filepath=str(tmp_path / "walk.csv"))
    path = tmp_path / "damaged.npz"
    if damage == "not a zip":
        path.write_bytes(b"PK\x03\x04 not an archive")
    else:
        from core.matching.pose_database import build_database
        build_database([read_bvh(WALK_1)]).save(path)
        arrays = dict(np.load(path))
        arrays["rotations"][3, 2] = 0.0
        np.savez(path, **arrays)
    scene.vr_avatar.library.databases.add().path = str(path)
    scene.vr_avatar.solve.method = 'MM'
    with pytest.raises(RuntimeError, match=re.escape(str(path)) + ": (not a VR Avatar database|array 'rotations')"):
        bpy.ops.vr_avatar.solve_stream()
    assert not scene.vr_avatar.solve.has_cache
