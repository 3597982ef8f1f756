"""Refitting Parger et al.'s elbow constants (§3.3's error minimization): the optimiser, the constants'
file, the fit on real arm poses, `train ik` and the constants reaching the solver."""
import dataclasses
import json

import numpy as np
import pytest

from core.config import FITTED_IK_CONSTANTS, MatchingConfig, UpperBodyIKConfig
from core.tools.train.upper_body_ik import (FITTED_FIELDS, clip_arm_poses, constants_from_vector, constants_vector,
                                    elbow_rmse_cm, fit_constants, group_by_bone_lengths)
from core.tools.train.nelder_mead import minimize
from core.ik.upper_body_ik import ik_constants
from conftest import DATASET_1, FIXTURE_WALK_1, FIXTURE_WALK_2, WALK_1, WALK_2
from conftest import core

HELD_OUT_WALK = DATASET_1 / "dataset-1_walk_active_001.bvh"
"""A validation-split walk (WALK_1 and WALK_2 are training files)."""


def rosenbrock(x):
    return (1.0 - x[0]) ** 2 + 100.0 * (x[1] - x[0] ** 2) ** 2


def test_nelder_mead_finds_the_rosenbrock_minimum():
    result = minimize(rosenbrock, [-1.2, 1.0], [0.5, 0.5], max_evaluations=2000, tolerance=1e-14)
    np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-4)
    assert result.value < 1e-8 and result.evaluations <= 2000
    assert all(a >= b for a, b in zip(result.history, result.history[1:]))  # the best value never rises


def test_nelder_mead_in_twelve_dimensions_and_within_its_budget():
    centre = np.linspace(-3.0, 3.0, 12)
    scales = np.linspace(1.0, 10.0, 12)

    def bowl(x):
        return float(np.sum(scales * (x - centre) ** 2))

    result = minimize(bowl, np.zeros(12), np.ones(12), max_evaluations=6000, tolerance=1e-12)
    np.testing.assert_allclose(result.x, centre, atol=1e-3)
    short = minimize(bowl, np.zeros(12), np.ones(12), max_evaluations=100)
    assert short.evaluations <= 100 + 12  # a shrink step may finish past the budget by n evaluations
    assert short.value < bowl(np.zeros(12))


def test_constants_vector_round_trip_and_the_forms_it_keeps():
    paper = UpperBodyIKConfig()
    x = constants_vector(paper)
    assert x.shape == (12,)
    back = constants_from_vector(x)
    for name in FITTED_FIELDS:
        np.testing.assert_allclose(getattr(back, name), getattr(paper, name), atol=1e-3)  # v_f comes back unit
    assert np.linalg.norm(back.elbow_rest_direction) == pytest.approx(1.0)
    swapped = x.copy()
    swapped[7], swapped[8] = 170.0, 20.0
    config = constants_from_vector(swapped)
    assert (config.elbow_min_deg, config.elbow_max_deg) == (20.0, 170.0)
    assert config.wrist_roll_lower_gain_deg == paper.wrist_roll_lower_gain_deg  # eq. 5 is not fitted


@pytest.fixture(scope="module")
def poses():
    return {path.stem: clip_arm_poses(path, frame_step=4) for path in (WALK_1, WALK_2, HELD_OUT_WALK)}


def test_fitting_lowers_the_elbow_error_on_a_clip_it_did_not_see(poses):
    training = group_by_bone_lengths([poses[WALK_1.stem], poses[WALK_2.stem]])
    held_out = [poses[HELD_OUT_WALK.stem]]
    paper = UpperBodyIKConfig()
    fitted, value, evaluations = fit_constants(training, paper, max_evaluations=300)
    assert evaluations <= 300 + 12
    assert value == pytest.approx(elbow_rmse_cm(training, fitted))
    assert value < 0.8 * elbow_rmse_cm(training, paper)
    assert elbow_rmse_cm(held_out, fitted) < elbow_rmse_cm(held_out, paper)


def test_grouping_by_bone_lengths_keeps_every_frame(poses):
    clips = list(poses.values())
    grouped = group_by_bone_lengths(clips)
    assert sum(len(g.elbows) for g in grouped) == sum(len(c.elbows) for c in clips)
    assert elbow_rmse_cm(grouped, UpperBodyIKConfig()) == pytest.approx(elbow_rmse_cm(clips, UpperBodyIKConfig()))


def test_grouping_the_fixture_walks_by_bone_lengths_keeps_every_frame():
    """The fixture walks of tests/data: two figures, 0.92 of each other's size."""
    clips = [clip_arm_poses(path, frame_step=4) for path in (FIXTURE_WALK_1, FIXTURE_WALK_2)]
    grouped = group_by_bone_lengths(clips)
    assert len(grouped) == 2
    assert sum(len(g.elbows) for g in grouped) == sum(len(c.elbows) for c in clips)
    assert elbow_rmse_cm(grouped, UpperBodyIKConfig()) == pytest.approx(elbow_rmse_cm(clips, UpperBodyIKConfig()))


