"""Live Preview and Record over a session against a real OpenXR runtime (Monado's simulated headset and controllers,
headless, loaded into this process): started and stopped again and again, the scene changed under a running preview,
takes recorded while it runs, the runtime lost."""
import os
from types import SimpleNamespace

import numpy as np
import pytest

import xr_runtime
from conftest import FIXTURE_WALK_1

TIMER = SimpleNamespace(type='TIMER', value='NOTHING', timer=None)
ESC = SimpleNamespace(type='ESC', value='PRESS', timer=None)


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _handles() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(scope="module")
def runtime(installed):
    """Monado made this process's OpenXR runtime (read when the first instance is made); skipped where it was not
    built or the extension carries no pyopenxr."""
    if not xr_runtime.is_built():
        pytest.skip("the OpenXR runtime (Monado) is not built: python build.py xr-runtime")
    try:
        import xr  # noqa: F401 (the extension's bundled wheel, on sys.path once installed)
    except ImportError:
        pytest.skip("the extension carries no pyopenxr (VR_AVATAR_EXTENSION_WHEELS)")
    os.environ.update(xr_runtime.environment("simple", "simple"))


@pytest.fixture
def avatar(bpy, installed, runtime):
    """A fresh file: the fixture walk's armature as the mapped target, solved by Neural3Points (no database)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    assert bpy.ops.vr_avatar.import_bvh(filepath=str(FIXTURE_WALK_1)) == {'FINISHED'}
    obj = bpy.context.view_layer.objects.active
    obj.animation_data.action = None
    scene.vr_avatar.target_armature = obj
    assert bpy.ops.vr_avatar.map_bones() == {'FINISHED'}
    solve = scene.vr_avatar.solve
    solve.method, solve.calibration, solve.user_height = 'N3P', 'EXPLICIT', 1.6
    return obj


def _pose(obj):
    return [(b.rotation_mode, *b.rotation_quaternion, *b.location) for b in obj.pose.bones]


def _start(bpy, installed):
    assert bpy.ops.vr_avatar.preview_live(source='OPENXR') == {'RUNNING_MODAL'}
    return installed.operators.live.VR_AVATAR_OT_preview_live.running()



def _tick(bpy, preview, ticks: int = 3) -> set:
    """`ticks` timer events to the running preview, as Blender's event loop sends them: the last one's result."""
    for _ in range(ticks):
        result = preview.modal(bpy.context, TIMER)
    return result


def _start_recording(bpy, installed, folder):
    """Record OpenXR into `folder` (take.csv, no countdown): the running recorder and a timer event for it."""
    settings = bpy.context.scene.vr_avatar.stream
    settings.record_path, settings.countdown_s = str(folder / "take.csv"), 0.0
    assert bpy.ops.vr_avatar.record_stream(source='OPENXR') == {'RUNNING_MODAL'}
    recorder = installed.operators.stream.VR_AVATAR_OT_record_stream._recording
    return recorder, SimpleNamespace(type='TIMER', value='NOTHING', timer=recorder.timer)


def _printed(capfd) -> str:
    """What was printed since the last call: Blender prints an operator's reports in the background."""
    out, err = capfd.readouterr()
    return out + err


def _stops_cleanly(bpy, installed, capfd) -> None:
    """No preview left running, no traceback printed, and the runtime free for the next one (its instance closed:
    the OpenXR loader allows one at a time)."""
    assert installed.operators.live.VR_AVATAR_OT_preview_live.running() is None
    installed.core.devices.openxr_source.OpenXRSource().close()
    assert "Traceback" not in _printed(capfd)


def test_live_preview_started_and_stopped_ten_times_releases_the_runtime_each_time(bpy, installed, avatar, capfd):
    """Ten starts and stops in one session: each poses the avatar, Esc puts its pose back and leaves it undriven, and
    the runtime's threads and handles do not pile up."""
    before, counts = _pose(avatar), []
    for _ in range(10):
        preview = _start(bpy, installed)
        assert _tick(bpy, preview) == {'RUNNING_MODAL'} and _pose(avatar) != before
        assert preview.modal(bpy.context, ESC) == {'FINISHED'}
        assert _pose(avatar) == before and installed.operators.live.VR_AVATAR_OT_preview_live.running() is None
        bpy.context.scene.frame_set(2)
        assert _pose(avatar) == before
        counts.append((_threads(), _handles()))
    assert counts[-1] == counts[1]  # the first start loads what stays (models, the runtime's library)
    assert "Traceback" not in _printed(capfd)


