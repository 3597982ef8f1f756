"""Motion library in Blender: mocap imports into armatures and actions, motion databases beside the .blend."""
import os
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURE_WALK_1, FIXTURE_WALK_2, TRUNCATED_BVH, WALK_1 as BANDAI_WALK

from core.files.bvh import read_bvh, write_bvh
from core.config import DatabaseConfig
from core.anim.motion import forward_kinematics
from core.matching.pose_database import PoseDatabase, build_database, global_transforms

WALK_1 = FIXTURE_WALK_1
"""The fixture walk of tests/data (stand, walk, turn left, stop)."""
LOCOMOTION = [FIXTURE_WALK_1, FIXTURE_WALK_2]



def _data_counts(bpy):
    return {name: len(getattr(bpy.data, name)) for name in ("objects", "armatures", "actions", "collections",
                                                           "meshes", "materials")}


def _import_walk(bpy):
    before = set(bpy.data.objects)
    assert bpy.ops.vr_avatar.import_bvh(filepath=str(WALK_1)) == {'FINISHED'}
    (obj,) = set(bpy.data.objects) - before
    return obj


def _save(bpy, path: Path):
    bpy.ops.wm.save_as_mainfile(filepath=str(path))


def _mocap_folder(tmp_path: Path, files) -> Path:
    """A folder of links to motion capture files, named as they are or as `files` says ({name: file})."""
    folder = tmp_path / "mocap"
    folder.mkdir()
    named = files if isinstance(files, dict) else {file.name: file for file in files}
    for name, file in named.items():
        os.symlink(file, folder / name)
    return folder


# --- imports ---------------------------------------------------------------------------------


def test_imported_bvh_action_follows_core_forward_kinematics(bpy, installed, empty_scene):
    axes = installed.axes
    empty_scene.frame_end = 1000  # a longer range than the clip's is kept
    obj = _import_walk(bpy)
    motion = read_bvh(WALK_1)
    action = obj.animation_data.action
    assert action is not None and obj["vr_avatar_library_motion"]
    start = empty_scene.frame_start
    assert tuple(action.frame_range) == (start, start + len(motion) - 1)
    assert empty_scene.render.fps / empty_scene.render.fps_base == pytest.approx(motion.fps)
    assert empty_scene.frame_end == 1000

    _, positions = forward_kinematics(motion.skeleton.parents, motion.rotations, motion.positions)
    names = motion.skeleton.names
    for frame in (0, 1, 57, 120, len(motion) - 1):
        empty_scene.frame_set(start + frame)
        heads = np.array([obj.matrix_world @ obj.pose.bones[name].head for name in names])
        np.testing.assert_allclose(heads, axes.z_up_from_y_up(positions[frame]), atol=1e-3)


def test_import_bvh_keeps_an_existing_longer_range_and_grows_a_shorter_one(bpy, installed, empty_scene):
    empty_scene.frame_start, empty_scene.frame_end = 10, 20
    obj = _import_walk(bpy)
    assert empty_scene.frame_end == 10 + obj["vr_avatar_frames"] - 1
    assert obj.animation_data.action.frame_range[0] == 10


@pytest.mark.parametrize("extension", [".fbx", ".glb"])
def test_fbx_and_gltf_round_trip_through_blenders_exporters(bpy, installed, empty_scene, tmp_path, extension):
    obj = _import_walk(bpy)
    frames = obj["vr_avatar_frames"]
    empty_scene.frame_end = empty_scene.frame_start + frames - 1  # the exporters bake the scene's range
    bpy.ops.object.select_all(action='DESELECT')
    obj.select_set(True)
    path = tmp_path / f"walk{extension}"
    if extension == ".fbx":
        bpy.ops.export_scene.fbx(filepath=str(path), use_selection=True, bake_anim=True, add_leaf_bones=False,
                                 bake_anim_use_all_actions=False, bake_anim_use_nla_strips=False)
    else:
        bpy.ops.export_scene.gltf(filepath=str(path), export_format='GLB', use_selection=True,
                                  export_animations=True, export_animation_mode='ACTIVE_ACTIONS')
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.context.scene.render.fps = 30  # glTF keys seconds, placed on frames at the scene's rate

    before = set(bpy.data.objects)
    assert bpy.ops.vr_avatar.import_mocap(filepath=str(path)) == {'FINISHED'}
    armatures = [o for o in set(bpy.data.objects) - before if o.type == 'ARMATURE']
    assert len(armatures) == 1
    (imported,) = armatures
    assert imported["vr_avatar_library_motion"]
    start, end = imported.animation_data.action.frame_range
    assert round(end - start) + 1 == frames


