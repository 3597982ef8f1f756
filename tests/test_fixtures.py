"""The committed fixtures of tests/data are what tests/data/make_fixtures.py makes, so they cannot drift."""
import sys

import numpy as np

from conftest import FIXTURES, TESTS
from core.files.bvh import read_bvh

sys.path.insert(0, str(TESTS / "data"))
import make_fixtures  # noqa: E402


def _header_and_numbers(path):
    text = path.read_text()
    header, body = text.split("MOTION\n", 1)
    return header, np.array(body.split("\n", 2)[2].split(), float)


def test_committed_fixtures_equal_what_the_generator_makes(tmp_path):
    made = make_fixtures.make_fixtures(tmp_path)
    assert sorted(p.name for p in made) == sorted(p.name for p in FIXTURES.iterdir())
    for path in made:
        header, numbers = _header_and_numbers(path)
        committed_header, committed_numbers = _header_and_numbers(FIXTURES / path.name)
        assert header == committed_header and numbers.shape == committed_numbers.shape
        assert np.abs(numbers - committed_numbers).max() < 1e-5, path.name


def test_fixture_walks_plant_their_feet_and_turn(fixture_walk1, fixture_walk2):
    """The clips are what the tests take them for: feet flat on the floor between steps, a turn each way."""
    for motion, turn in ((fixture_walk1, 90.0), (fixture_walk2, -60.0)):
        names = motion.skeleton.names
        positions = motion.global_positions()
        feet = positions[:, [names.index("Foot_L"), names.index("Foot_R")]]
        planted = feet[1:, :, 1] < feet[..., 1].min() + 1e-4
        steps = np.linalg.norm(np.diff(feet, axis=0), axis=-1)
        assert 0.5 < planted.mean() < 0.9 and steps[planted].max() * motion.fps < 1.0
        hips = positions[:, names.index("Hips")]
        heading = np.diff(hips[[-40, -30]], axis=0)[0]
        assert abs(np.degrees(np.arctan2(heading[0], heading[2])) - turn) < 5.0 or np.linalg.norm(heading) < 1e-3
        assert np.linalg.norm(hips[-1, [0, 2]] - hips[0, [0, 2]]) > 3.0
    assert fixture_walk1.skeleton.names == fixture_walk2.skeleton.names
    assert read_bvh(FIXTURES / f"{fixture_walk1.name}.bvh").fps == 30.0
