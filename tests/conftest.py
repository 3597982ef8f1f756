"""Shared fixtures: the real motion capture beside the repository (../shared/data/bandai)."""
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs the property tests on a fixed example sequence (reproducible); local runs keep exploring.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# Blender (bpy) keeps its user configuration and extension cache here, never in the real home;
# this must happen before any test imports bpy.
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="vr_avatar_blender_"))

from core.bvh import read_bvh

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "bandai"
DATASET_1 = DATA / "Bandai-Namco-Research-Motiondataset-1"
DATASET_2 = DATA / "Bandai-Namco-Research-Motiondataset-2"
WALK_1 = DATASET_1 / "dataset-1_walk_normal_001.bvh"
WALK_2 = DATASET_2 / "dataset-2_walk_normal_001.bvh"


def pytest_configure(config):
    if not WALK_1.exists() or not WALK_2.exists():
        raise pytest.UsageError(f"the shared motion data is missing: expected {DATA} beside the repository")


@pytest.fixture(scope="session")
def walk1():
    return read_bvh(WALK_1)


@pytest.fixture(scope="session")
def walk2():
    return read_bvh(WALK_2)
