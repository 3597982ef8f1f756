"""Calibration from the stream's first seconds (issue 28): the gesture simulated with devices held differently from
DeviceOffsets, the estimates against the simulation's truth, the solver's hands after it, the stored comment line
and the command line."""
import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from core.math import quat
from core.files.bvh import read_bvh
from core.devices.calibration import StreamCalibration, calibrate_stream, pivot, stored_calibration
from core.config import CalibrationConfig, DeviceNoise, SimulationConfig
from core.errors import FileFormatError
from core.devices.attachments import implied_joint_positions, joints_from_devices
from core.rig.humanoid import find_mapping
from core.matching.pose_database import build_database
from core.orientation.window_model import load_orientation_model
from core.devices.simulate import simulate_stream
from core.matching.solver import MotionMatchingSolver
from core.solve import solve
from core.hybrid.solver import HybridSolver
from core.n3p.model import N3PModel
from core.n3p.solver import N3PSolver
from core.files.stream import ThreePointStream, write_stream
from conftest import DATASET_1, DATASET_2, FIXTURE_WALK_1, FIXTURE_WALK_2, SHARED, WALK_1, WALK_2, shared_exists
from conftest import core
from device_streams import NOISY, after_devices_on_a_table, device_streams



@pytest.fixture(scope="module")
def noisy():
    """A held-out walk after the calibration gesture, the controllers held up to 3 cm and 15 degrees off."""
    return simulate_stream(read_bvh(WALK_2)[:150], NOISY)


@pytest.fixture(scope="module", params=[FIXTURE_WALK_2, WALK_2], ids=["fixture", "bandai"])
def any_noisy(request):
    """The same on the fixture walk of tests/data and on the real one."""
    return simulate_stream(read_bvh(request.param)[:150], NOISY)


def true_wrists(simulated):
    return joints_from_devices(simulated.stream.positions, simulated.stream.rotations, simulated.offsets)[:, 1:]


def test_the_pivot_fit_finds_a_known_point_turning_about_a_drifting_centre():
    rng = np.random.default_rng(0)
    times = np.arange(120) / 60.0
    rotations = quat.from_rotation_vector(rng.normal(scale=0.4, size=(120, 3)))
    offset = np.array([0.01, -0.09, 0.02])
    centre = np.array([0.3, 1.4, 0.1]) + np.outer(times, [0.02, 0.0, -0.01])
    offset_found, residual, error = pivot(centre + quat.rotate(rotations, offset), rotations, times)
    np.testing.assert_allclose(offset_found, offset, atol=1e-9)
    assert residual < 1e-9 and error < 1e-9


def test_a_device_turned_by_the_arm_leaves_its_pivot_undetermined():
    """A controller turned 40 degrees about one axis as the arm is raised, wobbling 6 degrees about another (a
    100STYLE T-pose held without circling the wrists), a millimetre of noise: the turn goes with time as the
    drift terms do, and the offset's standard error is over CalibrationConfig.max_offset_error_m (measured 12 mm);
    the gesture's circles (20 and 30 degrees at 1 Hz) pin it down to 0.4 mm; turns about one axis alone do not
    determine it at all."""
    rng = np.random.default_rng(1)
    times = np.arange(120) / 60.0
    offset = np.array([0.01, -0.09, 0.02])
    raised = np.stack([np.radians(40.0) * (times / times[-1] - 0.5), np.zeros(120),
                       np.radians(6.0) * np.sin(4 * np.pi * times)], axis=1)
    circles = np.radians(np.stack([20.0 * np.sin(2 * np.pi * times), np.zeros(120),
                                   30.0 * np.cos(2 * np.pi * times)], axis=1))
    lone = raised * [1.0, 0.0, 0.0]
    errors = []
    for turns in (raised, circles, lone):
        rotations = quat.from_rotation_vector(turns)
        positions = np.array([0.3, 1.4, 0.1]) + quat.rotate(rotations, offset) + rng.normal(scale=1e-3, size=(120, 3))
        errors.append(pivot(positions, rotations, times)[2])
    assert errors[0] > CalibrationConfig().max_offset_error_m
    assert errors[1] < 0.0005
    assert errors[2] == np.inf


