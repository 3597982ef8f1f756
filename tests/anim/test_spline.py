"""Catmull-Rom resampling: through every frame, smooth where linear resampling kinks, nothing blended across a break."""
import numpy as np
from hypothesis import given, settings, strategies as st

from core.anim.motion import Motion
from core.anim.spline import catmull_rom_weights, spline_resampled
from core.anim.skeleton import Skeleton
from core.math import quat
from core.quality.metrics import jitter


def chain():
    return Skeleton(("root", "mid", "tip"), np.array([-1, 0, 1]), np.array([[0, 0, 0], [0, 1, 0], [0, 1, 0.0]]))


def drawn_motion(seed: int, frames: int, fps: float) -> Motion:
    """A chain turning and travelling at random, each frame within 40° of the last (so quaternions blend)."""
    rng = np.random.default_rng(seed)
    steps = quat.from_rotation_vector(rng.normal(0.0, 0.25, (frames, 3, 3)))
    rotations = np.tile(quat.identity(3), (frames, 1, 1))
    for t in range(1, frames):
        rotations[t] = quat.multiply(rotations[t - 1], steps[t])
    return Motion.from_root(chain(), quat.positive_hemisphere(rotations), np.cumsum(rng.normal(0, 0.05, (frames, 3)),
                                                                                    axis=0), fps)


@given(st.floats(0.0, 1.0))
def test_the_weights_sum_to_one_and_give_the_frames_at_the_ends(t):
    weights = catmull_rom_weights(np.array([t, 0.0, 1.0]))
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(weights[1:], [[0, 1, 0, 0], [0, 0, 1, 0]], atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 16), st.integers(2, 40), st.sampled_from([24.0, 30.0, 40.0]),
       st.sampled_from([2, 3, 4]))
def test_the_spline_passes_through_every_frame(seed, frames, fps, factor):
    """Up-sampled by a whole factor, every factor-th frame is the source frame: rotations (either sign) and
    positions; the count and the held last frame are as Motion.resampled gives them."""
    motion = drawn_motion(seed, frames, fps)
    smooth = spline_resampled(motion, fps * factor)
    assert len(smooth) == len(motion.resampled(fps * factor))
    on = smooth.rotations[::factor][:frames]
    np.testing.assert_allclose(np.abs(np.sum(on * motion.rotations, axis=-1)), 1.0, atol=1e-9)
    np.testing.assert_allclose(smooth.positions[::factor][:frames], motion.positions, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(smooth.rotations, axis=-1), 1.0, atol=1e-9)


def test_a_swing_taken_to_30_hz_and_back_keeps_its_smoothness():
    """The predictor's 30 Hz poses up-sampled to the output's 60: a chain swinging at 0.7-1.9 Hz (a walk's
    rhythms) taken to 30 Hz and back linearly has several times its own jitter; along the spline it stays within a
    tenth of it."""
    t = np.arange(600) / 60.0
    angles = np.stack([0.6 * np.sin(2 * np.pi * 0.9 * t), 0.3 * np.sin(2 * np.pi * 1.9 * t + 1.0),
                       0.4 * np.sin(2 * np.pi * 0.7 * t + 2.0)], axis=-1)
    rotations = quat.from_rotation_vector(np.stack([angles, angles[:, ::-1], 0.5 * angles], axis=1))
    travel = np.stack([1.2 * t, 0.03 * np.sin(2 * np.pi * 1.8 * t), 0.05 * np.sin(2 * np.pi * 0.9 * t)], axis=-1)
    swing = Motion.from_root(chain(), rotations, travel, 60.0)
    ticks = swing.resampled(30.0)
    own = jitter(swing.global_positions(), 60.0)
    linear = jitter(ticks.resampled(60.0, len(swing)).global_positions(), 60.0)
    smooth = jitter(spline_resampled(ticks, 60.0, len(swing)).global_positions(), 60.0)
    assert linear > 3.0 * own
    assert abs(smooth - own) < 0.1 * own


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2 ** 16), st.integers(4, 30))
def test_nothing_is_blended_across_a_break(seed, at):
    """A teleport at frame `at`: the frames up to it are as the motion cut there resamples them, whatever lies
    beyond; the frames from it on likewise."""
    motion = drawn_motion(seed, 40, 30.0)
    moved = Motion(motion.skeleton, motion.rotations.copy(), motion.positions.copy(), motion.fps)
    moved.positions[at:, 0] += [5.0, 0.0, -3.0]
    breaks = np.zeros(len(motion), bool)
    breaks[at] = True
    whole = spline_resampled(moved, 60.0, breaks=breaks)
    before = spline_resampled(moved[:at], 60.0)
    after = spline_resampled(moved[at:], 60.0)
    np.testing.assert_allclose(whole.positions[:2 * at - 1], before.positions, atol=1e-9)
    np.testing.assert_allclose(whole.positions[2 * at:2 * at + len(after)], after.positions, atol=1e-9)
