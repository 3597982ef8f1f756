"""The default solve: Neural3Points' body and upper body with motion matching's steps and facing."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
