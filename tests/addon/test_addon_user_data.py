"""What the add-on must leave as the user has it, and what it must say, in the real bpy: the open file's paths after
Save Copy, the scene's frame rate under a solve, the body's place in a bake of the mapped bones alone, a bake onto a
library override, Batch Bake's mapping and stream, the measurement of an armature in Edit Mode or Rest Position,
Object root motion on a transformed object, a cancelled In Place bake, stream empties edited away from their file."""
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import FIXTURE_WALK_1, FIXTURE_WALK_2
import numpy as np

from test_addon_solve import MIXAMO, RIGIFY, _world_heads, build_rig

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


def _solved(bpy, stream, fps: int = 30, names: dict = MIXAMO, extra_root: bool = False, setup=None):
    """An empty scene at `fps` with the stream loaded and solved onto a rig named as `names` say (`extra_root`: a
    bone above the hips; `setup(rig)` before the solve): the rig."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = fps, 1.0
    assert bpy.ops.vr_avatar.load_stream(filepath=str(stream)) == {'FINISHED'}
    obj = build_rig(bpy, FIXTURE_WALK_1, "Avatar", names, 0.9, 30.0, extra_root, seed=1)
    if setup is not None:
        setup(obj)
    scene.vr_avatar.target_armature = obj
    assert bpy.ops.vr_avatar.map_bones() == {'FINISHED'}
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    return obj


def test_save_copy_into_another_folder_leaves_the_open_files_paths(bpy, installed, empty_scene, tmp_path):
    """Save Copy writes the copy's paths from its own folder; the open file keeps its own, and they still read. Save
    As rewrites them, the takes' too, from the new folder."""
    project, elsewhere = tmp_path / "project", tmp_path / "backup" / "deep"
    project.mkdir()
    elsewhere.mkdir(parents=True)
    (project / "take.csv").write_text("t\n")
    bpy.ops.wm.save_as_mainfile(filepath=str(project / "scene.blend"))
    settings = bpy.context.scene.vr_avatar
    settings.stream["stream_path"] = "//take.csv"  # past the update callback, which would load the file
    settings.library.databases.add()["path"] = "//scene.vr_avatar_db.npz"
    settings.stream.takes.add()["path"] = "//takes/take_001.csv"
    bpy.ops.wm.save_as_mainfile(filepath=str(elsewhere / "copy.blend"), copy=True)
    assert bpy.data.filepath == str(project / "scene.blend")
    assert settings.stream.stream_path == "//take.csv"
    assert settings.library.databases[0].path == "//scene.vr_avatar_db.npz"
    assert settings.stream.takes[0].path == "//takes/take_001.csv"
    bpy.ops.wm.save_as_mainfile(filepath=str(elsewhere / "moved.blend"))
    assert settings.stream.takes[0].path == "//../../project/takes/take_001.csv"
    assert settings.stream.stream_path == "//../../project/take.csv"
    bpy.ops.wm.open_mainfile(filepath=str(elsewhere / "copy.blend"))
    copied = bpy.context.scene.vr_avatar
    assert Path(bpy.path.abspath(copied.stream.stream_path)).resolve() == (project / "take.csv").resolve()
    assert Path(bpy.path.abspath(copied.library.databases[0].path)).resolve() == \
        (project / "scene.vr_avatar_db.npz").resolve()
    assert Path(bpy.path.abspath(copied.stream.takes[0].path)).resolve() == (project / "takes" / "take_001.csv").resolve()


def test_importing_motion_keeps_a_solved_scenes_rate_and_a_bake_refuses_a_solve_at_another(bpy, installed, stream):
    """A 30 fps BVH imported into a scene solved at 24 fps leaves it at 24, saying so; a solve baked after the rate
    changed is refused in one line, with nothing made."""
    _solved(bpy, stream, fps=24)
    scene = bpy.context.scene
    assert bpy.ops.vr_avatar.import_mocap(filepath=str(FIXTURE_WALK_1)) == {'FINISHED'}
    assert (scene.render.fps, scene.render.fps_base) == (24, 1.0)
    scene.render.fps = 30
    actions = set(bpy.data.actions)
    with pytest.raises(RuntimeError, match=r"^Error: The cached solve was made at 24 fps and the scene now plays at "
                                           r"30 fps: solve again .*\n?$"):
        bpy.ops.vr_avatar.bake_action()
    assert set(bpy.data.actions) == actions


