"""The hybrid's legs stepping with the person (core/hybrid): toe heights, lift-off, release distances."""
from __future__ import annotations

import numpy as np
import pytest

from core.config import DatabaseConfig, HybridConfig, SimulationConfig, MatchingConfig
from core.devices.simulate import simulate_stream
from core.files.bvh import read_bvh
from core.hybrid.solver import HybridSolver
from core.ik.foot_lock import FootLock, Legs
from core.matching.pose_database import build_database, global_transforms
from core.matching.solver import MotionMatchingSolver
from core.solve import solve
from core.n3p.model import N3PModel
from core.n3p.solver import N3PSolver
from core.orientation.window_model import load_orientation_model
from core.quality.metrics import score_motion
from conftest import DATASET_1, DATASET_2, FIXTURE_WALK_1, WALK_1

MATCHED = HybridConfig(legs="matched", lift_off_m=0.03)
"""Motion matching's legs while travelling, lifting off at 3 cm (the feet's changes below are theirs)."""
BEFORE = HybridConfig(legs="matched", matched_toe_heights=False, lift_off_m=0.0,
                      standing_unlock_distance_m=MatchingConfig().foot_unlock_distance_m)
"""The matched legs' feet as they were: matched rotations only, released at the contact's end and, standing or
not, at motion matching's release distance."""


@pytest.fixture(scope="module")
def database():
    """The fixture walk turning left, and mirrored: turning right."""
    return build_database([read_bvh(FIXTURE_WALK_1)], DatabaseConfig(mirror=True))


def test_planting_puts_free_toes_at_the_given_heights_and_keeps_them_over_the_floor(database):
    """Free feet (no contact) go to the heights asked for, 4 cm higher than posed (the knees bend), without moving
    on the floor; without heights the toes stay where the pose has them."""
    legs = Legs.of(database.skeleton, database.mapping)
    frames = slice(0, 90)
    rotations, positions = database.rotations[frames].astype(float), database.positions[frames].astype(float)
    toes = [database.mapping["l_toes"], database.mapping["r_toes"]]
    _, before = global_transforms(database)
    before = before[frames][:, toes]
    heights = before[..., 1] + 0.04
    free = np.zeros((90, 2), bool)
    planted = rotations.copy()
    legs.plant(planted, positions, FootLock(), free, 1.0 / 60.0, None, None, heights)
    _, after = legs.transforms(planted, positions)
    after = after[:, :, -1]
    np.testing.assert_allclose(after[..., 1], heights, atol=1e-3)
    np.testing.assert_allclose(after[..., [0, 2]], before[..., [0, 2]], atol=1e-3)
    unchanged = rotations.copy()
    legs.plant(unchanged, positions, FootLock(), free, 1.0 / 60.0)
    np.testing.assert_allclose(legs.transforms(unchanged, positions)[1][:, :, -1], before, atol=1e-6)


def test_a_foot_released_far_from_its_lock_catches_up_in_an_arc():
    """The pose's toe slides away on the floor while its contact goes on: released at the unlock distance, the foot
    closes the gap on the same horizontal path as without the arc, raised at most the step height's share of the
    gap (about halfway), and is back on the floor when the gap has closed."""
    frames, dt = 90, 1.0 / 60.0
    path = np.zeros((frames, 2, 3))
    path[:30, 0, 0] = 0.012 * np.arange(30)  # 36 cm away in half a second, then still
    path[30:, 0, 0] = path[29, 0, 0]
    contacts = np.ones((frames, 2), bool)
    arced, flat = FootLock(0.3, 0.1, 0.0, 0.15), FootLock(0.3, 0.1)
    up = np.array([arced.targets(path[t], contacts[t], dt) for t in range(frames)])
    along = np.array([flat.targets(path[t], contacts[t], dt) for t in range(frames)])
    np.testing.assert_allclose(up[:, :, [0, 2]], along[:, :, [0, 2]], atol=1e-12)
    np.testing.assert_allclose(along[:, :, 1], 0.0)
    released = int(np.flatnonzero(up[:, 0, 0] > 1e-9)[0])  # the first frame past 0.3 m
    gap = path[released, 0, 0]
    assert 0.3 < gap < 0.32
    assert 0.8 * 0.15 * gap < up[:, 0, 1].max() <= 0.15 * gap + 1e-9
    assert up[released - 1, 0, 1] == 0.0 and up[released, 0, 1] < 0.01  # leaves the floor gradually ...
    assert up[-1, 0, 1] < 0.002  # ... and lands on it
    assert np.allclose(up[:, 1], 0.0)


