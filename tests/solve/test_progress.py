"""An offline solve's progress (core.solution.Progress): told as the solve goes, from 0 to 1, for every method and
the physics pass, without changing the result; the command line shows it on a terminal only."""
import io

import numpy as np
import pytest

from core.config import DatabaseConfig, MatchingConfig, SolveConfig
from core.devices.simulate import simulate_stream
from core.files.bvh import read_bvh
from core.matching.pose_database import build_database
from core.matching.solver import MotionMatchingSolver
from core.solve import load_solver, solve
from core.tools.arguments import terminal_progress
from conftest import FIXTURE_WALK_1


@pytest.fixture(scope="module")
def stream():
    return simulate_stream(read_bvh(FIXTURE_WALK_1)).stream


def _solver(method: str):
    if method == "mm":
        database = build_database([read_bvh(FIXTURE_WALK_1)], DatabaseConfig(mirror=True))
        return MotionMatchingSolver([database], MatchingConfig(orientation="hmd"))
    return load_solver(SolveConfig(method=method))


def _told_in_order(shares: list[float]) -> None:
    assert len(shares) >= 40  # told often, not once at the end
    assert shares[0] == 0.0 and shares[-1] == 1.0
    assert np.all(np.diff(shares) >= 0.0) and np.all(np.diff(shares) <= 0.1)  # never back, never a long silence


@pytest.mark.parametrize("method", ["hybrid", "n3p", "mm"])
def test_every_method_tells_its_progress_from_zero_to_one_and_solves_the_same(stream, method):
    shares = []
    told = solve(stream, _solver(method), None, shares.append)
    _told_in_order(shares)
    untold = solve(stream, _solver(method), None)
    # The same to the last bits but for BLAS's threads: under a loaded suite, two `mm` solves once differed by 2e-13.
    np.testing.assert_allclose(told.motion.rotations, untold.motion.rotations, rtol=0.0, atol=1e-9)
    np.testing.assert_allclose(told.motion.positions, untold.motion.positions, rtol=0.0, atol=1e-9)


def test_the_physics_pass_tells_its_progress(stream):
    pytest.importorskip("mujoco")
    pytest.importorskip("daqp")
    from core.solve import with_physics
    solution = solve(stream, _solver("hybrid"), None)
    shares = []
    told = with_physics(solution, progress=shares.append)
    _told_in_order(shares)
    np.testing.assert_array_equal(told.motion.positions, with_physics(solution).motion.positions)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_command_line_shows_progress_on_a_terminal_only():
    assert terminal_progress("solving", io.StringIO()) is None  # a log or a pipe: nothing
    out = _Terminal()
    progress = terminal_progress("solving", out)
    for share in (0.0, 0.004, 0.5, 0.501, 1.0):
        progress(share)
    assert out.getvalue() == "\rsolving: 0 %\rsolving: 50 %\rsolving: 100 %\n"