def test_calibration_recovers_the_offsets_tilts_height_and_span_it_was_simulated_with(noisy):
    calibration = calibrate_stream(noisy.stream)
    assert calibration.found and calibration.pose_s[0] == 0.0 and 1.9 < calibration.pose_s[1] < 2.7
    for c in (0, 1):
        assert np.linalg.norm(calibration.grip_offsets_m[c] - noisy.offsets[1 + c]) < 0.008
    # The simulated gesture is held up to 5 degrees off (arms and hands, plus a 2 degree sway): the tilts are
    # known that well, no better.
    errors = np.degrees(quat.angle_between(np.array(calibration.grip_tilts), noisy.grip_turns))
    assert errors.max() < 10.0
    first = noisy.truth[:1].global_positions()[0]
    mapping = find_mapping(noisy.truth.skeleton)
    assert calibration.standing_hmd_height_m == pytest.approx(noisy.stream.positions[0, 0, 1], abs=0.01)
    hold = slice(0, noisy.clip_start - 40)
    wrists = noisy.truth[hold].global_positions()[:, [mapping["l_hand"], mapping["r_hand"]]]
    assert calibration.arm_span_m == pytest.approx(np.linalg.norm(wrists[:, 0] - wrists[:, 1], axis=-1).mean(), abs=0.01)
    assert first[mapping["head"], 1] < calibration.standing_hmd_height_m < first[mapping["head"], 1] + 0.1


@pytest.mark.parametrize("path", [FIXTURE_WALK_2, WALK_2], ids=["fixture", "bandai"])
def test_an_a_pose_calibrates_as_a_t_pose_does(path):
    """The gesture with the arms 45 degrees down: found as an A-pose; grips as well as from a T-pose, tilts within
    the pose's imprecision, and the span the arms would have level within the shoulders' estimate."""
    simulated = simulate_stream(read_bvh(path)[:150], replace(NOISY, calibration_arms="A"))
    calibration = calibrate_stream(simulated.stream)
    assert calibration.found and calibration.pose == "A" and calibration.describe()["pose"] == "A"
    assert np.linalg.norm(np.array(calibration.grip_offsets_m) - simulated.offsets[1:], axis=-1).max() < 0.008
    assert np.degrees(quat.angle_between(np.array(calibration.grip_tilts), simulated.grip_turns)).max() < 12.0
    mapping = find_mapping(simulated.truth.skeleton)
    joints = simulated.truth[: simulated.clip_start - 40].global_positions()
    wrists, shoulders = (joints[:, [mapping[f"l_{j}"], mapping[f"r_{j}"]]] for j in ("hand", "upper_arm"))
    level_span = (np.linalg.norm(shoulders[:, 0] - shoulders[:, 1], axis=-1)
                  + np.linalg.norm(wrists - shoulders, axis=-1).sum(axis=-1)).mean()
    assert calibration.arm_span_m == pytest.approx(level_span, abs=0.06)  # eval: 2.2 cm mean, p95 6.6 cm
    assert calibration.arm_span_m > np.linalg.norm(wrists[:, 0] - wrists[:, 1], axis=-1).mean() + 0.1
    t_pose = calibrate_stream(simulate_stream(read_bvh(path)[:150], NOISY).stream)
    assert t_pose.pose == "T" and StreamCalibration.from_description(calibration.describe()).pose == "A"


def test_applied_calibration_puts_the_implied_wrists_on_the_true_ones(any_noisy):
    noisy = any_noisy
    clip = slice(noisy.clip_start, None)
    truth = true_wrists(noisy)[clip]
    before = np.linalg.norm(implied_joint_positions(noisy.stream)[clip, 1:] - truth, axis=-1).mean()
    calibrated = calibrate_stream(noisy.stream).apply(noisy.stream)
    after = np.linalg.norm(implied_joint_positions(calibrated)[clip, 1:] - truth, axis=-1).mean()
    assert before > 0.01 and after < 0.005


