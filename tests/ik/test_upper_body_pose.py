"""The IK on an avatar (joint rotations over a given torso), the FABRIK baseline and `eval ik`."""
import json

import numpy as np
import pytest

from core.math import quat
from core.config import SimulationConfig
from core.files.bvh import read_bvh
from core.devices.attachments import implied_joint_positions
from core.tools.eval.ik import evaluate, reference_pose
from core.ik.fabrik import solve_chain, within_cone
from core.anim.motion import Motion
from core.devices.simulate import simulate_stream
from core.anim.skeleton import Skeleton
from core.ik.upper_body_pose import UpperBodyJoints, calibrate_upper_body, pose_upper_body
from conftest import FIXTURE_WALK_1, FIXTURE_WALK_2, WALK_1, WALK_2
from conftest import core


def pose_walk(motion):
    """A clip's stream, and the avatar re-posed by the IK from the devices over its true torso."""
    sim = simulate_stream(motion[:120], SimulationConfig(look_around_deg=40.0, seed=3))
    truth, mapping, stream = sim.truth, sim.mapping, sim.stream
    implied = implied_joint_positions(stream)
    n = 30
    calibration, attachments, frame = calibrate_upper_body(truth, stream, mapping, n)
    start = reference_pose(truth, mapping, n)
    result = pose_upper_body(start, UpperBodyJoints.of(truth.skeleton, mapping), implied[:, 0],
                             stream.rotations[:, 0], implied[:, 1:], stream.rotations[:, 1:], attachments, frame,
                             calibration)
    return sim, start, result, implied, attachments


@pytest.fixture(scope="module", params=[FIXTURE_WALK_2, WALK_2], ids=["fixture", "bandai"])
def posed(request):
    """The fixture walk of tests/data and a Bandai clip, re-posed by the IK."""
    return pose_walk(read_bvh(request.param))


@pytest.fixture(scope="module")
def bandai_posed():
    """A Bandai clip, re-posed by the IK: its arms straighten, some controllers are out of reach."""
    return pose_walk(read_bvh(WALK_2))


def hand_errors(posed):
    """(distance of each hand to its controller-implied wrist (F, 2), which are within the arm's reach (F, 2), the
    hands' rotation error to the controllers' (degrees, F, 2))."""
    sim, _, result, implied, attachments = posed
    mapping = sim.mapping
    rotations, positions = result.global_transforms()
    hands = [mapping["l_hand"], mapping["r_hand"]]
    anchors = [mapping["l_upper_arm"], mapping["r_upper_arm"]]
    arm = (np.linalg.norm(result.positions[0, [mapping["l_forearm"]]]) + np.linalg.norm(result.positions[0, hands[:1]]))
    reachable = np.linalg.norm(implied[:, 1:] - positions[:, anchors], axis=-1) < arm - 1e-3
    expected = quat.multiply_inverse(sim.stream.rotations[:, 1:], attachments.grips_in_hands)
    return (np.linalg.norm(positions[:, hands] - implied[:, 1:], axis=-1), reachable,
            np.degrees(quat.angle_between(rotations[:, hands], expected)))


def test_hands_land_on_reachable_controllers_and_follow_their_rotation(posed):
    """On any walk (the fixture walk's elbows stay bent, so every controller is within reach)."""
    error, reachable, turn = hand_errors(posed)
    assert reachable.mean() > 0.5
    assert error[reachable].max() < 1e-6
    assert turn.max() < 1e-4


def test_hands_land_on_the_controllers_and_follow_their_rotation(bandai_posed):
    error, reachable, turn = hand_errors(bandai_posed)
    assert reachable.mean() > 0.5
    assert error[reachable].max() < 1e-6
    assert error[~reachable].max() < 0.02  # a straight arm toward a target just out of reach
    assert turn.max() < 1e-4


def test_head_follows_the_hmd_and_the_torso_is_untouched(posed):
    sim, start, result, implied, attachments = posed
    mapping = sim.mapping
    rotations, positions = result.global_transforms()
    expected = quat.multiply_inverse(sim.stream.rotations[:, 0], attachments.hmd_in_head)
    assert np.degrees(quat.angle_between(rotations[:, mapping["head"]], expected)).max() < 1e-4
    torso = [mapping[j] for j in ("hips", "spine", "chest")]
    np.testing.assert_array_equal(result.rotations[:, torso], start.rotations[:, torso])
    # the neck points the head joint at the HMD-implied head as well as its fixed bone length allows
    assert np.linalg.norm(positions[:, mapping["head"]] - implied[:, 0], axis=-1).mean() < 0.03


def hang_shoulders_from_neck(motion, mapping):
    """The same global poses on a rig whose shoulders hang from the neck, as 3ds Max Biped's clavicles do."""
    neck, shoulders = mapping["neck"], [mapping["l_shoulder"], mapping["r_shoulder"]]
    rotations, positions = motion.global_transforms()
    parents = motion.skeleton.parents.copy()
    parents[shoulders] = neck
    local_rotations, local_positions = motion.rotations.copy(), motion.positions.copy()
    local_rotations[:, shoulders] = quat.inverse_multiply(rotations[:, [neck]], rotations[:, shoulders])
    local_positions[:, shoulders] = quat.inverse_rotate(rotations[:, [neck]],
                                                        positions[:, shoulders] - positions[:, [neck]])
    skeleton = Skeleton(motion.skeleton.names, parents, local_positions[0], motion.skeleton.end_sites)
    return Motion(skeleton, local_rotations, local_positions, motion.fps)


