"""The Blender extension: packaging, and the add-on installed into the real bpy module as a user would."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import util
from pathlib import Path

import numpy as np
import pytest

from conftest import ADDON_MODULE, EXTENSION_WHEELS, ROOT, TRUNCATED_BVH, FIXTURE_WALK_1 as WALK, load_by_path as _load, packaging




# --- packaging -------------------------------------------------------------------------------


def test_zip_holds_manifest_addon_and_core_at_its_root(extension_zip):
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert extension_zip.name == f"vr_avatar-{version}.zip"
    names = zipfile.ZipFile(extension_zip).namelist()
    for required in ("blender_manifest.toml", "__init__.py", "operators/library.py", "axes.py", "core/__init__.py",
                     "core/files/bvh.py"):
        assert required in names
    assert "packaging.py" not in names and "demo_scene.py" not in names and "eval_rigs.py" not in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or n.endswith(".gitkeep")]


def test_zip_ships_the_runtime_only_and_every_module_it_ships_imports_from_the_zip(extension_zip, tmp_path):
    """No command line, training, evaluation or benchmark code and no plots in the zip; the add-on's core works
    without them (each shipped core module imported from the unpacked zip alone, in a fresh interpreter)."""
    names = zipfile.ZipFile(extension_zip).namelist()
    tools = [n for n in names if n.startswith(("core/tools/", "core/__main__.py"))]
    assert not tools and not [n for n in names if n.endswith(".png")]
    assert not [n for n in names if Path(n).stem.startswith(("train", "eval", "bench", "cli", "demo"))]
    assert "core/retarget/retargeting.py" in names and "core/orientation/window_model.py" in names and "assets/orientation.npz" in names
    assert "assets/upper_body_ik_fitted.json" in names and "assets/orientation.json" not in names
    zipfile.ZipFile(extension_zip).extractall(tmp_path / "unpacked")
    modules = sorted(n[:-3].replace("/", ".").removesuffix(".__init__") for n in names
                     if n.startswith("core/") and n.endswith(".py"))
    assert len(modules) > 40
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", script, *modules], cwd=tmp_path / "unpacked", env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def _broken_copy(tmp_path: Path, old: str, new: str) -> Path:
    """The parts of the repository the build reads, with one manifest line replaced."""
    root = tmp_path / "repo"
    for folder in ("core", "vr_avatar_addon"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root)
    manifest = (ROOT / "blender_manifest.toml").read_text()
    assert old in manifest, f"test setup: {old!r} not in the manifest"
    (root / "blender_manifest.toml").write_text(manifest.replace(old, new))
    return root


@pytest.mark.parametrize("old, new, problem", [
    ('id = "vr_avatar"\n', "", "'id'"),
    ('and two controllers"', 'and two controllers."', "tagline"),
    ('version = "0.1.0"', 'version = "0.2.0"', "pyproject"),
    ('blender_version_min = "4.5.0"', 'blender_version_min = "4.4.0"', "blender_version_min"),
    ('baked motion"', 'baked motion."', "permissions.files"),
    ('license = ["SPDX:GPL-3.0-or-later"]', 'license = "GPL-3.0-or-later"', "license"),
])
def test_invalid_manifest_is_rejected_and_writes_nothing(tmp_path, old, new, problem):
    root = _broken_copy(tmp_path, old, new)
    with pytest.raises(ValueError, match=problem):
        packaging.build_extension(root, root / "dist")
    assert not (root / "dist").exists() or not any((root / "dist").iterdir())


def test_zip_passes_blenders_own_validator(extension_zip):
    """Blender's extension command-line tool (shipped inside bpy) accepts the manifest, tags included."""
    spec = util.find_spec("bpy")
    if spec is None:
        pytest.skip("bpy (Blender as a Python module) is not installed")
    scripts = [*Path(spec.origin).parent.glob("*/scripts")]
    tool = [*scripts[0].glob("addons_core/bl_pkg/cli/blender_ext.py")] if scripts else []
    if not tool:
        pytest.skip("this bpy build does not ship bl_pkg/cli/blender_ext.py")
    tags = scripts[0] / "modules" / "_bpy_internal" / "extensions" / "tags.py"
    command = [sys.executable, str(tool[0]), "validate", str(extension_zip)]
    if tags.exists():
        command[3:3] = ["--valid-tags", str(tags)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


# --- the add-on inside Blender ---------------------------------------------------------------


def test_installed_extension_registers_operator_and_panel(bpy, installed):
    assert ADDON_MODULE in bpy.context.preferences.addons
    # The installed copy runs with the core bundled inside it, not the checkout's.
    assert installed.core.__name__ == f"{ADDON_MODULE}.core"
    assert not Path(installed.core.__file__).is_relative_to(ROOT)
    assert hasattr(bpy.ops.vr_avatar, "import_bvh")
    assert bpy.types.VIEW3D_PT_vr_avatar.is_registered
    assert bpy.types.VIEW3D_PT_vr_avatar.bl_category == "VR Avatar"
    assert "target_armature" in bpy.types.Scene.bl_rna.properties["vr_avatar"].fixed_type.properties


@pytest.mark.skipif(not EXTENSION_WHEELS, reason="the zip under test carries no wheels (build.py test-blender "
                                                 "gives it the extension's own)")
def test_the_installed_extension_brings_what_live_preview_and_physics_import(bpy, installed):
    """In a clean environment (build.py test-blender) pyopenxr and PyOpenGL (live preview), mujoco and daqp (the
    physics pass) come from the zip's wheels, those of this Blender's platform and Python, installed by Blender's
    extension installer beside the add-on, not from the environment."""
    import importlib

    for name in ("xr", "OpenGL", "mujoco", "daqp"):
        module = importlib.import_module(name)
        assert not Path(module.__file__).is_relative_to(Path(sys.prefix)), (name, module.__file__)


def test_import_bvh_builds_the_rest_armature(bpy, installed):
    import core.files.bvh
    import core.anim.motion
    import core.math.quat

    before = set(bpy.data.objects)
    assert bpy.ops.vr_avatar.import_bvh(filepath=str(WALK)) == {'FINISHED'}
    (obj,) = set(bpy.data.objects) - before
    assert obj.type == 'ARMATURE'

    motion = core.files.bvh.read_bvh(WALK)
    skeleton = motion.skeleton
    bones = obj.data.bones
    assert len(bones) == len(skeleton) == 22
    _, rest = core.anim.motion.forward_kinematics(skeleton.parents, core.math.quat.identity(len(skeleton)), skeleton.offsets)
    expected = rest[:, [0, 2, 1]] * [1.0, -1.0, 1.0]  # +Y up (x, y, z) -> +Z up (x, -z, y)
    heads = np.array([bones[name].head_local for name in skeleton.names])
    np.testing.assert_allclose(heads, expected, atol=1e-4)
    parents = [bones[name].parent.name if bones[name].parent else None for name in skeleton.names]
    assert parents == [skeleton.names[p] if p >= 0 else None for p in skeleton.parents]
    assert obj["vr_avatar_frames"] == len(motion)
    assert obj["vr_avatar_fps"] == pytest.approx(motion.fps)




def test_import_malformed_bvh_cancels_and_creates_nothing(bpy, installed, tmp_path):
    truncated = tmp_path / "truncated.bvh"
    truncated.write_text(TRUNCATED_BVH)
    objects, armatures = len(bpy.data.objects), len(bpy.data.armatures)
    # bpy.ops turns an operator's ERROR report into RuntimeError; the operator itself returned CANCELLED.
    with pytest.raises(RuntimeError, match="truncated motion: 1 frames of the 3 declared"):
        bpy.ops.vr_avatar.import_bvh(filepath=str(truncated))
    assert (len(bpy.data.objects), len(bpy.data.armatures)) == (objects, armatures)


def test_axes_conversion_is_a_rotation_and_its_inverse():
    axes = _load("vr_avatar_axes", ROOT / "vr_avatar_addon" / "axes.py")
    basis = axes.z_up_from_y_up(np.eye(3))
    np.testing.assert_allclose(basis[1], [0, 0, 1])  # core's up is Blender's up
    assert np.linalg.det(basis) == pytest.approx(1.0)
    points = np.random.default_rng(0).normal(size=(4, 5, 3))
    np.testing.assert_allclose(axes.y_up_from_z_up(axes.z_up_from_y_up(points)), points)


def test_addon_registers_from_a_development_checkout(tmp_path):
    """Without packaging, `import vr_avatar_addon` finds the top-level `core` (own process: bpy imports once)."""
    if util.find_spec("bpy") is None:
        pytest.skip("bpy (Blender as a Python module) is not installed")
    script = ("import bpy, vr_avatar_addon as addon\n"
              "addon.register()\n"
              "assert addon.core.__name__ == 'core' and hasattr(bpy.ops.vr_avatar, 'import_bvh')\n"
              "addon.unregister()\n"
              "assert not hasattr(bpy.types.Scene, 'vr_avatar')\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), BLENDER_USER_RESOURCES=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def _tiny_wheel(folder: Path) -> Path:
    """A real, minimal wheel (a package and its dist-info), as pip would install it."""
    wheel = folder / "tinypkg-0.1-py3-none-any.whl"
    files = {"tinypkg/__init__.py": "VALUE = 1\n",
             "tinypkg-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n",
             "tinypkg-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                             "Tag: py3-none-any\n"}
    files["tinypkg-0.1.dist-info/RECORD"] = "".join(f"{name},,\n" for name in files) + "tinypkg-0.1.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


def test_bundled_wheels_are_listed_in_the_zips_manifest_and_pass_blenders_validator(tmp_path):
    wheel = _tiny_wheel(tmp_path)
    built = packaging.build_extension(ROOT, tmp_path / "dist", [wheel])
    archive = zipfile.ZipFile(built)
    assert "wheels/tinypkg-0.1-py3-none-any.whl" in archive.namelist()
    manifest = tomllib.loads(archive.read("blender_manifest.toml").decode())
    assert manifest["wheels"] == ["./wheels/tinypkg-0.1-py3-none-any.whl"]
    assert manifest["permissions"]["files"]  # the entry went in before the first table, not into it
    test_zip_passes_blenders_own_validator(built)
    with pytest.raises(ValueError, match="not a wheel file: missing.whl"):
        packaging.build_extension(ROOT, tmp_path / "other", [tmp_path / "missing.whl"])
