"""Workflows over a session, in the real bpy: the target armature deleted after its solve, a bake replacing the user's
own layered action, baking again, solving again and scrubbing after an Object root-motion bake, the armature renamed
while the solve runs beside Blender, the solve's progress, bones edited and another file opened while it runs, the
scene's frame rate changed after a solve, a stream loaded in a Linked Copy scene."""
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import FIXTURE_WALK_1
from test_addon_solve import MIXAMO, _world_heads, build_rig
from test_addon_user_data import _curve, _solved, stream as short_stream

stream = short_stream
"""The fixture walk's first seconds as a stream file (test_addon_user_data's fixture)."""


def test_a_target_armature_deleted_after_its_solve_is_refused_in_one_line(bpy, installed, stream):
    """Deleted from the scene (the Target Armature setting still holds it, so it stays in the file): Solve and Map
    Bones say so in one line, as the bake does, instead of solving onto an armature no scene shows and that no bake
    can then reach."""
    obj = _solved(bpy, stream)
    bpy.ops.object.select_all(action='DESELECT')
    obj.select_set(True)
    assert bpy.ops.object.delete() == {'FINISHED'}
    scene = bpy.context.scene
    assert scene.vr_avatar.target_armature == obj
    for operator in (bpy.ops.vr_avatar.solve_stream, bpy.ops.vr_avatar.map_bones):
        with pytest.raises(RuntimeError, match=r"Target Armature 'Avatar' is not in scene 'Scene' \(deleted, or in "
                                               r"another scene\): pick another or link it back"):
            operator()
    with pytest.raises(RuntimeError, match="The cached solve is for armature 'Avatar', which is gone: solve again"):
        bpy.ops.vr_avatar.bake_action()
    scene.collection.objects.link(obj)  # linked back, it solves and bakes
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}


def _users_action(bpy, obj) -> None:
    """A layered action of the user's with two slots, the armature's keying a channel the solve leaves at rest (the
    spine's location), a prop's its own location, active on both."""
    other = bpy.data.objects.new("Prop", None)
    bpy.context.scene.collection.objects.link(other)
    action = bpy.data.actions.new("Idle")
    strip = action.layers.new("Layer").strips.new(type='KEYFRAME')
    for owner, path in ((obj, 'pose.bones["mixamorig:Spine"].location'), (other, "location")):
        slot = action.slots.new(id_type='OBJECT', name=owner.name)
        curve = strip.channelbag(slot, ensure=True).fcurves.new(path, index=0)
        for frame, value in ((1, 0.1), (30, 0.3)):
            curve.keyframe_points.insert(frame, value)
        owner.animation_data_create().action = action
        owner.animation_data.action_slot = slot


def _action_state(installed, action) -> list:
    """What a bake must leave as it was in an action: its slots, their users and every key."""
    curves = [(c.data_path, c.array_index, [tuple(k.co) for k in c.keyframe_points])
              for c in installed.keyframes.action_fcurves(action)]
    return [action.name, [(s.identifier, sorted(u.name for u in s.users())) for s in action.slots], curves]


@pytest.mark.parametrize("push_to_nla", [False, True])
def test_a_bake_replacing_the_users_action_keeps_none_of_its_pose(bpy, installed, stream, push_to_nla):
    """The armature's own action (two slots, the armature's keying the spine's location, which the solve leaves at
    rest) active and evaluated before the bake: the baked pose is the solve's, to 1 mm, not the spine moved where the
    replaced action left it (10 cm off), and the user's action, its slots and their users are as they were."""
    obj = _solved(bpy, stream)
    scene = bpy.context.scene
    _users_action(bpy, obj)
    user = bpy.data.actions["Idle"]
    before = _action_state(installed, user)
    bpy.context.view_layer.update()  # the action poses the spine
    scene.vr_avatar.bake.push_to_nla = push_to_nla
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    assert not scene.vr_avatar.solve.baked_quality.warnings
    baked = obj.animation_data.nla_tracks[0].strips[0].action if push_to_nla else obj.animation_data.action
    obj.animation_data.action = baked
    cache = installed.solve_cache.load(scene)
    for frame in (1, 20, 45):
        scene.frame_set(frame)
        np.testing.assert_allclose(_world_heads(bpy, obj, cache.bones), cache.positions[cache.frame_index(frame)],
                                   atol=1e-3)
    obj.animation_data.action = user
    obj.animation_data.action_slot = user.slots["OBAvatar"]
    assert _action_state(installed, user) == before


