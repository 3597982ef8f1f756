"""The hybrid, the default method: Neural3Points' pose with MMVR's body facing and held feet (motion matching's legs
optionally)."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
