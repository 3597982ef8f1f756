"""Retargeting: a solved motion carried onto a character of another skeleton (a rig or a BVH character)."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