def test_a_bake_of_the_mapped_bones_alone_keys_the_bones_above_the_hips(bpy, installed, stream):
    """A root bone above the hips left moved (by an earlier bake) is keyed too, so the body lands where it was
    solved; the in-between spine bone is not keyed."""
    obj = _solved(bpy, stream, names=RIGIFY, extra_root=True)
    scene = bpy.context.scene
    obj.pose.bones["root"].location = (0.3, 0.0, 0.1)
    scene.vr_avatar.bake.only_mapped = True
    before = set(bpy.data.actions)
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    (action,) = set(bpy.data.actions) - before
    keyed = {c.data_path.split('"')[1] for c in installed.keyframes.action_fcurves(action)}
    assert keyed == {item.bone for item in scene.vr_avatar.bone_map if item.bone} | {"root"}
    cache = installed.solve_cache.load(scene)
    for frame in (scene.frame_start, scene.frame_start + 31):
        scene.frame_set(frame)
        np.testing.assert_allclose(_world_heads(bpy, obj, cache.bones), cache.positions[cache.frame_index(frame)],
                                   atol=1e-3)


@pytest.mark.parametrize("editable", [True, False])
def test_a_bake_onto_a_library_override_is_made_where_the_override_is_editable(bpy, installed, stream, tmp_path,
                                                                                editable):
    """A character linked from a library and overridden as Object › Library Override › Make does (the armature data
    stays linked) takes the bake; a system override, which cannot be edited, is refused in one line."""
    bpy.ops.wm.read_homefile(use_empty=True)
    obj = build_rig(bpy, FIXTURE_WALK_1, "Avatar", MIXAMO, 0.9, 30.0, False, seed=1)
    collection = bpy.data.collections.new("Character")
    collection.objects.link(obj)
    library = tmp_path / "character.blend"
    bpy.data.libraries.write(str(library), {collection})
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = 30
    with bpy.data.libraries.load(str(library), link=True) as (_, data):
        data.collections = ["Character"]
    linked = data.collections[0]
    scene.collection.children.link(linked)  # Blender 5.3 overrides only what the scene holds
    root = linked.override_hierarchy_create(scene, bpy.context.view_layer, do_fully_editable=editable)
    scene.collection.children.unlink(linked)
    (override,) = [o for o in root.all_objects if o.type == 'ARMATURE']
    assert override.override_library is not None and override.data.library is not None
    scene.vr_avatar.target_armature = override
    assert bpy.ops.vr_avatar.load_stream(filepath=str(stream)) == {'FINISHED'}
    assert bpy.ops.vr_avatar.map_bones() == {'FINISHED'}
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    if editable:
        assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
        assert override.animation_data.action.name == "Avatar VR Avatar"
    else:
        actions = set(bpy.data.actions)
        with pytest.raises(RuntimeError, match=r"Armature 'Avatar' is a library override that is not editable: make "
                                               r"it editable \(Outliner"):
            bpy.ops.vr_avatar.bake_action()
        assert set(bpy.data.actions) == actions


def test_a_batch_keeps_the_hand_edited_mapping_and_the_scenes_stream_whose_file_is_gone(bpy, installed, stream,
                                                                                       tmp_path):
    """Onto the mapped avatar and another one: the user's hand-edited mapping is used for its avatar and is there
    after; the scene's own stream, its file removed before, keeps its empties and path (they are not read again)."""
    own = tmp_path / "own.csv"
    own.write_bytes(stream.read_bytes())
    obj = _solved(bpy, own)
    other = build_rig(bpy, FIXTURE_WALK_1, "Other", {j: b.replace("mixamorig:", "other:") for j, b in MIXAMO.items()},
                      1.0, 30.0, False, location=(1.0, 0.0, 0.0), seed=2)
    settings = bpy.context.scene.vr_avatar
    next(item for item in settings.bone_map if item.joint == "chest").bone = ""
    mapped = [(item.joint, item.bone) for item in settings.bone_map]
    empties = (settings.stream.stream_path, settings.stream.head, settings.stream.left, settings.stream.right)
    for each in bpy.context.scene.objects:
        each.select_set(each in (obj, other))
    own.unlink()
    assert bpy.ops.vr_avatar.bake_batch(directory=str(stream.parent), files=[{"name": stream.name}]) == {'FINISHED'}
    assert {"walk - Avatar", "walk - Other"} <= set(bpy.data.actions.keys())
    assert settings.bone_map_armature == "Avatar" and [(i.joint, i.bone) for i in settings.bone_map] == mapped
    assert settings.target_armature == obj
    assert (settings.stream.stream_path, settings.stream.head, settings.stream.left, settings.stream.right) == empties
    assert len([o for o in bpy.context.scene.objects if o.get(installed.stream_objects.TAG)]) == 3


