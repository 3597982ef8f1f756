"""The predictor's body with motion matching's legs while travelling (hybrid_solver.py, issue 28's experiment)."""
import numpy as np

from core.files.bvh import read_bvh
from core.config import SimulationConfig
from core.devices.attachments import implied_joint_positions
from core.tools.eval.hybrid_solver import STANDING_M_S, TRAVELLING_M_S, MatchedLegsSolver, travel_weights
from core.quality.metrics import score_motion
from core.n3p.model import N3PModel
from core.n3p.solver import N3PSolver
from core.orientation.window import load_orientation_model
from core.matching.pose_database import build_database
from core.devices.simulate import simulate_stream
from core.matching.solver import Solver, solve
from conftest import DATASET_1, DATASET_2, WALK_1

HELD_OUT_WALK = DATASET_1 / "dataset-1_walk_active_001.bvh"


def test_travel_weights_follow_the_hips_speed():
    fps = 60.0
    speeds = np.r_[np.zeros(60), np.full(120, 1.0), np.full(60, 0.3), np.zeros(60)]
    hips = np.zeros((len(speeds), 3))
    hips[:, 2] = np.cumsum(speeds) / fps
    w = travel_weights(hips, fps)
    assert w[:45].max() == 0.0 and w[80:170].min() == 1.0 and w[-30:].max() == 0.0
    between = w[200:220]
    assert 0.0 < between.mean() < 1.0 and STANDING_M_S < 0.3 < TRAVELLING_M_S


def test_on_a_held_out_walk_the_legs_step_and_the_upper_body_stays_the_predictors():
    """The predictor's feet slide 17 times the truth's on this walk; with the legs matched from a database of
    three walks the ratio falls to 7 (under half), while the upper body and the root stay the predictor's."""
    database = build_database([read_bvh(WALK_1)] + [read_bvh(DATASET_2 / f"dataset-2_walk_normal_00{i}.bvh")
                                                     for i in (2, 3)])
    predictor = N3PSolver(N3PModel.load())
    hybrid = MatchedLegsSolver(predictor, Solver([database], orientation_model=load_orientation_model()))
    simulated = simulate_stream(read_bvh(HELD_OUT_WALK), SimulationConfig(look_around_deg=60.0))
    implied = implied_joint_positions(simulated.stream)[:, 1:]
    scores = {name: score_motion(solve(simulated.stream, solver).motion, simulated.truth, implied)
              for name, solver in (("n3p", predictor), ("hybrid", hybrid))}
    ratio = {n: s["foot_skate_cm_s"] / s["foot_skate_cm_s_truth"] for n, s in scores.items()}
    assert ratio["hybrid"] < 0.5 * ratio["n3p"]
    assert abs(scores["hybrid"]["mpjpe_cm_upper"] - scores["n3p"]["mpjpe_cm_upper"]) < 0.05
    assert abs(scores["hybrid"]["root_cm"] - scores["n3p"]["root_cm"]) < 0.05
