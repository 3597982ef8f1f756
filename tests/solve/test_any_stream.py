"""Every stream SPEC §3 allows, through every method, offline and live: any length (one sample to ten minutes), any rate from
30 to 144 Hz, any clock (from zero, a latency, an uptime, Unix time; millisecond rounding, jitter, gaps), devices
untracked at the start or for a while, quaternions rounded. Each solves into finite output on the stream's
timeline (`ThreePointStream.frames_at`), or, where the HMD is never tracked, refuses with one line."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from core.config import HybridConfig, SimulationConfig, SolveConfig
from core.devices.simulate import simulate_stream
from core.files.bvh import read_bvh
from core.files.stream import ThreePointStream, read_stream, write_stream
from core.hybrid.solver import HybridSolver
from core.matching.pose_database import build_database
from core.matching.solver import MotionMatchingSolver
from core.math import quat
from core.n3p.model import N3PModel
from core.n3p.solver import N3PSolver
from core.orientation.window_model import load_orientation_model
from core.rig.humanoid import find_mapping
from core.solve import DatabaseNeeded, load_solver, solve
from conftest import FIXTURE_WALK_1, FIXTURE_WALK_2

CLOCKS = (0.0, 0.017, 3605.25, 1.7e9)
"""Where a stream's time may start: zero, a latency, a device's uptime, Unix time."""


@pytest.fixture(scope="module")
def solvers():
    """Every method: the default, its matched legs, motion matching (both over a fixture walk), the predictor."""
    database = build_database([read_bvh(FIXTURE_WALK_1)])
    model, orientation = N3PModel.load(), load_orientation_model()
    return {"hybrid": HybridSolver(N3PSolver(model), orientation),
            "hybrid matched legs": HybridSolver(N3PSolver(model), None, HybridConfig(legs="matched"),
                                                MotionMatchingSolver([database], orientation_model=orientation)),
            "mm": MotionMatchingSolver([database], orientation_model=orientation),
            "n3p": N3PSolver(model)}


@pytest.fixture(scope="module")
def person():
    """The devices of a person walking and turning, looking around, every 1/60 s (8 s)."""
    return simulate_stream(read_bvh(FIXTURE_WALK_2), SimulationConfig(look_around_deg=40.0, seed=4)).stream


@st.composite
def stream_plans(draw, max_samples: int = 160):
    """How a stream is written: sample count, rate, clock, timing faults, tracking, placement and rounding."""
    count = draw(st.integers(1, max_samples))
    return {
        "count": count, "rate": draw(st.floats(30.0, 144.0)), "start": draw(st.sampled_from(CLOCKS)),
        "jitter": draw(st.floats(0.0, 0.4)), "milliseconds": draw(st.booleans()),
        "gaps": draw(st.lists(st.tuples(st.integers(0, count), st.floats(0.02, 6.0)), max_size=2)),
        "untracked": draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, count), st.integers(1, count)),
                                   max_size=3)),
        "yaw": draw(st.floats(-np.pi, np.pi)), "shift": draw(st.tuples(st.floats(-50, 50), st.floats(-50, 50))),
        "decimals": draw(st.sampled_from([None, 2])), "seed": draw(st.integers(0, 2 ** 16)),
    }


def person_at(person: ThreePointStream, elapsed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The person's device poses and tracking `elapsed` seconds in; past the clip's end the person stands still."""
    moments, index = np.unique(np.minimum(elapsed, person.duration), return_inverse=True)
    at = person.sampled_at(moments)
    return at.positions[index], at.rotations[index], at.tracked[index]