@pytest.mark.parametrize("state", ["edit mode", "rest position"])
def test_a_bake_measures_the_avatar_as_posed_and_leaves_its_mode_and_pose_position(bpy, installed, stream, state):
    """An armature in Edit Mode or Rest Position is measured as the bake poses it (no false warnings: the same
    figures as in Object Mode) and left in its mode and pose position."""
    obj = _solved(bpy, stream)
    quality = bpy.context.scene.vr_avatar.solve.baked_quality
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    expected = (quality.hand_cm, quality.head_cm)
    bpy.context.view_layer.objects.active = obj
    if state == "edit mode":
        bpy.ops.object.mode_set(mode='EDIT')
    else:
        obj.data.pose_position = 'REST'
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    assert (quality.hand_cm, quality.head_cm) == pytest.approx(expected, abs=0.05)
    assert (obj.mode, obj.data.pose_position) == (('EDIT', 'POSE') if state == "edit mode" else ('OBJECT', 'REST'))


@pytest.mark.parametrize("rotation_mode", ["XZY", "QUATERNION"])
def test_object_root_motion_takes_the_delta_transforms_off_and_refuses_object_constraints(bpy, installed, stream,
                                                                                          rotation_mode):
    """Keyed on an object with delta transforms, the bones land where they were solved; an object constraint, which
    would move the object past its keys, is refused in one line with nothing made."""
    def moved(obj):
        obj.rotation_mode = rotation_mode
        obj.delta_location = (0.4, -0.2, 0.05)
        obj.delta_rotation_euler = (0.1, 0.0, 0.6)
        obj.delta_rotation_quaternion = (0.9, 0.1, 0.0, 0.4)
        bpy.context.view_layer.update()

    obj = _solved(bpy, stream, setup=moved)
    scene = bpy.context.scene
    scene.vr_avatar.bake.root_motion = 'OBJECT'
    constraint = obj.constraints.new('COPY_LOCATION')
    actions = set(bpy.data.actions)
    with pytest.raises(RuntimeError, match=r"has object constraints \(Copy Location\), which move it"):
        bpy.ops.vr_avatar.bake_action()
    assert set(bpy.data.actions) == actions
    obj.constraints.remove(constraint)
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    cache = installed.solve_cache.load(scene)
    for frame in (scene.frame_start, scene.frame_start + 45):
        scene.frame_set(frame)
        np.testing.assert_allclose(_world_heads(bpy, obj, cache.bones), cache.positions[cache.frame_index(frame)],
                                   atol=1e-3)


def test_a_cancelled_in_place_bake_leaves_no_property_and_a_finished_one_takes_the_plain_name(bpy, installed, stream,
                                                                                              monkeypatch):
    """Esc during an In Place bake leaves no root motion property on the object; the bake run to its end is named
    '<armature> VR Avatar', not '... .001'."""
    monkeypatch.setattr(installed.operators.solve.VR_AVATAR_OT_bake_action, "tick_s", 0.0)  # a frame a tick
    obj = _solved(bpy, stream)
    bpy.context.scene.vr_avatar.bake.root_motion = 'IN_PLACE'
    actions = set(bpy.data.actions)
    assert bpy.ops.vr_avatar.bake_action(beside=True) == {'RUNNING_MODAL'}
    running = installed.operators.solve.VR_AVATAR_OT_bake_action._running
    assert running.modal(bpy.context, SimpleNamespace(type='ESC', value='PRESS')) == {'CANCELLED'}
    assert "vr_avatar_root_motion" not in obj.keys() and set(bpy.data.actions) == actions
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    assert [action.name for action in set(bpy.data.actions) - actions] == ["Avatar VR Avatar"]


def _curve(installed, obj, data_path: str, index: int):
    return next(c for c in installed.keyframes.action_fcurves(obj.animation_data.action)
                if c.data_path == data_path and c.array_index == index)


def test_a_solve_reads_the_stream_empties_where_they_were_edited_away_from_the_file(bpy, installed, stream, capfd):
    """A key of the left controller's empty moved 5 cm: the solve says in one line that it solves the edited
    empties, and its left wrist target moves 5 cm at that frame alone; unedited empties are solved from the file,
    without a line."""
    _solved(bpy, stream)
    scene = bpy.context.scene
    assert "Solving the stream empties" not in capfd.readouterr().out
    before = installed.solve_cache.load(scene).wrist_targets.copy()
    left = scene.vr_avatar.stream.left
    curve = _curve(installed, left, "location", 2)
    curve.keyframe_points[20].co.y += 0.05
    curve.update()
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    assert (f"Info: Solving the stream empties as edited, not walk.csv: '{left.name}' edited at frame 21 (5 cm and "
            "0 deg from the file; 1 frame edited); at the scene's 30 fps\n") in capfd.readouterr().out
    after = installed.solve_cache.load(scene).wrist_targets
    moved = np.linalg.norm(after - before, axis=-1)
    assert abs(moved[20, 0] - 0.05) < 0.005, moved[18:23]
    assert np.delete(moved[:, 0], 20).max() < 0.002 and moved[:, 1].max() < 0.002


