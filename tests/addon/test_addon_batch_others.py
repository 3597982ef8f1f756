"""Batch Bake with what users bring, in the real bpy: streams simulated from other studios' capture (100STYLE's
walks at 60 fps, Perfume's dance at 40 fps, centimetre BVHs cut to 3 s) and written as real headsets write them (72,
120 and 144 Hz, a millisecond or Unix-time clock, jittered and missed samples, a controller untracked for a second),
baked onto the third-party rigs of ../shared/rigs (VRM, FBX at 4.84 m, glTF under a rotated parent, Kenney's 7-bone
chibi) selected together with a test-built rig, in a user's 30 fps scene with its own stream (hand-edited), target,
mapping, selection, frame range and actions: one action a pair keyed at the scene's rate, the chibi one error line a
stream, the scene and the user's actions and rotation modes as they were, each action moving its rig with the hands
on the controllers, each with its own quality report; the user's own smoothed solve kept to scrub and bake; and a
batch stopped by Ctrl+C mid-solve or mid-bake ending there, leaving no half-made action."""
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import FIXTURE_WALK_1, FIXTURE_WALK_2, RIGS, SHARED, shared_exists
from test_addon_others_mocap import DANCE, STYLE_WALK
from test_addon_solve import MIXAMO, _world_heads, build_rig

from core.config import DeviceNoise, SimulationConfig
from core.devices.attachments import implied_joint_positions
from core.devices.simulate import simulate_stream
from core.files.bvh import read_bvh
from core.files.stream import read_stream, write_stream

OTHER = SHARED / "data" / "other"
RIG_FILES = ("vrm0_cryptovoxels.vrm", "quaternius_male_casual.fbx", "khronos_riggedfigure.glb",
             "kenney_mini_female_a.glb")
CHIBI = "character-female-a"
"""Kenney's chibi as Blender's glTF importer names its armature: 7 bones, refused."""
SECONDS = 3.0
HANDS_AND_TRAVEL = {"angry_72": (1.2, 2.1), "dance_144": (0.2, 0.06), "rushed_120": (6.0, 2.2)}
"""Per stream, the most the hands may be from the controller-implied wrists on average (cm) and the least the hips
travel across the floor (m), over every rig (measured: the walk 0.00-1.03 cm, RiggedFigure the most, and 2.17-2.21
m (1.21 cm while the torso alone bent up to 10 degrees toward the headset in the first steps, where the predicted
body lags, and the body did not go with it); the dance in place 0.00-0.14 cm and 0.07-0.10 m; the partly running
walk 0.5-5.3 cm, the swinging arms past the avatars' reach, RiggedFigure's (no shoulders) the furthest, and
2.25-2.27 m)."""

pytestmark = pytest.mark.skipif(not (shared_exists(OTHER) and all(shared_exists(RIGS / f) for f in RIG_FILES)),
                                reason=f"the other studios' capture ({OTHER}) or the rigs ({RIGS}) are not there")


def _headset_stream(source: Path, rate_hz: float, seed: int, clock_start: float = 0.0, untracked_s=None):
    """The first SECONDS of a shared capture as a real headset at `rate_hz` writes it (DeviceNoise: millisecond
    stamps, jitter, missed samples, dropouts), its clock starting at `clock_start`, the left controller untracked
    over `untracked_s` (seconds from the start) where given."""
    motion = read_bvh(source)
    motion = motion[: int(SECONDS * motion.fps) + 1]
    config = SimulationConfig(look_around_deg=30.0, seed=seed, device_noise=DeviceNoise(rates_hz=(rate_hz,)))
    stream = simulate_stream(motion, config).stream
    if untracked_s is not None:
        lost = (stream.times >= untracked_s[0]) & (stream.times < untracked_s[1])
        stream.tracked[lost, 1] = False
        stream.positions[lost, 1] = stream.rotations[lost, 1] = np.nan
    stream.times = np.round(stream.times + clock_start, 3)
    return stream


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    """Three headset streams of other studios' capture in one folder."""
    folder = tmp_path_factory.mktemp("batch_streams")
    made = {"angry_72": _headset_stream(STYLE_WALK, 72.0, 1),
            "dance_144": _headset_stream(DANCE, 144.0, 2, untracked_s=(1.0, 2.0)),
            "rushed_120": _headset_stream(OTHER / "100style" / "rushed_reference.bvh", 120.0, 3, clock_start=1.7e9)}
    for name, stream in made.items():
        write_stream(folder / f"{name}.csv", stream)
    return [folder / f"{name}.csv" for name in made]


