"""Quality: SPEC §5's metrics and a solve's report."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
