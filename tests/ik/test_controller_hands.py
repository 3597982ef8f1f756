"""The hands turned as the controllers turn (core/ik/controller_hands.py)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from core.ik.controller_hands import MEMORY_S, ControllerHands
from core.math import quat


def random_rotations(rng, shape, max_deg: float = 180.0) -> np.ndarray:
    """Rotations (*shape, 4) about random axes by up to `max_deg`."""
    axes = rng.normal(size=(*shape, 3))
    axes /= np.linalg.norm(axes, axis=-1, keepdims=True)
    return quat.from_rotation_vector(axes * np.radians(rng.uniform(0.0, max_deg, size=(*shape, 1))))


def held(rng, frames: int, noise_deg: float):
    """Controllers turning at random (T, 2, 4), the grip in each hand (2, 4), and the hands a predictor would give:
    the controllers with the grip taken out, each turned off by up to `noise_deg`."""
    controllers = quat.unroll(random_rotations(rng, (frames, 2)))
    grips = random_rotations(rng, (2,), 60.0)
    truth = quat.multiply_inverse(controllers, grips[None])
    return controllers, grips, quat.multiply(truth, random_rotations(rng, (frames, 2), noise_deg))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2 ** 16), frames=st.integers(1, 90), noise_deg=st.floats(0.0, 10.0),
       steps=st.lists(st.sampled_from([1 / 30, 1 / 144, 0.0, -0.01, float("nan"), 0.5]), min_size=1, max_size=90),
       dropped=st.lists(st.tuples(st.integers(0, 1), st.integers(0, 89), st.integers(1, 40)), max_size=3))
def test_tracked_hands_are_their_controllers_about_a_grip_near_the_true_one_and_live_is_offline(
        seed, frames, noise_deg, steps, dropped):
    """Any clock (zero, negative, missing steps), controllers lost for a while: an untracked hand is the predicted
    one; a tracked one is its controller with a grip within the prediction's noise of the true grip taken out; the
    frames stepped one at a time (live) give the same hands as all at once (offline)."""
    rng = np.random.default_rng(seed)
    controllers, grips, predicted = held(rng, frames, noise_deg)
    tracked = np.ones((frames, 2), bool)
    for side, start, length in dropped:
        tracked[start:start + length, side] = False
    dts = np.resize(np.array(steps), frames)
    controllers[~tracked] = np.nan  # an untracked device's rotation is never read
    offline = ControllerHands().turned(predicted, controllers, tracked, dts)
    live = ControllerHands()
    stepped = np.concatenate([live.turned(predicted[t:t + 1], controllers[t:t + 1], tracked[t:t + 1], dts[t])
                              for t in range(frames)])
    np.testing.assert_allclose(stepped, offline, atol=1e-12)
    assert np.isfinite(offline).all()
    np.testing.assert_allclose(np.linalg.norm(offline, axis=-1), 1.0, atol=1e-9)
    np.testing.assert_array_equal(offline[~tracked], predicted[~tracked])
    grips_used = quat.inverse_multiply(offline, controllers)[tracked]
    off = np.degrees(quat.angle_between(grips_used, np.broadcast_to(grips, (frames, 2, 4))[tracked]))
    assert (off <= noise_deg + 1e-6).all()


def test_a_hand_follows_every_turn_of_its_controller():
    """Predicted hands off by up to 10 degrees each frame at random: the hands the controllers turn are off the
    true ones by the grip's error alone, which shrinks as frames come (a mean), and every turn of a controller from
    frame to frame is its hand's."""
    rng = np.random.default_rng(3)
    controllers, grips, predicted = held(rng, 600, 10.0)
    hands = ControllerHands().turned(predicted, controllers, np.ones((600, 2), bool), 1 / 60)
    truth = quat.multiply_inverse(controllers, grips[None])
    error = np.degrees(quat.angle_between(hands, truth))
    predicted_error = np.degrees(quat.angle_between(predicted, truth))
    assert predicted_error[300:].mean() > 4.5 and error[300:].max() < 0.6  # measured 5.1 and 0.49
    hand_turns = quat.multiply_inverse(hands[1:], hands[:-1])  # in the world
    controller_turns = quat.multiply_inverse(controllers[1:], controllers[:-1])
    grip_turns = np.degrees(quat.angle_between(hand_turns, controller_turns))
    assert grip_turns[300:].max() < 0.04  # measured 0.032: the grip's mean still moving


def test_controllers_lying_on_a_table_fade_from_the_grip():
    """Ten seconds of controllers on a table before the session (their rotation nothing like a hand's), then a
    minute held: the grip at the end is within half a degree of the true one (measured 0.40 and 0.25), where a mean
    over the whole session is 5.6 degrees off."""
    rng = np.random.default_rng(5)
    fps, table, session = 60, 600, 3600
    controllers, grips, predicted = held(rng, table + session, 0.0)
    controllers[:table] = random_rotations(rng, (1, 2))
    hands = ControllerHands().turned(predicted, controllers, np.ones((table + session, 2), bool), 1 / fps)
    grips_used = quat.inverse_multiply(hands[-1], controllers[-1])
    assert np.degrees(quat.angle_between(grips_used, grips)).max() < 0.5
    assert session / fps > 5 * MEMORY_S
