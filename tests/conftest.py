"""Shared fixtures: the real motion capture beside the repository (../shared/data/bandai)."""
import inspect
import os
import subprocess
import sys
import types
from importlib import util
from pathlib import Path

import pytest
from hypothesis import settings

from blender_home import use_temporary_blender_home

# CI runs the property tests on a fixed example sequence (reproducible); local runs keep exploring.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# Before any test imports bpy.
use_temporary_blender_home("vr_avatar_blender_")

from core.files.bvh import read_bvh  # noqa: E402 (after the Blender home is set)

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
# A BVH whose motion stops after one of its three declared frames.
TRUNCATED_BVH = """HIERARCHY
ROOT Hips
{
  OFFSET 0 90 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT Head
  {
    OFFSET 0 60 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 10 0
    }
  }
}
MOTION
Frames: 3
Frame Time: 0.0333333
0 90 0 0 0 0 0 0 0
"""

NO_SHARED = os.environ.get("VR_AVATAR_NO_SHARED") == "1"
"""VR_AVATAR_NO_SHARED=1: the suite behaves as if ../shared were not beside the repository."""
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bandai"
DATASET_1 = DATA / "Bandai-Namco-Research-Motiondataset-1"
DATASET_2 = DATA / "Bandai-Namco-Research-Motiondataset-2"
WALK_1 = DATASET_1 / "dataset-1_walk_normal_001.bvh"
WALK_2 = DATASET_2 / "dataset-2_walk_normal_001.bvh"


FIXTURES = TESTS / "data" / "mocap"
"""The procedural clips tests/data/make_fixtures.py writes: the unit tests' motion, beside the repository or not."""
FIXTURE_WALK_1 = FIXTURES / "dataset-0_walk-turn-left_normal_001.bvh"
FIXTURE_WALK_2 = FIXTURES / "dataset-0_walk-turn-right_normal_002.bvh"

SHARED = DATA.parents[1]
"""../shared beside the repository: the motion data, the third-party rigs, the OpenXR runtime's source."""
RIGS = SHARED / "rigs"


def shared_exists(path: Path) -> bool:
    """Whether a path under ../shared is there, False for all of them under VR_AVATAR_NO_SHARED=1."""
    return not NO_SHARED and path.exists()


def _under_data(value) -> bool:
    """A path under ../shared/data, or a list, tuple or dict holding one."""
    if isinstance(value, (list, tuple)):
        return any(_under_data(v) for v in value)
    if isinstance(value, dict):
        return any(_under_data(v) for v in value.values())
    return isinstance(value, Path) and (value == DATA or DATA in value.parents or value in DATA.parents[:2])


def _reaches_data(function, seen: set) -> bool:
    """Whether a test-side function names a path under ../shared/data, in its own code, a nested function or
    comprehension, or a test-side function it calls by name."""
    function = inspect.unwrap(getattr(function, "_get_wrapped_function", lambda: function)())
    code = getattr(function, "__code__", None)
    if code is None or code in seen or not Path(code.co_filename).is_relative_to(TESTS):
        return False
    seen.add(code)
    names, stack = set(), [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    namespace = function.__globals__
    return any(_under_data(namespace.get(name)) or _reaches_data(namespace.get(name), seen)
               for name in names if name in namespace)


def uses_shared_data(item) -> bool:
    """Whether a test reads the shared motion data: it is marked `needs_data`, takes a clip fixture or a clip as a
    parameter, or its code, its fixtures' code or the test-side helpers they call name a path under ../shared/data."""
    if item.get_closest_marker("needs_data") or {"walk1", "walk2"} & set(item.fixturenames):
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(_under_data(v) or str(v) in ("walk1", "walk2") for v in callspec.params.values()):
        return True
    seen = set()
    fixtures = [d.func for defs in item._fixtureinfo.name2fixturedefs.values() for d in defs]
    return any(_reaches_data(function, seen) for function in (item.function, *fixtures))


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_data: the test reads ../shared/data in a way its code does not name")


def pytest_collection_modifyitems(config, items):
    """Without ../shared/data the unit tests still run; each test that reads the motion data skips, saying why."""
    if shared_exists(WALK_1) and shared_exists(WALK_2):
        return
    skip = pytest.mark.skip(reason=f"needs the shared motion data, which is not beside the repository ({DATA})")
    for item in items:
        if uses_shared_data(item):
            item.add_marker(skip)


def core(*args, check: bool | None = True) -> subprocess.CompletedProcess:
    """Run `python -m core ARGS` in the repository root; `check` True wants exit 0, False non-zero."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("VR_AVATAR_MOCAP", None)
    done = subprocess.run([sys.executable, "-m", "core", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    if check is True:
        assert done.returncode == 0, done.stderr
    elif check is False:
        assert done.returncode != 0, done.stdout
    return done


@pytest.fixture(scope="session")
def walk1():
    return read_bvh(WALK_1)


@pytest.fixture(scope="session")
def walk2():
    return read_bvh(WALK_2)


@pytest.fixture(scope="session")
def fixture_walk1():
    """The procedural walk that stands, turns 90° left and stops (tests/data/mocap)."""
    return read_bvh(FIXTURE_WALK_1)


@pytest.fixture(scope="session")
def fixture_walk2():
    """The second procedural walk: a smaller figure, faster, turning 60° right."""
    return read_bvh(FIXTURE_WALK_2)


# --- Blender: the extension zip installed into the real bpy module, once per test session ---------

REPO_MODULE = "vr_avatar_test"  # the temporary user repository the tests install into
ADDON_MODULE = f"bl_ext.{REPO_MODULE}.vr_avatar"


def load_by_path(name: str, path: Path):
    """A module loaded by file path, the way build.py loads packaging.py (no bpy needed)."""
    spec = util.spec_from_file_location(name, path)
    module = util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


packaging = load_by_path("extension_packaging", ROOT / "addon_tools" / "packaging.py")


EXTENSION_WHEELS = [Path(p) for p in os.environ.get("VR_AVATAR_EXTENSION_WHEELS", "").split(os.pathsep) if p]
"""The wheels the zip under test carries: `build.py test-blender` gives the extension's own (its clean environments
have nothing else); the development suite, none (its environment has them installed)."""


@pytest.fixture(scope="session")
def extension_zip(tmp_path_factory) -> Path:
    return packaging.build_extension(ROOT, tmp_path_factory.mktemp("dist"), EXTENSION_WHEELS)


@pytest.fixture(scope="session")
def bpy():
    """The real bpy module (Blender's user folders already point at a temporary place, above)."""
    module = pytest.importorskip("bpy", reason="bpy (Blender as a Python module) is not installed")
    module.context.preferences.use_preferences_save = False
    return module


@pytest.fixture(scope="session")
def installed(bpy, extension_zip, tmp_path_factory):
    """The extension zip installed and enabled through Blender's extensions API, in a temporary user repository."""
    repos = bpy.context.preferences.extensions.repos
    repo = repos.new(name="VR Avatar test", module=REPO_MODULE, source='USER',
                     custom_directory=str(tmp_path_factory.mktemp("extensions_repo")))
    result = bpy.ops.extensions.package_install_files(filepath=str(extension_zip), repo=REPO_MODULE,
                                                      enable_on_install=True)
    assert result == {'FINISHED'}
    yield sys.modules[ADDON_MODULE]
    bpy.ops.preferences.addon_disable(module=ADDON_MODULE)
    repos.remove(repo)


@pytest.fixture
def empty_scene(bpy, installed):
    """A fresh, empty scene file with the add-on enabled."""
    bpy.ops.wm.read_homefile(use_empty=True)
    return bpy.context.scene