def test_a_solve_reads_frames_marked_untracked_keys_deleted_and_a_parent_on_the_stream_empties(bpy, installed, stream,
                                                                                                capfd):
    """What an animator does to a glitch, each seen by the solve: frames keyed untracked, keys deleted and one moved
    (the curve interpolating across), the empty parented under a moved one (read frame by frame); with the
    headset-only method, edits to the controllers are not its input; empties keyed at another scene rate than the
    present one are not compared."""
    _solved(bpy, stream)
    scene = bpy.context.scene
    settings = scene.vr_avatar.stream
    capfd.readouterr()
    tracked = _curve(installed, settings.right, '["tracked"]', 0)
    for point in tracked.keyframe_points[19:30]:
        point.co.y = 0.0
    tracked.update()
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    assert (f"'{settings.right.name}' edited at frame 20 (marked untracked; 11 frames edited)"
            in capfd.readouterr().out)

    _solved(bpy, stream)
    settings = bpy.context.scene.vr_avatar.stream
    capfd.readouterr()
    curve = _curve(installed, settings.left, "location", 2)
    for index in range(24, 17, -1):
        curve.keyframe_points.remove(curve.keyframe_points[index])
    curve.keyframe_points[18].co.y += 0.04  # the key of frame 26, now after the gap
    curve.update()
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    out = capfd.readouterr().out
    assert f"Info: Solving the stream empties as edited, not walk.csv: '{settings.left.name}' edited at frame " in out

    _solved(bpy, stream)
    scene = bpy.context.scene
    settings = scene.vr_avatar.stream
    capfd.readouterr()
    offset = bpy.data.objects.new("Tracking Offset", None)
    scene.collection.objects.link(offset)
    offset.location = (0.0, 0.0, 0.1)
    settings.head.parent = offset
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    assert f"'{settings.head.name}' edited at frame 1 (10 cm and 0 deg from the file; " in capfd.readouterr().out
    settings.head.parent = None

    curve = _curve(installed, settings.left, "location", 0)
    curve.keyframe_points[5].co.y += 0.2
    curve.update()
    scene.vr_avatar.solve.method, scene.vr_avatar.solve.hmd_only = 'N3P', True
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    assert "Solving the stream empties" not in capfd.readouterr().out
    scene.vr_avatar.solve.hmd_only = False
    scene.render.fps = 24  # the empties keyed at 30 fps: not compared, the file solved
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    assert "Solving the stream empties" not in capfd.readouterr().out


def test_stream_empties_read_from_their_keys_are_what_blender_shows_frame_by_frame(bpy, installed, stream):
    """Keys moved, turned, deleted and given other interpolations at random (five seeds): the empties' poses read from
    their f-curves equal their world matrices with each frame set (forced by a constraint of no influence)."""
    objects = installed.stream_objects
    _solved(bpy, stream)
    settings = bpy.context.scene.vr_avatar.stream
    empties = (settings.head, settings.left, settings.right)
    rng = np.random.default_rng(7)
    for _ in range(5):
        for obj in empties:
            for curve in installed.keyframes.action_fcurves(obj.animation_data.action):
                points = curve.keyframe_points
                for index in sorted(rng.choice(len(points) - 2, 3, replace=False) + 1, reverse=True):
                    points.remove(points[int(index)])
                for index in rng.choice(len(points), 4, replace=False):
                    if curve.data_path != '["tracked"]':
                        points[int(index)].co.y += rng.normal(0.0, 0.05)
                    points[int(index)].interpolation = str(rng.choice(["BEZIER", "CONSTANT", "LINEAR"]))
                curve.update()
        frames = np.arange(-2, 70)
        assert all(objects.keyed_alone(obj) for obj in empties)
        keyed = objects.device_poses(empties, frames)
        constraints = [obj.constraints.new('COPY_LOCATION') for obj in empties]
        for constraint in constraints:
            constraint.influence = 0.0
        shown = objects.device_poses(empties, frames)
        for obj, constraint in zip(empties, constraints):
            obj.constraints.remove(constraint)
        np.testing.assert_allclose(keyed[0], shown[0], atol=1e-5)
        np.testing.assert_allclose(np.abs(np.sum(keyed[1] * shown[1], axis=-1)), 1.0, atol=1e-6)
        np.testing.assert_array_equal(keyed[2], shown[2])