def _baked_heads_are_the_solves(bpy, installed, obj, frames=(1, 20, 45)) -> None:
    """The armature's bone heads in the world, as its action poses it, where the cached solve put them (1 mm)."""
    scene = bpy.context.scene
    cache = installed.solve_cache.load(scene)
    for frame in frames:
        scene.frame_set(frame)
        np.testing.assert_allclose(_world_heads(bpy, obj, cache.bones), cache.positions[cache.frame_index(frame)],
                                   atol=1e-3, err_msg=f"frame {frame}")


@pytest.mark.parametrize("push_to_nla", [False, True])
@pytest.mark.parametrize("mode", ["OBJECT", "HIPS"])
def test_baking_again_after_an_object_root_motion_bake_starts_where_the_object_stood(bpy, installed, stream, mode,
                                                                                       push_to_nla):
    """A bake with Object root motion, the timeline left at frame 50, then a second bake (Object or Hips; the first
    active or on the NLA): the avatar lands where the solve put it, not moved on by the travel the first bake had
    given the object at frame 50 (40 cm)."""
    obj = _solved(bpy, stream)
    scene, settings = bpy.context.scene, bpy.context.scene.vr_avatar.bake
    placement = np.array(obj.matrix_world)
    settings.root_motion, settings.push_to_nla = 'OBJECT', push_to_nla
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    scene.frame_set(50)
    assert np.linalg.norm(np.array(obj.matrix_world)[:3, 3] - placement[:3, 3]) > 0.3
    settings.root_motion, settings.push_to_nla = mode, False
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    assert not scene.vr_avatar.solve.baked_quality.warnings
    _baked_heads_are_the_solves(bpy, installed, obj)


def _solve_beside(bpy, installed):
    """The panel's Solve started beside Blender: the running operator."""
    assert bpy.ops.vr_avatar.solve_stream(beside=True) == {'RUNNING_MODAL'}  # the panel's invoke sets it
    return installed.operators.solve.VR_AVATAR_OT_solve_stream._running


def _solve_to_the_end(bpy, running) -> set:
    """The running solve ticked once its thread is done: its result."""
    running._thread.join(120)
    return running.modal(bpy.context, SimpleNamespace(type='TIMER', value='NOTHING'))


def test_an_armature_renamed_while_the_solve_runs_beside_blender_takes_the_solve(bpy, installed, stream):
    """Renamed while the panel's Solve runs: the solve is cached for it under its new name and scrubbing poses it;
    deleted while it runs, the solve says so in one line and caches nothing."""
    obj = _solved(bpy, stream)
    scene = bpy.context.scene
    running = _solve_beside(bpy, installed)
    obj.name = "Renamed"
    assert _solve_to_the_end(bpy, running) == {'FINISHED'}
    cache = installed.solve_cache.load(scene)
    assert cache.armature == "Renamed"
    scene.frame_set(20)
    np.testing.assert_allclose(_world_heads(bpy, obj, cache.bones), cache.positions[cache.frame_index(20)], atol=1e-3)
    running = _solve_beside(bpy, installed)
    bpy.ops.object.select_all(action='DESELECT')
    obj.select_set(True)
    assert bpy.ops.object.delete() == {'FINISHED'}  # the Target Armature setting keeps it in the file
    with pytest.raises(installed.errors.VRAvatarError) as refused:
        running._thread.join(120)
        running._solve.finish(bpy.context)  # what the operator reports as its error
    assert str(refused.value) == "Armature 'Renamed' was removed during the solve: nothing was cached"
    assert _solve_to_the_end(bpy, running) == {'CANCELLED'}
    np.testing.assert_array_equal(installed.solve_cache.load(scene).basis, cache.basis)


def test_the_solve_beside_blender_tells_its_progress_from_core(bpy, installed, stream, monkeypatch):
    """The panel's Solve tells the share done as core's solve goes (not a fixed tenth until it retargets): many
    shares, never back, from 0 to 1."""
    _solved(bpy, stream)
    shares = []
    tell = installed.operators.solve.SceneSolve.tell
    monkeypatch.setattr(installed.operators.solve.SceneSolve, "tell",
                        lambda solve, share: (shares.append(share), tell(solve, share)))
    running = _solve_beside(bpy, installed)
    assert _solve_to_the_end(bpy, running) == {'FINISHED'}
    assert len(shares) >= 40 and shares[0] == 0.0 and shares[-1] == running._solve.done == 1.0
    assert np.all(np.diff(shares) >= 0.0) and np.all(np.diff(shares) <= 0.1)