def test_a_lifting_foot_keeps_its_place_until_it_is_off_the_floor():
    """The contact ends while the pose's toe is still low and moving on: with a lift-off height the foot stays on
    its lock (rising with the pose) until the toe is that high, then moves on in the air with no drop; without
    one it is released at the contact's end."""
    path = np.zeros((12, 2, 3))
    path[:, 0, 2] = 0.02 * np.arange(12)  # the left toe slides forward ...
    path[:, 0, 1] = np.r_[np.zeros(4), 0.01 * np.arange(1, 9)]  # ... and rises 1 cm a frame after frame 3
    contacts = np.ones((12, 2), bool)
    contacts[2:, 0] = False
    lifting, plain = FootLock(lift_off_m=0.03), FootLock()
    held = np.array([lifting.targets(path[t], contacts[t], 1.0 / 60.0) for t in range(12)])
    released = np.array([plain.targets(path[t], contacts[t], 1.0 / 60.0) for t in range(12)])
    assert np.allclose(held[:6, 0, [0, 2]], 0.0)  # on its lock up to frame 5 (toe 2 cm up) ...
    np.testing.assert_allclose(held[:7, 0, 1], path[:7, 0, 1])  # ... its height the pose's
    assert not lifting.locked[0] and held[7, 0, 2] > 0.0  # frame 7 (toe 4 cm up): moving on
    np.testing.assert_allclose(held[7:, 0, 1], path[7:, 0, 1])  # no drop back to the floor
    assert released[2, 0, 2] > 0.0 and not plain.locked[0]
    assert np.allclose(held[:, 1], 0.0) and np.allclose(released[:, 1], 0.0)  # the right foot stays locked


@pytest.fixture(scope="module")
def skating():
    """Foot skating over the truth's of the hybrid with matched legs as they are and with their feet as before, over
    a database of three walks and two runs, on a held-out walk, run and bow at 60 degrees' look-around."""
    database = build_database([read_bvh(WALK_1)] +
                              [read_bvh(DATASET_2 / f"dataset-2_walk_normal_00{i}.bvh") for i in (2, 3)] +
                              [read_bvh(DATASET_2 / f"dataset-2_run_normal_00{i}.bvh") for i in (1, 2)])
    ratios = {}
    for clip in ("walk_active", "run_not-confident", "bow_childish"):
        simulated = simulate_stream(read_bvh(DATASET_1 / f"dataset-1_{clip}_001.bvh"),
                                    SimulationConfig(look_around_deg=60.0))
        for name, config in (("now", MATCHED), ("before", BEFORE)):
            hybrid = HybridSolver(N3PSolver(N3PModel.load()), None, config,
                                  MotionMatchingSolver([database], orientation_model=load_orientation_model()))
            scores = score_motion(solve(simulated.stream, hybrid).motion, simulated.truth)
            ratios[clip, name] = (scores["foot_skate_cm_s"] / scores["foot_skate_cm_s_truth"], scores["mpjpe_cm"])
    return ratios


@pytest.mark.parametrize("clip, bound", [("walk_active", 0.85), ("run_not-confident", 1.0), ("bow_childish", 0.85)])
def test_the_feet_slide_less_than_before_on_walks_runs_and_bows(skating, clip, bound):
    """Toe heights, lift-off and the wider release while standing, with matched legs (both rows catch up in the
    default arc): 5.1 -> 1.4x the truth's on the walk, 5.8 -> 4.5x on the run, 6.5 -> 1.4x on the bow over this
    small database (with the shipped predictor); MPJPE within a centimetre (11.4 -> 11.5 cm on the walk)."""
    now, before = skating[clip, "now"], skating[clip, "before"]
    assert now[0] < bound * before[0]
    assert now[1] < before[1] + 1.0


def test_a_frames_release_distance_overrides_the_locks():
    """A locked foot whose pose's toe drifts 5 cm a frame: released past 0.3 m by default, held to 0.6 m when the
    frame says so."""
    lock, wide = FootLock(0.3), FootLock(0.3)
    contacts = np.ones(2, bool)
    for t in range(10):
        feet = np.array([[0.0, 0.0, 0.05 * t], [0.2, 0.0, 0.0]])
        lock.targets(feet, contacts, 1.0 / 60.0)
        wide.targets(feet, contacts, 1.0 / 60.0, 0.6)
    assert not lock.locked[0] and wide.locked[0] and lock.locked[1]
    np.testing.assert_allclose(wide.lock_positions[0], 0.0)
