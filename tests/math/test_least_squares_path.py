"""The least-squares path between positions and steps (least_squares_path)."""
import numpy as np
import pytest

from core.math.least_squares_path import least_squares_path


def normal_equations(positions, steps, weight):
    frames = len(positions)
    difference = np.diff(np.eye(frames), axis=0)
    flat = np.linalg.solve(np.eye(frames) + weight * difference.T @ difference,
                           positions.reshape(frames, -1) + weight * difference.T @ steps.reshape(frames - 1, -1))
    return flat.reshape(positions.shape)


@pytest.mark.parametrize("frames", [2, 3, 61])
def test_it_solves_the_normal_equations(frames):
    rng = np.random.default_rng(frames)
    positions, steps = rng.normal(size=(frames, 2, 3)), rng.normal(size=(frames - 1, 2, 3))
    assert np.abs(least_squares_path(positions, steps, 7.5) - normal_equations(positions, steps, 7.5)).max() < 1e-12


def test_weight_zero_keeps_the_positions_and_a_large_weight_integrates_the_steps():
    rng = np.random.default_rng(1)
    positions, steps = rng.normal(size=(40, 3)), rng.normal(size=(39, 3))
    assert np.array_equal(least_squares_path(positions, steps, 0.0), positions)
    path = least_squares_path(positions, steps, 1e9)
    assert np.abs(np.diff(path, axis=0) - steps).max() < 1e-5
    assert np.allclose(path.mean(axis=0), positions.mean(axis=0), atol=1e-9)


def test_consistent_readings_are_kept_and_noisy_positions_are_pulled_toward_the_truth():
    rng = np.random.default_rng(2)
    truth = np.cumsum(rng.normal(scale=0.01, size=(120, 3)), axis=0)
    steps = np.diff(truth, axis=0)
    assert np.abs(least_squares_path(truth, steps, 32.0) - truth).max() < 1e-12
    noisy = truth + rng.normal(scale=0.02, size=truth.shape)
    error = np.linalg.norm(least_squares_path(noisy, steps, 32.0) - truth, axis=-1).mean()
    assert error < 0.3 * np.linalg.norm(noisy - truth, axis=-1).mean()


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="one fewer frame"):
        least_squares_path(np.zeros((5, 3)), np.zeros((5, 3)), 1.0)
    with pytest.raises(ValueError, match=">= 0"):
        least_squares_path(np.zeros((5, 3)), np.zeros((4, 3)), -1.0)