@pytest.mark.parametrize("edit", ["moved", "renamed"])
def test_bones_edited_while_the_solve_runs_beside_blender_are_refused_in_one_line(bpy, installed, stream, edit):
    """A bone moved in Edit Mode, or renamed, while the panel's Solve runs: the solve, retargeted for the bones as
    they were (the hands 6.7 cm off the moved ones'; the cache's bone names no longer the rig's), is not cached;
    the cache stays the last solve's."""
    obj = _solved(bpy, stream)
    scene = bpy.context.scene
    before = installed.solve_cache.load(scene)
    running = _solve_beside(bpy, installed)
    if edit == "moved":
        bpy.context.view_layer.objects.active = obj
        bpy.ops.object.mode_set(mode='EDIT')
        obj.data.edit_bones["mixamorig:LeftForeArm"].head.z += 0.1
        bpy.ops.object.mode_set(mode='OBJECT')
    else:
        obj.data.bones["mixamorig:LeftForeArm"].name = "LeftElbow"
    running._thread.join(120)
    with pytest.raises(installed.errors.VRAvatarError, match="Armature 'Avatar''s bones were edited during the "
                                                             "solve: nothing was cached; solve again"):
        running._solve.finish(bpy.context)  # what the operator reports as its error
    assert _solve_to_the_end(bpy, running) == {'CANCELLED'}
    np.testing.assert_array_equal(installed.solve_cache.load(scene).basis, before.basis)


def test_another_file_opened_while_the_solve_runs_beside_blender_ends_it(bpy, installed, stream, tmp_path, capfd):
    """Another file opened while the panel's Solve runs: Blender cancels it, which ends (its timer, progress and
    status text gone) with nothing cached."""
    _solved(bpy, stream)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "solved.blend"))
    thread = _solve_beside(bpy, installed)._thread  # the operator itself is freed with the file
    assert bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "solved.blend")) == {'FINISHED'}
    assert installed.operators.solve.VR_AVATAR_OT_solve_stream._running is None
    thread.join(120)
    assert "Traceback" not in capfd.readouterr().err


TICK = SimpleNamespace(type='TIMER', value='NOTHING')


def _bake_beside(bpy, installed, monkeypatch):
    """The panel's Bake started beside Blender, a frame measured: the running operator."""
    monkeypatch.setattr(installed.operators.solve.VR_AVATAR_OT_bake_action, "tick_s", 0.0)  # a frame a tick
    assert bpy.ops.vr_avatar.bake_action(beside=True) == {'RUNNING_MODAL'}  # the panel's invoke sets it
    running = installed.operators.solve.VR_AVATAR_OT_bake_action._running
    assert running.modal(bpy.context, TICK) == {'RUNNING_MODAL'}
    return running


def _bake_to_the_end(bpy, running) -> set:
    """The running bake ticked until it ends: its result."""
    while (result := running.modal(bpy.context, TICK)) == {'RUNNING_MODAL'}:
        pass
    return result


def test_an_armature_renamed_while_the_bake_measures_it_takes_the_bake(bpy, installed, stream, monkeypatch):
    """Renamed while the panel's bake measures it: the bake goes on, its report under the new name."""
    obj = _solved(bpy, stream)
    running = _bake_beside(bpy, installed, monkeypatch)
    obj.name = "Renamed"
    assert _bake_to_the_end(bpy, running) == {'FINISHED'}
    assert obj.animation_data.action.name == "Avatar VR Avatar"
    assert bpy.context.scene.vr_avatar.solve.report_path.endswith(".Renamed.report.png")
    _baked_heads_are_the_solves(bpy, installed, obj, (20,))


def _take_away(bpy, obj, how: str) -> None:
    if how == "deleted":  # the Target Armature setting keeps it in the file
        bpy.ops.object.select_all(action='DESELECT')
        obj.select_set(True)
        assert bpy.ops.object.delete() == {'FINISHED'}
    elif how == "removed":
        bpy.data.objects.remove(obj)
    else:  # Ctrl+Z: back to before the bake, whose undo step is pushed when it ends
        assert bpy.ops.ed.undo() == {'FINISHED'}


