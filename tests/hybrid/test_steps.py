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
