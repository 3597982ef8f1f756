"""The user's standing HMD height measured from the stream: a start bent over a controller, crouched or seated is not
taken for the user's size once they stand (devices/standing_height.py)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.config import SimulationConfig, SolveConfig
from core.devices.simulate import simulate_stream
from core.devices.standing_height import (CLOCK_ROUNDING_S, RAISE_M, RAISE_WINDOW_S, StandingHeight,
                                         measured_standing_height)
from core.files.bvh import read_bvh
from core.files.stream import ThreePointStream
from core.quality.metrics import score_motion
from core.solve import load_solver, solve

from conftest import FIXTURE_WALK_1

CALIBRATION_S = 0.5


def head_heights(seed: int, rate_hz: float, jitter: float, standing_m: float, low_m: float, low_s: float,
                 bob_m: float, seconds: float):
    """(times, HMD heights, usable) of a user `standing_m` tall at the HMD who starts `low_m` lower, still, for
    `low_s` seconds, then walks with the head bobbing `bob_m` either way at 2 Hz; samples `jitter` of an interval off,
    one in twenty lost."""
    rng = np.random.default_rng(seed)
    steps = (1.0 + jitter * rng.uniform(-1.0, 1.0, int(seconds * rate_hz))) / rate_hz
    times = 1000.0 + np.cumsum(steps)
    elapsed = times - times[0]
    heights = np.where(elapsed < low_s, standing_m - low_m, standing_m + bob_m * np.sin(2 * np.pi * 2.0 * elapsed))
    return times, heights, rng.uniform(size=len(times)) > 0.05


STARTS = dict(seed=st.integers(0, 2 ** 16), rate_hz=st.floats(30.0, 144.0), jitter=st.floats(0.0, 0.5),
              standing_m=st.floats(1.2, 2.0), bob_m=st.floats(0.0, 0.04))


@settings(max_examples=40, deadline=None)
@given(low_m=st.floats(RAISE_M + 0.03, 0.8), low_s=st.floats(0.6, 2.0), after_s=st.floats(RAISE_WINDOW_S + 1.0, 20.0),
       **STARTS)
def test_a_user_who_starts_low_and_stands_up_is_measured_standing(seed, rate_hz, jitter, standing_m, low_m, low_s,
                                                                   bob_m, after_s):
    """Offline the whole stream's estimate, live once a stretch of RAISE_WINDOW_S has passed since standing up: the
    standing height within 1.5 cm (the walk's median), whatever the rate, jitter and lost samples. (A low start
    shorter than the first half second is averaged with the standing samples there: the start's estimate lies
    between the two, and is raised only if it lies RAISE_M under the standing one.)"""
    times, heights, usable = head_heights(seed, rate_hz, jitter, standing_m, low_m, low_s, bob_m, low_s + after_s)
    assert abs(measured_standing_height(times, heights, usable, CALIBRATION_S) - standing_m) < 0.015
    live = StandingHeight(CALIBRATION_S)
    estimates = [live.add(h, dt, ok) for h, dt, ok in zip(heights, np.diff(times, append=times[-1]), usable)]
    elapsed = times - times[0]
    first = int(np.flatnonzero(usable)[0])
    assert estimates[first] == heights[first]
    settled = elapsed > low_s + RAISE_WINDOW_S + 0.5
    assert np.all(np.abs(np.array(estimates)[settled] - standing_m) < 0.015)


@settings(max_examples=40, deadline=None)
@given(drift_m=st.floats(-0.2, 0.08), **STARTS)
def test_a_user_who_starts_standing_keeps_the_starts_height(seed, rate_hz, jitter, standing_m, bob_m, drift_m):
    """A walk whose head bobs and drifts up to 8 cm above the start (a capture's drift, a bouncy style) or sits down
    later keeps the first half second's mean."""
    times, heights, usable = head_heights(seed, rate_hz, jitter, standing_m, 0.0, 0.0, bob_m, 30.0)
    heights = heights + drift_m * (times - times[0]) / 30.0
    start = heights[(times - times[0] <= CALIBRATION_S + CLOCK_ROUNDING_S) & usable]  # as the sum of steps counts them
    if not len(start):  # every sample of the first half second lost: the first usable one stands for it
        start = heights[usable][:1]
    assert measured_standing_height(times, heights, usable, CALIBRATION_S) == pytest.approx(start.mean(), abs=1e-9)


def test_a_given_height_is_kept_and_a_stream_without_the_hmd_is_refused():
    fixed = StandingHeight(CALIBRATION_S, fixed=1.7)
    assert all(fixed.add(h, 1 / 60) == 1.7 for h in np.linspace(1.0, 2.5, 600))
    with pytest.raises(ValueError, match="never tracked"):
        measured_standing_height(np.arange(10.0), np.ones(10), np.zeros(10, bool), CALIBRATION_S)


def test_a_walk_that_starts_crouched_is_solved_at_the_users_size():
    """The fixture walk with its first second 30 cm low (the user crouched to pick up the controllers): measured 1.8
    cm under the unmodified stream's standing height and +0.8 cm of MPJPE after that second (with the first half
    second's mean: 1.27 m, the avatar a fifth too small for the whole take)."""
    clip = read_bvh(FIXTURE_WALK_1)
    simulated = simulate_stream(clip, SimulationConfig(look_around_deg=30.0))
    stream, truth = simulated.stream, simulated.truth
    crouched = stream.positions.copy()
    crouched[stream.times - stream.times[0] < 1.0, :, 1] -= 0.3
    second = int(truth.fps)
    figures = []
    for positions in (stream.positions, crouched):
        solution = solve(ThreePointStream(stream.times, positions, stream.rotations, stream.tracked),
                         load_solver(SolveConfig()))
        figures.append((solution.standing_height_m,
                        score_motion(solution.motion.resampled(truth.fps)[second:], truth[second:])["mpjpe_cm"]))
    (height, mpjpe), (crouched_height, crouched_mpjpe) = figures
    assert abs(crouched_height - height) < 0.025 and crouched_mpjpe < mpjpe + 1.5


def test_a_stretch_mostly_unmeasured_raises_nothing():
    """The HMD lost for most of a stretch (its held samples are not measurements): a few high samples on its return
    do not raise the standing height."""
    measure = StandingHeight(CALIBRATION_S)
    for t in range(600):  # 10 s at 60 Hz: standing 1.6 m for 5 s, lost for 4.9 s, back at 2.2 m for 0.1 s
        seen = t < 300 or t >= 594
        measure.add(1.6 if t < 300 else 2.2, 1 / 60, seen)
    assert measure.height_m == pytest.approx(1.6)


@pytest.mark.parametrize("method", ["n3p", "mm"])
def test_live_a_held_hmd_is_not_measured(method, fixture_walk1):
    """Live, frames whose HMD is untracked (held at its last pose) are not measured: an HMD lifted 60 cm and then
    untracked for 5 s keeps the standing height the user stood at."""
    from core.config import MatchingConfig
    from core.matching.pose_database import build_database
    from core.matching.solver import MotionMatchingSolver

    solver = load_solver(SolveConfig(method="n3p")) if method == "n3p" else \
        MotionMatchingSolver([build_database([fixture_walk1])], MatchingConfig(orientation="hmd"))
    stream = simulate_stream(fixture_walk1, SimulationConfig(look_around_deg=0.0)).stream
    positions, rotations, tracked = stream.positions[0], stream.rotations[0], stream.tracked[0]
    for t in range(300):
        solver.step(positions, rotations, tracked, 1 / 60)
    lifted = positions.copy()
    lifted[:, 1] += 0.6
    solver.step(lifted, rotations, tracked, 1 / 60)
    for t in range(300):
        solver.step(lifted, rotations, np.array([False, True, True]), 1 / 60)
    assert solver.standing_height_m == pytest.approx(positions[0, 1], abs=1e-9)


def test_a_gap_in_the_stream_covers_no_more_than_a_check():
    """A stream that jumps 20 s ahead after a few high samples: the last sample before the gap stands for no more than
    CHECK_S of the stretch (it stood for 20 s and raised the height to 1.9 m)."""
    times = np.concatenate([np.arange(300) / 60, 8.6 + np.arange(24) / 60, [30.0]])
    heights = np.concatenate([np.full(300, 1.6), np.full(24, 1.9), [1.9]])
    assert measured_standing_height(times, heights, np.ones(len(times), bool), CALIBRATION_S) == pytest.approx(1.6)


def test_reading_the_height_over_the_first_seconds_does_not_go_over_their_samples(monkeypatch):
    """A clock ticking in microseconds puts a sample every microsecond into the first half second: the height was
    their mean taken anew at each reading (several a live step), so a step cost more the longer the session ran.
    Read while those seconds run, it is their running mean: no mean or sum is taken over them."""
    measure = StandingHeight(CALIBRATION_S)
    for height in np.linspace(1.6, 1.8, 5000):
        measure.add(float(height), 1e-6)

    def over_the_samples(*_args, **_kwargs):
        raise AssertionError("the reading went over the first seconds' samples")

    monkeypatch.setattr(np, "mean", over_the_samples)
    monkeypatch.setattr("builtins.sum", over_the_samples)
    assert measure.height_m == pytest.approx(1.7)
