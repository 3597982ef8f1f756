"""Blender (bpy) keeps its user configuration and extension cache in a temporary folder, never in the real home."""
import atexit
import os
import shutil
import tempfile


def use_temporary_blender_home(prefix: str) -> None:
    """Point BLENDER_USER_RESOURCES at a fresh folder removed when the process ends, unless one is set.

    Must run before bpy is imported."""
    if "BLENDER_USER_RESOURCES" not in os.environ:
        os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix=prefix)
        atexit.register(shutil.rmtree, os.environ["BLENDER_USER_RESOURCES"], ignore_errors=True)
