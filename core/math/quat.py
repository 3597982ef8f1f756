"""Rotations: quaternions (w, x, y, z) and their conversions to matrices, 6D, axis-angle and Euler angles.

Every function takes arrays shaped (..., 4) for quaternions, (..., 3) for vectors and rotation
vectors, (..., 3, 3) for matrices and (..., 6) for 6D rotations, and broadcasts over the leading
axes, so a whole clip (frames, joints) converts in one call.
"""
from __future__ import annotations

import numpy as np

_EPS = 1e-12
AXES = {"x": 0, "y": 1, "z": 2}
SMALL = 256
"""Arrays with fewer numbers than this take the bilinear-table forms below: on a few rows numpy's
cost is per call, not per number, and one outer product and one matrix product are far fewer
calls than the products written out component by component."""


def _bilinear_table(product, size: int) -> np.ndarray:
    """T (size*size, out) with product(a, b) = (a outer b).ravel() @ T for a bilinear `product`."""
    basis = np.eye(size)
    return np.array([product(basis[i], basis[j]) for i in range(size) for j in range(size)], dtype=float)


_OUTER_INDICES = {n: (np.repeat(np.arange(n), n), np.tile(np.arange(n), n)) for n in (3, 4)}
"""For arrays of one shape: the components of a and of b whose products, in order, make the flattened outer product."""


def _outer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a_i b_j flattened over the last axis: (..., len(a) * len(b)). Small arrays of one shape take one product of two
    gathers, not a broadcast product (numpy's broadcasting costs more than the numbers on a few rows)."""
    if a.shape == b.shape and a.shape[-1] in _OUTER_INDICES and a.size < SMALL:
        first, second = _OUTER_INDICES[a.shape[-1]]
        return a.take(first, axis=-1) * b.take(second, axis=-1)
    o = a[..., :, None] * b[..., None, :]
    return o.reshape(o.shape[:-2] + (o.shape[-2] * o.shape[-1],))


def _norm(v: np.ndarray) -> np.ndarray:
    """Length over the last axis, kept as a trailing axis of 1."""
    return np.sqrt(np.einsum("...i,...i->...", v, v))[..., None]


def identity(*shape: int) -> np.ndarray:
    """Identity quaternions with the given leading shape."""
    q = np.zeros(shape + (4,))
    q[..., 0] = 1.0
    return q


def normalize(q: np.ndarray) -> np.ndarray:
    return q / np.maximum(_norm(q), _EPS)


_CONJUGATE = np.array([1.0, -1.0, -1.0, -1.0])


def conjugate(q: np.ndarray) -> np.ndarray:
    return q * _CONJUGATE


inverse = conjugate  # unit quaternions only


def _cross_components(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ax, ay, az = a[..., 0], a[..., 1], a[..., 2]
    bx, by, bz = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx], axis=-1)


def _hamilton_components(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ], axis=-1)


_CROSS = _bilinear_table(_cross_components, 3)
_HAMILTON = _bilinear_table(_hamilton_components, 4)


