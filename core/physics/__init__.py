"""Physics: a simulated avatar (MuJoCo) that tracks a solved motion by computed torques and cannot float, sink or
slide a planted foot except as far as the bounded root residual lets it."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