@pytest.mark.parametrize("path", [FIXTURE_WALK_2, WALK_2], ids=["fixture", "bandai"])
def test_without_the_gesture_nothing_is_found_and_the_stream_is_unchanged(path):
    stream = simulate_stream(read_bvh(path)[:150], SimulationConfig(look_around_deg=45.0)).stream
    calibration = calibrate_stream(stream)
    assert not calibration.found and calibration.apply(stream) is stream


def test_arms_spread_in_plain_motion_are_not_taken_for_the_gesture():
    """A musical run and walk spread their arms level at shoulder height long enough to pass for a T-pose; the
    grips are then turned 30-85 degrees from palms down, which the gesture's hold never is."""
    for name in ("dataset-1_run_musical_001", "dataset-1_walk_musical_001"):
        stream = simulate_stream(read_bvh(DATASET_1 / f"{name}.bvh"), replace(NOISY, calibration_pose_s=0.0)).stream
        assert not calibrate_stream(stream).found, name


OTHER_STYLES = SHARED / "data" / "other" / "100style"


@pytest.mark.skipif(not shared_exists(OTHER_STYLES), reason="../shared/data/other is not beside the repository")
@pytest.mark.parametrize("name", ["angry", "elated", "rushed"])
def test_a_t_pose_held_without_circling_the_wrists_is_not_the_gesture(name):
    """100STYLE's captures stop in a T-pose 3-5 s in, the wrists not circled: the controllers turn with the arms as
    they are raised (23, 6 and 1 degrees RMS about three axes) and the offsets' standard errors are 8-42 mm. Two of
    these were taken for the gesture, their grips "measured" 7-15 cm off and turned 23-35 degrees, and the solve
    moved the hands by as much: `eval full` on these clips had them 2.1-5.3 cm off the controllers (now 0.01-0.04)."""
    motion = read_bvh(OTHER_STYLES / f"{name}_reference.bvh")
    stream = simulate_stream(motion[: int(8 * motion.fps)], SimulationConfig(look_around_deg=60.0)).stream
    calibration = calibrate_stream(stream)
    assert not calibration.found and calibration.apply(stream) is stream


NOISY_DEVICE_CLIPS = {"fixture": FIXTURE_WALK_2, "100style": OTHER_STYLES / "rushed_reference.bvh",
                      "perfume": SHARED / "data" / "other" / "perfume" / "C_test.bvh"}


@pytest.mark.parametrize("rate", [30.0, 72.0, 144.0])
@pytest.mark.parametrize("clip", NOISY_DEVICE_CLIPS)
def test_the_gesture_read_through_a_real_devices_noise_measures_both_grips(clip, rate):
    """A real headset's stream (DeviceNoise: millisecond clocks, jitter, gaps, dropouts, 1-2 mm noise, quaternions
    to two decimals) at 30-144 Hz, on the fixture walk and other studios' captures: half-circle pieces of the pose
    fit loosely, and pieces that agreed only to 1 cm left a few samples, so the gesture was taken on 2 of 9 such
    streams. Measured over three seeds on four clips: 35 of 36 found, 66 of 72 grips measured, all within 0.7 cm."""
    path = NOISY_DEVICE_CLIPS[clip]
    if not shared_exists(path) and clip != "fixture":
        pytest.skip("../shared/data/other is not beside the repository")
    simulated = simulate_stream(read_bvh(path)[:300], replace(NOISY, device_noise=DeviceNoise(rates_hz=(rate,))))
    calibration = calibrate_stream(simulated.stream)
    assert calibration.found
    for c in (0, 1):
        assert calibration.grip_offsets_m[c] is not None
        assert np.linalg.norm(calibration.grip_offsets_m[c] - simulated.offsets[1 + c]) < 0.008


