"""VR Avatar add-on: registers the thin Blender layer (properties, operators, panels, handlers) over `core`."""
import importlib
import importlib.util

# Where `core` lives, decided here and nowhere else. The extension zip bundles it as the
# subpackage `<this package>.core`; in a development checkout it is the top-level package
# `core` beside this folder (repo root on sys.path). Other modules write `from . import core`,
# which returns the module bound below. The submodules the add-on uses are imported here too,
# because `core/__init__.py` does not import them.
core = importlib.import_module(f"{__name__}.core" if importlib.util.find_spec(f"{__name__}.core") else "core")
for _submodule in ("files.bvh", "devices.calibration", "config", "devices.attachments", "rig.humanoid",
                   "rig.mapping_preset", "files.mocap", "anim.motion", "n3p.solver", "devices.openxr_source",
                   "devices.plausibility", "matching.pose_database", "math.quat", "quality.report", "rig.retarget",
                   "anim.skeleton", "matching.solver", "stitch.stitching", "stitch.model", "files.stream",
                   "ik.upper_body_ik"):
    importlib.import_module(f"{core.__name__}.{_submodule}")

from . import handlers, operators, panels, properties  # noqa: E402

_modules = (properties, operators, panels, handlers)


def register():
    for module in _modules:
        module.register()


def unregister():
    for module in reversed(_modules):
        module.unregister()