@pytest.mark.parametrize("how", ["removed", "deleted"])
def test_the_armature_taken_away_while_previewing_stops_the_preview_in_one_line(bpy, installed, avatar, capfd, how):
    """Removed from the file or deleted from the scene while the preview runs: the next tick stops it in one line,
    closing the runtime's session. Before, a removed one raised a ReferenceError every tick, the session left open
    refusing every later Live Preview or Record OpenXR ('LimitReachedError'); a deleted one went on being driven."""
    before, name = _pose(avatar), avatar.name
    preview = _start(bpy, installed)
    _tick(bpy, preview)
    if how == "removed":
        bpy.data.objects.remove(avatar)
    else:
        bpy.ops.object.select_all(action='DESELECT')
        avatar.select_set(True)
        assert bpy.ops.object.delete() == {'FINISHED'}
    expected = ("Select an armature as the Target Armature (VR Avatar › Avatar)" if how == "removed" else
                f"Target Armature '{name}' is not in scene 'Scene' (deleted, or in another scene): pick another or "
                "link it back")
    with pytest.raises(installed.errors.VRAvatarError) as error:  # the operator's error: 'Live preview stopped: ...'
        preview.live.tick(bpy.context, print)
    assert str(error.value) == expected
    assert preview.modal(bpy.context, TIMER) == {'FINISHED'}
    if how == "deleted":
        assert _pose(avatar) == before  # put back, and driven no more
    _stops_cleanly(bpy, installed, capfd)


def _other_armature(bpy, avatar):
    """A second mapped armature: the avatar's copy, linked into the scene."""
    other = avatar.copy()
    other.data = avatar.data.copy()
    other.name = "Other"
    bpy.context.scene.collection.objects.link(other)
    return other


@pytest.mark.parametrize("change", ["target", "method", "size", "physics", "undone", "renamed"])
def test_the_preview_follows_what_changes_under_it(bpy, installed, avatar, capfd, change):
    """Another Target Armature, Method, Avatar Size or Physics, or the armature read back by undo while the preview
    runs: the next tick drives an avatar made anew from the scene (the old armature's pose put back); renamed, the
    same one goes on. Before, the preview went on driving the armature and solver it started with, and the armature
    undone raised a ReferenceError every tick."""
    bpy.ops.ed.undo_push(message="Import BVH")  # the steps the panel's operators push in a session
    bpy.ops.ed.undo_push(message="Map Bones")
    scene, before = bpy.context.scene, _pose(avatar)
    preview = _start(bpy, installed)
    _tick(bpy, preview)
    first = preview.live.avatar
    if change == "target":
        other = _other_armature(bpy, avatar)
        other_before = _pose(other)
        scene.vr_avatar.target_armature = other
    elif change == "method":
        scene.vr_avatar.solve.method = 'HYBRID'
    elif change == "size":
        scene.vr_avatar.solve.avatar_size = 'KEEP'
    elif change == "physics":
        scene.vr_avatar.solve.physics = True
    elif change == "undone":
        assert bpy.ops.ed.undo() == {'FINISHED'}
    else:
        avatar.name = "Renamed"
    assert _tick(bpy, preview) == {'RUNNING_MODAL'}
    live = preview.live.avatar
    assert (live is first) == (change == "renamed")
    if change == "target":
        assert live.obj == other and _pose(avatar) == before and _pose(other) != other_before
    elif change == "method":
        assert type(live.solver).__name__ == "HybridSolver"
    elif change == "size":
        assert live.live.size == "keep"
    elif change == "physics":
        assert type(live.solver).__name__ == "PhysicalSolver"
    elif change == "undone":
        avatar = bpy.context.scene.vr_avatar.target_armature  # the file's data read back anew
        assert live.obj == avatar and _pose(avatar) != before
    assert preview.modal(bpy.context, ESC) == {'FINISHED'}
    assert _pose(live.obj) == (other_before if change == "target" else before)
    _stops_cleanly(bpy, installed, capfd)


