"""The physics pass names what it misses: a package not installed, or one installed in part (mujoco without its
mujoco-core library, as on a platform mujoco-core has no wheel for)."""
import sys

import pytest

from core.solve import PHYSICS_PACKAGES, PhysicsUnavailable, require_physics


@pytest.mark.parametrize("absent", PHYSICS_PACKAGES)
def test_a_package_that_does_not_import_is_named(monkeypatch, absent):
    monkeypatch.setitem(sys.modules, absent, None)  # `import absent` raises ImportError
    with pytest.raises(PhysicsUnavailable, match=rf"the physics pass needs mujoco and daqp \({absent} not installed\)"):
        require_physics()


def test_mujoco_without_its_core_library_is_named(monkeypatch):
    """mujoco's own wheel is pure Python and imports mujoco-core's `mujoco._version` first."""
    pytest.importorskip("mujoco", reason="mujoco is not installed")
    for name in [n for n in sys.modules if n == "mujoco" or n.startswith("mujoco.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mujoco._version", None)
    with pytest.raises(PhysicsUnavailable, match=r"\(mujoco not installed\)"):
        require_physics()
