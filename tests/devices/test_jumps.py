"""Jumps no body makes (core/devices/jumps.py): teleports and recentrings found, a user's own motion never."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from core.config import DeviceNoise, SimulationConfig
from core.devices.jumps import TURN_SPEED_DEG_S, crossing, held_up_to_jumps, turned_with_controllers, vertical_turns
from core.devices.simulate import simulate_stream
from core.files.stream import ThreePointStream
from core.math import quat

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _recentred(stream: ThreePointStream, at: int, turn_deg: float) -> ThreePointStream:
    """The devices from sample `at` on turned about the vertical through the HMD there, as a "reset view" does."""
    after = np.arange(len(stream)) >= at
    turn = quat.from_yaw(np.where(after, np.radians(turn_deg), 0.0))[:, None]
    pivot = stream.positions[at, 0] * [1.0, 0.0, 1.0]
    return ThreePointStream(stream.times, quat.rotate(turn, stream.positions - pivot) + pivot,
                            quat.multiply(turn, stream.rotations), stream.tracked)


def _turned_about_own_axis(stream: ThreePointStream, degrees_per_s: float, controllers: bool) -> ThreePointStream:
    """The HMD (and, if `controllers`, the controllers with it) spinning about the vertical through the HMD at
    `degrees_per_s`: a pirouette, or a head shaken with the hands still."""
    turn = quat.from_yaw(np.radians(degrees_per_s) * (stream.times - stream.times[0]))
    positions, rotations = stream.positions.copy(), stream.rotations.copy()
    devices = slice(None) if controllers else slice(0, 1)
    pivot = stream.positions[:, :1] * [1.0, 0.0, 1.0]
    positions[:, devices] = quat.rotate(turn[:, None], positions[:, devices] - pivot) + pivot
    rotations[:, devices] = quat.multiply(turn[:, None], rotations[:, devices])
    return ThreePointStream(stream.times, positions, rotations, stream.tracked)


@pytest.fixture(scope="module")
def walk_stream(fixture_walk2):
    return simulate_stream(fixture_walk2, SimulationConfig(fps=90.0, look_around_deg=60.0)).stream


def test_the_vertical_turn_is_the_twist_whatever_the_sign_of_either_quaternion():
    rng = np.random.default_rng(0)
    before = quat.normalize(rng.normal(size=(50, 4)))
    angles = rng.uniform(-3.1, 3.1, 50)
    after = quat.multiply(quat.from_yaw(angles), before)
    for a, b in ((after, before), (-after, before), (after, -before)):
        assert np.allclose(vertical_turns(b, a), angles, atol=1e-9)


@SETTINGS
@given(rate=st.sampled_from([30.0, 72.0, 90.0, 144.0]), share=st.floats(0.0, 1.0),
       sign=st.sampled_from([-1.0, 1.0]), at_s=st.floats(0.5, 3.0))
def test_a_recentring_is_found_at_any_rate_and_no_tick_lands_halfway_across_it(fixture_walk2, rate, share, sign,
                                                                                at_s):
    """Turned in one sample with the controllers, by more than a head turns in one (TURN_SPEED_DEG_S; 30 degrees at
    least) and up to a half turn: held up to the jump, so the predictor's 30 Hz ticks see the headset on one side of
    it or the other (each tick's HMD within 1 degree of the turned or unturned stream's), never halfway round."""
    smallest = max(30.0, TURN_SPEED_DEG_S / rate + 10.0)
    turn_deg = smallest + share * (180.0 - smallest)
    stream = simulate_stream(fixture_walk2, SimulationConfig(fps=rate, look_around_deg=30.0)).stream
    at = int(at_s * rate)
    turned = _recentred(stream, at, sign * turn_deg)
    found = turned_with_controllers(*((turned.positions[k], turned.rotations[k], turned.tracked[k])
                                      for k in (at - 1, at)), 1.0 / rate)
    assert abs(np.angle(np.exp(1j * (found - np.radians(sign * turn_deg))))) < 0.05  # a half turn reads either way
    held, jump_times = held_up_to_jumps(turned)
    assert len(held) == len(stream) + 1 and jump_times.tolist() == [stream.times[at]]
    ticks, plain = held.resampled(30.0), stream.resampled(30.0)
    off = np.degrees(np.abs(vertical_turns(plain.rotations[:, 0], ticks.rotations[:, 0])))
    assert np.all((off < 1.0) | (np.abs(off - turn_deg) < 1.0))


@SETTINGS
@given(rate=st.sampled_from([72.0, 90.0, 144.0]), seed=st.integers(0, 50))
def test_a_users_own_motion_is_never_a_jump(fixture_walk2, rate, seed):
    """A walk with look-around as a real headset writes it (millisecond clocks, jitter, gaps, dropouts, noise), a
    pirouette at 1,100 degrees a second, and the headset alone spinning past the limit (8,400 degrees a second) with
    the hands still: no jump."""
    noisy = simulate_stream(fixture_walk2, SimulationConfig(
        fps=90.0, look_around_deg=60.0, device_noise=DeviceNoise(rates_hz=(rate,)), seed=seed)).stream
    assert held_up_to_jumps(noisy)[0] is noisy
    spun = _turned_about_own_axis(noisy, 1100.0, controllers=True)
    assert held_up_to_jumps(spun)[0] is spun
    shaken = _turned_about_own_axis(noisy, 1400.0 * 6, controllers=False)  # the HMD alone turning past the limit
    assert held_up_to_jumps(shaken)[0] is shaken


def test_a_headset_that_turns_alone_past_the_limit_is_not_a_recentring(walk_stream):
    """The HMD turned 90 degrees in one sample, the controllers where they were (a tracking glitch of the headset's):
    no jump; the same turn with the controllers going round with it: a jump."""
    at = 200
    glitch = _recentred(walk_stream, at, 90.0)
    glitch.positions[at:, 1:], glitch.rotations[at:, 1:] = walk_stream.positions[at:, 1:], walk_stream.rotations[at:, 1:]
    samples = [(glitch.positions[k], glitch.rotations[k], glitch.tracked[k]) for k in (at - 1, at)]
    assert turned_with_controllers(*samples, 1 / 90) == 0.0
    samples = [(s.positions[k], s.rotations[k], s.tracked[k]) for s, k in ((walk_stream, at - 1),
                                                                           (_recentred(walk_stream, at, 90.0), at))]
    assert turned_with_controllers(*samples, 1 / 90) == pytest.approx(np.pi / 2, abs=0.05)  # and the head's own turn
    untracked = [(positions, rotations, np.array([True, False, False])) for positions, rotations, _ in samples]
    assert turned_with_controllers(*untracked, 1 / 90) == 0.0  # no controller to tell it from a glitch


def test_the_frames_of_a_slower_timeline_that_cross_a_jump():
    times = np.arange(6) / 30.0
    assert crossing(np.array([0.05, times[3]]), times).tolist() == [False, False, True, True, False, False]
    assert not crossing(np.zeros(0), times).any() and len(crossing(np.array([0.1]), np.zeros(0))) == 0