def test_the_shipped_constants_load_and_say_how_they_were_made():
    fitted = ik_constants("fitted")
    record = json.loads(FITTED_IK_CONSTANTS.read_text())["record"]
    assert record["validation_files"] > 0 and record["fitted_fields"] == list(FITTED_FIELDS)
    assert record["validation_elbow_cm"]["fitted"] < record["validation_elbow_cm"]["paper"]
    assert fitted.elbow_max_deg != UpperBodyIKConfig().elbow_max_deg
    assert fitted.wrist_yaw_gain_deg == UpperBodyIKConfig().wrist_yaw_gain_deg
    assert ik_constants("paper") == UpperBodyIKConfig()


def test_the_solver_uses_the_fitted_constants_unless_told_the_papers():
    assert MatchingConfig().upper_body == ik_constants("fitted") != ik_constants("paper")
    assert MatchingConfig(upper_body=ik_constants("paper")).upper_body == UpperBodyIKConfig()


@pytest.mark.parametrize("content, message", [
    ("{not json", "not an IK constants file"),
    ('{"record": {}}', "not an IK constants file"),
    ('{"constants": {"elbow_swing": 3}}', "unknown IK constant 'elbow_swing'"),
    ('{"constants": {"elbow_biases_deg": [1, 2]}}', "'elbow_biases_deg' is [1, 2]"),
    ('{"constants": {"elbow_max_deg": "high"}}', "'elbow_max_deg' is 'high'"),
])
def test_a_bad_constants_file_is_refused_with_its_path(tmp_path, content, message):
    path = tmp_path / "ik.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=r".*ik\.json.*") as error:
        UpperBodyIKConfig.load(path)
    assert message in str(error.value)


def test_a_missing_constants_file_says_how_to_make_one(tmp_path):
    with pytest.raises(ValueError, match=r"missing\.json: no such IK constants file .*train ik"):
        ik_constants(str(tmp_path / "missing.json"))


def test_train_ik_writes_constants_that_eval_and_solve_take(tmp_path):
    out = tmp_path / "ik.json"
    done = core("train", "ik", "--data", WALK_1, WALK_2, HELD_OUT_WALK, "-o", out, "--evaluations", "150")
    assert "validation_elbow_cm" in done.stderr
    saved = json.loads(out.read_text())
    assert set(saved["constants"]) == set(FITTED_FIELDS)
    assert saved["record"]["training_files"] == 2 and saved["record"]["validation_files"] == 1
    assert saved["record"]["training_elbow_cm"]["fitted"] < saved["record"]["training_elbow_cm"]["paper"]
    loaded = UpperBodyIKConfig.load(out)
    assert dataclasses.replace(loaded, **{f: getattr(UpperBodyIKConfig(), f) for f in FITTED_FIELDS}) == \
        UpperBodyIKConfig()  # only the fitted fields differ from the paper's
    figures = json.loads(core("eval", "ik", "--data", HELD_OUT_WALK, "--split", "all", "--fitted", out,
                              "--json").stdout)
    assert figures["parger_fitted"]["elbow_cm"] < figures["parger"]["elbow_cm"]
    assert figures["parger_fitted"]["hand_cm"] < 0.5
    without = json.loads(core("eval", "ik", "--data", HELD_OUT_WALK, "--split", "all", "--fitted", "none",
                              "--json").stdout)
    assert "parger_fitted" not in without and without["parger"] == figures["parger"]


def test_train_ik_on_the_fixture_walks_writes_constants_that_eval_takes(tmp_path):
    """The command line's contract on the fixture walks (one training file, one in the validation split): the
    fitted fields written, the fit below the paper's constants on what it was fitted to, `eval ik --fitted`."""
    out = tmp_path / "ik.json"
    done = core("train", "ik", "--data", FIXTURE_WALK_1, FIXTURE_WALK_2, "-o", out, "--evaluations", "150")
    assert "validation_elbow_cm" in done.stderr
    saved = json.loads(out.read_text())
    assert set(saved["constants"]) == set(FITTED_FIELDS)
    assert saved["record"]["training_files"] == 1 and saved["record"]["validation_files"] == 1
    assert saved["record"]["training_elbow_cm"]["fitted"] < saved["record"]["training_elbow_cm"]["paper"]
    loaded = UpperBodyIKConfig.load(out)
    assert dataclasses.replace(loaded, **{f: getattr(UpperBodyIKConfig(), f) for f in FITTED_FIELDS}) == \
        UpperBodyIKConfig()
    figures = json.loads(core("eval", "ik", "--data", FIXTURE_WALK_2, "--split", "all", "--fitted", out,
                              "--json").stdout)
    assert {"parger", "parger_fitted"} <= set(figures)
    without = json.loads(core("eval", "ik", "--data", FIXTURE_WALK_2, "--split", "all", "--fitted", "none",
                              "--json").stdout)
    assert "parger_fitted" not in without and without["parger"] == figures["parger"]