def test_shoulders_hanging_from_the_neck_are_carried_by_its_turn(posed):
    sim, start, result, implied, attachments = posed
    mapping = sim.mapping
    rig = hang_shoulders_from_neck(start, mapping)
    joints = UpperBodyJoints.of(rig.skeleton, mapping)
    assert joints.shoulders_on_neck and not UpperBodyJoints.of(start.skeleton, mapping).shoulders_on_neck
    calibration, _, frame = calibrate_upper_body(sim.truth, sim.stream, mapping, 30)
    on_neck = pose_upper_body(rig, joints, implied[:, 0], sim.stream.rotations[:, 0], implied[:, 1:],
                              sim.stream.rotations[:, 1:], attachments, frame, calibration)
    rotations, positions = on_neck.global_transforms()
    hands, anchors = [mapping["l_hand"], mapping["r_hand"]], [mapping["l_upper_arm"], mapping["r_upper_arm"]]
    arm = joints.upper_arm_m + joints.forearm_m
    reachable = np.linalg.norm(implied[:, 1:] - positions[:, anchors], axis=-1) < arm - 1e-3
    assert reachable.mean() > 0.5
    assert np.linalg.norm(positions[:, hands] - implied[:, 1:], axis=-1)[reachable].max() < 1e-6
    # The clavicles turn with the neck, so the shoulders sit where the neck's turn put them.
    neck = mapping["neck"]
    carried = positions[:, [neck]] + quat.rotate(rotations[:, [neck]], rig.positions[:, joints.shoulder])
    np.testing.assert_allclose(positions[:, joints.shoulder], carried, atol=1e-12)


def test_fabrik_reaches_keeps_bone_lengths_and_limits():
    rng = np.random.default_rng(5)
    count = 400
    root = np.zeros((count, 3))
    lengths = [0.15, 0.3, 0.27]
    start = np.cumsum(np.broadcast_to(np.array([[0.15, 0, 0], [0, -0.3, 0], [0, -0.27, 0]]), (count, 3, 3)), axis=1)
    direction = rng.normal(size=(count, 3))
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    target = np.array([0.15, 0, 0]) + direction * rng.uniform(0.1, 0.5, size=(count, 1))
    axis = np.broadcast_to([1.0, 0, 0], (count, 3))
    joints = solve_chain(root, start, lengths, target, axis, [20.0, 120.0, 150.0], 60)
    bones = np.diff(np.concatenate([root[:, None], joints], axis=1), axis=1)
    np.testing.assert_allclose(np.linalg.norm(bones, axis=-1), np.broadcast_to(lengths, (count, 3)), atol=1e-9)
    cosines = np.sum(bones[:, 0] * axis, axis=-1) / 0.15
    assert np.degrees(np.arccos(np.clip(cosines, -1, 1))).max() < 20.0 + 1e-6
    assert np.median(np.linalg.norm(joints[:, -1] - target, axis=-1)) < 1e-3


def test_within_cone_projects_onto_the_cone():
    axis = np.array([0.0, 0.0, 1.0])
    inside = np.array([0.0, np.sin(0.2), np.cos(0.2)])
    np.testing.assert_allclose(within_cone(inside, axis, 0.5), inside)
    outside = np.array([1.0, 0.0, 0.0])
    np.testing.assert_allclose(within_cone(outside, axis, np.radians(30)), [0.5, 0.0, np.cos(np.radians(30))])


@pytest.mark.parametrize("walks", [(FIXTURE_WALK_1, FIXTURE_WALK_2), (WALK_1, WALK_2)], ids=["fixture", "bandai"])
def test_evaluate_reports_every_method_and_reaches_reachable_hands(walks):
    WALK_1, WALK_2 = walks
    summary = evaluate([WALK_1, WALK_2])
    for method in ("parger", "fabrik", "parger_head_chain"):
        assert set(summary[method]) >= {"neck_cm", "shoulder_cm", "elbow_cm", "hand_cm", "files", "activities"}
        assert 0.0 < summary[method]["elbow_cm"] < 30.0
    assert summary["parger"]["reachable_hand_max_mm"] < 1.0
    assert summary["clips"] == 2 and set(summary["parger"]["files"]) == {WALK_1.stem, WALK_2.stem}


def test_reference_pose_holds_everything_above_the_chest(fixture_walk1):
    """The solvers start every frame from the first frames' pose above the chest: they never see the clip's arms."""
    walk1 = fixture_walk1
    mapping = simulate_stream(walk1[:40]).mapping
    held = reference_pose(walk1, mapping, 15)
    arm = [mapping[f"{s}_{j}"] for s in "lr" for j in ("shoulder", "upper_arm", "forearm", "hand")]
    np.testing.assert_allclose(quat.angle_between(held.rotations[:, arm], held.rotations[:1, arm]), 0.0, atol=1e-7)
    torso = [mapping[j] for j in ("hips", "spine", "chest")]
    np.testing.assert_array_equal(held.rotations[:, torso], walk1.rotations[:, torso])


def test_eval_ik_command_prints_json():
    done = core("eval", "ik", "--data", FIXTURE_WALK_1, FIXTURE_WALK_2, "--split", "all", "--json")
    result = json.loads(done.stdout)
    assert {"parger", "fabrik", "parger_head_chain", "paper_urm"} <= set(result)
    assert "elbow" in done.stderr and "walk" in done.stderr
