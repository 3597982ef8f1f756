"""`python -m core train ...`: the networks trained in torch and exported for numpy; the arm IK's fit."""
from ... import lazy_submodules

__getattr__ = lazy_submodules(__name__)
