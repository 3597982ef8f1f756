"""The default solve: Neural3Points' pose with held feet and motion matching's facing (its legs optionally)."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
