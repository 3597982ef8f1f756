"""The elbow turned where the wrist would break (core/ik/wrist_swivel.py)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from core.ik.wrist_swivel import BEND_FULL_DEG, BEND_START_DEG, bend_deg, swivels
from core.math import quat


def arms(seed: int, count: int):
    """Shoulders, elbows, wrists and hand directions (count, 3) of random arms (upper arm 0.28 m, forearm 0.25 m)."""
    rng = np.random.default_rng(seed)
    shoulders = rng.normal(size=(count, 3))
    upper = rng.normal(size=(count, 3))
    fore = rng.normal(size=(count, 3))
    elbows = shoulders + 0.28 * upper / np.linalg.norm(upper, axis=-1, keepdims=True)
    wrists = elbows + 0.25 * fore / np.linalg.norm(fore, axis=-1, keepdims=True)
    fingers = rng.normal(size=(count, 3))
    return shoulders, elbows, wrists, fingers / np.linalg.norm(fingers, axis=-1, keepdims=True)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 16))
def test_the_elbow_turns_about_the_shoulder_to_wrist_line_and_never_bends_the_wrist_more(seed):
    """Any arm and hand: the turn leaves the wrist where it is and the upper arm its length; the wrist bends no
    more after it; a wrist bent less than BEND_START_DEG turns nothing, and one past BEND_FULL_DEG gets the forearm
    best lined up with its hand of all the elbow's places on its circle."""
    shoulders, elbows, wrists, fingers = arms(seed, 200)
    turns = swivels(shoulders, elbows, wrists, fingers)
    turned_elbows = shoulders + quat.rotate(turns, elbows - shoulders)
    turned_wrists = shoulders + quat.rotate(turns, wrists - shoulders)
    np.testing.assert_allclose(turned_wrists, wrists, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(turned_elbows - shoulders, axis=-1), 0.28, atol=1e-9)
    before = bend_deg(wrists - elbows, fingers)
    after = bend_deg(wrists - turned_elbows, fingers)
    assert (after <= before + 1e-6).all()
    calm = before < BEND_START_DEG
    np.testing.assert_allclose(np.abs(turns[calm, 0]), 1.0, atol=1e-12)
    broken = before >= BEND_FULL_DEG
    circle = np.linspace(-np.pi, np.pi, 721)
    axis = (wrists - shoulders) / np.linalg.norm(wrists - shoulders, axis=-1, keepdims=True)
    around = quat.from_rotation_vector(axis[:, None] * circle[None, :, None])
    candidates = shoulders[:, None] + quat.rotate(around, (elbows - shoulders)[:, None])
    least = bend_deg(wrists[:, None] - candidates, fingers[:, None]).min(axis=1)
    assert broken.sum() > 40 and (after[broken] <= least[broken] + 1e-6).all()  # no place on a fine circle is better
