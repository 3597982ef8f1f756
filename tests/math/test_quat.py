"""Property tests of the rotation module: round trips and composition."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from core.math import quat

finite = st.floats(-1.0, 1.0, allow_nan=False)
raw_quats = arrays(np.float64, (4,), elements=finite).filter(lambda q: np.linalg.norm(q) > 0.1)
vectors = arrays(np.float64, (3,), elements=st.floats(-10.0, 10.0, allow_nan=False))
ORDERS = ["xyz", "xzy", "yxz", "yzx", "zxy", "zyx"]


def same_rotation(a, b, tol=1e-7):
    return quat.angle_between(a, b) < tol


@given(raw_quats)
def test_matrix_round_trip(q):
    q = quat.normalize(q)
    m = quat.to_matrix(q)
    assert np.allclose(m @ m.T, np.eye(3), atol=1e-12) and np.isclose(np.linalg.det(m), 1.0)
    assert same_rotation(quat.from_matrix(m), q)


@given(raw_quats)
def test_6d_round_trip(q):
    q = quat.normalize(q)
    assert same_rotation(quat.from_6d(quat.to_6d(q)), q)


@given(arrays(np.float64, (6,), elements=finite).filter(
    lambda d: np.linalg.norm(np.cross(d[:3], d[3:])) > 0.05))
def test_6d_of_any_two_columns_is_a_rotation_whose_first_column_follows(d):
    q = quat.from_6d(d)
    first_column = quat.to_matrix(q)[:, 0]
    assert np.allclose(first_column, d[:3] / np.linalg.norm(d[:3]), atol=1e-9)


@given(raw_quats)
def test_rotation_vector_round_trip(q):
    q = quat.normalize(q)
    r = quat.to_rotation_vector(q)
    assert np.linalg.norm(r) <= np.pi + 1e-9
    assert same_rotation(quat.from_rotation_vector(r), q)


@given(vectors.filter(lambda v: np.linalg.norm(v) < np.pi - 1e-3))
def test_rotation_vector_inverse(r):
    assert np.allclose(quat.to_rotation_vector(quat.from_rotation_vector(r)), r, atol=1e-8)


@pytest.mark.parametrize("order", ORDERS)
@given(q=raw_quats)
@settings(max_examples=50)
def test_euler_round_trip(order, q):
    q = quat.normalize(q)
    assert same_rotation(quat.from_euler(quat.to_euler(q, order), order), q)


@pytest.mark.parametrize("order", ORDERS)
@given(a=st.floats(-3.0, 3.0), c=st.floats(-3.0, 3.0), sign=st.sampled_from([-1.0, 1.0]))
@settings(max_examples=30)
def test_euler_round_trip_at_gimbal_lock(order, a, c, sign):
    q = quat.from_euler(np.array([a, sign * np.pi / 2, c]), order)
    assert same_rotation(quat.from_euler(quat.to_euler(q, order), order), q)


def test_euler_matches_channel_composition():
    angles = np.radians([10.0, 20.0, 30.0])
    expected = quat.multiply(quat.multiply(quat.from_axis_rotation("z", angles[0]),
                                           quat.from_axis_rotation("x", angles[1])),
                             quat.from_axis_rotation("y", angles[2]))
    assert same_rotation(quat.from_euler(angles, "zxy"), expected)
    assert np.allclose(quat.to_euler(expected, "zxy"), angles)


@given(raw_quats, raw_quats, vectors)
def test_composition(a, b, v):
    a, b = quat.normalize(a), quat.normalize(b)
    ab = quat.multiply(a, b)
    assert np.allclose(quat.to_matrix(ab), quat.to_matrix(a) @ quat.to_matrix(b), atol=1e-9)
    assert np.allclose(quat.rotate(ab, v), quat.rotate(a, quat.rotate(b, v)), atol=1e-8)
    assert np.allclose(quat.inverse_rotate(a, quat.rotate(a, v)), v, atol=1e-8)
    assert same_rotation(quat.inverse_multiply(a, ab), b)


@given(vectors.filter(lambda v: np.linalg.norm(v) > 1e-3), vectors.filter(lambda v: np.linalg.norm(v) > 1e-3))
def test_between_takes_u_onto_v(u, v):
    q = quat.between(u, v)
    assert np.allclose(quat.rotate(q, u / np.linalg.norm(u)), v / np.linalg.norm(v), atol=1e-7)


def test_between_nearly_opposite_vectors():
    u = np.array([-2.0, 6.10351562e-05, 6.10351562e-05])  # found by hypothesis: 1 + u.v cancels here
    v = np.array([1.0, 0.0, 0.0])
    assert np.allclose(quat.rotate(quat.between(u, v), u / np.linalg.norm(u)), v, atol=1e-12)


def test_between_a_zero_or_tiny_direction():
    zero, x, y = np.zeros(3), np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    assert np.array_equal(quat.between(zero, x), quat.identity()) and np.array_equal(quat.between(x, zero), quat.identity())
    q = quat.between(1e-9 * x, 1e-9 * y)
    assert np.isclose(np.linalg.norm(q), 1.0) and np.allclose(quat.rotate(q, x), y, atol=1e-12)


def test_between_opposite_vectors():
    u = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    q = quat.between(u, -u)
    assert np.allclose(quat.rotate(q, u), -u, atol=1e-9)


@given(raw_quats, raw_quats, st.floats(0.0, 1.0))
def test_slerp(a, b, t):
    a, b = quat.normalize(a), quat.normalize(b)
    assert same_rotation(quat.slerp(a, b, 0.0), a) and same_rotation(quat.slerp(a, b, 1.0), b)
    total = quat.angle_between(a, b)
    part = quat.slerp(a, b, t)
    assert np.isclose(quat.angle_between(a, part), t * total, atol=1e-6)
    assert np.isclose(quat.angle_between(part, b), (1 - t) * total, atol=1e-6)


def test_vectorised_shapes_and_yaw():
    q = quat.from_yaw(np.linspace(-3, 3, 12).reshape(3, 4))
    assert q.shape == (3, 4, 4)
    forward = quat.rotate(q, np.array([0.0, 0.0, 1.0]))
    assert np.allclose(quat.yaw_of_direction(forward), np.linspace(-3, 3, 12).reshape(3, 4))


def test_unroll_makes_neighbours_agree_in_sign():
    q = quat.from_yaw(np.linspace(0, 6, 50))
    q[1::2] *= -1
    unrolled = quat.unroll(q)
    assert np.all(np.sum(unrolled[1:] * unrolled[:-1], axis=-1) > 0)
    assert np.all(quat.angle_between(unrolled, q) < 1e-9)


def test_mean():
    q = quat.from_yaw(np.array([0.1, -0.1, 0.2, -0.2]))
    q[1] *= -1
    assert same_rotation(quat.mean(q), quat.identity())
    assert same_rotation(quat.mean(q, weights=np.array([0.0, 0.0, 1.0, 0.0])), quat.from_yaw(0.2))


def test_few_and_many_rows_take_different_forms_and_agree():
    """quat.SMALL switches cross and rotate between the table form and the component form."""
    rng = np.random.default_rng(3)
    q = quat.normalize(rng.normal(size=(500, 4)))
    a, b = rng.normal(size=(500, 3)), rng.normal(size=(500, 3))
    assert a.size + b.size >= quat.SMALL and a[:2].size + b[:2].size < quat.SMALL
    assert np.allclose(quat.cross(a, b)[:2], quat.cross(a[:2], b[:2]), atol=1e-12)
    assert np.allclose(quat.cross(a, b), np.cross(a, b), atol=1e-12)
    assert np.allclose(quat.rotate(q, a)[:2], quat.rotate(q[:2], a[:2]), atol=1e-12)
    assert np.allclose(quat.rotate(q, a), (quat.to_matrix(q) @ a[..., None])[..., 0], atol=1e-12)
    p = quat.normalize(rng.normal(size=(500, 4)))
    assert p.size >= quat.SMALL and p[:2].size < quat.SMALL  # products of many and of few rows: two outer forms
    assert np.allclose(quat.multiply(p, q)[:2], quat.multiply(p[:2], q[:2]), rtol=0, atol=1e-15)
    assert np.allclose(quat.multiply(p[:2], q[:2]), quat._hamilton_components(p[:2], q[:2]), atol=1e-15)


def test_rotation_vector_of_a_zero_or_tiny_angle_is_exact():
    assert np.array_equal(quat.from_rotation_vector(np.zeros((2, 3))), quat.identity(2))
    tiny = np.array([1e-9, -2e-9, 3e-9])
    assert np.allclose(quat.from_rotation_vector(tiny), [1.0, *(tiny / 2.0)], rtol=1e-15, atol=0.0)


@given(q=raw_quats, limit=st.floats(0.05, 3.0))
def test_at_most_limits_the_angle_and_keeps_the_axis(q, limit):
    q = quat.normalize(q)
    limited = quat.at_most(q[None], limit)[0]
    angle = quat.angle_between(quat.identity(), q)
    assert np.isclose(quat.angle_between(quat.identity(), limited), min(angle, limit), atol=1e-6)
    if angle > limit:  # the same axis, turned the same way (either way round a half turn: w = ±0)
        axis, kept = quat.to_rotation_vector(quat.positive_hemisphere(q)), quat.to_rotation_vector(limited)
        assert np.allclose(kept, axis * (limit / angle), atol=1e-6) or (
            abs(q[0]) < 1e-12 and np.allclose(kept, -axis * (limit / angle), atol=1e-6))
    else:
        assert np.array_equal(limited, q)
