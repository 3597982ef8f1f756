"""The feet's support seen from above (core/physics/support.py): a centre of mass inside the hull of the sole
points is balanced, one outside is as far out as its nearest point of the hull, and two points support along the
segment between them."""
import numpy as np
from hypothesis import given, settings, strategies as st

from core.physics.support import convex_hull, nearest_support, outside_support

coordinate = st.floats(-1.0, 1.0, allow_nan=False).map(lambda metres: round(metres, 6))  # sole points, to a micrometre
points = st.lists(st.tuples(coordinate, coordinate), min_size=1, max_size=8).map(np.array)


def _depth(point, hull):
    """How far the point lies inside the polygon (negative: outside), by its nearest edge's line."""
    edges = np.roll(hull, -1, axis=0) - hull
    edges = edges / np.linalg.norm(edges, axis=1, keepdims=True)
    return float(np.min(edges[:, 0] * (point[1] - hull[:, 1]) - edges[:, 1] * (point[0] - hull[:, 0])))


@settings(max_examples=200, deadline=None)
@given(points, st.tuples(coordinate, coordinate).map(np.array))
def test_the_nearest_support_point_is_no_farther_than_any_contact_and_inside_means_zero(contacts, centre):
    nearest, distance = nearest_support(centre, contacts)
    assert np.isclose(distance, np.linalg.norm(centre - nearest), atol=1e-9)
    assert distance <= np.min(np.linalg.norm(contacts - centre, axis=1)) + 1e-9
    hull = convex_hull(contacts)
    if len(hull) >= 3 and _depth(centre, hull) > 1e-9:
        assert distance == 0.0
    if len(hull) >= 3:  # the nearest point lies in the hull (on its edge where the centre is outside)
        assert _depth(nearest, hull) >= -1e-9


def test_two_points_support_along_the_segment_between_them():
    heel, toe = np.array([0.0, 0.0]), np.array([0.0, 0.25])
    contacts = np.stack([heel, toe])
    assert not outside_support(np.array([0.01, 0.12]), contacts)
    assert outside_support(np.array([0.03, 0.12]), contacts)
    assert np.isclose(nearest_support(np.array([0.0, 0.4]), contacts)[1], 0.15)


def test_a_centre_between_two_planted_feet_is_inside_and_one_ahead_of_both_is_out():
    feet = np.array([[-0.1, 0.0], [-0.1, 0.2], [0.1, 0.0], [0.1, 0.2]])
    assert not outside_support(np.array([0.0, 0.12]), feet)
    nearest, distance = nearest_support(np.array([0.05, 0.4]), feet)
    assert np.isclose(distance, 0.2) and np.allclose(nearest, [0.05, 0.2])
    assert outside_support(np.array([0.0, 0.0]), np.zeros((0, 2)))
