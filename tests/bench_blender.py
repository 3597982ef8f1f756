"""Blender benchmarks of the add-on (real bpy, add-on registered from this checkout): one JSON object on stdout.

    PYTHONPATH=. python tests/bench_blender.py [BVH]

Each figure comes from a small function returning a dict; main() merges them.
"""
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="vr_avatar_bench_"))

import bpy  # noqa: E402  (after BLENDER_USER_RESOURCES)

import vr_avatar_addon  # noqa: E402
from core.bvh import read_bvh  # noqa: E402
from core.mocap import default_mocap_dir  # noqa: E402

REPEATS = 5
DEFAULT_BVH = default_mocap_dir() / "Bandai-Namco-Research-Motiondataset-1" / "dataset-1_walk_normal_001.bvh"


def median_ms(run, repeats: int = REPEATS) -> float:
    """Median wall time of run() in milliseconds, each run in a fresh empty scene (not timed)."""
    times = []
    for _ in range(repeats):
        bpy.ops.wm.read_homefile(use_empty=True)
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1e3, 2)


def import_bvh_figures(path: Path) -> dict:
    """One BVH imported as armature and action: the add-on's importer (core) against Blender's own."""
    motion = read_bvh(path)
    return {"import_bvh_addon_ms": median_ms(lambda: bpy.ops.vr_avatar.import_bvh(filepath=str(path))),
            "import_bvh_blender_ms": median_ms(lambda: bpy.ops.import_anim.bvh(filepath=str(path))),
            "bvh_file": path.name, "bvh_frames": len(motion), "bvh_bones": len(motion.skeleton)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else DEFAULT_BVH
    vr_avatar_addon.register()
    try:
        with contextlib.redirect_stdout(sys.stderr):  # Blender's importers print their progress
            figures = {"cpu_count": os.cpu_count(), "repeats": REPEATS, "blender": bpy.app.version_string}
            figures.update(import_bvh_figures(path))
    finally:
        vr_avatar_addon.unregister()
    json.dump(figures, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
