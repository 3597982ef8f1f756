"""Smooth Solve's foot holds (core/anim/foot_holds.py): a planted foot on the spot where it landed, let go past the
lock radius or when its contact ends, handed back to the solve without a jump; on any trajectory and contacts."""
import numpy as np
from hypothesis import given, settings, strategies as st

from core.anim.foot_holds import PLANTED, foot_holds
from core.config import FootStabilisation

FPS = 30.0


@st.composite
def feet(draw):
    """A foot's path along the floor (F, 2) with its contact weights (F,): random steps, random drift in contact."""
    frames = draw(st.integers(2, 120))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    weights = np.clip(np.repeat(rng.uniform(-0.5, 1.5, frames // 5 + 1), 5)[:frames], 0.0, 1.0)
    speed = np.where(weights >= PLANTED, rng.uniform(0.0, 0.6), rng.uniform(0.5, 2.0)) / FPS
    path = np.cumsum(rng.normal(size=(frames, 2)) * speed[:, None], axis=0)
    return path, weights


stabilisations = st.builds(FootStabilisation, st.floats(0.0, 0.5), st.floats(0.001, 0.1), st.floats(0.0, 0.5))


@settings(max_examples=200, deadline=None)
@given(feet(), stabilisations)
def test_a_held_foot_stands_on_its_landing_spot_within_the_radius(foot, stabilisation):
    path, weights = foot
    shifts, holds = foot_holds(path, weights, FPS, stabilisation)
    held = path + shifts
    assert shifts.shape == path.shape and ((holds >= 0.0) & (holds <= 1.0)).all()
    assert (holds[weights < PLANTED] < 1.0).all()  # only a contact holds fully
    # Never farther from the solve's foot than the radius: the hold lets go there, and its shift only fades.
    assert (np.linalg.norm(shifts, axis=-1) <= stabilisation.lock_radius_m + 1e-12).all()
    on = holds >= 1.0
    for frame in np.flatnonzero(on[1:] & on[:-1]) + 1:
        np.testing.assert_allclose(held[frame], held[frame - 1], atol=1e-12)  # does not slide while held
    assert (np.abs(shifts[holds == 0.0]) == 0.0).all()


@settings(max_examples=100, deadline=None)
@given(feet())
def test_no_radius_no_hold_and_short_contacts_are_not_held(foot):
    path, weights = foot
    shifts, holds = foot_holds(path, weights, FPS, FootStabilisation(lock_radius_m=0.0))
    assert not shifts.any() and not holds.any()
    brush = np.zeros(len(path))
    brush[: min(2, len(path))] = 1.0  # two frames: shorter than a 0.1 s lock time at 30 fps
    assert not foot_holds(path, brush, FPS, FootStabilisation(lock_time_s=0.1))[1].any()


def test_a_release_fades_the_shift_out_over_the_recovery():
    """A foot sliding steadily in a long contact: held until 3 cm away, then handed back over 0.15 s."""
    path = np.stack([np.arange(60) * 0.004, np.zeros(60)], axis=-1)  # 12 cm/s
    shifts, holds = foot_holds(path, np.ones(60), FPS, FootStabilisation(0.1, 0.03, 0.15))
    release = int(np.argmin(holds >= 1.0))
    assert release == 8  # 8 frames at 4 mm stay within 3 cm; the 9th is past it
    recovery = holds[release:release + 5]
    assert (np.diff(recovery) < 0).all() and recovery[-1] == 0.0 and not holds[release + 4:].any()  # 0.15 s: 4 frames
    steps = np.linalg.norm(np.diff(path + shifts, axis=0), axis=-1)
    assert steps.max() < 0.004 + 1.5 * 0.03 / 4  # no jump: its own step and the radius spread over the recovery