@pytest.mark.parametrize("name, content, message", [
    ("notes.txt", b"hello", "unknown motion capture format '.txt'"),
    ("broken.fbx", b"garbage" * 10, "ASCII FBX files are not supported"),
    ("broken.glb", b"garbage" * 10, "Bad glTF"),
    ("truncated.bvh", TRUNCATED_BVH.encode(), "truncated.bvh:.*truncated motion"),
])
def test_import_mocap_reports_bad_files_and_creates_nothing(bpy, installed, empty_scene, tmp_path, name, content,
                                                            message):
    path = tmp_path / name
    path.write_bytes(content)
    counts = _data_counts(bpy)
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.vr_avatar.import_mocap(filepath=str(path))
    assert _data_counts(bpy) == counts


# --- databases -------------------------------------------------------------------------------


def test_database_from_files_is_saved_beside_the_blend_and_reloads_with_it(bpy, installed, empty_scene, tmp_path):
    blend = tmp_path / "scene.blend"
    _save(bpy, blend)
    library = bpy.context.scene.vr_avatar.library
    walk_2 = tmp_path / FIXTURE_WALK_2.name  # the second walk's smaller figure at the first's size: one skeleton
    write_bvh(walk_2, read_bvh(FIXTURE_WALK_2).scaled(1.0 / 0.92), scale=100.0)
    locomotion = [FIXTURE_WALK_1, walk_2]
    # Locomotion Only reads the activity from the file name: a walk named as a bow is left out.
    files = {**{f.name: f for f in locomotion}, "dataset-0_bow_active_001.bvh": FIXTURE_WALK_2}
    library.mocap_path = str(_mocap_folder(tmp_path, files))
    library.locomotion_only = True
    library.height_min, library.height_max = 0.8, 1.2
    assert bpy.ops.vr_avatar.build_database() == {'FINISHED'}

    (item,) = library.databases
    assert item.path == "//scene.vr_avatar_db.npz"
    path = tmp_path / "scene.vr_avatar_db.npz"
    database = PoseDatabase.load(path)
    expected = build_database([read_bvh(f) for f in sorted(locomotion, key=lambda f: f.name)],
                              DatabaseConfig(height_range=(0.8, 1.2)))
    assert len(database) == item.poses == len(expected)
    assert database.clip_names == expected.clip_names  # the bow clip is left out by Locomotion Only
    np.testing.assert_allclose(database.height_range, (0.8, 1.2), atol=1e-6)
    assert installed.scene_solver.database_paths(bpy.context.scene.vr_avatar) == [str(path)]

    library.height_max = 2.0  # a rebuild replaces the entry; 2 means no upper bound
    assert bpy.ops.vr_avatar.build_database() == {'FINISHED'}
    assert len(library.databases) == 1 and library.databases[0].height_max == 2.0
    assert PoseDatabase.load(path).height_range[1] == np.inf

    _save(bpy, blend)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    library = bpy.context.scene.vr_avatar.library
    assert [item.path for item in library.databases] == ["//scene.vr_avatar_db.npz"]
    assert installed.scene_solver.database_paths(bpy.context.scene.vr_avatar) == [str(path)]

    assert bpy.ops.vr_avatar.remove_database() == {'FINISHED'}
    assert len(library.databases) == 0 and path.exists()


