"""The OpenXR source up to the runtime boundary: pose conversion, the session state machine fed recorded
event sequences, and what really happens on a machine without an OpenXR runtime (this one)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.math import quat
from core.devices.openxr_frames import (ORIENTATION_TRACKED, ORIENTATION_VALID, POSITION_TRACKED, POSITION_VALID,
                                        TRACKED_FLAGS, devices_tracked, frame_from_poses, frames_to_stream,
                                        head_from_eyes, is_tracked, pick_reference_space, posef_array, stream_poses)
from core.devices.openxr_lifecycle import SessionCall, SessionLifecycle, SessionState, tracking_status
from core.devices.openxr_source import (NO_RUNTIME, PROFILES, RECORD_BUTTONS, OpenXRSource, OpenXRUnavailable,
                                        import_xr, record, runtime_extensions)
from core.files.stream import read_stream, write_stream

xr = pytest.importorskip("xr", reason="pyopenxr is a development dependency")

ROOT = Path(__file__).resolve().parents[2]
S = np.sqrt(0.5)


def _runtime_present() -> bool:
    try:
        xr.enumerate_instance_extension_properties()
    except xr.RuntimeUnavailableError:
        return False
    return True


needs_no_runtime = pytest.mark.skipif(_runtime_present(), reason="an OpenXR runtime is active on this machine")


# --- pose conversion ----------------------------------------------------------------------------


def test_posef_reorders_the_quaternion_to_w_first():
    # 90 degrees about +Y, as OpenXR writes it: x, y, z, w.
    pose = xr.Posef(orientation=xr.Quaternionf(0.0, S, 0.0, S), position=xr.Vector3f(0.1, 1.6, -0.3))
    raw = posef_array(pose)
    np.testing.assert_allclose(raw, [0.0, S, 0.0, S, 0.1, 1.6, -0.3], atol=1e-6)
    pose7 = stream_poses(raw)
    np.testing.assert_allclose(pose7[:3], [0.1, 1.6, -0.3], atol=1e-6)
    np.testing.assert_allclose(pose7[3:], [S, 0.0, S, 0.0], atol=1e-6)
    # Same axes as the stream: a device looking along -Z, turned 90 degrees left about +Y, looks along -X.
    np.testing.assert_allclose(quat.rotate(pose7[3:], np.array([0.0, 0.0, -1.0])), [-1.0, 0.0, 0.0], atol=1e-6)


def test_stream_poses_broadcast_and_renormalise():
    raw = np.array([[[0.0, 0.0, 0.0, 1.001, 1.0, 2.0, 3.0],   # float32 rounding: slightly off unit
                     [0.5, 0.5, 0.5, 0.5, -1.0, 0.0, 0.0]]])
    poses = stream_poses(raw)
    assert poses.shape == (1, 2, 7)
    np.testing.assert_allclose(poses[0, 0], [1.0, 2.0, 3.0, 1.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(poses[0, 1], [-1.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5])


def test_tracked_needs_every_valid_and_tracked_bit():
    assert TRACKED_FLAGS == int(xr.SpaceLocationFlags.ALL) == int(xr.ViewStateFlags.ALL)
    assert (ORIENTATION_VALID, POSITION_VALID, ORIENTATION_TRACKED, POSITION_TRACKED) == (
        int(xr.SpaceLocationFlags.ORIENTATION_VALID_BIT), int(xr.SpaceLocationFlags.POSITION_VALID_BIT),
        int(xr.SpaceLocationFlags.ORIENTATION_TRACKED_BIT), int(xr.SpaceLocationFlags.POSITION_TRACKED_BIT))
    flags = [0xF, 0x3, 0xE, 0xD, 0x0, 0x1F]
    np.testing.assert_array_equal(is_tracked(flags), [True, False, False, False, False, True])
    assert is_tracked(int(xr.SpaceLocationFlags.ALL))


def test_head_is_the_centre_between_the_eyes():
    forward = quat.identity()
    eyes = np.array([[-0.032, 1.70, 0.1, *forward], [0.032, 1.72, 0.1, *forward]])
    head = head_from_eyes(eyes)
    np.testing.assert_allclose(head[:3], [0.0, 1.71, 0.1])
    np.testing.assert_allclose(head[3:], forward)


def test_head_of_canted_eyes_looks_halfway_and_ignores_quaternion_sign():
    left = quat.from_yaw(np.radians(10.0))
    right = -quat.from_yaw(np.radians(-10.0))  # the same rotation as +q, written as -q
    head = head_from_eyes(np.array([[-0.03, 1.6, 0.0, *left], [0.03, 1.6, 0.0, *right]]))
    assert np.degrees(quat.angle_between(head[3:], quat.identity())) < 1e-6
    canted = head_from_eyes(np.array([[-0.03, 1.6, 0.0, *left], [0.03, 1.6, 0.0, *left]]))
    assert np.degrees(quat.angle_between(canted[3:], left)) < 1e-6


def test_frame_blanks_untracked_devices():
    poses = np.array([[0.0, 1.7, 0.0, 1.0, 0.0, 0.0, 0.0],
                      [-0.3, 1.0, -0.2, S, 0.0, S, 0.0],
                      [0.3, 1.0, -0.2, 1.0, 0.0, 0.0, 0.0]])
    frame = frame_from_poses(123_456_789, poses, [0xF, 0x3, 0xF])  # left hand only inferred
    assert frame.time_ns == 123_456_789
    np.testing.assert_array_equal(frame.tracked, [True, False, True])
    assert np.isnan(frame.positions[1]).all() and np.isnan(frame.rotations[1]).all()
    np.testing.assert_allclose(frame.positions[2], [0.3, 1.0, -0.2])
    np.testing.assert_allclose(frame.rotations[0], [1.0, 0.0, 0.0, 0.0])
    assert not np.isnan(poses).any()  # the caller's array is left alone
    with pytest.raises(ValueError, match=r"\(3, 7\)"):
        frame_from_poses(0, poses[:2], [0xF, 0xF])


def test_head_needs_a_tracked_orientation_and_a_valid_position_hands_every_bit():
    # 0x7: position valid but inferred (Monado's simulated HMD); 0xB: orientation only valid; 0xD: position invalid.
    np.testing.assert_array_equal(devices_tracked([0x7, 0x7, 0xF]), [True, False, True])
    np.testing.assert_array_equal(devices_tracked([0xB, 0xF, 0xE]), [False, True, False])
    np.testing.assert_array_equal(devices_tracked([0xD, 0x0, 0x1F]), [False, False, True])


def test_non_finite_poses_are_never_tracked():
    poses = np.tile([0.0, 1.7, 0.0, 1.0, 0.0, 0.0, 0.0], (3, 1))
    poses[1, 1], poses[2, 4] = np.nan, np.inf
    frame = frame_from_poses(1, poses, [0xF, 0xF, 0xF])
    np.testing.assert_array_equal(frame.tracked, [True, False, False])
    assert np.isnan(frame.positions[1:]).all() and np.isnan(frame.rotations[1:]).all()
    np.testing.assert_array_equal(frame.flags, [0xF, 0xF, 0xF])  # the runtime's word, kept as it was


def test_reference_space_falls_back_in_order():
    assert pick_reference_space(["VIEW", "LOCAL", "STAGE"]) == "STAGE"
    assert pick_reference_space(["VIEW", "LOCAL", "LOCAL_FLOOR"]) == "LOCAL_FLOOR"
    assert pick_reference_space(["VIEW", "LOCAL"]) == "LOCAL"
    assert pick_reference_space(["VIEW", "LOCAL", "STAGE"], ("LOCAL_FLOOR", "LOCAL")) == "LOCAL"
    assert pick_reference_space(["VIEW"], ("STAGE",)) == "LOCAL"  # every runtime has LOCAL


def test_headless_lifecycle_locates_while_ready():
    lifecycle = SessionLifecycle(headless=True)
    assert replay(lifecycle, [(READY, 1)])[0] == (SessionCall.BEGIN, True, True, True, False)


def test_status_tells_the_user_what_is_wrong():
    lifecycle = SessionLifecycle()
    assert "waiting for the OpenXR runtime" in tracking_status(lifecycle)
    replay(lifecycle, [(READY, 1), (SYNCHRONIZED, 2)])
    assert tracking_status(lifecycle).startswith("the headset is asleep or not being worn")
    replay(lifecycle, [(VISIBLE, 3)])
    assert "not focused" in tracking_status(lifecycle)
    replay(lifecycle, [(FOCUSED, 4)])
    assert tracking_status(lifecycle, np.array([True, True, True])) is None
    assert tracking_status(lifecycle, np.array([True, False, True])).startswith(
        "the left controller is off or not tracked")
    assert tracking_status(lifecycle, np.array([True, False, False])).startswith(
        "the left and right controllers are off")
    assert tracking_status(lifecycle, np.array([False, True, True])).startswith("the headset is not tracked")
    replay(lifecycle, [(LOSS_PENDING, 5)])
    assert tracking_status(lifecycle).startswith("the OpenXR session stopped: the session is being lost")


def _frames(times_ns, untracked_hand_at=()):
    frames = []
    for i, t in enumerate(times_ns):
        poses = np.tile([0.0, 1.7, 0.0, 1.0, 0.0, 0.0, 0.0], (3, 1))
        poses[:, 0] = [0.0, -0.3, 0.3]
        frames.append(frame_from_poses(t, poses, [0xF, 0x0 if i in untracked_hand_at else 0xF, 0xF]))
    return frames


def test_frames_become_a_stream_from_zero_seconds():
    start = 9_876_543_210_123  # a runtime clock far from zero, in nanoseconds
    stream = frames_to_stream(_frames([start, start + 11_111_111, start + 11_111_111, start + 22_222_222],
                                      untracked_hand_at=[3]))
    np.testing.assert_allclose(stream.times, [0.0, 0.011111111, 0.022222222], atol=1e-12)  # the repeat is dropped
    np.testing.assert_array_equal(stream.tracked[:, 1], [True, True, False])
    with pytest.raises(ValueError, match="nothing was tracked"):
        frames_to_stream([])


@pytest.mark.parametrize("rate", [None, 60.0, 200.0])
def test_frames_whose_display_time_steps_back_are_dropped_not_the_recording(rate):
    """A display time earlier than one before it, followed by another still earlier than that one: the stream kept
    the second ('stream times must be strictly increasing', the whole take lost at the end of a recording)."""
    stream = frames_to_stream(_frames(np.array([0, 11, 5, 8, 22, 33]) * 1_000_000), rate)
    assert np.all(np.diff(stream.times) > 0) and stream.times[-1] > 0.02
    assert 0.005 not in stream.times and 0.008 not in stream.times


def test_rate_thins_a_90_hz_runtime_to_60_hz():
    times = np.round(np.arange(0, 270) * 1e9 / 90).astype(np.int64)  # 3 s at 90 Hz
    stream = frames_to_stream(_frames(times), rate=60.0)
    assert 179 <= len(stream) <= 181
    assert np.all(np.diff(stream.times) >= 1 / 90 - 1e-9) and np.all(np.diff(stream.times) <= 2 / 90 + 1e-9)
    assert len(frames_to_stream(_frames(times))) == 270


def test_recorded_frames_round_trip_through_csv_with_validity(tmp_path):
    stream = frames_to_stream(_frames(np.arange(5) * 10_000_000, untracked_hand_at=[2]))
    path = tmp_path / "live.csv"
    write_stream(path, stream)
    assert "head_valid,left_valid,right_valid" in path.read_text()
    back = read_stream(path)
    np.testing.assert_array_equal(back.tracked, stream.tracked)
    np.testing.assert_allclose(back.times, stream.times)
    np.testing.assert_allclose(back.positions[back.tracked], stream.positions[stream.tracked], atol=1e-6)


# --- session state machine ----------------------------------------------------------------------

IDLE, READY, SYNCHRONIZED, VISIBLE, FOCUSED = (SessionState.IDLE, SessionState.READY, SessionState.SYNCHRONIZED,
                                               SessionState.VISIBLE, SessionState.FOCUSED)
STOPPING, LOSS_PENDING, EXITING = SessionState.STOPPING, SessionState.LOSS_PENDING, SessionState.EXITING


def replay(lifecycle: SessionLifecycle, events):
    """Feed (state, time) events; per event: (call, frame loop, locates head, locates hands, finished)."""
    steps = []
    for state, time_ns in events:
        call = lifecycle.on_state_changed(int(state), time_ns)
        steps.append((call, lifecycle.frame_loop, lifecycle.locates_head, lifecycle.locates_hands, lifecycle.finished))
    return steps


def test_states_are_openxrs():
    assert {s.name: s.value for s in SessionState} == {s.name: s.value for s in xr.SessionState}


def test_normal_start_and_application_stop():
    lifecycle = SessionLifecycle()
    assert not lifecycle.frame_loop and not lifecycle.finished
    steps = replay(lifecycle, [(READY, 10), (SYNCHRONIZED, 20), (VISIBLE, 30), (FOCUSED, 40)])
    assert [s[0] for s in steps] == [SessionCall.BEGIN, SessionCall.NONE, SessionCall.NONE, SessionCall.NONE]
    assert [s[1:4] for s in steps] == [(True, False, False), (True, False, False), (True, True, False),
                                       (True, True, True)]
    assert lifecycle.request_stop() == SessionCall.REQUEST_EXIT
    assert lifecycle.frame_loop and not lifecycle.finished  # frames go on until the runtime says STOPPING
    steps = replay(lifecycle, [(VISIBLE, 50), (SYNCHRONIZED, 60), (STOPPING, 70), (IDLE, 80), (EXITING, 90)])
    assert [s[0] for s in steps] == [SessionCall.NONE, SessionCall.NONE, SessionCall.END, SessionCall.NONE,
                                     SessionCall.NONE]
    assert [s[1] for s in steps] == [True, True, False, False, False]
    assert [s[4] for s in steps] == [False, False, False, False, True]
    assert lifecycle.stop_reason == "the session exited"
    assert lifecycle.history[0] == (READY, 10) and lifecycle.history[-1] == (EXITING, 90)


def test_loss_pending_stops_without_ending_the_session():
    lifecycle = SessionLifecycle()
    steps = replay(lifecycle, [(READY, 1), (SYNCHRONIZED, 2), (VISIBLE, 3), (FOCUSED, 4), (LOSS_PENDING, 5)])
    assert steps[-1] == (SessionCall.NONE, False, False, False, True)
    assert SessionCall.END not in [s[0] for s in steps]  # a session being lost is destroyed, not ended
    assert "lost" in lifecycle.stop_reason
    assert lifecycle.request_stop() == SessionCall.NONE  # nothing more to ask of the runtime


def test_runtime_exits_mid_run():
    lifecycle = SessionLifecycle()
    steps = replay(lifecycle, [(READY, 1), (SYNCHRONIZED, 2), (VISIBLE, 3), (FOCUSED, 4),
                               (VISIBLE, 5), (SYNCHRONIZED, 6), (STOPPING, 7), (IDLE, 8), (EXITING, 9)])
    assert [s[0] for s in steps].count(SessionCall.BEGIN) == 1
    assert steps[6][0] == SessionCall.END
    assert [s[4] for s in steps] == [False] * 8 + [True]
    assert not any(s[1] for s in steps[6:])


def test_focus_lost_then_regained_pauses_tracking():
    lifecycle = SessionLifecycle()
    steps = replay(lifecycle, [(READY, 1), (SYNCHRONIZED, 2), (VISIBLE, 3), (FOCUSED, 4),
                               (VISIBLE, 5),        # a system menu: head still seen, input withheld
                               (SYNCHRONIZED, 6),   # headset taken off
                               (VISIBLE, 7), (FOCUSED, 8)])
    assert [(s[2], s[3]) for s in steps[3:]] == [(True, True), (True, False), (False, False), (True, False),
                                                 (True, True)]
    assert all(s[1] for s in steps)  # the frame loop never stops
    assert [s[0] for s in steps].count(SessionCall.BEGIN) == 1
    assert not lifecycle.finished


def test_runtime_restarts_a_stopped_session():
    lifecycle = SessionLifecycle()
    steps = replay(lifecycle, [(READY, 1), (SYNCHRONIZED, 2), (STOPPING, 3), (IDLE, 4), (READY, 5), (FOCUSED, 6)])
    assert [s[0] for s in steps] == [SessionCall.BEGIN, SessionCall.NONE, SessionCall.END, SessionCall.NONE,
                                     SessionCall.BEGIN, SessionCall.NONE]
    assert steps[-1][3] and lifecycle.running


def test_instance_loss_and_lost_calls_finish():
    lifecycle = SessionLifecycle()
    replay(lifecycle, [(READY, 1), (SYNCHRONIZED, 2), (VISIBLE, 3), (FOCUSED, 4)])
    lifecycle.on_instance_loss_pending(5)
    assert lifecycle.finished and not lifecycle.frame_loop and not lifecycle.locates_hands
    assert "instance loss" in lifecycle.stop_reason
    lost = SessionLifecycle()
    replay(lost, [(READY, 1), (FOCUSED, 2)])
    lost.on_lost("session")
    assert lost.finished and not lost.running and lost.stop_reason == "the session was lost"


def test_stop_before_the_session_runs_finishes_at_once():
    lifecycle = SessionLifecycle()
    assert lifecycle.request_stop() == SessionCall.NONE
    assert lifecycle.finished and lifecycle.stop_reason == "stopped by the application"
    assert replay(lifecycle, [(READY, 1)])[0][1] is False  # a late READY runs no frames


def test_unknown_state_value_is_rejected():
    with pytest.raises(ValueError):
        SessionLifecycle().on_state_changed(42, 0)


# --- without a runtime (this machine) -----------------------------------------------------------


@needs_no_runtime
def test_pyopenxr_reports_no_runtime_here():
    with pytest.raises(xr.RuntimeUnavailableError, match="unable to find or load a runtime"):
        xr.create_instance(xr.InstanceCreateInfo())


@needs_no_runtime
def test_source_says_no_runtime_is_installed():
    with pytest.raises(OpenXRUnavailable) as raised:
        runtime_extensions(import_xr())
    assert str(raised.value) == NO_RUNTIME
    with pytest.raises(OpenXRUnavailable, match="no OpenXR runtime is installed or active: install and start one"):
        OpenXRSource()
    with pytest.raises(OpenXRUnavailable, match="SteamVR, Monado, Meta Quest Link"):
        record(1.0)


def test_missing_pyopenxr_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "xr", None)  # what `import xr` meets when pyopenxr is not installed
    with pytest.raises(OpenXRUnavailable, match="pip install pyopenxr"):
        OpenXRSource()


@needs_no_runtime
def test_stream_record_exits_with_the_message_and_writes_nothing(tmp_path):
    output = tmp_path / "live.csv"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "core", "stream", "record", "-o", str(output), "--seconds", "1"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == f"error: {NO_RUNTIME}"
    assert "Traceback" not in done.stderr
    assert not output.exists()


def test_stream_record_help():
    done = subprocess.run([sys.executable, "-m", "core", "stream", "record", "--help"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("usage: python -m core stream record")
    assert "--seconds" in done.stdout and "--rate" in done.stdout


def test_every_profile_has_a_record_button_on_each_hand_and_none_the_runtime_keeps():
    """The record button is a click every profile has on each hand; never the system or Oculus button, which the
    runtime keeps for itself."""
    assert set(RECORD_BUTTONS) == set(PROFILES)
    for left, right in RECORD_BUTTONS.values():
        assert left.endswith("/click") and right.endswith("/click")
        assert not {left, right} & {"system/click"}
