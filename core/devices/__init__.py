"""The three tracked devices: where they sit on the body, simulation, calibration, live OpenXR input."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