def _rotation_matrix_entries(q: np.ndarray) -> np.ndarray:
    """The nine entries of a unit quaternion's rotation matrix, row by row, as quadratic forms in q
    (w² + x² + y² + z² = 1 stands in for the 1 in 1 - 2(y² + z²) and the like)."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack([
        w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z,
    ], axis=-1)


def _quadratic_table(form) -> np.ndarray:
    """T (16, 9) with form(q) = (q outer q).ravel() @ T for a quadratic `form` of quaternions
    (polarisation: each cross term is split evenly between (i, j) and (j, i))."""
    basis = np.eye(4)

    def coefficient(i: int, j: int) -> np.ndarray:
        if i == j:
            return form(basis[i])
        return 0.5 * (form(basis[i] + basis[j]) - form(basis[i]) - form(basis[j]))

    return np.array([coefficient(i, j) for i in range(4) for j in range(4)])


_MATRIX = _quadratic_table(_rotation_matrix_entries)


def _unit_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of unit quaternions."""
    return (_outer(q, q) @ _MATRIX).reshape(q.shape[:-1] + (3, 3))


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product over the last axis (np.cross's axis handling costs more than the math on small arrays)."""
    if a.size + b.size < SMALL:
        return _outer(a, b) @ _CROSS
    return _cross_components(a, b)


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b: apply b first, then a."""
    return _outer(a, b) @ _HAMILTON


def multiply_inverse(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * inverse(b)."""
    return multiply(a, conjugate(b))


def inverse_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """inverse(a) * b."""
    return multiply(conjugate(a), b)


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors v by unit quaternions q: v + 2w(u x v) + 2u x (u x v), or q's matrix times v on few rows."""
    if q.size + v.size < SMALL:
        return (_unit_to_matrix(q) @ v[..., None])[..., 0]
    u = q[..., 1:]
    w = q[..., :1]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def inverse_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    return rotate(conjugate(q), v)


def positive_hemisphere(q: np.ndarray) -> np.ndarray:
    """The same rotations with w >= 0 (q and -q are the same rotation)."""
    return np.where(q[..., :1] < 0.0, -q, q)


def nearest_sign(q: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """q or -q, whichever lies in `reference`'s hemisphere (the same rotations, signed like the reference)."""
    return np.where(np.sum(q * reference, axis=-1, keepdims=True) >= 0.0, q, -q)


def unroll(q: np.ndarray, axis: int = 0) -> np.ndarray:
    """Flip signs along `axis` (time) so consecutive quaternions lie in the same hemisphere."""
    q = np.moveaxis(np.array(q, dtype=float), axis, 0)
    if len(q) < 2:
        return np.moveaxis(q, 0, axis)
    steps = np.where(np.sum(q[1:] * q[:-1], axis=-1, keepdims=True) < 0.0, -1.0, 1.0)
    signs = np.concatenate([np.ones_like(steps[:1]), np.cumprod(steps, axis=0)])
    return np.moveaxis(q * signs, 0, axis)


def from_rotation_vector(r: np.ndarray) -> np.ndarray:
    """Axis-angle as one vector (axis times angle in radians) to quaternion: the exponential map,
    (cos(angle / 2), r sin(angle / 2) / angle); sin(x) / x is exactly 1 for x under 1e-8, so a zero angle, taken
    as 1e-300, gives 1/2."""
    r = np.asarray(r, dtype=float)
    half = 0.5 * _norm(r)
    nonzero = np.maximum(half, 1e-300)
    return np.concatenate([np.cos(half), (0.5 * np.sin(nonzero) / nonzero) * r], axis=-1)


def to_rotation_vector(q: np.ndarray) -> np.ndarray:
    """Quaternion to axis-angle vector (angle in [0, pi]): the logarithm map times two.

    The angle is 2 atan2(|xyz|, |w|), and the vector is xyz scaled by angle / |xyz| (which tends to
    2 / |w| as |xyz| -> 0, where atan2 keeps it exact), signed by w to take the shorter arc. Both are
    unchanged by q's length, so q need not be normalised.
    """
    sin_half = _norm(q[..., 1:])
    w = q[..., :1]
    scale = 2.0 * np.arctan2(sin_half, np.abs(w)) / np.maximum(sin_half, 1e-300)
    return np.copysign(scale, w) * q[..., 1:]


def from_axis_rotation(axis: str, angle: np.ndarray) -> np.ndarray:
    """Rotation about the named coordinate axis ('x', 'y' or 'z') by `angle` radians."""
    angle = np.asarray(angle, dtype=float)
    q = np.zeros(angle.shape + (4,))
    q[..., 0] = np.cos(0.5 * angle)
    q[..., 1 + AXES[axis]] = np.sin(0.5 * angle)
    return q


def from_euler(angles: np.ndarray, order: str) -> np.ndarray:
    """Intrinsic Euler angles in radians, R = R_order[0] R_order[1] R_order[2] (the BVH channel order)."""
    q = from_axis_rotation(order[0], angles[..., 0])
    for i in range(1, len(order)):
        q = multiply(q, from_axis_rotation(order[i], angles[..., i]))
    return q


def to_euler(q: np.ndarray, order: str) -> np.ndarray:
    """Inverse of from_euler for a three-axis order of distinct axes; angles in radians.

    For R = R_i(a) R_j(b) R_k(c) with parity s (+1 for cyclic orders such as xyz):
    sin b = s R[i,k], tan a = -s R[j,k] / R[k,k], tan c = -s R[i,j] / R[i,i].
    At gimbal lock (cos b = 0) only a + s*c is defined; c is set to zero.
    """
    i, j, k = (AXES[a] for a in order)
    if len({i, j, k}) != 3:
        raise ValueError(f"Euler order {order!r} must name three distinct axes")
    s = 1.0 if (j - i) % 3 == 1 else -1.0
    m = to_matrix(q)
    sin_b = np.clip(s * m[..., i, k], -1.0, 1.0)
    cos_b = np.hypot(m[..., i, i], m[..., i, j])
    b = np.arctan2(sin_b, cos_b)
    a = np.arctan2(-s * m[..., j, k], m[..., k, k])
    c = np.arctan2(-s * m[..., i, j], m[..., i, i])
    locked = cos_b < 1e-8  # sqrt(eps): either path is then accurate to about 1e-8 rad
    # With cos b = 0 the matrix's (j, j) and (k, j) entries hold the angle a + s*c (c := 0).
    a_locked = np.arctan2(s * m[..., k, j], m[..., j, j])
    a = np.where(locked, a_locked, a)
    c = np.where(locked, 0.0, c)
    return np.stack([a, b, c], axis=-1)


def to_matrix(q: np.ndarray) -> np.ndarray:
    return _unit_to_matrix(normalize(q))


def _shepperd_rows(m: np.ndarray) -> np.ndarray:
    """Shepperd's four candidate quaternions (..., 4, 4), each 4w, 4x, 4y or 4z times the rotation: row i
    has 4 q_i^2 = its diagonal entry, so the row with the largest diagonal divides by the least error."""
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    trace = m00 + m11 + m22
    return np.stack([
        np.stack([1 + trace, m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]], -1),
        np.stack([m[..., 2, 1] - m[..., 1, 2], 1 + m00 - m11 - m22, m[..., 0, 1] + m[..., 1, 0], m[..., 0, 2] + m[..., 2, 0]], -1),
        np.stack([m[..., 0, 2] - m[..., 2, 0], m[..., 0, 1] + m[..., 1, 0], 1 - m00 + m11 - m22, m[..., 1, 2] + m[..., 2, 1]], -1),
        np.stack([m[..., 1, 0] - m[..., 0, 1], m[..., 0, 2] + m[..., 2, 0], m[..., 1, 2] + m[..., 2, 1], 1 - m00 - m11 + m22], -1),
    ], axis=-2)


_SHEPPERD_CONSTANT = _shepperd_rows(np.zeros((3, 3))).ravel()
_SHEPPERD = np.array([_shepperd_rows(np.eye(9)[k].reshape(3, 3)).ravel() - _SHEPPERD_CONSTANT for k in range(9)])
"""The candidates are affine in the matrix: m.ravel() @ _SHEPPERD + _SHEPPERD_CONSTANT."""


def from_matrix(m: np.ndarray) -> np.ndarray:
    """Rotation matrix to quaternion (Shepperd's method: branch on the largest of w, x, y, z)."""
    m = np.asarray(m, dtype=float)
    shape = m.shape[:-2]
    candidates = (m.reshape(shape + (9,)) @ _SHEPPERD + _SHEPPERD_CONSTANT).reshape(shape + (4, 4))
    best = np.argmax(np.einsum("...ii->...i", candidates), axis=-1)
    rows = candidates.reshape(-1, 4, 4)
    q = rows[np.arange(len(rows)), best.ravel()].reshape(shape + (4,))
    return positive_hemisphere(normalize(q))


def to_6d(q: np.ndarray) -> np.ndarray:
    """The first two columns of the rotation matrix (Zhou et al. 2019), as (c0, c1) in 6 floats."""
    m = to_matrix(q)
    return np.concatenate([m[..., :, 0], m[..., :, 1]], axis=-1)


def from_6d(d: np.ndarray) -> np.ndarray:
    """6D rotation back to quaternion by Gram-Schmidt on the two columns (Zhou et al. 2019)."""
    d = np.asarray(d, dtype=float)
    c0 = d[..., :3] / np.maximum(_norm(d[..., :3]), _EPS)
    c1 = d[..., 3:] - np.sum(c0 * d[..., 3:], axis=-1, keepdims=True) * c0
    c1 = c1 / np.maximum(_norm(c1), _EPS)
    c2 = cross(c0, c1)
    return from_matrix(np.stack([c0, c1, c2], axis=-1))


def slerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Spherical linear interpolation along the shorter arc; t broadcasts against a[..., 0]."""
    t = np.asarray(t, dtype=float)[..., None]
    dot = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(dot < 0.0, -b, b)
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin_theta = np.sin(theta)
    near = sin_theta < 1e-6
    safe = np.where(near, 1.0, sin_theta)
    wa = np.where(near, 1.0 - t, np.sin((1.0 - t) * theta) / safe)
    wb = np.where(near, t, np.sin(t * theta) / safe)
    return normalize(wa * a + wb * b)


def _dot_cross_components(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.concatenate([np.sum(a * b, axis=-1, keepdims=True), _cross_components(a, b)], axis=-1)


_DOT_CROSS = _bilinear_table(_dot_cross_components, 3)


OPPOSITE_SINE = 1e-12
"""`between` takes directions whose angle's sine is below this for opposite: no axis is the shortest rotation's."""


def between(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The shortest rotation taking direction u onto direction v (neither need be unit length).

    (|u||v| + u.v, u x v) normalised is that rotation, but it cancels badly as u nears -v. Directions
    more than a quarter turn apart therefore go through -u: half a turn about u x v (the shortest rotation's own
    axis, so that the two make it), then the short, accurate rotation (|u||v| - u.v, -u x v) from -u to v. Where
    u x v vanishes (v opposite u, no shortest rotation) the half turn is about an axis perpendicular to u.
    |u||v| is the length of (u.v, u x v) (Lagrange's identity), so one bilinear product gives all three.
    """
    dot_cross = _outer(u, v) @ _DOT_CROSS
    sign = np.copysign(1.0, dot_cross[..., :1])
    q = sign * dot_cross
    # w = |u||v| + |u.v|; a zero direction (w = 0) gives the identity.
    w = _norm(dot_cross) + q[..., :1]
    q[..., :1] = w + (w == 0.0)
    q = q / _norm(q)
    flip = sign < 0.0
    if flip.any():
        helper = np.where(np.abs(u[..., :1]) < 0.9 * _norm(u), np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))
        axis = dot_cross[..., 1:]
        perpendicular = np.where(_norm(axis) > OPPOSITE_SINE * _norm(dot_cross), axis, cross(u, helper))
        perpendicular /= np.maximum(_norm(perpendicular), _EPS)
        half_turn = np.concatenate([np.zeros_like(perpendicular[..., :1]), perpendicular], axis=-1)
        q = np.where(flip, multiply(q, half_turn), q)
    return q


