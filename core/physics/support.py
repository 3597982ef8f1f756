"""The support of the feet on the floor, seen from above: the convex hull of the sole points that touch it, and how
far a centre of mass lies outside it (the balance figure's geometry)."""
from __future__ import annotations

import numpy as np


def cross_2d(a: np.ndarray, b: np.ndarray) -> float:
    """The z of the cross product of two vectors in the plane (numpy 2 refuses 2-D vectors in np.cross)."""
    return float(a[0] * b[1] - a[1] * b[0])


def convex_hull(points: np.ndarray) -> np.ndarray:
    """(H, 2) the convex hull of 2-D points, counter-clockwise (Andrew's monotone chain)."""
    points = np.unique(points, axis=0)
    if len(points) < 3:
        return points

    def half(ordered):
        chain = []
        for p in ordered:
            while len(chain) >= 2 and cross_2d(chain[-1] - chain[-2], p - chain[-2]) <= 0:
                chain.pop()
            chain.append(p)
        return chain[:-1]

    ordered = points[np.lexsort((points[:, 1], points[:, 0]))]
    return np.array(half(ordered) + half(ordered[::-1]))


def nearest_on_segment(point: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """(2,) the point of the segment between `start` and `end` nearest to `point`."""
    along = end - start
    length_squared = float(along @ along)
    share = float(np.clip((point - start) @ along / length_squared, 0.0, 1.0)) if length_squared > 0.0 else 0.0
    return start + share * along


def nearest_support(point: np.ndarray, contacts: np.ndarray) -> tuple[np.ndarray, float]:
    """(the point of the contacts' (K ≥ 1, 2) convex hull nearest to `point` (2,): itself where it lies inside,
    how far outside the hull it lies: 0 inside). The hull of two points is the segment between them."""
    hull = convex_hull(contacts)
    if len(hull) < 3:
        nearest = nearest_on_segment(point, hull[0], hull[-1])
        return nearest, float(np.linalg.norm(point - nearest))
    edges = np.roll(hull, -1, axis=0) - hull
    normals = np.stack([edges[:, 1], -edges[:, 0]], axis=1)
    if np.all(np.sum((point - hull) * normals, axis=1) <= 0.0):
        return np.array(point, dtype=float), 0.0
    candidates = [nearest_on_segment(point, a, b) for a, b in zip(hull, np.roll(hull, -1, axis=0))]
    distances = [float(np.linalg.norm(point - c)) for c in candidates]
    best = int(np.argmin(distances))
    return candidates[best], distances[best]


def outside_support(centre: np.ndarray, contacts: np.ndarray, margin: float = 0.02) -> bool:
    """Whether the point (2,) lies farther than `margin` outside the convex hull of the contact points (K, 2)."""
    return nearest_support(centre, contacts)[1] > margin if len(contacts) else True
