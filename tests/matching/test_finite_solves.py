"""Finite in, finite out: the live steps of motion matching and Neural3Points survive NaN, infinite, huge and broken
samples and bad time steps anywhere in a stream, the calibration window included, exactly as if those samples were
untracked and those steps nominal; offline solves do the same; readers stay within a few times their data."""
from __future__ import annotations

import tracemalloc

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st
import pytest

from conftest import DATASET_2, WALK_2

from core.files.bvh import read_bvh, write_bvh
from core.config import SimulationConfig, MatchingConfig
from core.devices.attachments import head_on_floor
from core.anim.motion import Motion
from core.n3p.model import N3PModel
from core.n3p.solver import N3PSolver
from core.devices.openxr_frames import TRACKED_FLAGS, frame_from_poses
from core.matching.pose_database import build_database
from core.devices.simulate import simulate_stream
from core.matching.solver import MotionMatchingSolver
from core.solve import solve
from core.files.stream import ThreePointStream, read_stream, write_stream

BROKEN = {  # what a device may hand over instead of a pose: (position, rotation)
    "nan": (np.full(3, np.nan), None),
    "inf": (None, np.array([np.inf, 0.0, 0.0, 0.0])),
    "-inf": (np.array([0.0, -np.inf, 0.0]), None),
    "huge": (np.array([1e300, 1.6, 0.0]), None),
    "far": (np.array([0.0, 1.6, 2e4]), None),
    "zero quaternion": (None, np.zeros(4)),
    "long quaternion": (None, np.array([2.0, 0.0, 0.0, 0.0])),
}
BAD_STEPS = (np.nan, -1.0 / 60.0, np.inf, 1e6, 0.0)
PAUSES = 3
"""Of BAD_STEPS, the pauses (not finite, too long) stepped as one nominal frame; a frame no later than the last
(a repeat, a clock stepping back) shows the last pose again."""


@pytest.fixture(scope="module")
def stream():
    """Five seconds of a held-out walk with look-around at 60 Hz."""
    clip = read_bvh(WALK_2)[:150]
    return simulate_stream(clip, SimulationConfig(look_around_deg=30.0, seed=3)).stream


@pytest.fixture(scope="module")
def mm_solver():
    clips = [read_bvh(DATASET_2 / f"dataset-2_walk_normal_00{i}.bvh") for i in (2, 3)]
    return MotionMatchingSolver([build_database(clips)], MatchingConfig(orientation="hmd"))


@pytest.fixture(scope="module")
def n3p_solver():
    return N3PSolver(N3PModel.load())


def corrupted(stream: ThreePointStream, plan, steps_at, nominal: float):
    """(broken inputs, the same inputs with those samples untracked and those steps nominal)."""
    positions, rotations = stream.positions.copy(), stream.rotations.copy()
    untracked = stream.tracked.copy()
    for frame, device, kind in plan:
        position, rotation = BROKEN[kind]
        if position is not None:
            positions[frame, device] = position
        if rotation is not None:
            rotations[frame, device] = rotation
        untracked[frame, device] = False
    dts = np.full(len(stream), nominal)
    broken_dts = dts.copy()
    for frame, dt in zip(steps_at, BAD_STEPS):
        broken_dts[frame] = dt
        dts[frame] = dt if np.isfinite(dt) and dt <= 0.0 else nominal
    return (positions, rotations, stream.tracked, broken_dts), (stream.positions, stream.rotations, untracked, dts)


def run(solver, inputs, frames, repeats_stepped: bool = True):
    """The solver's live steps; without `repeats_stepped`, a frame no later than the last (dt <= 0) is not stepped
    but shows the last pose again, as a solver should."""
    positions, rotations, tracked, dts = inputs
    solver.reset()
    motions = []
    for t in range(frames):
        if not repeats_stepped and np.isfinite(dts[t]) and dts[t] <= 0.0 and motions:
            motions.append(motions[-1])
        else:
            motions.append(solver.step(positions[t], rotations[t], tracked[t], dts[t]))
    return motions


def poses(motions) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate([m.rotations for m in motions]), np.concatenate([m.positions for m in motions])


# Controllers broken inside the calibration window (the first half second) and everything broken after it; every
# kind of breakage somewhere; the HMD broken on its own, with a controller, and for three frames running.
MM_PLAN = [(3, 1, "nan"), (7, 2, "inf"), (12, 1, "zero quaternion"), (40, 0, "huge"), (41, 0, "huge"),
           (42, 0, "far"), (60, 1, "long quaternion"), (61, 2, "-inf"), (90, 0, "nan"), (90, 1, "nan"),
           (120, 2, "huge"), (121, 0, "zero quaternion")]
MM_STEPS = (20, 45, 70, 100, 130)