def written(person: ThreePointStream, plan: dict) -> ThreePointStream:
    """The person's devices as a stream the plan describes (strictly increasing times, as SPEC §3 wants)."""
    rng = np.random.default_rng(plan["seed"])
    steps = np.full(plan["count"], 1.0 / plan["rate"])
    steps *= 1.0 + plan["jitter"] * rng.uniform(-1.0, 1.0, plan["count"])
    for at, seconds in plan["gaps"]:
        steps[min(at, plan["count"] - 1)] += seconds
    steps[0] = 0.0
    elapsed = np.cumsum(steps)
    times = plan["start"] + elapsed
    if plan["milliseconds"]:
        times = np.round(times, 3)
    keep = np.r_[True, np.diff(times) > 0]  # a clock that did not tick between two samples: one is written
    times, elapsed = times[keep], elapsed[keep]
    positions, rotations, _ = person_at(person, elapsed)
    turn = quat.from_yaw(np.array(plan["yaw"]))
    positions = quat.rotate(turn, positions) + np.array([plan["shift"][0], 0.0, plan["shift"][1]])
    rotations = quat.multiply(turn, rotations)
    if plan["decimals"] is not None:
        rotations = np.round(rotations, plan["decimals"])
    tracked = np.ones((len(times), 3), bool)
    for device, start, length in plan["untracked"]:
        tracked[start:start + length, device] = False
    positions[~tracked], rotations[~tracked] = np.nan, np.nan
    return ThreePointStream(times, positions, rotations, tracked)


def check_solutions(solvers, stream: ThreePointStream) -> None:
    """Each method's offline solve: finite, one frame per 1/fps s of the stream; refused in one line only where the
    HMD is tracked at no frame of that timeline (a headset seen only after the last frame, in the part of a frame
    the timeline ends before, places nothing)."""
    for method, solver in solvers.items():
        try:
            solution = solve(stream, solver)
        except ValueError as error:
            assert not stream.resampled(solver.fps).tracked[:, 0].any(), (method, error)
            assert "\n" not in str(error) and "never tracked" in str(error), (method, error)
            continue
        motion = solution.motion
        assert len(motion) == stream.frames_at(solver.fps), method
        assert np.isfinite(motion.rotations).all() and np.isfinite(motion.positions).all(), method
        assert len(solution.stream) == len(motion) and abs(motion.fps - solver.fps) < 1e-9, method


SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                           HealthCheck.function_scoped_fixture])


@SETTINGS
@given(plan=stream_plans())
def test_every_method_solves_any_stream_offline(solvers, person, plan):
    check_solutions(solvers, written(person, plan))


@SETTINGS
@given(plan=stream_plans(max_samples=90))
def test_every_method_steps_any_stream_live(solvers, person, plan):
    """Live, a step before the HMD's first tracked sample waits (the skeleton standing at the origin, the solver
    says it waits); every step gives one finite frame."""
    stream = written(person, plan)
    for method, solver in solvers.items():
        solver.reset()
        seen = False
        for t in range(len(stream)):
            dt = stream.times[t] - stream.times[t - 1] if t else 1.0 / plan["rate"]
            seen = seen or stream.tracked[t, 0]
            motion = solver.step(stream.positions[t], stream.rotations[t], stream.tracked[t], dt)
            assert solver.waiting_for_hmd == (not seen), (method, t)
            if not seen:
                assert np.hypot(*motion.positions[0, 0, [0, 2]]) == 0.0, (method, t)
            assert len(motion) == 1 and np.isfinite(motion.rotations).all() and np.isfinite(motion.positions).all(), \
                (method, t)


@pytest.mark.parametrize("bad", ["nan", "1e308", "nan quaternion", "zero quaternion"])
def test_every_method_waits_for_a_usable_hmd_pose_flagged_tracked(solvers, person, bad):
    """A headset often starts with garbage flagged tracked: every method's live step waits through it standing at
    the origin, then follows the first usable pose."""
    for method, solver in solvers.items():
        solver.reset()
        for t in range(8):
            positions, rotations = person.positions[t].copy(), person.rotations[t].copy()
            if t < 5:
                if bad in ("nan", "1e308"):
                    positions[0] = float(bad)
                else:
                    rotations[0] = np.nan if bad == "nan quaternion" else 0.0
            motion = solver.step(positions, rotations, np.ones(3, bool), 1 / 60)
            assert solver.waiting_for_hmd == (t < 5) and len(motion) == 1, (method, t)
            assert np.isfinite(motion.positions).all() and np.isfinite(motion.rotations).all(), (method, t)
        assert np.hypot(*(motion.positions[0, 0] - person.positions[7, 0])[[0, 2]]) < 0.5, method