@pytest.mark.parametrize("how", ["deleted", "removed", "undone"])
def test_an_armature_taken_away_while_the_bake_measures_it_stops_the_bake_in_one_line(bpy, installed, stream,
                                                                                      monkeypatch, how):
    """Deleted, removed or undone while the panel's bake measures it: the bake stops in one line and leaves no action
    of it (an In Place or Push to NLA bake's own is made after the measure: the action keyed first is not the bake
    yet), the scene's preview and frame as they were; the measure went on over the deleted armature, no scene's, and
    raised a traceback over the removed or undone one."""
    obj = _solved(bpy, stream)
    bpy.ops.ed.undo_push(message="Load Stream")  # the steps the panel's operators push in a session
    bpy.ops.ed.undo_push(message="Solve")
    actions = sorted(action.name for action in bpy.data.actions)
    running = _bake_beside(bpy, installed, monkeypatch)
    _take_away(bpy, obj, how)
    assert running.modal(bpy.context, TICK) == {'CANCELLED'}
    assert running._bake.lost() == f"armature 'Avatar' was {how}"  # the operator's error: 'Bake stopped: <this> ...'
    scene = bpy.context.scene
    assert sorted(action.name for action in bpy.data.actions) == actions
    assert (scene.frame_current, scene.vr_avatar.solve.preview) == (1, True)
    assert installed.operators.solve.VR_AVATAR_OT_bake_action._running is None


def test_another_file_opened_while_the_bake_measures_ends_the_bake(bpy, installed, stream, monkeypatch, tmp_path,
                                                                    capfd):
    """Another file opened while the panel's bake measures: Blender cancels the bake, which ends (its timer, progress
    and status text gone) and takes itself back from the file it was made in."""
    _solved(bpy, stream)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "solved.blend"))
    _bake_beside(bpy, installed, monkeypatch)
    assert bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "solved.blend")) == {'FINISHED'}
    assert installed.operators.solve.VR_AVATAR_OT_bake_action._running is None
    assert "Avatar VR Avatar" not in bpy.data.actions
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("push_to_nla", [False, True])
def test_the_scrub_preview_over_an_object_root_motion_bake_shows_the_solve_where_it_is(bpy, installed, stream,
                                                                                       push_to_nla):
    """Scrub Preview turned back on after an Object root-motion bake (active or on the NLA): the object stands where
    the bake was keyed from, so the previewed bones land where the solve put them (0.01 mm), not with the travel twice
    (once by the object, once by the bones: 40 cm at frame 50); turned off, the bake moves the object again."""
    obj = _solved(bpy, stream)
    scene, settings = bpy.context.scene, bpy.context.scene.vr_avatar
    settings.bake.root_motion, settings.bake.push_to_nla = 'OBJECT', push_to_nla
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    settings.solve.preview = True
    cache = installed.solve_cache.load(scene)
    for frame in (1, 20, 50):
        scene.frame_set(frame)
        heads = _world_heads(bpy, obj, cache.bones)
        evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
        np.testing.assert_allclose(np.array(evaluated.matrix_world), np.array(obj.matrix_world), atol=1e-6)
        np.testing.assert_allclose(heads, cache.positions[cache.frame_index(frame)], atol=1e-5, err_msg=f"frame {frame}")
    settings.solve.preview = False
    _baked_heads_are_the_solves(bpy, installed, obj, (20, 50))


def test_a_solve_after_an_object_root_motion_bake_reads_the_armature_where_that_bake_was_keyed_from(bpy, installed,
                                                                                                     stream):
    """Solve again at frame 50 after an Object root-motion bake, which has moved the object 40 cm by then: the solve
    reads the armature where the bake was keyed from, so a bake of it (Hips) lands where it puts the body (1 mm)."""
    obj = _solved(bpy, stream)
    scene, settings = bpy.context.scene, bpy.context.scene.vr_avatar.bake
    settings.root_motion = 'OBJECT'
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    scene.frame_set(50)
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    settings.root_motion = 'HIPS'
    assert bpy.ops.vr_avatar.bake_action() == {'FINISHED'}
    _baked_heads_are_the_solves(bpy, installed, obj)


class _Layout:
    """A panel's layout that keeps the labels drawn in it (rows, boxes and operators draw into it too)."""

    def __init__(self):
        self.labels = []

    def label(self, text="", **_):
        self.labels.append(text)

    def __getattr__(self, _name):
        return lambda *_args, **_kwargs: self


def _solve_panel_labels(bpy, installed) -> list:
    layout = _Layout()
    installed.panels.VIEW3D_PT_vr_avatar_solve.draw_section(None, layout, bpy.context)
    return layout.labels


