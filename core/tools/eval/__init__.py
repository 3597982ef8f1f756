"""`python -m core eval ...`: evaluations against motion-capture ground truth."""
from ... import lazy_submodules

__getattr__ = lazy_submodules(__name__)