@settings(max_examples=25, deadline=None)
@given(st.floats(30.0, 144.0), st.floats(1.5, 3.0), st.integers(0, 2 ** 31))
def test_any_devices_rate_and_gesture_gives_grips_within_1_5_cm_or_keeps_the_assumed_one(rate, gesture_s, seed):
    """Any rate 30-144 Hz, a gesture of 1.5-3 s, any draw of the device's noise and of how the controllers are held
    (up to 3 cm and 15 degrees off): a grip is measured near the truth or not at all. Measured over 200 draws on
    the fixture walk: 199 found, 391 of 400 grips measured, median 0.22 cm, 99th percentile 0.80, worst 1.31 (a
draw of another 200, 0.92)."""
    simulated = simulate_stream(read_bvh(FIXTURE_WALK_2)[:150], replace(
        NOISY, seed=seed, calibration_pose_s=gesture_s, device_noise=DeviceNoise(rates_hz=(rate,))))
    calibration = calibrate_stream(simulated.stream)
    for c, offset in enumerate(calibration.grip_offsets_m):
        if offset is not None:
            assert np.linalg.norm(offset - simulated.offsets[1 + c]) < 0.015


def test_eval_calibration_reads_the_streams_through_a_devices_noise():
    """`eval calibration --device-noise 30` on the fixture walks: the gesture found on both, the grips applied to
    the exact streams (measured: wrists 0.28 cm, the assumed grip's 1.94)."""
    done = core("eval", "calibration", "--data", FIXTURE_WALK_2.parent, "--split", "all", "--device-noise", "30",
                "--json")
    figures = json.loads(done.stdout)["calibration"]
    assert figures["found"] == figures["clips"] == 2 and figures["false_found"] == 0
    assert figures["wrist_cm"] < 0.4 and figures["wrist_cm_uncalibrated"] > 1.5


@pytest.mark.skipif(not shared_exists(OTHER_STYLES), reason="../shared/data/other is not beside the repository")
@pytest.mark.parametrize("seed", [0, 6, 11])
def test_arms_held_up_to_12_degrees_off_level_are_the_gesture(seed, monkeypatch):
    """The gesture as people hold it, each arm raised or lowered by up to 12 degrees (the simulation's 5, widened):
    on 100STYLE's actor, whose shoulders sit wider than Bandai's, the controllers' heights then differ by more than
    15 % of their span and the pose broke into pieces too short to read (these draws were not found; 3 of 12 are
    like them). Within 25 % they are read; over the first minute of every Bandai and other-studio clip nothing
    more is taken for the gesture."""
    from core.devices import simulate
    monkeypatch.setattr(simulate, "POSE_SPREAD_DEG", 12.0)
    motion = read_bvh(OTHER_STYLES / "rushed_reference.bvh")
    simulated = simulate_stream(motion[: int(6 * motion.fps)], replace(NOISY, seed=seed))
    calibration = calibrate_stream(simulated.stream)
    assert calibration.found
    for c in (0, 1):
        assert np.linalg.norm(calibration.grip_offsets_m[c] - simulated.offsets[1 + c]) < 0.008


def test_devices_lying_still_before_the_gesture_are_passed_over():
    """3 s of the devices lying on a table, spread as a T-pose's would be, then the gesture: the still pose has more
    samples and was read, found not to be the gesture, and the gesture after it lost."""
    stream = simulate_stream(read_bvh(FIXTURE_WALK_2)[:150], NOISY).stream
    calibration, alone = calibrate_stream(after_devices_on_a_table(stream, 3.0)), calibrate_stream(stream)
    assert calibration.found and calibration.pose_s[0] >= 3.0
    for c in (0, 1):
        assert np.abs(calibration.grip_offsets_m[c] - alone.grip_offsets_m[c]).max() < 1e-9


def test_a_gesture_broken_by_a_dropout_is_read_whole():
    """A controller that loses tracking for 0.3 s in the middle of the gesture: the pose either side is one pose (it
    was the longer half alone), and the grips are as well measured as without the dropout."""
    simulated = simulate_stream(read_bvh(FIXTURE_WALK_2)[:150], NOISY)
    stream = simulated.stream
    lost = (stream.times > 0.7) & (stream.times < 1.0)
    positions, rotations, tracked = stream.positions.copy(), stream.rotations.copy(), stream.tracked.copy()
    positions[lost, 1], rotations[lost, 1], tracked[lost, 1] = np.nan, np.nan, False
    whole = calibrate_stream(stream)
    broken = calibrate_stream(ThreePointStream(stream.times, positions, rotations, tracked))
    assert broken.found and broken.pose_s == whole.pose_s
    for c in (0, 1):
        assert np.linalg.norm(broken.grip_offsets_m[c] - simulated.offsets[1 + c]) < 0.003


