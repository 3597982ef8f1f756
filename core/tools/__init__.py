"""Core's tools, never shipped in the extension: the command line, benchmarks, the demo, training, evaluation."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
