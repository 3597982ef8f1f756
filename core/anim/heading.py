"""Heading frames (Neural3Points §4): a frame on the floor that moves with the character's root.

A heading frame h = (p_x, p_z, theta_y) has its origin at (p_x, 0, p_z), +Y up and +Z along the
facing theta_y (yaw about +Y, 0 facing world +Z). Frames compose as rigid transforms of the floor:
h_a (x) h_b places h_b, given in h_a, into the world; the change between consecutive frames is
dh^t = inv(h^{t-1}) (x) h^t, so that h^t = h^{t-1} (x) dh^t (eq. 2). Everything is vectorised over
leading axes; angles are wrapped to [-pi, pi).
"""
from __future__ import annotations

import numpy as np

from .character import body_yaw
from ..math.angle import wrap_angle
from ..math import quat


def from_root(global_positions: np.ndarray, mapping) -> np.ndarray:
    """Heading frames (..., 3) of poses: the virtual root (hips on the floor, facing the hips' forward)."""
    hips = global_positions[..., mapping["hips"], :]
    return np.stack([hips[..., 0], hips[..., 2], body_yaw(global_positions, mapping)], axis=-1)


def rotate_floor(yaw: np.ndarray, x: np.ndarray, z: np.ndarray):
    """(x, z) turned by `yaw` about +Y."""
    c, s = np.cos(yaw), np.sin(yaw)
    return c * x + s * z, -s * x + c * z


def compose(h: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """h (x) delta: the frame `delta`, given in frame h, in the world."""
    x, z = rotate_floor(h[..., 2], delta[..., 0], delta[..., 1])
    return np.stack([h[..., 0] + x, h[..., 1] + z, wrap_angle(h[..., 2] + delta[..., 2])], axis=-1)


def relative(h: np.ndarray, other: np.ndarray) -> np.ndarray:
    """inv(h) (x) other: the frame `other` seen from h, so that compose(h, relative(h, other)) == other."""
    x, z = rotate_floor(-h[..., 2], other[..., 0] - h[..., 0], other[..., 1] - h[..., 1])
    return np.stack([x, z, wrap_angle(other[..., 2] - h[..., 2])], axis=-1)


def changes(headings: np.ndarray) -> np.ndarray:
    """dh per frame (T, 3) of a sequence of frames (T, 3); zero at the first frame."""
    out = np.zeros_like(headings)
    out[1:] = relative(headings[:-1], headings[1:])
    return out


def accumulate(start: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """Frames (T, 3) reached from `start` (3,) by applying the changes (T, 3) one after another."""
    out = np.empty_like(deltas)
    h = start
    for t, delta in enumerate(deltas):
        h = out[t] = compose(h, delta)
    return out


def rotation(h: np.ndarray) -> np.ndarray:
    """The frame's rotation (..., 4): yaw about +Y."""
    return quat.from_yaw(h[..., 2])


def origin(h: np.ndarray) -> np.ndarray:
    """The frame's origin (..., 3) on the floor."""
    out = np.zeros(h.shape[:-1] + (3,))
    out[..., ::2] = h[..., :2]
    return out


def points_into(h: np.ndarray, points: np.ndarray) -> np.ndarray:
    """World points (..., K, 3) expressed in the frames h (..., 3)."""
    return quat.inverse_rotate(rotation(h)[..., None, :], points - origin(h)[..., None, :])


def points_out_of(h: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Points (..., K, 3) given in the frames h (..., 3), in the world."""
    return quat.rotate(rotation(h)[..., None, :], points) + origin(h)[..., None, :]


def vectors_into(h: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """World directions or velocities (..., K, 3) expressed in the frames h."""
    return quat.inverse_rotate(rotation(h)[..., None, :], vectors)


def rotations_into(h: np.ndarray, rotations: np.ndarray) -> np.ndarray:
    """World rotations (..., K, 4) expressed in the frames h."""
    return quat.inverse_multiply(rotation(h)[..., None, :], rotations)


def rotations_out_of(h: np.ndarray, rotations: np.ndarray) -> np.ndarray:
    """Rotations (..., K, 4) given in the frames h, in the world."""
    return quat.multiply(rotation(h)[..., None, :], rotations)
