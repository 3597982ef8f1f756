"""Skeletons and motion: forward kinematics, character space, inertialization."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