@pytest.mark.skipif(not shared_exists(DATASET_1), reason="../shared/data/bandai is not beside the repository")
@pytest.mark.parametrize("arms", ["T", "A"])
def test_arms_swinging_through_the_pose_after_the_gesture_are_not_joined_to_it(arms):
    """A childish dash after the gesture swings its arms through the A-pose's range again and again, a few tenths of
    a second apart: joined across those breaks, the run outgrew the gesture (to 4.7-5.0 s, the clip starting at 2.6)
and the gesture was not found."""
    simulated = simulate_stream(read_bvh(DATASET_1 / "dataset-1_dash_childish_001.bvh"),
                                replace(NOISY, calibration_arms=arms, look_around_deg=30.0))
    calibration = calibrate_stream(simulated.stream)
    assert calibration.found and calibration.pose == arms
    assert calibration.pose_s[1] < simulated.stream.times[simulated.clip_start] + 0.5  # joined: 4.7 s
    for c in (0, 1):
        assert np.linalg.norm(calibration.grip_offsets_m[c] - simulated.offsets[1 + c]) < 0.008


@pytest.mark.parametrize("method", ["hybrid", "mm"])
def test_after_calibration_attachment_noise_moves_the_solved_hands_less_than_1_cm(noisy, method):
    """The same gesture and walk with the controllers held as assumed and held off. The calibration is
    equivariant (a grip held off by a fixed offset and turn gives the same estimates, moved by them), so
    after it both solve alike to rounding; against the solve of the devices held as assumed, uncalibrated,
    the hands stay within 1 cm (what is left is the gesture's own imprecision), and without it they are
    more than 1.5 cm off."""
    database = build_database([read_bvh(WALK_1), read_bvh(DATASET_2 / "dataset-2_walk_normal_002.bvh")])
    solver = MotionMatchingSolver([database], orientation_model=load_orientation_model())
    if method == "hybrid":
        solver = HybridSolver(N3PSolver(N3PModel.load()), load_orientation_model())
    hands = [solver.mapping["l_hand"], solver.mapping["r_hand"]]
    clean = simulate_stream(read_bvh(WALK_2)[:150], replace(NOISY, attachment_noise_m=0.0, attachment_noise_deg=0.0))
    clip = slice(noisy.clip_start, None)

    def solved_hands(stream, calibration):
        return solve(stream, solver, calibration).motion.global_positions()[clip][:, hands]

    def gap(a, b):
        return np.linalg.norm(a - b, axis=-1).mean()

    as_assumed = solved_hands(clean.stream, None)
    calibrated = solved_hands(noisy.stream, CalibrationConfig())
    assert gap(calibrated, solved_hands(clean.stream, CalibrationConfig())) < 1e-6
    assert gap(calibrated, as_assumed) < 0.01
    assert gap(solved_hands(noisy.stream, None), as_assumed) > 0.015


@pytest.mark.parametrize("method", ["hybrid", "mm"])
def test_after_calibration_controllers_held_off_and_held_as_assumed_solve_alike(method):
    """The calibration is equivariant: a grip held off by a fixed offset and turn gives the same estimates, moved by
    them, so the same gesture and walk solve alike to rounding once calibrated, the controllers held off or held as
    assumed (the fixture walks: one as the database, the other as the user)."""
    database = build_database([read_bvh(FIXTURE_WALK_1)])
    solver = MotionMatchingSolver([database], orientation_model=load_orientation_model())
    if method == "hybrid":
        solver = HybridSolver(N3PSolver(N3PModel.load()), load_orientation_model())
    hands = [solver.mapping["l_hand"], solver.mapping["r_hand"]]
    walk = read_bvh(FIXTURE_WALK_2)[:150]
    noisy = simulate_stream(walk, NOISY)
    clean = simulate_stream(walk, replace(NOISY, attachment_noise_m=0.0, attachment_noise_deg=0.0))
    clip = slice(noisy.clip_start, None)

    def solved_hands(stream):
        return solve(stream, solver, CalibrationConfig()).motion.global_positions()[clip][:, hands]

    assert np.linalg.norm(solved_hands(noisy.stream) - solved_hands(clean.stream), axis=-1).mean() < 1e-6