def _scene_state(bpy) -> dict:
    """What the batch must put back: the scene's rate, range, frame, selection, active object, target, stream file
    and mapping."""
    scene, settings = bpy.context.scene, bpy.context.scene.vr_avatar
    return {"fps": (scene.render.fps, scene.render.fps_base), "range": (scene.frame_start, scene.frame_end),
            "frame": scene.frame_current, "selected": sorted(o.name for o in bpy.context.selected_objects),
            "active": bpy.context.view_layer.objects.active.name, "target": settings.target_armature.name,
            "stream": settings.stream.stream_path, "mapping": (settings.bone_map_armature, [(i.joint, i.bone) for i in settings.bone_map]),
            "solve": (settings.solve.has_cache, "vr_avatar_solve" in scene)}


def _user_scene(bpy, installed, folder: Path) -> dict:
    """A saved 30 fps scene: its own stream loaded (a key of the left controller moved 5 cm), the rigs imported, a
    test-built one with an action of its own as target, its mapping hand-edited, the VRM's bones in XZY Euler; the
    rigs and a cube selected, the cube active, frames 5-40, at frame 12. {name: armature}."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    bpy.ops.wm.save_as_mainfile(filepath=str(folder / "user.blend"))
    rigs = {}
    for name in RIG_FILES:
        before = set(bpy.data.objects)
        importer = bpy.ops.import_scene.fbx if name.endswith(".fbx") else bpy.ops.import_scene.gltf
        assert importer(filepath=str(RIGS / name)) == {'FINISHED'}
        (obj,) = [o for o in set(bpy.data.objects) - before if o.type == 'ARMATURE']
        rigs[obj.name] = obj
    built = build_rig(bpy, FIXTURE_WALK_1, "BuiltAvatar", MIXAMO, 0.9, 45.0, False, location=(2.0, 0.0, 0.0),
                      seed=1)
    bpy.ops.object.mode_set(mode='OBJECT')
    rigs[built.name] = built
    for bone in rigs["Armature"].pose.bones:  # the VRM's
        bone.rotation_mode = 'XZY'
    wave = np.tile([1.0, 0.0, 0.0, 0.0], (5, 1)) + np.linspace(0.0, 0.5, 5)[:, None] * [0.0, 1.0, 0.0, 0.0]
    installed.keyframes.new_action("UserWave", built, [('pose.bones["mixamorig:LeftArm"].rotation_quaternion', wave,
                                                        "mixamorig:LeftArm")], 1)
    scene.render.fps, scene.render.fps_base = 30, 1.0
    scene.frame_start = 5
    own = folder / "own.csv"
    clip = read_bvh(FIXTURE_WALK_2)
    write_stream(own, simulate_stream(clip[: int(2.0 * clip.fps)]).stream)
    assert bpy.ops.vr_avatar.load_stream(filepath=str(own)) == {'FINISHED'}
    curve = next(c for c in scene.vr_avatar.stream.left.animation_data.action.layers[0].strips[0].channelbags[0]
                 .fcurves if c.data_path == "location" and c.array_index == 2)
    curve.keyframe_points[20].co.y += 0.05
    curve.update()
    scene.frame_end = 40
    scene.frame_set(12)
    settings = scene.vr_avatar
    settings.target_armature = built
    assert bpy.ops.vr_avatar.map_bones() == {'FINISHED'}
    next(item for item in settings.bone_map if item.joint == "chest").bone = "mixamorig:Spine1"
    bpy.ops.mesh.primitive_cube_add(location=(0.0, 3.0, 0.0))
    for obj in scene.objects:
        obj.select_set(obj.type == 'ARMATURE' or obj.name == "Cube")
    bpy.context.view_layer.objects.active = bpy.data.objects["Cube"]
    return rigs


@pytest.fixture(scope="module")
def batch(bpy, installed, streams, tmp_path_factory):
    """The batch run once in the user's scene: the scene's state, actions and rigs before and after, the error lines
    the batch raised."""
    folder = tmp_path_factory.mktemp("batch_scene")
    rigs = _user_scene(bpy, installed, folder)
    before = _scene_state(bpy)
    actions = set(bpy.data.actions)
    user = {a.name: _keys(installed, a) for a in bpy.data.actions if not a.get(installed.stream_objects.TAG)}
    empties = _empties(bpy, installed)
    modes = {name: [b.rotation_mode for b in obj.pose.bones] for name, obj in rigs.items()}
    with pytest.raises(RuntimeError) as error:
        bpy.ops.vr_avatar.bake_batch(directory=str(streams[0].parent), files=[{"name": p.name} for p in streams])
    return SimpleNamespace(folder=folder, rigs=rigs, before=before, after=_scene_state(bpy), user=user, modes=modes, empties=empties,
                           empties_after=_empties(bpy, installed),
                           made={a.name: a for a in set(bpy.data.actions) - actions}, errors=str(error.value))


def _empties(bpy, installed) -> list:
    """The scene's stream empties (as objects) and their keys."""
    stream = bpy.context.scene.vr_avatar.stream
    return [(obj, _keys(installed, obj.animation_data.action)) for obj in (stream.head, stream.left, stream.right)]