def at_most(q: np.ndarray, angle: float) -> np.ndarray:
    """Unit rotations (..., 4) turned at most `angle` radians: those that turn farther, by `angle` about their axis."""
    half = 0.5 * angle
    over = np.abs(q[..., :1]) < np.cos(half)
    if not over.any():
        return q
    axes = np.where(q[..., :1] < 0.0, -q[..., 1:], q[..., 1:])
    axes = axes / np.maximum(_norm(axes), 1e-300)
    limited = np.concatenate([np.full_like(q[..., :1], np.cos(half)), np.sin(half) * axes], axis=-1)
    return np.where(over, limited, q)


def from_yaw(yaw: np.ndarray) -> np.ndarray:
    """Rotation about +Y (up) by `yaw` radians."""
    return from_axis_rotation("y", yaw)


def yaw_of_direction(direction: np.ndarray) -> np.ndarray:
    """Yaw (radians about +Y) that turns +Z onto the floor projection of `direction`."""
    return np.arctan2(direction[..., 0], direction[..., 2])


def mean(q: np.ndarray, weights: np.ndarray | None = None, axis: int = 0) -> np.ndarray:
    """Weighted average rotation along `axis` (sign-aligned, normalised linear mean; fine for clustered rotations)."""
    q = np.moveaxis(np.asarray(q, dtype=float), axis, 0)
    reference = q[0]
    aligned = np.where(np.sum(q * reference, axis=-1, keepdims=True) < 0.0, -q, q)
    w = np.ones(len(q)) if weights is None else np.asarray(weights, dtype=float)
    return normalize(np.tensordot(w, aligned, axes=(0, 0)))


def angle_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle in radians of the rotation taking a to b."""
    relative = inverse_multiply(normalize(a), normalize(b))
    return 2.0 * np.arctan2(np.linalg.norm(relative[..., 1:], axis=-1), np.abs(relative[..., 0]))
