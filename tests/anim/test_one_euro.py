"""The one-euro filter: jitter out of slow motion, fast motion followed, no lag forward and backward."""
import numpy as np
from hypothesis import given, settings, strategies as st

from core.anim.one_euro import OneEuroFilter, one_euro, smoothed


def test_jitter_on_a_still_value_drops_and_a_step_is_followed():
    rng = np.random.default_rng(0)
    still = 1.0 + 0.002 * rng.standard_normal(600)
    filtered = smoothed(still, 60.0, 1.0, 0.5)
    assert np.std(np.diff(filtered)) < 0.15 * np.std(np.diff(still))
    step = np.r_[np.zeros(60), np.ones(60)]
    causal = one_euro(step, 60.0, 1.0, 5.0)
    assert causal[-1] > 0.99 and causal[60] < 1.0  # follows, after the jump


def test_a_ramp_keeps_its_timing_forward_and_backward():
    ramp = np.linspace(0.0, 3.0, 181)  # 1 m/s at 60 fps
    lagging = one_euro(ramp, 60.0, 1.0, 0.0)
    assert ramp[100] - lagging[100] > 0.005
    np.testing.assert_allclose(smoothed(ramp, 60.0, 1.0, 0.0)[60:-60], ramp[60:-60], atol=1e-3)  # a second in


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=80), st.floats(0.1, 10.0), st.floats(0.0, 10.0),
       st.sampled_from([30.0, 60.0, 90.0, 144.0]))
def test_any_clip_stays_within_its_range(values, min_cutoff, beta, fps):
    values = np.array(values)
    out = smoothed(values, fps, min_cutoff, beta)
    assert out.shape == values.shape and np.isfinite(out).all()
    assert values.min() - 1e-9 <= out.min() and out.max() <= values.max() + 1e-9


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(-10.0, 10.0), st.floats(-10.0, 10.0)), min_size=1, max_size=60),
       st.lists(st.sampled_from([1 / 144, 1 / 90, 1 / 72, 1 / 30, 0.0, float("nan")]), min_size=60, max_size=60),
       st.lists(st.booleans(), min_size=60, max_size=60), st.integers(1, 7))
def test_the_live_filter_sample_by_sample_is_the_whole_pass_and_a_restart_passes_the_sample(values, dts, restarts,
                                                                                          chunk):
    """Any clock (a zero or unknown step passes the sample as a restart does), fed whole or in pieces, gives the
    same samples; the first sample and each restart's pass unfiltered."""
    values = np.array(values)
    dts, restarts = np.array(dts[:len(values)]), np.array(restarts[:len(values)])
    whole = OneEuroFilter(1.0, 10.0).filter(values, dts, restarts)
    pieces = OneEuroFilter(1.0, 10.0)
    parts = [pieces.filter(values[k:k + chunk], dts[k:k + chunk], restarts[k:k + chunk])
             for k in range(0, len(values), chunk)]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    passed = restarts | ~((dts > 0.0) & np.isfinite(dts))
    passed[0] = True
    np.testing.assert_array_equal(whole[passed], values[passed])
    assert np.isfinite(whole).all()
