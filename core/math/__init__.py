"""Numbers and geometry: quaternions, vectors, springs, heading frames, least-squares paths."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
