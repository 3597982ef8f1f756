"""VR Avatar core: full-body animation from three tracked points, independent of Blender.

Packages by role (docs/architecture.md): math, anim, rig, files, devices, ik, matching, orientation,
stitch, n3p, hybrid (the default method), nn, quality; `tools` holds the command line, training and
evaluation, which the extension does not ship. numpy at run time; torch only inside training code.
Every package imports its modules on first use (`core.rig.humanoid` works after `import core`).
"""
import importlib

__version__ = "0.1.0"


def lazy_submodules(package: str):
    """A module-level `__getattr__` (PEP 562) that imports `package`'s submodule of that name on first use."""
    def __getattr__(name: str):
        if not name.startswith("_"):
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{package}.{name}":
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__


__getattr__ = lazy_submodules(__name__)