def test_every_method_steps_a_quaternion_near_unit_length_as_the_rotation_it_points_at(solvers, person):
    """Quaternions up to 10 % off unit length count as usable (devices/plausibility.py): live, each is the rotation it
    points at, not a rotation and a scale (the HMD's and grips' offsets, the predictor's signals were 16-23 cm off
    with lengths 1.08 and 0.92)."""
    lengths = np.resize([1.08, 0.92, -1.05, 0.95], (60, 3, 1))
    for method, solver in solvers.items():
        poses = []
        for rotations in (person.rotations[:60], person.rotations[:60] * lengths):
            solver.reset()
            poses.append(np.concatenate([solver.step(person.positions[t], rotations[t], person.tracked[t], 1 / 60)
                                         .global_positions() for t in range(60)]))
        np.testing.assert_allclose(poses[1], poses[0], atol=1e-6, err_msg=method)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=stream_plans(max_samples=60))
def test_a_written_stream_reads_back_and_solves_with_the_default(person, plan, tmp_path_factory):
    """Through the file, as users bring them: CSV v1 written and read back (six decimals), then the default."""
    stream = written(person, plan)
    path = tmp_path_factory.mktemp("streams") / "s.csv"
    write_stream(path, stream)
    check_solutions({"hybrid": load_solver()}, read_stream(path))


@pytest.mark.parametrize("rate, samples", [(60.0, 4), (60.0, 2), (72.0, 5), (90.0, 6), (60.0, 567), (30.0, 284)])
def test_streams_whose_length_broke_the_default_solve(solvers, person, rate, samples):
    """The predictor's 30 Hz solve ended up to a frame short of the stream's last sample: at 60 Hz every other
    sample count, at 72 and 90 Hz most (the shortest such streams, and the 567 samples users met), and at 2 samples
    the output lost a frame."""
    times = np.arange(samples) / rate
    check_solutions({"hybrid": solvers["hybrid"]}, ThreePointStream(times, *person_at(person, times)))


@pytest.mark.parametrize("method", ["hybrid", "n3p"])
def test_a_headset_first_seen_after_the_predictors_last_step_is_solved(solvers, person, method):
    """Two samples 29.5 ms apart, the HMD tracked in the second only (hypothesis wrote it): the 60 Hz timeline sees
    the HMD, the predictor's 30 Hz one did not, and the solve was refused; it now takes one more step on the last
    sample."""
    times = np.array([0.0, 0.0295])
    positions, rotations, tracked = person_at(person, times)
    positions[0, 0], rotations[0, 0], tracked[0, 0] = np.nan, np.nan, False
    check_solutions({method: solvers[method]}, ThreePointStream(times, positions, rotations, tracked))


def test_a_long_session_solves_with_the_default(solvers, person):
    """Three minutes at 30 Hz (the person walking the clip again and again): 10,801 frames at 60 Hz, all finite (ten
    minutes took a minute of the suite; docs/benchmarks.md times them)."""
    times = np.arange(180 * 30 + 1) / 30.0
    stream = ThreePointStream(times + 1.7e9, *person_at(person, times % person.duration))
    check_solutions({"hybrid": solvers["hybrid"]}, stream)


def test_the_default_needs_no_database_and_the_others_say_when_they_do():
    assert isinstance(load_solver(SolveConfig()), HybridSolver)
    for config in (SolveConfig(method="mm"), SolveConfig(hybrid=HybridConfig(legs="matched"))):
        with pytest.raises(DatabaseNeeded, match="^[^\n]*motion database[^\n]*$"):
            load_solver(config)