def test_a_stored_calibration_round_trips_and_a_bad_one_is_named(any_noisy, tmp_path):
    noisy = any_noisy
    calibration = calibrate_stream(noisy.stream)
    path = tmp_path / "stored.csv"
    write_stream(path, noisy.stream, ["made by a test", calibration.comment()])
    stored = stored_calibration(path)
    assert stored.describe() == calibration.describe()
    np.testing.assert_allclose(stored.apply(noisy.stream).positions, calibration.apply(noisy.stream).positions, atol=1e-4)
    assert StreamCalibration.from_description({"found": False}).found is False
    (tmp_path / "bad.csv").write_text("# calibration {not json\nt\n")
    with pytest.raises(ValueError, match="bad.csv:1: calibration comment is not JSON"):
        stored_calibration(tmp_path / "bad.csv")
    (tmp_path / "odd.csv").write_text('# calibration {"found": true}\nt\n')
    with pytest.raises(ValueError, match="odd.csv:1: not a calibration"):
        stored_calibration(tmp_path / "odd.csv")


STORED = {"found": True, "standing_hmd_height_m": 1.45, "arm_span_m": 1.14, "pose": "T", "pose_s": [0.0, 3.2],
          "grip_offsets_m": [[0.0, -0.082, 0.0005], None], "grip_tilts": [[0.998, 0.032, 0.013, 0.051], [1, 0, 0, 0]]}
"""A plausible stored calibration, as `describe` writes it (the right offset not measured)."""


@pytest.mark.parametrize("change, words", [
    ({"pose_s": None}, "pose_s is not a list of 2 numbers"), ("pose_s", "pose_s is missing"),
    ({"pose_s": [3.0, 1.0]}, "pose_s [3.0, 1.0] is not a start and an end"),
    ({"grip_offsets_m": [[50.0, 0, 0], None]}, "the left grip's distance from the wrist is 50 m, outside 0-0.201 m"),
    ({"grip_offsets_m": [[float("nan"), 0, 0], None]}, "grip_offsets_m (left) is not finite"),
    ({"grip_offsets_m": [None, [0, "0.1", 0]]}, "grip_offsets_m (right) is not a list of 3 numbers"),
    ({"grip_tilts": [[0, 0, 0, 0], [1, 0, 0, 0]]}, "the left grip tilt's length (a rotation's is 1) is 0"),
    ({"grip_tilts": [[1, 0, 0, 0], [float("nan"), 0, 0, 0]]}, "grip_tilts (right) is not finite"),
    ({"grip_tilts": [[1, 0, 0, 0]]}, "grip_tilts is not a list of two controllers' values"),
    ({"standing_hmd_height_m": 0.0}, "standing_hmd_height_m is 0 m, outside 0.5-3 m"),
    ({"standing_hmd_height_m": float("inf")}, "standing_hmd_height_m is not finite"),
    ({"arm_span_m": True}, "arm_span_m is not a number"), ({"pose": "X"}, "pose 'X' is neither"),
    ({"found": "yes"}, '"found": true or false'),
], ids=lambda v: v if isinstance(v, str) else None)
def test_an_implausible_stored_calibration_is_one_line_naming_the_file_and_line(tmp_path, change, words):
    data = {k: v for k, v in STORED.items() if k != change} if isinstance(change, str) else {**STORED, **change}
    path = tmp_path / "stream.csv"
    path.write_text(f"# made by hand\n# calibration {json.dumps(data)}\nt\n")
    with pytest.raises(FileFormatError) as raised:
        stored_calibration(path)
    message = str(raised.value)
    assert message.startswith(f"{path}:2: not a calibration: ") and words in message and "\n" not in message


def test_a_calibration_nested_too_deeply_is_one_line(tmp_path):
    path = tmp_path / "stream.csv"
    path.write_text("# calibration " + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "\nt\n")
    with pytest.raises(FileFormatError, match="stream.csv:1: calibration comment is not JSON"):
        stored_calibration(path)


