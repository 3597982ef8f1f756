"""Offline, a device's short loss of tracking is bridged from the pose before it to the pose after it."""
import numpy as np
from hypothesis import given, settings, strategies as st

from core.config import SimulationConfig
from core.devices.dropouts import DROPOUT_BRIDGE_S, dropouts_bridged, lost_runs
from core.devices.jumps import CARRY_SPEED_M_S
from core.devices.plausibility import without_unusable_samples
from core.devices.simulate import simulate_stream
from core.files.bvh import read_bvh
from core.files.stream import ThreePointStream
from core.math import quat
from core.rig.humanoid import find_mapping
from core.solve import load_solver, solve
from conftest import FIXTURE_WALK_1


def walking_devices(rate_hz: float, seconds: float, seed: int) -> ThreePointStream:
    """Three devices drifting at walking speed, turning slowly, sampled at `rate_hz` with a jittered clock."""
    rng = np.random.default_rng(seed)
    times = np.cumsum(np.full(int(rate_hz * seconds), 1.0 / rate_hz) * rng.uniform(0.8, 1.2, int(rate_hz * seconds)))
    positions = np.array([0.0, 1.6, 0.0]) + np.cumsum(rng.normal(0.0, 1.2 / rate_hz, (len(times), 3, 3)), axis=0)
    rotations = quat.from_rotation_vector(np.cumsum(rng.normal(0.0, 0.5 / rate_hz, (len(times), 3, 3)), axis=0))
    return ThreePointStream(times, positions, rotations, np.ones((len(times), 3), bool))


def lost(stream: ThreePointStream, device: int, first: int, count: int) -> ThreePointStream:
    tracked = stream.tracked.copy()
    tracked[first:first + count, device] = False
    positions, rotations = stream.positions.copy(), stream.rotations.copy()
    positions[~tracked], rotations[~tracked] = np.nan, np.nan
    return ThreePointStream(stream.times, positions, rotations, tracked)


@settings(max_examples=60, deadline=None)
@given(rate=st.floats(30.0, 144.0), seed=st.integers(0, 2 ** 16), device=st.integers(0, 2),
       start=st.floats(0.0, 1.0), seconds=st.floats(0.0, 1.2), jump_m=st.sampled_from([0.0, 20.0]))
def test_a_loss_is_bridged_along_the_line_only_where_short_inside_and_not_a_jump(rate, seed, device, start, seconds,
                                                                                 jump_m):
    stream = walking_devices(rate, 3.0, seed)
    first = int(start * (len(stream) - 1))
    count = max(1, int(seconds * rate))
    if jump_m:  # the device moved on by jump_m from the loss's end on: a teleport, a recentring
        stream.positions[first + count:, device] += [jump_m, 0.0, 0.0]
    broken = lost(stream, device, first, count)
    bridged = dropouts_bridged(broken)
    before, after = first - 1, first + count
    inside = before >= 0 and after < len(stream)
    span = stream.times[min(after, len(stream) - 1)] - stream.times[max(before, 0)]
    step = np.linalg.norm(stream.positions[min(after, len(stream) - 1), device] - stream.positions[max(before, 0), device])
    expected = inside and span <= DROPOUT_BRIDGE_S and step <= CARRY_SPEED_M_S * span
    usable = without_unusable_samples(broken)[0].tracked  # controllers wait for the headset's first sample
    np.testing.assert_array_equal(bridged.tracked[usable], True)  # what was tracked stays as it was
    np.testing.assert_array_equal(bridged.positions[usable], broken.positions[usable])
    gap = slice(first, first + count)
    assert bridged.tracked[gap, device].all() == expected and not (~bridged.tracked[gap, device]).all() == expected
    if expected:
        alpha = (stream.times[gap] - stream.times[before]) / span
        line = stream.positions[before, device] + alpha[:, None] * (stream.positions[after, device]
                                                                    - stream.positions[before, device])
        np.testing.assert_allclose(bridged.positions[gap, device], line, atol=1e-9)
        np.testing.assert_allclose(np.linalg.norm(bridged.rotations[gap, device], axis=-1), 1.0, atol=1e-9)


def test_lost_runs_are_the_untracked_runs_with_tracked_samples_on_both_sides():
    tracked = np.array([False, True, False, False, True, True, False, True, False])
    assert lost_runs(tracked) == [(2, 3), (6, 6)]


def test_a_headset_lost_for_a_sixth_of_a_second_mid_walk_does_not_move_the_body_at_once():
    """The loss held the headset where it was, and when tracking came back the body caught up in one frame (10 cm on
    the fixture walk, 38 cm on a faster one); bridged, the hips move as they walk (2.2 cm a frame at most)."""
    walk = read_bvh(FIXTURE_WALK_1)
    stream = simulate_stream(walk, SimulationConfig(look_around_deg=30.0, fps=60)).stream
    first = int(np.argmin(np.abs(stream.times - 3.0)))
    solver = load_solver()
    steps = []
    for given_stream in (stream, lost(stream, 0, first, 10)):
        motion = solve(given_stream, solver, None).motion
        hips = motion.global_positions()[:, find_mapping(motion.skeleton)["hips"]]
        steps.append(np.linalg.norm(np.diff(hips, axis=0), axis=-1)[first - 2:first + 14].max())
    assert steps[1] < 1.1 * steps[0] and steps[1] < 0.03
