"""A device's short loss of tracking: offline bridged from the pose before it to the pose after it; live, the headset
eased back from where it was held."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from core.config import SimulationConfig, SolveConfig
from core.devices.dropouts import DROPOUT_BRIDGE_S, dropouts_bridged, lost_runs
from core.devices.jumps import CARRY_SPEED_M_S
from core.devices.regained import RegainedHeadset
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


@settings(max_examples=60, deadline=None)
@given(rate=st.floats(30.0, 144.0), seed=st.integers(0, 2 ** 16), lost_s=st.floats(0.02, 1.0),
       moved_m=st.floats(0.0, 6.0))
def test_a_headset_found_again_eases_from_where_it_was_held_only_after_a_short_walkable_loss(rate, seed, lost_s,
                                                                                             moved_m):
    """Live: the pose a headset is given is continuous where it is found again after a loss offline would bridge
    (at most 0.5 s, no faster than a body carries it), and within a millimetre of the tracked pose a second on; after a
    longer loss or a jump it is the tracked pose at once."""
    rng = np.random.default_rng(seed)
    dt = 1.0 / rate
    lost_frames = max(1, int(round(lost_s * rate)))
    held, found = (np.array([0.0, 1.6, 0.0]), quat.identity()), (
        np.array([moved_m, 1.6, 0.0]) * rng.uniform(0.9, 1.0), quat.from_yaw(rng.uniform(-1.0, 1.0)))
    easing = RegainedHeadset()
    given = easing.eased(*held, True, dt, None)
    for _ in range(lost_frames):
        given = easing.eased(*held, False, dt, given)
    after = [easing.eased(*found, True, dt, given)]
    for _ in range(int(rate)):
        after.append(easing.eased(*found, True, dt, after[-1]))
    span = (lost_frames + 1) * dt
    eased = span <= DROPOUT_BRIDGE_S and np.hypot(*(found[0] - held[0])[[0, 2]]) <= max(0.1, CARRY_SPEED_M_S * span)
    first_step = np.linalg.norm(after[0][0] - held[0])
    if eased:
        assert first_step <= 0.05 * np.linalg.norm(found[0] - held[0]) + 1e-9
    else:
        np.testing.assert_allclose(after[0][0], found[0], atol=1e-12)
    assert np.linalg.norm(after[-1][0] - found[0]) < 1e-3
    assert quat.angle_between(after[-1][1], found[1]) < 1e-3


@pytest.mark.parametrize("method", ["hybrid", "n3p"])
def test_live_a_headset_lost_for_a_sixth_of_a_second_mid_walk_does_not_move_the_body_at_once(method):
    """Live, the body held still while the headset was lost and caught up in the frame it was found (17 cm on the
    fixture walk, either method); eased, the hips' largest step is 4.4 cm (hybrid) and 4.6 cm (n3p), the walk's own
    2.7 and 3.1 cm."""
    walk = read_bvh(FIXTURE_WALK_1)
    stream = simulate_stream(walk, SimulationConfig(look_around_deg=30.0, fps=60)).stream
    first = int(np.argmin(np.abs(stream.times - 3.0)))
    steps = []
    for given_stream in (stream, lost(stream, 0, first, 10)):
        solver = load_solver(SolveConfig(method=method))
        hips = np.array([solver.step(given_stream.positions[t], given_stream.rotations[t], given_stream.tracked[t],
                                     1 / 60).global_positions()[0, solver.mapping["hips"]]
                         for t in range(first + 30)])
        steps.append(np.linalg.norm(np.diff(hips, axis=0), axis=-1)[first - 2:].max())
    assert steps[1] < 1.7 * steps[0] and steps[1] < 0.05
