"""Neural3Points: the pose predictor and its solver, in numpy."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