@pytest.mark.parametrize("calibrate", [True, False], ids=["calibrate", "as-held"])
def test_the_gesture_at_the_previews_start_calibrates_the_live_avatar(bpy, installed, avatar, capfd, monkeypatch,
                                                                      tmp_path, calibrate):
    """The preview fed a stream that starts with the calibration gesture, the controllers held up to 3 cm and 15
    degrees off, one frame a tick at the stream's own times: with Calibrate Devices the grips are read from the
    gesture as a solve reads them from the file, the status bar says so once, the calibration outlives the avatar
    made anew when the scene changes, and a take recorded after it, without a gesture of its own, stores it (its
    solve saw the controllers as assumed before); without it the devices are taken as they come."""
    from device_streams import NOISY
    core = installed.core
    simulated = core.devices.simulate.simulate_stream(core.files.bvh.read_bvh(FIXTURE_WALK_1)[:150], NOISY)
    stream = simulated.stream
    bpy.context.scene.vr_avatar.solve.calibrate_devices = calibrate
    preview = _start(bpy, installed)
    frame = iter(range(len(stream)))
    clock = {"now": 0.0}
    monkeypatch.setattr(installed.live_preview.time, "perf_counter", lambda: clock["now"])

    def reading(_context):
        t = next(frame)
        clock["now"] = float(stream.times[t])
        return stream.positions[t], stream.rotations[t], stream.tracked[t]

    preview.live.source.read = reading
    reports = []
    for _ in range(int(np.searchsorted(stream.times, 3.5))):
        assert preview.live.tick(bpy.context, lambda _kind, line: reports.append(line))
    if calibrate:
        found = preview.live.calibration.calibration
        offline = core.devices.calibration.calibrate_stream(stream)
        assert found.found and np.abs(np.array(found.grip_offsets_m) - np.array(offline.grip_offsets_m)).max() < 1e-9
        bpy.context.scene.vr_avatar.solve.avatar_size = 'KEEP'
        first = preview.live.avatar
        _tick(bpy, preview)
        assert preview.live.avatar is not first and preview.live.avatar.live.calibration.calibration is found
    else:
        assert preview.live.calibration is None and preview.live.avatar.live.calibration is None
    monkeypatch.undo()
    settings = bpy.context.scene.vr_avatar.stream
    recorder, tick = _start_recording(bpy, installed, tmp_path)
    for _ in range(10):
        recorder.modal(bpy.context, tick)
    recorder.stop_requested = True
    assert recorder.modal(bpy.context, tick) == {'FINISHED'}
    stored = core.devices.calibration.stored_calibration(tmp_path / "take_001.csv")
    assert settings.takes[-1].calibrated == calibrate
    if calibrate:
        assert stored.found and np.array_equal(np.array(stored.grip_offsets_m, dtype=float).round(4),
                                               np.array(found.grip_offsets_m, dtype=float).round(4))
    else:
        assert stored is None
    assert preview.modal(bpy.context, ESC) == {'FINISHED'}
    assert installed.recording.Recording.live_calibration is None
    lines = [line for line in reports if "calibration" in line]  # besides the runtime's status
    assert lines == (["Live Preview: calibration gesture found (T-pose); left and right grips measured"]
                     if calibrate else [])
    _stops_cleanly(bpy, installed, capfd)


def test_another_file_opened_while_previewing_ends_the_preview(bpy, installed, avatar, capfd):
    """Another file opened while the preview runs: Blender cancels the operator, which closes the runtime's session.
    Before, the operator had no cancel: the session stayed open, and every later Live Preview or Record OpenXR in the
    session was refused ('creating the OpenXR instance failed: LimitReachedError')."""
    _tick(bpy, _start(bpy, installed))
    assert bpy.ops.wm.read_homefile(use_empty=True) == {'FINISHED'}
    _stops_cleanly(bpy, installed, capfd)


def _runtime_fails(monkeypatch) -> None:
    """The runtime answers the next calls with XR_ERROR_RUNTIME_FAILURE, as one that crashed or went away does."""
    import xr

    monkeypatch.setattr(xr.raw_functions, "xrPollEvent", lambda *_: xr.Result.ERROR_RUNTIME_FAILURE)


