"""Small neural-network building blocks in numpy."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