def _keys(installed, action) -> list:
    return [(c.data_path, c.array_index, [tuple(p.co) for p in c.keyframe_points])
            for c in installed.keyframes.action_fcurves(action)]


def test_each_pair_is_one_action_named_after_it_and_the_chibi_one_error_line_a_stream(batch, streams):
    baked = {f"{p.stem} - {name}" for p in streams for name in batch.rigs if name != CHIBI}
    assert {name for name in batch.made if " - " in name} == baked
    for path in streams:  # keyed one frame a 1/30 s of the stream from the scene's start, whatever its rate
        frames = read_stream(path).frames_at(30.0)
        for name in batch.rigs.keys() - {CHIBI}:
            assert tuple(batch.made[f"{path.stem} - {name}"].frame_range) == (5, 5 + frames - 1)
    lines = [line for line in batch.errors.splitlines() if line.strip()]
    assert len(lines) == len(streams) and all(f"onto '{CHIBI}': " in line for line in lines), batch.errors


def test_each_baked_action_has_its_own_quality_report_beside_the_blend(bpy, batch):
    """One report (PNG and JSON) a pair, named after its action, none overwritten by the next stream's onto the same
    rig; no armature-named report (a single Bake Action's)."""
    baked = [name for name in batch.made if " - " in name]
    reports = {path.name: path for path in batch.folder.glob("user.*.report.*")}
    assert set(reports) == {f"user.{bpy.path.clean_name(name)}.report.{ext}" for name in baked for ext in ("png", "json")}
    titles = {json.loads(path.read_text())["title"] for name, path in reports.items() if name.endswith(".json")}
    assert len(titles) == len(baked) and all(any(f"'{name}'" in title for title in titles) for name in baked)


def test_the_users_scene_is_put_back(batch):
    assert batch.after == batch.before


def test_the_scenes_hand_edited_stream_empties_are_kept(batch):
    """The empties the user edited (a key moved 5 cm), not the file loaded again: the same objects, the same keys."""
    assert batch.empties_after == batch.empties


def test_the_users_actions_and_the_rigs_rotation_modes_are_untouched(bpy, installed, batch):
    assert {name: _keys(installed, bpy.data.actions[name]) for name in batch.user} == batch.user
    assert {name: [b.rotation_mode for b in obj.pose.bones] for name, obj in batch.rigs.items()} == batch.modes


def _stream_targets(installed, path: Path, frames: np.ndarray, frame_start: int, fps: float):
    """(head, wrists, tracked) at scene frames of a stream loaded at `frame_start`, in core's frame."""
    stream = read_stream(path)
    at = stream.sampled_at(stream.times[0] + (frames - frame_start) / fps)
    joints = implied_joint_positions(at)
    return joints[:, 0], joints[:, 1:], at.tracked


def test_each_baked_action_moves_its_rig_with_the_hands_on_the_controllers(bpy, installed, batch, streams):
    """Each action posed on its rig: the hips travel and the hands sit on the controller-implied wrists (the
    armature's own hand points, read frame by frame in Blender)."""
    scene = bpy.context.scene
    frames = np.arange(scene.frame_start, scene.frame_start + int(SECONDS * 30) - 3, 4)
    figures = {}
    for path in streams:
        head, wrists, tracked = _stream_targets(installed, path, frames, scene.frame_start, 30.0)
        for name, obj in batch.rigs.items():
            if name == CHIBI:
                continue
            active = obj.animation_data.action
            obj.animation_data.action = batch.made[f"{path.stem} - {name}"]
            mapping = installed.avatar.automatic_mapping(obj)[0]
            measured, series = installed.avatar_quality.measure(obj, mapping, head, wrists, tracked, 30.0 / 4,
                                                                frames)
            obj.animation_data.action = active
            figures[path.stem, name] = (measured["hand_cm"], float(np.ptp(series["hips"][:, :2], axis=0).max()))
    scene.frame_set(batch.before["frame"])
    for stream, (hand_cm, travel_m) in HANDS_AND_TRAVEL.items():
        assert all(figures[s, name][0] < hand_cm and figures[s, name][1] > travel_m for s, name in figures
                   if s == stream), figures


