"""3-vectors (..., 3): unit directions and the parts of a vector along and across an axis."""
from __future__ import annotations

import numpy as np

_EPS = 1e-12


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Dot product over the last axis."""
    return np.einsum("...i,...i->...", a, b)


def length(v: np.ndarray) -> np.ndarray:
    return np.sqrt(dot(v, v))


def unit(v: np.ndarray) -> np.ndarray:
    """v scaled to length 1 (zero vectors stay zero)."""
    return v / np.maximum(length(v), _EPS)[..., None]


def unit_or(v: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Unit direction of v; where v is (nearly) zero, of `fallback` instead, blending smoothly in between."""
    size = length(v)
    if (size >= 1e-6).all():  # nothing to blend: the common case, in far fewer numpy calls
        return v / size[..., None]
    weight = np.clip(size / 1e-6, 0.0, 1.0)[..., None]
    return unit(weight * v / np.maximum(size, _EPS)[..., None] + (1.0 - weight) * unit(fallback))


def reject(v: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """The part of v perpendicular to the unit `axis`."""
    return v - dot(v, axis)[..., None] * axis


def unit_across(v: np.ndarray, axis: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Unit direction of v across the unit `axis`; where v is (nearly) along it, `fallback` across it instead.

    `fallback` must not be parallel to `axis` wherever v is; the blend between the two is smooth.
    """
    across = reject(v, axis)
    size = length(across)
    if (size >= 1e-3).all():  # nothing to blend: the common case, in far fewer numpy calls
        return across / size[..., None]
    weight = np.clip(size / 1e-3, 0.0, 1.0)[..., None]
    return unit(weight * across / np.maximum(size, _EPS)[..., None] + (1.0 - weight) * unit(reject(fallback, axis)))