def _with_gap(person: ThreePointStream, seconds: float) -> ThreePointStream:
    """The person's stream with no sample for `seconds` after its middle."""
    times = person.times.copy()
    times[len(times) // 2:] += seconds
    return ThreePointStream(times, person.positions, person.rotations, person.tracked)


@pytest.mark.parametrize("method", ["hybrid", "mm", "n3p"])
def test_a_long_gap_costs_no_more_than_a_short_one_and_the_avatar_holds_through_it(solvers, person, method,
                                                                                   monkeypatch):
    """Eight minutes without a sample: solved as a six-second gap (the same predictor ticks or matching steps as
    that one), the output on the whole timeline, holding one pose through the skipped part."""
    from core import solve as solving

    solver = solvers[method]
    counted = {"calls": 0}
    owner = type(solver.predictor) if method == "hybrid" else type(solver)
    name = "step_lower_body" if method == "mm" else "advance"
    stepper = getattr(owner, name)

    def counting(self, *args, **kwargs):
        counted["calls"] += 1
        return stepper(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, counting)
    short = solve(_with_gap(person, solving.CLOSED_GAP_S), solver, None)
    short_calls, counted["calls"] = counted["calls"], 0
    stream = _with_gap(person, 480.0)
    long = solve(stream, solver, None)
    assert counted["calls"] == short_calls
    assert len(long.motion) == stream.frames_at(solver.fps) and len(long.stream) == len(long.motion)
    middle = person.times[len(person.times) // 2 - 1] - person.times[0]
    held = slice(int(np.ceil((middle + solving.CLOSED_GAP_S) * solver.fps)) + 1,
                 int((middle + 480.0) * solver.fps) - 1)
    assert np.ptp(long.motion.rotations[held], axis=0).max() == 0.0 and not long.stream.tracked[held].any()
    before = slice(0, int(middle * solver.fps))
    np.testing.assert_allclose(long.motion.rotations[before], short.motion.rotations[before], atol=1e-9)
    np.testing.assert_allclose(long.motion.rotations[-20:], short.motion.rotations[-20:], atol=1e-9)


def test_a_gap_of_more_than_ten_minutes_is_refused_in_one_line(solvers, person):
    with pytest.raises(ValueError, match=r"^the stream has no sample for 3600 s after t = [\d.]+ s \(more than 10 "
                                         r"minutes\): cut it there"):
        solve(_with_gap(person, 3600.0), solvers["hybrid"], None)


def test_a_controller_left_where_its_tracking_was_lost_is_let_go_once_out_of_reach(solvers, person):
    """A tool that writes a lost controller's last pose on, flagged tracked, leaves it behind as the person walks
    away: once it is farther from the headset than a hand can be, every method solves it as untracked, and the
    avatar's hand comes back to its body instead of stretching after it."""
    from core.devices.plausibility import MAX_CONTROLLER_FROM_HMD_M

    left_behind = person.positions.copy()
    left_behind[90:, 2] = left_behind[90, 2]
    far = np.linalg.norm(left_behind[:, 2] - left_behind[:, 0], axis=-1) > MAX_CONTROLLER_FROM_HMD_M
    assert far[-60:].all()
    written = ThreePointStream(person.times, left_behind, person.rotations, person.tracked)
    lost = far[:, None] & (np.arange(3) == 2)
    untracked = ThreePointStream(person.times, np.where(lost[..., None], np.nan, left_behind), person.rotations,
                                 person.tracked & ~lost)
    for method, solver in solvers.items():
        motions = [solve(stream, solver, None).motion for stream in (written, untracked)]
        np.testing.assert_allclose(motions[0].positions, motions[1].positions, atol=1e-9, err_msg=method)
        np.testing.assert_allclose(motions[0].rotations, motions[1].rotations, atol=1e-9, err_msg=method)
        joints = motions[0].global_positions()
        mapping = find_mapping(motions[0].skeleton)
        hand, head = mapping["r_hand"], mapping["head"]
        assert np.linalg.norm(joints[-60:, hand] - joints[-60:, head], axis=-1).max() < 1.0, method


def test_before_the_headset_is_first_seen_the_hands_wait_with_the_avatar(solvers, person):
    """The controllers tracked for two seconds before the headset: the avatar waits where the headset is first seen
    (a live step waits for it), and its hands wait with it instead of stretching after controllers a metre away."""
    late = person.tracked.copy()
    late[:120, 0] = False
    written = ThreePointStream(person.times, np.where(late[..., None], person.positions, np.nan),
                               np.where(late[..., None], person.rotations, np.nan), late)
    assert np.linalg.norm(person.positions[0, 1:] - person.positions[120, 0], axis=-1).min() > 1.0
    for method, solver in solvers.items():
        joints = solve(written, solver, None).motion.global_positions()
        mapping = find_mapping(solver.skeleton)
        waiting = joints[:115] - joints[:115, mapping["head"]][:, None]
        for side in "lr":
            hand = mapping[f"{side}_hand"]
            assert np.linalg.norm(waiting[:, hand] - waiting[0, hand], axis=-1).max() < 0.02, (method, side)
            assert np.linalg.norm(waiting[:, hand], axis=-1).max() < 0.9, (method, side)