def test_a_batch_interrupted_mid_bake_leaves_no_half_made_action(bpy, installed, empty_scene, streams, monkeypatch):
    """Ctrl+C (KeyboardInterrupt) while the second pair's bake measures: the first pair's action is kept, the
    second's taken back with the armature's action as it was, and the scene as it was (no stream, its range)."""
    scene = empty_scene
    scene.render.fps, scene.frame_start, scene.frame_end = 30, 1, 20
    obj = build_rig(bpy, FIXTURE_WALK_1, "BuiltAvatar", MIXAMO, 0.9, 45.0, False, seed=1)
    bpy.ops.object.mode_set(mode='OBJECT')
    scene.vr_avatar.target_armature = obj
    measure_steps, bakes = installed.avatar_quality.measure_steps, []

    def interrupted(*args, **kwargs):
        bakes.append(1)
        steps = measure_steps(*args, **kwargs)
        yield next(steps)
        if len(bakes) == 2:
            raise KeyboardInterrupt
        return (yield from steps)

    monkeypatch.setattr(installed.avatar_quality, "measure_steps", interrupted)
    actions = set(bpy.data.actions)
    with pytest.raises(RuntimeError, match="KeyboardInterrupt"):  # bpy.ops says what the operator raised
        bpy.ops.vr_avatar.bake_batch(directory=str(streams[0].parent), files=[{"name": p.name} for p in streams[:2]])
    assert sorted(a.name for a in set(bpy.data.actions) - actions) == [f"{streams[0].stem} - BuiltAvatar"]
    assert obj.animation_data.action.name == f"{streams[0].stem} - BuiltAvatar"
    assert (scene.frame_start, scene.frame_end, scene.vr_avatar.stream.stream_path) == (1, 20, "")
    assert not [o for o in scene.objects if o.get(installed.stream_objects.TAG)]


def test_the_users_smoothed_solve_is_kept_to_scrub_and_bake(bpy, installed, empty_scene, streams):
    """The user's own solve, smoothed, then a batch of two streams onto its armature: the scene's cache is still that
    solve (not the last pair's), fresh and previewed; scrubbing shows it and Bake Action bakes it."""
    scene = empty_scene
    scene.render.fps = 30
    obj = build_rig(bpy, FIXTURE_WALK_1, "BuiltAvatar", MIXAMO, 0.9, 45.0, False, seed=1)
    bpy.ops.object.mode_set(mode='OBJECT')
    scene.vr_avatar.target_armature = obj
    assert bpy.ops.vr_avatar.load_stream(filepath=str(streams[2])) == {'FINISHED'}
    assert bpy.ops.vr_avatar.map_bones() == {'FINISHED'}
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    assert bpy.ops.vr_avatar.clean_solve() == {'FINISHED'}
    kept = installed.solve_cache.load(scene)
    assert bpy.ops.vr_avatar.bake_batch(directory=str(streams[0].parent),
                                        files=[{"name": p.name} for p in streams[:2]]) == {'FINISHED'}
    cache, solve = installed.solve_cache.load(scene), scene.vr_avatar.solve
    assert (cache.armature, cache.frame_start, cache.report) == (obj.name, kept.frame_start, kept.report)
    for name in ("basis", "locations", "scales", "positions", "wrist_targets", "head_targets"):
        np.testing.assert_array_equal(getattr(cache, name), getattr(kept, name), err_msg=name)
    assert (solve.has_cache, solve.cache_stale, solve.preview) == (True, False, True)
    scene.frame_set(kept.frame_start + 40)
    np.testing.assert_allclose(_world_heads(bpy, obj, kept.bones), kept.positions[40], atol=1e-3)
    actions = set(bpy.data.actions)
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    (action,) = set(bpy.data.actions) - actions
    assert tuple(action.frame_range) == (kept.frame_start, kept.frame_start + kept.frames - 1)
    assert scene.vr_avatar.solve.report_path.endswith(".BuiltAvatar.report.png")  # a single bake's, by its armature
    scene.frame_set(kept.frame_start + 60)
    np.testing.assert_allclose(_world_heads(bpy, obj, kept.bones), kept.positions[60], atol=2e-3)


