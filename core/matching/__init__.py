"""Motion matching (MMVR §5-6): the pose and feature databases, the search, the solver."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
