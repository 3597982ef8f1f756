"""The add-on's Stream section in the real bpy: a stream CSV as animated empties, exported back, and recording."""
import time
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import FIXTURE_WALK_1
from core.math import quat
from core.files.bvh import read_bvh
from core.devices.simulate import simulate_stream
from core.files.stream import read_stream, write_stream

TOLERANCE = 1e-4
# Samples (60 Hz) where a device is not tracked: the left controller lost mid-clip, the right one at the start.
LEFT_LOST = slice(60, 90)
RIGHT_LOST = slice(0, 12)
# Blender's frame is core's turned +90° about X.
Y_UP_TO_Z_UP = np.array([np.sqrt(0.5), np.sqrt(0.5), 0.0, 0.0])
NAMES = ("VR HMD", "VR Left Controller", "VR Right Controller")


def z_up(positions):
    p = np.asarray(positions)
    return np.stack([p[..., 0], -p[..., 2], p[..., 1]], axis=-1)


def assert_same_rotations(actual, expected):
    """Unit quaternions equal up to sign, within TOLERANCE."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    sign = np.where(np.sum(actual * expected, axis=-1, keepdims=True) < 0, -1.0, 1.0)
    np.testing.assert_allclose(actual * sign, expected, atol=TOLERANCE)


def held(values, tracked):
    """Reference hold: each untracked sample takes the last tracked one (the first tracked one before it)."""
    out, last = values.copy(), values[np.flatnonzero(tracked)[0]]
    for i in range(len(values)):
        if tracked[i]:
            last = values[i]
        out[i] = last
    return out


@pytest.fixture(scope="module")
def stream_csv(tmp_path_factory):
    """A stream simulated from the fixture walk of tests/data, with untracked stretches, written as CSV v1."""
    stream = simulate_stream(read_bvh(FIXTURE_WALK_1)).stream
    stream.tracked[LEFT_LOST, 1] = False
    stream.tracked[RIGHT_LOST, 2] = False
    stream.positions[~stream.tracked] = np.nan
    stream.rotations[~stream.tracked] = np.nan
    path = tmp_path_factory.mktemp("stream") / "walk.csv"
    write_stream(path, stream)
    return path


@pytest.fixture
def loaded(bpy, empty_scene, stream_csv):
    """The stream loaded into a fresh scene; returns (scene, the resampled stream the empties should follow)."""
    assert bpy.ops.vr_avatar.load_stream(filepath=str(stream_csv)) == {'FINISHED'}
    fps = empty_scene.render.fps / empty_scene.render.fps_base
    return empty_scene, read_stream(stream_csv).resampled(fps)


def stream_empties(bpy):
    return sorted(obj.name for obj in bpy.data.objects if obj.get("vr_avatar_stream"))


def test_load_stream_animates_three_empties_in_blenders_frame(bpy, loaded):
    scene, expected = loaded
    settings = scene.vr_avatar.stream
    empties = (settings.head, settings.left, settings.right)
    assert tuple(obj.name for obj in empties) == NAMES
    assert all(obj.type == 'EMPTY' and obj.rotation_mode == 'QUATERNION' for obj in empties)
    assert {c.name for c in empties[0].users_collection} == {"VR Stream"}
    assert scene.frame_end >= scene.frame_start + len(expected) - 1

    left_lost = np.flatnonzero(~expected.tracked[:, 1])
    assert len(left_lost) > 5 and not expected.tracked[0, 2]
    samples = sorted({0, 1, 17, len(expected) // 2, len(expected) - 1, *left_lost[[0, len(left_lost) // 2, -1]]})
    for device, obj in enumerate(empties):
        positions = held(expected.positions[:, device], expected.tracked[:, device])
        rotations = held(expected.rotations[:, device], expected.tracked[:, device])
        for sample in samples:
            scene.frame_set(scene.frame_start + sample)
            matrix = obj.matrix_world
            np.testing.assert_allclose(matrix.translation, z_up(positions[sample]), atol=TOLERANCE)
            assert_same_rotations(matrix.to_quaternion(), quat.multiply(Y_UP_TO_Z_UP, rotations[sample]))
            assert obj["tracked"] == int(expected.tracked[sample, device])


def test_untracked_frames_hold_the_last_tracked_pose(bpy, loaded):
    scene, expected = loaded
    left = scene.vr_avatar.stream.left
    lost = np.flatnonzero(~expected.tracked[:, 1])
    last_tracked = lost[0] - 1
    scene.frame_set(scene.frame_start + last_tracked)
    before = np.array(left.matrix_world)
    for sample in lost:
        scene.frame_set(scene.frame_start + sample)
        assert left["tracked"] == 0
        np.testing.assert_allclose(np.array(left.matrix_world), before, atol=TOLERANCE)
    scene.frame_set(scene.frame_start + lost[-1] + 1)
    assert left["tracked"] == 1
    np.testing.assert_allclose(left.matrix_world.translation, z_up(expected.positions[lost[-1] + 1, 1]), atol=TOLERANCE)


def test_export_stream_round_trips_the_loaded_stream(bpy, loaded, tmp_path):
    scene, expected = loaded
    scene.frame_set(7)
    exported = tmp_path / "exported.csv"
    assert bpy.ops.vr_avatar.export_stream(filepath=str(exported)) == {'FINISHED'}
    assert scene.frame_current == 7
    stream = read_stream(exported)
    assert len(stream) == len(expected)
    np.testing.assert_allclose(stream.times, expected.times, atol=TOLERANCE)
    np.testing.assert_array_equal(stream.tracked, expected.tracked)
    tracked = expected.tracked
    np.testing.assert_allclose(stream.positions[tracked], expected.positions[tracked], atol=TOLERANCE)
    assert_same_rotations(stream.rotations[tracked], expected.rotations[tracked])


def test_export_follows_empties_edited_by_hand(bpy, loaded, tmp_path):
    scene, expected = loaded
    head = scene.vr_avatar.stream.head
    head.animation_data.action = None  # the user replaces the animation by a fixed pose
    head.location = (0.5, -2.0, 1.6)
    head.rotation_quaternion = Y_UP_TO_Z_UP  # level, looking along Blender's +Y
    left = scene.vr_avatar.stream.left
    left.animation_data.action = None  # reset to the origin: still a tracked pose
    left.location, left.rotation_quaternion, left["tracked"] = (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0), 1
    exported = tmp_path / "edited.csv"
    assert bpy.ops.vr_avatar.export_stream(filepath=str(exported)) == {'FINISHED'}
    stream = read_stream(exported)
    assert len(stream) == len(expected)
    np.testing.assert_allclose(stream.positions[:, 0], np.tile([0.5, 1.6, 2.0], (len(stream), 1)), atol=TOLERANCE)
    assert_same_rotations(stream.rotations[:, 0], np.tile([1.0, 0.0, 0.0, 0.0], (len(stream), 1)))
    assert stream.tracked[:, 1].all()
    np.testing.assert_allclose(stream.positions[:, 1], 0.0, atol=TOLERANCE)
    assert_same_rotations(stream.rotations[:, 1], np.tile([np.sqrt(0.5), -np.sqrt(0.5), 0.0, 0.0], (len(stream), 1)))


def test_loading_twice_replaces_only_the_add_ons_empties(bpy, loaded, stream_csv):
    scene, _ = loaded
    own = bpy.data.objects.new("My Empty", None)
    scene.collection.objects.link(own)
    own_action = bpy.data.actions.new("My Action")
    actions = len(bpy.data.actions)
    assert bpy.ops.vr_avatar.load_stream(filepath=str(stream_csv)) == {'FINISHED'}
    assert stream_empties(bpy) == sorted(NAMES)
    assert len(bpy.data.actions) == actions
    assert len([c for c in bpy.data.collections if c.name.startswith("VR Stream")]) == 1
    assert bpy.data.objects.get("My Empty") == own and bpy.data.actions.get("My Action") == own_action
    assert tuple(o.name for o in (scene.vr_avatar.stream.head, scene.vr_avatar.stream.left,
                                  scene.vr_avatar.stream.right)) == NAMES


def _broken(stream_csv, tmp_path, kind):
    lines = stream_csv.read_text().splitlines()
    if kind == "time backwards":
        fields = lines[49].split(",")
        fields[0] = "0.1"
        lines[49] = ",".join(fields)
    elif kind == "missing column":
        header = lines[0].split(",")
        drop = header.index("right_qz")
        lines = [",".join(f for i, f in enumerate(line.split(",")) if i != drop) for line in lines]
    else:
        lines[79] = lines[79].rsplit(",", 2)[0]
    path = tmp_path / f"{kind.replace(' ', '_')}.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("kind, message", [
    ("time backwards", r"time_backwards\.csv, line 50: time 0\.1 does not increase"),
    ("missing column", r"missing_column\.csv, line 1: header lacks column\(s\) right_qz"),
    ("short row", r"short_row\.csv, line 80: 23 fields, the header has 25"),
])
def test_bad_stream_reports_the_line_and_creates_nothing(bpy, empty_scene, stream_csv, tmp_path, kind, message):
    counts = (len(bpy.data.objects), len(bpy.data.actions), len(bpy.data.collections))
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.vr_avatar.load_stream(filepath=str(_broken(stream_csv, tmp_path, kind)))
    assert (len(bpy.data.objects), len(bpy.data.actions), len(bpy.data.collections)) == counts
    assert empty_scene.vr_avatar.stream.head is None and empty_scene.vr_avatar.stream.stream_path == ""


def test_export_refuses_to_replace_the_loaded_stream_and_takes_never_replace_a_file(bpy, installed, loaded, stream_csv, monkeypatch):
    scene, _ = loaded
    before = stream_csv.read_bytes()
    with pytest.raises(RuntimeError, match="is also an input"):
        bpy.ops.vr_avatar.export_stream(filepath=str(stream_csv))
    assert stream_csv.read_bytes() == before
    # A take never replaces a file: Record To names the takes, each numbered past the files already there.
    taken = stream_csv.with_name(f"{stream_csv.stem}_001.csv")
    taken.write_bytes(before)
    assert installed.recording.take_path(stream_csv) == stream_csv.with_name(f"{stream_csv.stem}_002.csv")
    taken.unlink()


def test_export_without_a_stream_says_to_load_one(bpy, empty_scene, tmp_path):
    with pytest.raises(RuntimeError, match="Load a stream first"):
        bpy.ops.vr_avatar.export_stream(filepath=str(tmp_path / "none.csv"))
    assert not (tmp_path / "none.csv").exists()


def test_record_without_a_vr_session_says_how_to_start_one(bpy, installed, empty_scene, tmp_path):
    assert bpy.context.window_manager.xr_session_state is None
    target = tmp_path / "recorded.csv"
    empty_scene.vr_avatar.stream.record_path = str(target)
    objects = len(bpy.data.objects)
    for call in (lambda: bpy.ops.vr_avatar.record_stream(), lambda: bpy.ops.vr_avatar.record_stream('INVOKE_DEFAULT')):
        with pytest.raises(RuntimeError, match=r"No VR session is running: start one with the VR Scene Inspection "
                                               r"add-on \(View3D › Sidebar › VR\) and a connected headset"):
            call()
    assert not target.exists() and len(bpy.data.objects) == objects
    assert not installed.operators.stream.VR_AVATAR_OT_record_stream.is_recording()


def test_controller_button_is_refused_for_blenders_vr_session(bpy, installed, empty_scene, tmp_path, monkeypatch):
    monkeypatch.setattr(installed.recording, "vr_session_running", lambda _context: True)
    stream = empty_scene.vr_avatar.stream
    stream.record_path, stream.record_by_button = str(tmp_path / "recorded.csv"), True
    with pytest.raises(RuntimeError, match="Controller Button works with Record OpenXR only"):
        bpy.ops.vr_avatar.record_stream('INVOKE_DEFAULT', source='BLENDER_VR')
    assert not list(tmp_path.iterdir()) and not installed.operators.stream.VR_AVATAR_OT_record_stream.is_recording()


def test_button_presses_are_the_first_held_samples(installed):
    presses = installed.recording.ButtonPresses()
    assert [presses.pressed(h) for h in (False, True, True, False, True, False, False, True)] == \
        [False, True, False, False, True, False, False, True]


def test_recording_writes_the_sampled_poses_in_cores_frame(bpy, installed, empty_scene, tmp_path, monkeypatch):
    """The recorder up to the headset: a session said to run, poses from a stand-in, events delivered by hand."""
    operators, recording = installed.operators.stream, installed.recording
    head = ([0.1, -0.5, 1.65], Y_UP_TO_Z_UP)
    left, right = ([0.3, -0.2, 1.0], [1.0, 0.0, 0.0, 0.0]), ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0])  # right unseen
    samples = iter([(np.array([head[0], left[0], right[0]]) + np.outer([1, 1, 0], [0.0, 0.01 * k, 0.0]),
                     np.array([head[1], left[1], right[1]])) for k in range(3)])
    monkeypatch.setattr(recording, "vr_session_running", lambda _context: True)
    monkeypatch.setattr(recording, "xr_poses", lambda _context, _state: next(samples))
    empty_scene.vr_avatar.stream.record_path = str(tmp_path / "recorded.csv")
    empty_scene.vr_avatar.stream.countdown_s = 0.0
    target = tmp_path / "recorded_001.csv"
    assert bpy.ops.vr_avatar.record_stream('INVOKE_DEFAULT') == {'RUNNING_MODAL'}
    recorder = operators.VR_AVATAR_OT_record_stream._recording
    for _ in range(3):
        time.sleep(0.002)
        assert recorder.modal(bpy.context, SimpleNamespace(type='TIMER', value='NOTHING', timer=recorder.timer)) \
            == {'PASS_THROUGH'}
    assert bpy.ops.vr_avatar.record_stream() == {'FINISHED'}  # the second call asks the recorder to stop
    assert recorder.modal(bpy.context, SimpleNamespace(type='MOUSEMOVE', value='NOTHING', timer=None)) == {'FINISHED'}
    assert not operators.VR_AVATAR_OT_record_stream.is_recording()

    stream = read_stream(target)
    assert len(stream) == 3 and np.all(np.diff(stream.times) > 0)
    np.testing.assert_array_equal(stream.tracked, np.tile([True, True, False], (3, 1)))
    np.testing.assert_allclose(stream.positions[:, 0], [[0.1, 1.65, 0.5], [0.1, 1.65, 0.49], [0.1, 1.65, 0.48]],
                               atol=1e-6)
    assert_same_rotations(stream.rotations[:, 0], np.tile([1.0, 0.0, 0.0, 0.0], (3, 1)))
    np.testing.assert_allclose(stream.positions[0, 1], [0.3, 1.0, 0.2], atol=1e-6)


def _record_take(bpy, recorder_class, poses: int, countdown_ticks: int = 0):
    """One take through the operator: `countdown_ticks` timer events first, then `poses` sampled ones."""
    assert bpy.ops.vr_avatar.record_stream('INVOKE_DEFAULT') == {'RUNNING_MODAL'}
    recorder = recorder_class._recording
    for _ in range(countdown_ticks):
        recorder.modal(bpy.context, SimpleNamespace(type='TIMER', value='NOTHING', timer=recorder.timer))
    if countdown_ticks:
        recorder.recording.start = time.perf_counter()  # the countdown over
    for _ in range(poses):
        time.sleep(0.002)
        recorder.modal(bpy.context, SimpleNamespace(type='TIMER', value='NOTHING', timer=recorder.timer))
    assert bpy.ops.vr_avatar.record_stream() == {'FINISHED'}
    assert recorder.modal(bpy.context, SimpleNamespace(type='ESC', value='PRESS', timer=None)) == {'FINISHED'}


def test_takes_are_files_of_their_own_listed_and_kept_in_the_blend(bpy, installed, empty_scene, tmp_path,
                                                                  monkeypatch):
    """Two takes: the countdown's ticks sample nothing; each take its own numbered file, listed with its length;
    the list survives saving and reopening the .blend; Load Take loads one."""
    recording = installed.recording
    step = iter(range(1000))
    monkeypatch.setattr(recording, "vr_session_running", lambda _context: True)
    monkeypatch.setattr(recording, "xr_poses", lambda _context, _state: (
        np.array([[0.0, -0.01 * next(step), 1.6], [0.3, -0.2, 1.0], [-0.3, -0.2, 1.0]]), np.tile(Y_UP_TO_Z_UP, (3, 1))))
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "takes.blend"))
    stream = bpy.context.scene.vr_avatar.stream
    stream.record_path, stream.countdown_s = "//take.csv", 30.0
    _record_take(bpy, installed.operators.stream.VR_AVATAR_OT_record_stream, 4, countdown_ticks=5)
    _record_take(bpy, installed.operators.stream.VR_AVATAR_OT_record_stream, 6, countdown_ticks=2)
    assert [len(read_stream(tmp_path / f"take_00{k}.csv")) for k in (1, 2)] == [4, 6]
    assert [(t.name, t.samples) for t in stream.takes] == [("take_001", 4), ("take_002", 6)]
    assert stream.takes_index == 1 and stream.takes[0].duration_s > 0.0 and not stream.takes[0].calibrated
    bpy.ops.wm.save_mainfile()
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "takes.blend"))
    stream = bpy.context.scene.vr_avatar.stream
    assert [(t.name, t.path, t.samples) for t in stream.takes] == [("take_001", "//take_001.csv", 4),
                                                                  ("take_002", "//take_002.csv", 6)]
    stream.takes_index = 0
    assert bpy.ops.vr_avatar.load_take() == {'FINISHED'}
    assert bpy.path.abspath(stream.stream_path) == str(tmp_path / "take_001.csv")
    assert bpy.ops.vr_avatar.remove_take() == {'FINISHED'}
    assert [t.name for t in stream.takes] == ["take_002"] and (tmp_path / "take_001.csv").exists()


def test_a_take_is_resampled_to_the_chosen_rate(bpy, installed, empty_scene, tmp_path, monkeypatch):
    """Rate 30 Hz: the take's samples every 1/30 s from its first, what the session gave in between interpolated,
    and the file says so."""
    recording = installed.recording
    step = iter(range(1000))
    monkeypatch.setattr(recording, "vr_session_running", lambda _context: True)
    monkeypatch.setattr(recording, "xr_poses", lambda _context, _state: (
        np.array([[0.0, -0.01 * next(step), 1.6], [0.3, -0.2, 1.0], [-0.3, -0.2, 1.0]]), np.tile(Y_UP_TO_Z_UP, (3, 1))))
    stream = empty_scene.vr_avatar.stream
    stream.record_path, stream.countdown_s, stream.record_rate = str(tmp_path / "rated.csv"), 0.0, '30'
    assert bpy.ops.vr_avatar.record_stream('INVOKE_DEFAULT') == {'RUNNING_MODAL'}
    recorder = installed.operators.stream.VR_AVATAR_OT_record_stream._recording
    for _ in range(12):
        time.sleep(0.012)
        recorder.modal(bpy.context, SimpleNamespace(type='TIMER', value='NOTHING', timer=recorder.timer))
    assert bpy.ops.vr_avatar.record_stream() == {'FINISHED'}
    assert recorder.modal(bpy.context, SimpleNamespace(type='ESC', value='PRESS', timer=None)) == {'FINISHED'}
    stream.record_rate = '0'
    taken = read_stream(tmp_path / "rated_001.csv")
    np.testing.assert_allclose(np.diff(taken.times), 1.0 / 30.0, atol=2e-3)  # the file's millisecond clock
    assert 3 <= len(taken) <= 6 and taken.tracked.all()
    assert "# resampled to 30 Hz" in (tmp_path / "rated_001.csv").read_text()


def test_vr_session_poses_convert_to_stream_rows(installed):
    """Poses as Blender's VR session gives them (Blender's frame) become CSV v1 rows in core's frame."""
    level_facing_minus_y = quat.multiply(quat.from_axis_rotation("z", np.pi), Y_UP_TO_Z_UP)
    positions = [[[0.0, 0.0, 1.7], [0.3, -0.2, 1.0], [-0.3, -0.2, 1.0]],
                 [[1.0, 2.0, 1.6], [0.0, 0.0, 0.0], [0.5, 0.5, 0.5]],
                 [[1.0, 2.0, 1.6], [0.1, 0.1, 0.1], [0.0, 0.0, 0.0]]]
    rotations = [[[1.0, 0.0, 0.0, 0.0], level_facing_minus_y, Y_UP_TO_Z_UP],
                 [level_facing_minus_y, [0.0, 0.0, 0.0, 0.0], [2.0, 0.0, 0.0, 0.0]],
                 [level_facing_minus_y, [1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]]
    stream = installed.stream_objects.stream_from_xr_poses([0.0, 0.011, 0.022], positions, rotations)

    np.testing.assert_allclose(stream.times, [0.0, 0.011, 0.022])
    # A zero quaternion, or the origin with the identity (a controller the session has not seen), is untracked.
    np.testing.assert_array_equal(stream.tracked, [[True, True, True], [True, False, True], [True, True, False]])
    np.testing.assert_allclose(stream.positions[0], [[0.0, 1.7, 0.0], [0.3, 1.0, 0.2], [-0.3, 1.0, 0.2]], atol=1e-12)
    np.testing.assert_allclose(stream.positions[1, [0, 2]], [[1.0, 1.6, -2.0], [0.5, 0.5, -0.5]], atol=1e-12)
    assert np.isnan(stream.positions[1, 1]).all() and np.isnan(stream.rotations[1, 1]).all()
    forward, up = np.array([0.0, 0.0, -1.0]), np.array([0.0, 1.0, 0.0])
    # The identity pose in Blender looks down Blender's -Z, which is down in core too.
    np.testing.assert_allclose(quat.rotate(stream.rotations[0, 0], forward), [0.0, -1.0, 0.0], atol=1e-12)
    # Level and facing Blender's -Y: facing core's +Z, upright; a half turn about +Y.
    assert_same_rotations(stream.rotations[0, 1], [0.0, 0.0, 1.0, 0.0])
    np.testing.assert_allclose(quat.rotate(stream.rotations[0, 1], up), up, atol=1e-12)
    # Blender's +90° about X (a camera's front view, facing Blender's +Y) is core's identity.
    assert_same_rotations(stream.rotations[0, 2], [1.0, 0.0, 0.0, 0.0])
    # A non-unit quaternion is normalised.
    assert_same_rotations(stream.rotations[1, 2], [np.sqrt(0.5), -np.sqrt(0.5), 0.0, 0.0])


def test_recording_warns_about_session_settings_that_lose_the_room(bpy, installed):
    settings = bpy.context.window_manager.xr_session_settings
    saved = settings.use_positional_tracking, settings.use_absolute_tracking
    try:
        settings.use_positional_tracking, settings.use_absolute_tracking = True, True
        assert installed.recording.recording_warnings(settings) == []
        settings.use_positional_tracking, settings.use_absolute_tracking = False, False
        warnings = installed.recording.recording_warnings(settings)
        assert [w.split(" is off")[0] for w in warnings] == ["Positional Tracking", "Absolute Tracking"]
    finally:
        settings.use_positional_tracking, settings.use_absolute_tracking = saved


def test_vr_poses_round_trip_through_the_stream(installed):
    rng = np.random.default_rng(3)
    positions = rng.normal(size=(20, 3, 3))
    rotations = quat.normalize(rng.normal(size=(20, 3, 4)))
    stream = installed.stream_objects.stream_from_xr_poses(np.arange(20) / 90.0, positions, rotations)
    assert stream.tracked.all()
    np.testing.assert_allclose(z_up(stream.positions), positions, atol=1e-12)
    assert_same_rotations(quat.multiply(Y_UP_TO_Z_UP, stream.rotations), rotations)