def test_a_comment_of_the_writers_own_that_starts_with_calibration_is_left_alone(tmp_path):
    """Another tool's free text ("# calibration done by hand") is a comment like any other, not a broken calibration;
    the last JSON object after "# calibration" is the stored one."""
    path = tmp_path / "stream.csv"
    path.write_text(f"# calibration {json.dumps(STORED)}\n# calibration done by hand, see notes [v2]\nt\n")
    assert stored_calibration(path).pose_s == (0.0, 3.2)
    path.write_text("# calibration done by hand\n# calibration: T-pose at 0 s\nt\n")
    assert stored_calibration(path) is None


def test_a_plausible_stored_calibration_is_read(tmp_path):
    read = StreamCalibration.from_description(json.loads(json.dumps(STORED)))
    assert read.found and read.pose_s == (0.0, 3.2) and read.grip_offsets_m[1] is None
    np.testing.assert_allclose(np.linalg.norm(read.grip_tilts, axis=-1), 1.0)


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-10, 10) | st.floats(allow_nan=True) | st.text(max_size=3),
                           lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                           max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({}, optional={key: st.one_of(JSON_VALUES, st.just(value)) for key, value in STORED.items()}),
       st.floats(allow_nan=True), st.floats(allow_nan=True))
def test_any_stored_description_is_refused_or_plausible(data, offset, tilt):
    if "grip_offsets_m" in data and isinstance(data["grip_offsets_m"], list) and data["grip_offsets_m"]:
        data["grip_offsets_m"] = [[offset, 0, 0], None]
    if "grip_tilts" in data and isinstance(data["grip_tilts"], list) and data["grip_tilts"]:
        data["grip_tilts"] = [[tilt, 0, 0, 0], [1, 0, 0, 0]]
    try:
        read = StreamCalibration.from_description(data, "stream.csv:1")
    except FileFormatError as error:
        assert str(error).startswith("stream.csv:1: ") and "\n" not in str(error)
        return
    if read.found:
        assert 0.5 <= read.standing_hmd_height_m <= 3.0 and 0.3 <= read.arm_span_m <= 3.5 and len(read.pose_s) == 2
        assert all(o is None or np.linalg.norm(o) <= 0.2 for o in read.grip_offsets_m)
        np.testing.assert_allclose(np.linalg.norm(read.grip_tilts, axis=-1), 1.0)
        assert np.isfinite(read.describe()["grip_tilt_deg"]).all()


def test_stream_calibrate_and_solve_from_the_command_line(tmp_path):
    stream, stored = tmp_path / "walk.csv", tmp_path / "walk.calibrated.csv"
    core("stream", "simulate", FIXTURE_WALK_2, "-o", stream, "--calibration-pose", "2", "--attachment-noise", "0.03", "15")
    printed = json.loads(core("stream", "calibrate", stream, "--json", "-o", stored).stdout)
    assert printed["found"] and len(printed["grip_offsets_m"]) == 2
    assert stored_calibration(stored).describe() == {k: v for k, v in printed.items() if k != "file"}
    source_lines, stored_lines = stream.read_text().splitlines(), stored.read_text().splitlines()
    assert stored_lines == source_lines[:2] + ["# " + stored_calibration(stored).comment()] + source_lines[2:]
    plain = tmp_path / "plain.csv"
    core("stream", "simulate", FIXTURE_WALK_2, "-o", plain)
    assert "no calibration gesture" in core("stream", "calibrate", plain).stdout
    core("stream", "calibrate", stream, "-o", stream, check=False)


@settings(max_examples=150, deadline=None)
@given(device_streams())
def test_any_stream_calibrates_or_says_it_found_nothing(stream):
    calibration = calibrate_stream(stream)
    if calibration.found:
        assert calibration.pose in ("T", "A") and np.isfinite(calibration.arm_span_m)
        assert np.isfinite(calibration.apply(stream).positions[stream.tracked]).all()
    else:
        assert calibration.apply(stream) is stream
