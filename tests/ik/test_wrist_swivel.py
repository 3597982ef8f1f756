"""The elbow turned where the wrist would break (core/ik/wrist_swivel.py)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from core.ik.wrist_swivel import BEND_START_DEG, USEFUL_GAIN_DEG, bend_deg, swivels
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
def test_the_elbow_turns_about_the_shoulder_to_wrist_line_only_as_far_as_the_wrist_needs(seed):
    """Any arm and hand: the turn leaves the wrist where it is and the upper arm its length, and never bends the
    wrist more; a wrist bent less than BEND_START_DEG turns nothing; one bent more, where a turn could straighten it
    by USEFUL_GAIN_DEG or more, comes back to BEND_START_DEG, or to the least bend of any place on the elbow's circle
    where that is more."""
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
    circle = np.linspace(-np.pi, np.pi, 2881)
    axis = (wrists - shoulders) / np.linalg.norm(wrists - shoulders, axis=-1, keepdims=True)
    around = quat.from_rotation_vector(axis[:, None] * circle[None, :, None])
    candidates = shoulders[:, None] + quat.rotate(around, (elbows - shoulders)[:, None])
    least = bend_deg(wrists[:, None] - candidates, fingers[:, None]).min(axis=1)
    useful = ~calm & (before - least >= USEFUL_GAIN_DEG + 0.2)
    assert useful.sum() > 30
    np.testing.assert_allclose(after[useful], np.maximum(BEND_START_DEG, least[useful]), atol=0.2)
