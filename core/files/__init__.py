"""Files: BVH, three-point streams, motion-capture collections, atomic writing, npz reading."""
from .. import lazy_submodules

__getattr__ = lazy_submodules(__name__)
