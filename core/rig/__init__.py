"""The canonical humanoid: mapping any skeleton onto it, presets, and retargeting onto a character."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