def test_motion_matching_steps_take_broken_samples_as_untracked_pauses_as_nominal_and_repeats_as_the_last_pose(mm_solver, stream):
    broken, untracked = corrupted(stream, MM_PLAN, MM_STEPS, 1.0 / 60.0)
    got = run(mm_solver, broken, len(stream))
    rejected, paused = mm_solver.held.rejected_samples, mm_solver.held.paused_steps
    expected = run(mm_solver, untracked, len(stream), repeats_stepped=False)
    for a, b in zip(poses(got), poses(expected)):
        assert np.isfinite(a).all()
        np.testing.assert_array_equal(a, b)
    assert rejected == len(MM_PLAN) and paused == PAUSES
    # Recovered on the next good sample: the root is back within alpha of the target the HMD implies there.
    for frame in (43, 91, 122):
        target = head_on_floor(stream.positions[frame, 0], stream.rotations[frame, 0], mm_solver.held.head_centre)
        root = got[frame].positions[0, 0]
        assert np.hypot(*(root - target)[[0, 2]]) <= mm_solver.config.alpha_m + 1e-9


def test_motion_matching_calibration_skips_broken_hmd_samples(mm_solver, stream):
    clean = (stream.positions, stream.rotations, stream.tracked, np.full(len(stream), 1.0 / 60.0))
    run(mm_solver, clean, 40)
    heights = list(mm_solver.state.standing.first)
    broken, _ = corrupted(stream, [(2, 0, "nan"), (5, 0, "huge"), (9, 0, "zero quaternion")], (), 1.0 / 60.0)
    motions = run(mm_solver, broken, 40)
    assert mm_solver.state.standing.first == [h for t, h in enumerate(heights) if t not in (2, 5, 9)]
    assert np.isfinite(poses(motions)[1]).all()

    mm_solver.reset()  # before the HMD is ever seen there is nowhere to put the avatar: it waits, standing
    waiting = mm_solver.step(broken[0][5], broken[1][5], broken[2][5], 1.0 / 60.0)
    assert mm_solver.waiting_for_hmd and len(waiting) == 1 and np.isfinite(waiting.positions).all()
    assert np.isfinite(mm_solver.step(stream.positions[6], stream.rotations[6], stream.tracked[6], 1 / 60).positions).all()
    assert not mm_solver.waiting_for_hmd


N3P_PLAN = [(2, 1, "nan"), (4, 2, "huge"), (20, 0, "huge"), (21, 0, "inf"), (21, 1, "far"), (30, 2, "zero quaternion"),
            (45, 0, "nan"), (46, 1, "long quaternion"), (60, 0, "-inf")]
N3P_STEPS = (10, 25, 35, 50, 65)


def test_neural3points_steps_take_broken_samples_as_untracked_pauses_as_nominal_and_repeats_as_the_last_pose(n3p_solver, stream):
    stream = stream.resampled(30.0)
    broken, untracked = corrupted(stream, N3P_PLAN, N3P_STEPS, 1.0 / 30.0)
    got = run(n3p_solver, broken, len(stream))
    rejected, paused = n3p_solver.rejected_samples, n3p_solver.paused_steps
    expected = run(n3p_solver, untracked, len(stream), repeats_stepped=False)
    for a, b in zip(poses(got), poses(expected)):
        assert np.isfinite(a).all()
        np.testing.assert_array_equal(a, b)
    assert rejected == len(N3P_PLAN) and paused == PAUSES
    head = n3p_solver.mapping["head"]
    for frame in (22, 47, 61):  # the first good sample after each broken HMD: the head follows it again
        heads = got[frame].global_positions()[0, head]
        assert np.hypot(*(heads - stream.positions[frame, 0])[[0, 2]]) < 0.25


def test_neural3points_calibration_skips_broken_hmd_samples(n3p_solver, stream):
    stream = stream.resampled(30.0)
    clean = (stream.positions, stream.rotations, stream.tracked, np.full(len(stream), 1.0 / 30.0))
    run(n3p_solver, clean, 20)
    heights = list(n3p_solver.standing.first)
    broken, _ = corrupted(stream, [(1, 0, "huge"), (3, 0, "nan")], (), 1.0 / 30.0)
    motions = run(n3p_solver, broken, 20)
    assert n3p_solver.standing.first == [h for t, h in enumerate(heights) if t not in (1, 3)]
    assert np.isfinite(poses(motions)[1]).all()


@pytest.mark.parametrize("method", ["mm", "n3p"])
def test_offline_solves_drop_broken_samples(mm_solver, n3p_solver, stream, method):
    solver = mm_solver if method == "mm" else n3p_solver
    broken, untracked = corrupted(stream, [(30, 0, "huge"), (31, 1, "far"), (100, 2, "zero quaternion")], (), 1 / 60)
    got = solve(ThreePointStream(stream.times, *broken[:3]), solver)
    expected = solve(ThreePointStream(stream.times, np.where(untracked[2][..., None], stream.positions, np.nan),
                                      np.where(untracked[2][..., None], stream.rotations, np.nan), untracked[2]), solver)
    assert np.isfinite(got.motion.positions).all() and np.isfinite(got.motion.rotations).all()
    np.testing.assert_array_equal(got.motion.positions, expected.motion.positions)
    np.testing.assert_array_equal(got.motion.rotations, expected.motion.rotations)