@pytest.mark.parametrize("what", ["lost", "failed"])
def test_the_runtime_going_away_stops_the_preview(bpy, installed, avatar, capfd, monkeypatch, what):
    """The session lost, or the runtime failing, mid-preview: the next tick stops the preview and closes the source,
    the pose put back; the reason is the source's status line. Before, a failing runtime raised RuntimeFailureError
    out of every tick (Blender ends the operator then, the session left open)."""
    before = _pose(avatar)
    preview = _start(bpy, installed)
    _tick(bpy, preview)
    source = preview.live.source
    if what == "lost":
        source.source.lifecycle.on_lost("session")
    else:
        _runtime_fails(monkeypatch)
    assert preview.modal(bpy.context, TIMER) == {'FINISHED'}
    expected = ("the session was lost" if what == "lost" else
                "the OpenXR runtime failed (RuntimeFailureError: The runtime failed")
    assert source.status(None).startswith(f"the OpenXR session stopped: {expected}")  # 'Live preview stopped: <this>'
    assert source.source.closed and _pose(avatar) == before
    monkeypatch.undo()
    _stops_cleanly(bpy, installed, capfd)


def test_the_runtime_failing_mid_take_ends_the_recording_and_keeps_the_take(bpy, installed, avatar, capfd,
                                                                            monkeypatch, tmp_path):
    """Record OpenXR, the runtime failing mid-take: the recording ends and writes what it had. Before, every tick
    raised RuntimeFailureError (Blender ends the operator then: the take never written, the session left open)."""
    stream = bpy.context.scene.vr_avatar.stream
    recorder, tick = _start_recording(bpy, installed, tmp_path)
    for _ in range(10):
        assert recorder.modal(bpy.context, tick) == {'PASS_THROUGH'}
    _runtime_fails(monkeypatch)
    recorder.modal(bpy.context, tick)
    assert recorder.modal(bpy.context, tick) == {'FINISHED'}
    assert [t.name for t in stream.takes] == ["take_001"] and (tmp_path / "take_001.csv").exists()
    assert recorder.recording.openxr.closed
    monkeypatch.undo()
    _stops_cleanly(bpy, installed, capfd)


def test_a_take_recorded_while_previewing_shares_the_runtime(bpy, installed, avatar, capfd, tmp_path):
    """Record OpenXR while Live Preview (OpenXR) runs: one OpenXR session for both (the loader allows one instance a
    process), the take written with the frames the preview's ticks polled too, the preview keyed as '<take> Live';
    the session closed once both have stopped. Before, the recording was refused (LimitReachedError)."""
    preview = _start(bpy, installed)
    _tick(bpy, preview)
    recorder, tick = _start_recording(bpy, installed, tmp_path)
    assert recorder.recording.openxr.source is preview.live.source.source.source
    for _ in range(20):  # the two timers take turns, each polling the runtime
        _tick(bpy, preview, 1)
        recorder.modal(bpy.context, tick)
    recorder.stop_requested = True
    assert recorder.modal(bpy.context, tick) == {'FINISHED'}
    take = installed.core.files.stream.read_stream(tmp_path / "take_001.csv")
    assert len(take) >= 30 and take.tracked[:, 0].all()
    assert not recorder.recording.openxr.closed  # the preview still reads it
    _tick(bpy, preview)
    assert "take_001 Live" in bpy.data.actions
    assert preview.modal(bpy.context, ESC) == {'FINISHED'}
    assert recorder.recording.openxr.closed
    _stops_cleanly(bpy, installed, capfd)


def test_a_second_live_preview_while_one_runs_is_refused_in_one_line(bpy, installed, avatar, capfd):
    """Live Preview started again while it runs: refused in one line, the running one going on alone (sharing the
    OpenXR session, a second would drive the same armature from a second solver)."""
    preview = _start(bpy, installed)
    _tick(bpy, preview)
    with pytest.raises(RuntimeError, match="Live Preview is already running: press Esc to stop it first"):
        bpy.ops.vr_avatar.preview_live(source='OPENXR')
    assert installed.operators.live.VR_AVATAR_OT_preview_live.running() is preview
    assert _tick(bpy, preview) == {'RUNNING_MODAL'}
    assert preview.modal(bpy.context, ESC) == {'FINISHED'}
    _stops_cleanly(bpy, installed, capfd)