def test_a_batch_interrupted_mid_solve_ends_there(bpy, installed, empty_scene, streams, monkeypatch):
    """Ctrl+C (KeyboardInterrupt) while the second pair's stream is solved ends the batch as one mid-bake does, not
    as a failed pair with the third solved after it: the first pair's action kept, no other, the scene as it was."""
    scene = empty_scene
    scene.render.fps, scene.frame_start, scene.frame_end = 30, 1, 20
    obj = build_rig(bpy, FIXTURE_WALK_1, "BuiltAvatar", MIXAMO, 0.9, 45.0, False, seed=1)
    bpy.ops.object.mode_set(mode='OBJECT')
    scene.vr_avatar.target_armature = obj
    solve, solves = installed.core.solve.solve, []

    def interrupted(*args, **kwargs):
        solves.append(1)
        if len(solves) == 2:
            raise KeyboardInterrupt
        return solve(*args, **kwargs)

    monkeypatch.setattr(installed.core.solve, "solve", interrupted)
    actions = set(bpy.data.actions)
    with pytest.raises(RuntimeError, match="KeyboardInterrupt"):
        bpy.ops.vr_avatar.bake_batch(directory=str(streams[0].parent), files=[{"name": p.name} for p in streams])
    assert len(solves) == 2
    assert sorted(a.name for a in set(bpy.data.actions) - actions) == [f"{streams[0].stem} - BuiltAvatar"]
    assert (scene.frame_start, scene.frame_end, scene.vr_avatar.stream.stream_path) == (1, 20, "")
    assert not [o for o in scene.objects if o.get(installed.stream_objects.TAG)]
    assert "vr_avatar_solve" not in scene and not scene.vr_avatar.solve.has_cache


@pytest.mark.parametrize("step", ["load", "map"])
def test_a_batch_interrupted_while_a_stream_loads_or_a_rig_is_mapped_ends_there(bpy, installed, empty_scene, streams,
                                                                              monkeypatch, step):
    """Ctrl+C while the second pair's stream is read, or its armature mapped, ends the batch as one mid-solve does:
    through the operators these steps ran as, it was one failed pair and the batch went on."""
    scene = empty_scene
    scene.render.fps, scene.frame_start, scene.frame_end = 30, 1, 20
    first = build_rig(bpy, FIXTURE_WALK_1, "BuiltAvatar", MIXAMO, 0.9, 45.0, False, seed=1)
    bpy.ops.object.mode_set(mode='OBJECT')
    scene.vr_avatar.target_armature = first
    assert bpy.ops.vr_avatar.map_bones() == {'FINISHED'}
    files = [{"name": p.name} for p in streams]
    if step == "map":
        second = build_rig(bpy, FIXTURE_WALK_1, "OtherAvatar", MIXAMO, 1.1, 30.0, False, seed=2)
        bpy.ops.object.mode_set(mode='OBJECT')
        for obj in scene.objects:
            obj.select_set(obj in (first, second))
        files = files[:1]
    module, name = (installed.core.files.stream, "read_stream") if step == "load" else (installed.batch, "fill_bone_map")
    original, calls = getattr(module, name), []

    def interrupted(*args, **kwargs):
        calls.append(args[0])
        if step == "map" or str(args[0]).endswith(streams[1].name):
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, interrupted)
    actions = set(bpy.data.actions)
    with pytest.raises(RuntimeError, match="KeyboardInterrupt"):
        bpy.ops.vr_avatar.bake_batch(directory=str(streams[0].parent), files=files)
    assert not any(str(path).endswith(streams[2].name) for path in calls)
    assert sorted(a.name for a in set(bpy.data.actions) - actions) == [f"{streams[0].stem} - BuiltAvatar"]
    assert (scene.frame_start, scene.frame_end, scene.vr_avatar.stream.stream_path) == (1, 20, "")
    assert not [o for o in scene.objects if o.get(installed.stream_objects.TAG)]
    assert scene.vr_avatar.target_armature == first and not scene.vr_avatar.solve.has_cache

