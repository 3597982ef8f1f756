"""Blender benchmarks of the add-on (real bpy, add-on registered from this checkout): one JSON object on stdout.

    PYTHONPATH=. python tests/bench_blender.py [BVH]

Each figure comes from a small function returning a dict; main() merges them.

Bake and scrubbing run on a cached solve of BAKE_FRAMES frames built without the solver (a real solve
that long takes ~15 s): the target is the BVH's armature imported through the add-on, and the cache
holds the BVH's own motion looped to BAKE_FRAMES frames (a jump at each loop), converted to pose-bone
basis values with bone_space exactly as a solve's retargeted rotations are.
"""
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

from blender_home import use_temporary_blender_home

use_temporary_blender_home("vr_avatar_bench_")

import bpy  # noqa: E402  (after BLENDER_USER_RESOURCES)
import numpy as np  # noqa: E402

import vr_avatar_addon  # noqa: E402
from core import quat  # noqa: E402
from core.files.bvh import read_bvh  # noqa: E402
from core.rig.humanoid import find_mapping  # noqa: E402
from core.tools.mocap_split import default_mocap_dir  # noqa: E402
from core.anim.motion import Motion  # noqa: E402
from core.quality.report import json_values, quality_series, summarise  # noqa: E402
from vr_avatar_addon import bone_space, handlers, keyframes, solve_cache  # noqa: E402

REPEATS = 5
BAKE_FRAMES = 10_000
BAKE_REPEATS = 3
SCRUB_FRAMES = 300
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


def looped(motion: Motion, frames: int) -> Motion:
    """The motion played again and again up to `frames` frames."""
    index = np.arange(frames) % len(motion)
    return Motion(motion.skeleton, motion.rotations[index], motion.positions[index], motion.fps, motion.name)


def motion_cache(obj, motion: Motion, frame_start: int) -> solve_cache.SolveCache:
    """A cached solve on `obj` (the motion's armature as the add-on imports it) that plays `motion`.

    The report is core's quality series of the motion against its own hands and hips (zero errors),
    as long as the motion, so that the bake writes a report of the real size.
    """
    bones = obj.data.bones
    order = [motion.skeleton.index(bone.name) for bone in bones]
    global_rotations, global_positions = motion.global_transforms()
    rest = bone_space.rest_rotations(obj)
    basis = bone_space.basis_rotations(quat.multiply(global_rotations[:, order], rest), rest, bone_space.parents(obj))
    hips = next(bone for bone in bones if bone.parent is None)
    locations = np.zeros(basis.shape[:2] + (3,))
    locations[:, bones.find(hips.name)] = bone_space.basis_root_location(
        global_positions[:, order[bones.find(hips.name)]], obj, hips)
    mapping = find_mapping(motion.skeleton)
    hands = global_positions[:, [mapping["l_hand"], mapping["r_hand"]]]
    series = quality_series(motion, hands, np.ones(hands.shape[:2], dtype=bool), global_positions[:, mapping["hips"]])
    figures = {"frames": len(motion), "fps": motion.fps, "source": "looped BVH motion, not a solve"}
    report = {"figures": figures, "summary": summarise(series),
              "series": {k: json_values(v) for k, v in series.items()}}
    return solve_cache.SolveCache(obj.name, [bone.name for bone in bones], frame_start, basis, locations,
                                  np.ones_like(locations), global_positions[:, order], hands,
                                  global_positions[:, mapping["head"]], report)


def cached_scene(path: Path):
    """(scene, armature) in a fresh scene: the BVH's armature imported by the add-on, without its action,
    and a cached solve of BAKE_FRAMES frames of its motion stored on the scene."""
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.vr_avatar.import_bvh(filepath=str(path))
    obj = bpy.context.object
    obj.animation_data.action = None  # the cache (preview) or the bake's action poses it from here on
    scene = bpy.context.scene
    scene.frame_end = scene.frame_start + BAKE_FRAMES - 1
    solve_cache.store(scene, motion_cache(obj, looped(read_bvh(path), BAKE_FRAMES), scene.frame_start))
    return scene, obj


def scrub_figures(scene, obj) -> dict:
    """The frame-change handler posing the armature from the cache, at SCRUB_FRAMES frames spread at random
    over the cache: the handler alone, and Blender's frame_set (handler plus evaluation) with and without it."""
    frames = scene.frame_start + np.random.default_rng(0).choice(BAKE_FRAMES, SCRUB_FRAMES, replace=False)
    scene.vr_avatar.solve.preview = True
    handler = []
    for frame in frames:
        scene.frame_current = int(frame)
        start = time.perf_counter()
        handlers.pose_from_cache(scene)
        handler.append(time.perf_counter() - start)
    posed = np.array([obj.pose.bones[b].rotation_quaternion[:] for b in solve_cache.load(scene).bones])
    expected = solve_cache.cached_frame(scene, int(frames[-1])).basis
    assert np.allclose(posed, expected, atol=1e-6), "the handler did not pose the armature from the cache"

    def frame_set_ms() -> float:
        times = []
        for frame in frames:
            start = time.perf_counter()
            scene.frame_set(int(frame))
            times.append(time.perf_counter() - start)
        return round(float(np.mean(times)) * 1e3, 3)

    with_preview = frame_set_ms()
    scene.vr_avatar.solve.preview = False
    without = frame_set_ms()
    handler_ms = np.array(handler) * 1e3
    return {"scrub_frames": SCRUB_FRAMES, "scrub_handler_ms_mean": round(float(handler_ms.mean()), 3),
            "scrub_handler_ms_p99": round(float(np.percentile(handler_ms, 99)), 3),
            "frame_set_ms_mean": with_preview, "frame_set_no_preview_ms_mean": without}


def bake_figures(scene, obj) -> dict:
    """bpy.ops.vr_avatar.bake_action() on the stored cache (median of BAKE_REPEATS; each bake's action is
    removed before the next, not timed). The bake includes writing its quality report (JSON and plot)."""
    times, frames = [], []
    for _ in range(BAKE_REPEATS):
        start = time.perf_counter()
        result = bpy.ops.vr_avatar.bake_action()
        times.append(time.perf_counter() - start)
        assert result == {'FINISHED'}, result
        action = obj.animation_data.action
        frames.append(round(action.frame_range[1] - action.frame_range[0]) + 1)
        bone = obj.data.bones[0].name
        keyed = keyframes.fcurve_values(action, obj, f'pose.bones["{bone}"].rotation_quaternion', 4)
        frames.append(len(keyed))
        obj.animation_data.action = None
        bpy.data.actions.remove(action)
    assert set(frames) == {BAKE_FRAMES}, frames
    return {"bake_s": round(statistics.median(times), 3), "bake_frames": BAKE_FRAMES,
            "bake_bones": len(obj.data.bones), "bake_repeats": BAKE_REPEATS,
            "bake_cache": "BVH motion looped to bake_frames, as pose-bone basis (bone_space), on its armature "
                          "imported by vr_avatar.import_bvh"}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else DEFAULT_BVH
    vr_avatar_addon.register()
    try:
        with contextlib.redirect_stdout(sys.stderr):  # Blender's importers print their progress
            figures = {"cpu_count": os.cpu_count(), "repeats": REPEATS, "blender": bpy.app.version_string}
            figures.update(import_bvh_figures(path))
            scene, obj = cached_scene(path)
            figures.update(scrub_figures(scene, obj))
            figures.update(bake_figures(scene, obj))
    finally:
        vr_avatar_addon.unregister()
    json.dump(figures, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