def test_the_panel_says_a_solve_made_at_another_frame_rate_than_the_scenes_is_stale(bpy, installed, stream):
    """The scene's frame rate changed after the solve: the panel says in one line to solve again, as for a setting
    changed (the bake refuses it); the rate set back, or solved again, the line goes."""
    _solved(bpy, stream)
    scene = bpy.context.scene
    assert not [label for label in _solve_panel_labels(bpy, installed) if "solve again" in label]
    scene.render.fps = 24
    assert "Solved at 30 fps and the scene now plays at 24 fps: solve again" in _solve_panel_labels(bpy, installed)
    with pytest.raises(RuntimeError, match="made at 30 fps and the scene now plays at 24 fps"):
        bpy.ops.vr_avatar.bake_action()
    scene.render.fps = 30
    assert not [label for label in _solve_panel_labels(bpy, installed) if "solve again" in label]
    scene.render.fps = 24
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    assert not [label for label in _solve_panel_labels(bpy, installed) if "solve again" in label]


def _stream_empties(scene) -> set:
    return {obj.name for obj in scene.objects if obj.get("vr_avatar_stream")}


def test_a_stream_loaded_in_a_linked_copy_leaves_the_other_scene_its_stream_empties(bpy, installed, stream):
    """A Linked Copy of a solved scene shares its stream empties (the left one edited by hand): a stream loaded in the
    copy gets empties of its own, and the first scene keeps its empties, the edit its solve reads included, without
    the copy's (they were removed from under it, and its solve read the file instead without a word)."""
    _solved(bpy, stream)
    first = bpy.context.scene
    left = first.vr_avatar.stream.left
    curve = _curve(installed, left, "location", 2)
    curve.keyframe_points[20].co.y += 0.05
    curve.update()
    assert bpy.ops.scene.new(type='LINK_COPY') == {'FINISHED'}
    copy = next(scene for scene in bpy.data.scenes if scene != first)
    kept = _stream_empties(first)
    with bpy.context.temp_override(scene=copy):
        assert bpy.ops.vr_avatar.load_stream(filepath=str(stream)) == {'FINISHED'}
    settings = first.vr_avatar.stream
    assert {settings.head.name, settings.left.name, settings.right.name} == _stream_empties(first) == kept
    assert not _stream_empties(copy) & kept and len(_stream_empties(copy)) == 3
    assert f"'{left.name}' edited at frame 21" in installed.scene_solver.read_stream(first)[1]
    assert installed.scene_solver.read_stream(copy)[1] == ""
    with bpy.context.temp_override(scene=first):  # loaded again where the empties are the scene's own: replaced
        assert bpy.ops.vr_avatar.load_stream(filepath=str(stream)) == {'FINISHED'}
    assert len(_stream_empties(first)) == 3 and not _stream_empties(first) & _stream_empties(copy)
    assert installed.scene_solver.read_stream(first)[1] == ""
    assert len(bpy.data.objects) == 7  # the armature and the two scenes' empties


def test_a_solve_onto_a_linked_armature_is_kept_for_it_not_for_a_local_one_of_its_name(bpy, installed, stream,
                                                                                       tmp_path):
    """A local armature 'Avatar' and one of that name linked from a library, the linked one the target: the solve is
    cached for the linked one and Bake refuses it as linked; scrubbing leaves the local one as it was (the cache took
    the one the name found first, the local one, which scrubbing posed and Bake keyed)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    build_rig(bpy, FIXTURE_WALK_1, "Avatar", MIXAMO, 0.9, 30.0, False, seed=1)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "library.blend"))
    local = _solved(bpy, stream)
    with bpy.data.libraries.load(str(tmp_path / "library.blend"), link=True) as (_, linked_data):
        linked_data.objects = ["Avatar"]
    linked = linked_data.objects[0]
    scene = bpy.context.scene
    scene.collection.objects.link(linked)
    scene.vr_avatar.target_armature = linked
    assert bpy.ops.vr_avatar.map_bones() == {'FINISHED'}
    assert bpy.ops.vr_avatar.solve_stream() == {'FINISHED'}
    assert scene[installed.solve_cache.KEY]["object"] == linked
    local_pose = [tuple(bone.rotation_quaternion) for bone in local.pose.bones]
    scene.frame_set(20)
    assert [tuple(bone.rotation_quaternion) for bone in local.pose.bones] == local_pose
    actions = set(bpy.data.actions)
    with pytest.raises(RuntimeError, match="Armature 'Avatar' is linked from"):
        bpy.ops.vr_avatar.bake_action()
    assert set(bpy.data.actions) == actions