def test_database_from_an_action_matches_the_one_from_its_file(bpy, installed, empty_scene, tmp_path):
    obj = _import_walk(bpy)
    _save(bpy, tmp_path / "action.blend")
    bpy.ops.object.select_all(action='DESELECT')
    obj.select_set(True)
    assert bpy.ops.vr_avatar.build_database(source='ACTIONS') == {'FINISHED'}

    database = PoseDatabase.load(tmp_path / "action.vr_avatar_db.npz")
    expected = build_database([read_bvh(WALK_1)])  # resampled from 30 to 60 fps by core
    assert len(database) == bpy.context.scene.vr_avatar.library.databases[0].poses == len(expected)
    assert database.skeleton.names == expected.skeleton.names
    np.testing.assert_allclose(database.skeleton.offsets, expected.skeleton.offsets, atol=1e-5)
    _, positions = global_transforms(database)
    _, expected_positions = global_transforms(expected)
    np.testing.assert_allclose(positions, expected_positions, atol=1e-3)
    np.testing.assert_array_equal(database.contacts, expected.contacts)


def test_build_database_needs_a_saved_blend(bpy, installed, empty_scene, tmp_path):
    bpy.context.scene.vr_avatar.library.mocap_path = str(WALK_1)
    with pytest.raises(RuntimeError, match="Save the .blend file first"):
        bpy.ops.vr_avatar.build_database()
    assert len(bpy.context.scene.vr_avatar.library.databases) == 0


@pytest.mark.parametrize("case, message", [
    ("empty", "no .bvh, .fbx, .glb, .gltf files in"),
    ("malformed", r"dataset-1_walk_broken_001.bvh:20: truncated motion"),
    ("nothing selected", "select the armatures"),
])
def test_build_database_errors_name_the_problem_and_write_nothing(bpy, installed, empty_scene, tmp_path, case,
                                                                  message):
    _save(bpy, tmp_path / "scene.blend")
    folder = _mocap_folder(tmp_path, LOCOMOTION[:2] if case == "malformed" else [])
    if case == "malformed":
        (folder / "dataset-1_walk_broken_001.bvh").write_text(TRUNCATED_BVH)
    library = bpy.context.scene.vr_avatar.library
    library.mocap_path = str(folder)
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.vr_avatar.build_database(source='ACTIONS' if case == "nothing selected" else 'FILES')
    assert len(library.databases) == 0
    assert not (tmp_path / "scene.vr_avatar_db.npz").exists()


def test_library_panel_list_and_operators_are_registered(bpy, installed):
    assert bpy.types.VIEW3D_PT_vr_avatar_library.is_registered
    assert bpy.types.VRAVATAR_UL_databases.is_registered
    for name in ("import_bvh", "import_mocap", "build_database", "remove_database"):
        assert hasattr(bpy.ops.vr_avatar, name)
    assert "databases" in type(bpy.context.scene.vr_avatar.library).bl_rna.properties


