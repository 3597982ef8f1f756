"""Stitching clips with Kim et al.'s Recurrent Motion Refiner."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
