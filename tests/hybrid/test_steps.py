"""The hybrid's legs stepping with the person (core/hybrid): toe heights, the matching query, contacts."""
from __future__ import annotations

import numpy as np
import pytest

from core.config import DatabaseConfig
from core.files.bvh import read_bvh
from core.ik.foot_lock import FootLock, Legs
from core.matching.pose_database import build_database, global_transforms
from conftest import FIXTURE_WALK_1


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