def test_import_mocap_without_an_animated_armature_removes_what_the_importer_made(bpy, installed, empty_scene,
                                                                                   tmp_path):
    bpy.ops.mesh.primitive_cube_add()
    path = tmp_path / "cube.fbx"
    bpy.ops.export_scene.fbx(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    counts = _data_counts(bpy)
    with pytest.raises(RuntimeError, match="cube.fbx: no animated armature in this file"):
        bpy.ops.vr_avatar.import_mocap(filepath=str(path))
    assert _data_counts(bpy) == counts


def test_a_skinned_character_imported_from_bvh_stands_its_mesh_where_its_bones_stand(bpy, installed, empty_scene,
                                                                                      tmp_path):
    """Bandai's BVH rest lays every bone along X, so the add-on stands such a character in the file's most upright
    frame; a mesh skinned to it must be read there too (read at the rest, its feet gave a floor 0.8 m up and the
    avatar was fitted 2.2 times too large): head height and floor as the bones' standing pose has them."""
    copy = tmp_path / "walk.bvh"  # as the project writes it (the demo's avatar): the skeleton's rest, along X
    write_bvh(copy, read_bvh(BANDAI_WALK))
    assert bpy.ops.vr_avatar.import_bvh(filepath=str(copy)) == {'FINISHED'}
    armature = next(o for o in bpy.data.objects if o.type == 'ARMATURE')
    vertices, groups = [], []
    for bone in armature.data.bones:  # a sliver along each bone below the root (which a body has none on), at rest
        if bone.parent is None:
            continue
        rest = np.array(bone.matrix_local)
        first = len(vertices)
        vertices += [tuple(rest[:3, 3] + rest[:3, :3] @ np.array(offset)) for offset in
                     ((0.03, 0.0, 0.0), (-0.03, 0.0, 0.0), (0.0, bone.length, 0.0))]
        groups.append((bone.name, [first, first + 1, first + 2]))
    mesh = bpy.data.meshes.new("Body")
    mesh.from_pydata(vertices, [], [(k, k + 1, k + 2) for k in range(0, len(vertices), 3)])
    body = bpy.data.objects.new("Body", mesh)
    bpy.context.scene.collection.objects.link(body)
    body.parent = armature
    for name, indices in groups:
        body.vertex_groups.new(name=name).add(indices, 1.0, 'REPLACE')
    body.modifiers.new("Armature", 'ARMATURE').object = armature
    empty_scene.vr_avatar.target_armature = armature
    assert bpy.ops.vr_avatar.map_bones() == {'FINISHED'}
    mapping = {item.joint: item.bone for item in empty_scene.vr_avatar.bone_map}
    target = installed.avatar.target_skeleton(armature, mapping)
    clip = read_bvh(BANDAI_WALK)
    standing_head = clip.global_positions()[:, clip.skeleton.index("Head"), 1].max()
    assert abs(target.floor_height()) < 0.1 and 0.85 < target.head_height() / standing_head < 1.05


def test_another_scenes_build_leaves_this_scenes_database_as_it_was(bpy, installed, empty_scene, tmp_path):
    """Two scenes of one .blend each build a database: the second wrote over the first's file, whose entry then
    described clips it no longer held. Now it writes one of its own, named after it."""
    _save(bpy, tmp_path / "scene.blend")
    first = bpy.context.scene
    first.vr_avatar.library.mocap_path = str(WALK_1)
    assert bpy.ops.vr_avatar.build_database() == {'FINISHED'}
    path = tmp_path / "scene.vr_avatar_db.npz"
    before = path.read_bytes()
    second = bpy.data.scenes.new("Crouch Takes")
    bpy.context.window.scene = second
    walks = {"dataset-0_walk_a_001.bvh": WALK_1, "dataset-0_walk_b_001.bvh": WALK_1}
    second.vr_avatar.library.mocap_path = str(_mocap_folder(tmp_path, walks))
    assert bpy.ops.vr_avatar.build_database() == {'FINISHED'}
    assert [item.path for item in second.vr_avatar.library.databases] == ["//scene.Crouch_Takes.vr_avatar_db.npz"]
    assert path.read_bytes() == before and len(PoseDatabase.load(path).clip_names) == 1
    assert len(PoseDatabase.load(tmp_path / "scene.Crouch_Takes.vr_avatar_db.npz").clip_names) == 2
    bpy.context.window.scene = first
    bpy.data.scenes.remove(second)


def test_a_clip_that_does_not_fit_the_database_is_named_by_its_file(bpy, installed, empty_scene, tmp_path):
    """A folder of two studios' walks under one set of joint names: the one line names the file, not the clip."""
    _save(bpy, tmp_path / "scene.blend")
    other = tmp_path / "dataset-9_walk_other-studio_001.bvh"
    write_bvh(other, read_bvh(FIXTURE_WALK_2).scaled(1.2), scale=100.0)
    library = bpy.context.scene.vr_avatar.library
    library.mocap_path = str(_mocap_folder(tmp_path, [FIXTURE_WALK_1, other]))
    with pytest.raises(RuntimeError, match=r"mocap/dataset-9_walk_other-studio_001\.bvh: its bone from"):
        bpy.ops.vr_avatar.build_database()
    assert len(library.databases) == 0 and not (tmp_path / "scene.vr_avatar_db.npz").exists()


def test_batch_bakes_grey_out_without_an_armature_to_bake_onto(bpy, installed, empty_scene):
    """Batch Bake opened its file browser with no armature selected and no target, and failed after; Bake Takes
    with takes but no target likewise."""
    assert not bpy.ops.vr_avatar.bake_batch.poll()
    takes = bpy.context.scene.vr_avatar.stream.takes
    takes.add().path = "//take_001.csv"
    assert not bpy.ops.vr_avatar.bake_takes.poll()
    takes.clear()
