"""VR Avatar add-on: registers the thin Blender layer (properties, operators, panels, handlers) over `core`."""
import importlib
import importlib.util

# Where `core` lives, decided here and nowhere else. The extension zip bundles it as the
# subpackage `<this package>.core`; in a development checkout it is the top-level package
# `core` beside this folder (repo root on sys.path). Other modules write `from . import core`,
# which returns the module bound below; core's packages import their modules on first use
# (`core.rig.humanoid`), so nothing is listed here.
core = importlib.import_module(f"{__name__}.core" if importlib.util.find_spec(f"{__name__}.core") else "core")

from . import handlers, operators, panels, properties  # noqa: E402

_modules = (properties, *operators.MODULES, panels, handlers)


def register():
    for module in _modules:
        module.register()


def unregister():
    for module in reversed(_modules):
        module.unregister()
