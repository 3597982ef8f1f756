"""Inverse kinematics: Parger et al.'s upper-body IK, FABRIK, two-bone legs, foot lock."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