def test_openxr_frames_with_non_finite_poses_are_untracked_whatever_the_flags():
    poses = np.tile([0.0, 1.6, 0.0, 1.0, 0.0, 0.0, 0.0], (3, 1))
    poses[1, 0] = np.nan
    poses[2, 3:] = 0.0
    frame = frame_from_poses(1, poses, [TRACKED_FLAGS] * 3)
    assert frame.tracked.tolist() == [True, False, False]
    assert np.isnan(frame.positions[1:]).all() and np.isfinite(frame.positions[0]).all()


def test_resampling_holds_across_a_long_gap_only(stream):
    times = stream.times + np.where(np.arange(len(stream)) >= 100, 10.0, 0.0)
    times = times + np.where(np.arange(len(stream)) >= 200, 4.0, 0.0)  # a 4 s gap is interpolated
    resampled = ThreePointStream(times, stream.positions, stream.rotations, stream.tracked).resampled(60.0)
    inside_long = (resampled.times > times[99]) & (resampled.times < times[100])
    inside_short = (resampled.times > times[199]) & (resampled.times < times[200])
    assert inside_long.sum() > 500 and not resampled.tracked[inside_long].any()
    assert inside_short.sum() > 200 and resampled.tracked[inside_short].all()
    assert np.isnan(resampled.positions[inside_long]).all()


def _peak_bytes(read) -> int:
    tracemalloc.start()
    try:
        read()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_readers_stay_within_a_few_times_the_data_they_hold(stream, tmp_path):
    long = ThreePointStream(np.arange(20 * len(stream)) / 60.0, np.tile(stream.positions, (20, 1, 1)),
                            np.tile(stream.rotations, (20, 1, 1)), np.tile(stream.tracked, (20, 1)))
    write_stream(tmp_path / "long.csv", long)
    data = long.times.nbytes + long.positions.nbytes + long.rotations.nbytes + long.tracked.nbytes
    assert _peak_bytes(lambda: read_stream(tmp_path / "long.csv")) < 3 * data
    clip = read_bvh(WALK_2)
    motion = Motion(clip.skeleton, np.tile(clip.rotations, (10, 1, 1)), np.tile(clip.positions, (10, 1, 1)), clip.fps)
    write_bvh(tmp_path / "long.bvh", motion)
    assert _peak_bytes(lambda: read_bvh(tmp_path / "long.bvh")) < 3 * (motion.rotations.nbytes + motion.positions.nbytes)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([1e300, -1e308, 3e38, np.inf]),
       seed=st.integers(0, 2**16))
def test_what_an_untracked_device_writes_is_not_read_live_or_offline(n3p_solver, mm_solver, stream, value, seed):
    """A device marked untracked may still write numbers (a runtime's last pose, zeros, garbage): the steps and the
    solves give what they give with NaN there, and no arithmetic on them warns (1e300 overflowed in quat's and the
    jump test's products)."""
    import warnings

    stream = stream.resampled(30.0)
    untracked = np.random.default_rng(seed).random(stream.tracked.shape) < 0.2
    untracked[0, 0] = False
    tracked = stream.tracked & ~untracked
    written, blank = (ThreePointStream(stream.times, np.where(untracked[..., None], fill, stream.positions),
                                       np.where(untracked[..., None], fill, stream.rotations), tracked)
                      for fill in (value, np.nan))
    dts = np.full(len(stream), 1.0 / 30.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for solver in (n3p_solver, mm_solver):
            got, expected = (poses(run(solver, (s.positions, s.rotations, s.tracked, dts), 40))
                             for s in (written, blank))
            np.testing.assert_array_equal(got[0], expected[0])
            np.testing.assert_array_equal(got[1], expected[1])
        got, expected = (solve(s, n3p_solver).motion for s in (written, blank))
    np.testing.assert_array_equal(got.positions, expected.positions)
    np.testing.assert_array_equal(got.rotations, expected.rotations)


def test_a_sample_delivered_twice_changes_nothing_live(stream):
    """A runtime may hand the same sample over twice (the same time, dt = 0): the default's poses are those of the
    stream delivered once, the repeat showing the last pose again (it advanced a nominal frame: 7.6 cm off on
    average over a 90 Hz walk, 53 cm at most)."""
    from core.solve import load_solver

    once, twice = load_solver(), load_solver()
    for t in range(90):
        frame = (stream.positions[t], stream.rotations[t], stream.tracked[t])
        expected = once.step(*frame, 1 / 60)
        first = twice.step(*frame, 1 / 60)
        again = twice.step(*frame, 0.0)
        assert again is first
        np.testing.assert_array_equal(first.positions, expected.positions)
