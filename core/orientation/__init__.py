"""Body orientation from the devices: the shipped window model and MMVR §4's network."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
