"""Calibration live (devices/live_calibration.py): the gesture at a live session's start read as `solve` reads it from
a file, eased in, and a character's hands on the wrists the controllers imply as really held."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from core.config import CalibrationConfig, DeviceNoise
from core.devices.attachments import joints_from_devices
from core.devices.calibration import POSE_BREAK_S, calibrate_stream
from core.devices.live_calibration import CHECK_EVERY_S, EASE_S, LiveCalibration
from core.devices.plausibility import usable_samples, without_unusable_samples
from core.devices.simulate import simulate_stream
from core.files.bvh import read_bvh
from core.retarget.live import LiveRetargeting
from core.retarget.target import bvh_target
from core.rig.humanoid import find_mapping
from core.solve import load_solver
from conftest import FIXTURE_WALK_1, FIXTURE_WALK_2
from device_streams import NOISY, after_devices_on_a_table, device_streams


def stepped(calibration: LiveCalibration, stream, steps=None):
    """Each sample of `stream` through `calibration`, a step apart as the stream's times say (or as `steps` say):
    (positions, rotations, the first sample's time at which the calibration was known or None)."""
    positions, rotations, known = [], [], None
    for t in range(len(stream)):
        dt = (stream.times[t] - stream.times[t - 1] if t else 0.0) if steps is None else steps[t]
        p, r = calibration.step(stream.positions[t], stream.rotations[t], stream.tracked[t], dt)
        positions.append(p)
        rotations.append(r)
        if known is None and calibration.calibration is not None:
            known = stream.times[t]
    return np.array(positions), np.array(rotations), known


@pytest.mark.parametrize("noise", [None, DeviceNoise(rates_hz=(72.0,))], ids=["exact", "device-noise"])
def test_live_the_gesture_gives_the_offline_calibration_half_a_second_after_it_ends(noise):
    """The same grips as `solve` finds in the file, known POSE_BREAK_S after the pose ends (a check every
    CHECK_EVERY_S); the frames before pass as they come, and from EASE_S after it the frames are the offline
    calibration's."""
    simulated = simulate_stream(read_bvh(FIXTURE_WALK_2)[:200], replace(NOISY, device_noise=noise))
    stream = simulated.stream
    offline = calibrate_stream(without_unusable_samples(stream)[0])
    live = LiveCalibration()
    positions, rotations, known = stepped(live, stream)
    assert offline.found and live.calibration.found
    pose_end = offline.pose_s[1]
    assert pose_end + POSE_BREAK_S < known <= pose_end + POSE_BREAK_S + CHECK_EVERY_S + 0.05
    for c in (0, 1):
        assert np.abs(live.calibration.grip_offsets_m[c] - offline.grip_offsets_m[c]).max() < 1e-9
        assert np.abs(np.array(live.calibration.grip_tilts[c]) - offline.grip_tilts[c]).max() < 1e-9
    before = stream.times < known
    assert np.array_equal(positions[before], stream.positions[before], equal_nan=True)
    calibrated = offline.apply(stream)
    after = stream.times >= known + EASE_S + 0.05
    assert np.nanmax(np.abs(positions[after] - calibrated.positions[after])) < 1e-9
    assert np.nanmax(np.abs(rotations[after] - calibrated.rotations[after])) < 1e-9
    easing = (stream.times > known + 0.1) & (stream.times < known + EASE_S - 0.1)
    moved = np.linalg.norm(positions[easing, 1:] - stream.positions[easing, 1:], axis=-1)
    full = np.linalg.norm(calibrated.positions[easing, 1:] - stream.positions[easing, 1:], axis=-1)
    assert (moved < 0.9 * full).all() and (moved > 0.1 * full).all()


def test_without_the_gesture_the_devices_pass_unchanged():
    stream = simulate_stream(read_bvh(FIXTURE_WALK_2)[:300], replace(NOISY, calibration_pose_s=0.0)).stream
    live = LiveCalibration(CalibrationConfig(search_s=4.0))
    positions, rotations, known = stepped(live, stream)
    assert not live.calibration.found and 4.0 < known < 4.05
    assert np.array_equal(positions, stream.positions) and np.array_equal(rotations, stream.rotations)


def test_a_gesture_made_after_the_headset_is_put_on_is_found():
    """The preview started with the devices on a table (10 s of still poses, tracked), then the headset put on and
    the gesture made: found, with the grips `solve` reads from the same samples (and from a file that starts with
    the gesture)."""
    stream = simulate_stream(read_bvh(FIXTURE_WALK_2)[:200], NOISY).stream
    started = after_devices_on_a_table(stream, 10.0)
    live = LiveCalibration()
    _, _, known = stepped(live, started)
    offline, same = calibrate_stream(stream), calibrate_stream(started)
    assert same.found and np.abs(np.array(same.grip_offsets_m) - np.array(offline.grip_offsets_m)).max() < 1e-9
    assert live.calibration.found and 10.0 + offline.pose_s[1] + POSE_BREAK_S < known < 10.0 + offline.pose_s[1] + 1.0
    for c in (0, 1):
        assert np.abs(live.calibration.grip_offsets_m[c] - offline.grip_offsets_m[c]).max() < 1e-9


def test_a_live_characters_hands_reach_the_wrists_as_really_held_after_the_gesture():
    """A character of another take's skeleton followed live (LiveRetargeting), the controllers held up to 3 cm and 15
    degrees off: without the calibration its hands stay 2.9 cm from the wrists the controllers imply as really held;
    with it, 0.1 cm from the ease's end on (measured: 0.095)."""
    simulated = simulate_stream(read_bvh(FIXTURE_WALK_2), NOISY)
    stream, walk = simulated.stream, read_bvh(FIXTURE_WALK_1)
    mapping = find_mapping(walk.skeleton)
    hands = [mapping["l_hand"], mapping["r_hand"]]
    truth = joints_from_devices(stream.positions, stream.rotations, simulated.offsets)[:, 1:]
    gaps = []
    for calibration in (None, LiveCalibration()):
        live = LiveRetargeting(load_solver(), bvh_target(walk), "fit", calibration)
        placed = np.array([live.step(stream.positions[t], stream.rotations[t], stream.tracked[t],
                                     stream.times[t] - stream.times[t - 1] if t else 1 / 60)[1][0, hands]
                           for t in range(len(stream))])
        gaps.append(np.linalg.norm(placed - truth, axis=-1)[stream.times > 3.5].mean())
    plain, calibrated = gaps
    assert plain > 0.025 and calibrated < 0.0015


@pytest.mark.parametrize("bad_step", [0.0, -0.01, np.nan])
def test_frames_repeated_or_without_a_time_step_leave_the_calibration_as_it_was(bad_step):
    """Every third frame sent again with a zero, negative or missing time step (a source polled twice between two
    located frames, a clock glitch): the same calibration, at the same time (a zero step raised before)."""
    stream = simulate_stream(read_bvh(FIXTURE_WALK_2)[:150], NOISY).stream
    plain, repeated = LiveCalibration(), LiveCalibration()
    stepped(plain, stream)
    steps = np.diff(stream.times, prepend=stream.times[0])
    indices = np.repeat(np.arange(len(stream)), [2 if t % 3 == 1 else 1 for t in range(len(stream))])
    again = np.r_[False, indices[1:] == indices[:-1]]
    for k, t in enumerate(indices):
        repeated.step(stream.positions[t], stream.rotations[t], stream.tracked[t], bad_step if again[k] else steps[t])
    assert repeated.calibration.found and repeated.calibration.pose_s == plain.calibration.pose_s
    assert np.array_equal(np.array(repeated.calibration.grip_offsets_m), np.array(plain.calibration.grip_offsets_m))


@settings(max_examples=60, deadline=None)
@given(device_streams(), st.data())
def test_any_stream_passes_live_calibration_untouched_where_unusable_and_finite_where_usable(stream, data):
    """Whatever a source sends (NaN, garbage while untracked, absurd poses, dropped frames, a frame repeated or
    stepped by a zero, negative or missing time: a stream's strictly increasing times were asked of those, and the
    step raised): a sample the solver cannot use comes out as it went in, and a usable one comes out finite."""
    steps = data.draw(st.lists(st.one_of(st.floats(1 / 144, 0.05), st.sampled_from([0.0, -0.01, np.nan, np.inf])),
                               min_size=len(stream), max_size=len(stream)))
    live = LiveCalibration()
    positions, rotations, _ = stepped(live, stream, steps)
    usable = usable_samples(stream.positions, stream.rotations, stream.tracked)
    assert np.array_equal(positions[~usable], stream.positions[~usable], equal_nan=True)
    assert np.array_equal(rotations[~usable], stream.rotations[~usable], equal_nan=True)
    assert np.isfinite(positions[usable]).all() and np.isfinite(rotations[usable]).all()
