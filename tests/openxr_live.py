"""Scenarios against the running OpenXR runtime (Monado), one per process: `python tests/openxr_live.py NAME [ARG]`.

Monado reads its environment (simulated controllers, compositor) once, when the first instance is
created, so each configuration runs in its own process with the environment xr_runtime.environment
gives. Each scenario prints one JSON object on stdout; tests/devices/test_openxr_runtime.py asserts on it.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WALK_1 = ROOT.parent / "shared/data/bandai/Bandai-Namco-Research-Motiondataset-1/dataset-1_walk_normal_001.bvh"
sys.path.insert(0, str(ROOT))

import xr  # noqa: E402

from core.config import DeviceOffsets  # noqa: E402
from core.devices.attachments import device_offsets, joints_from_devices  # noqa: E402
from core.devices.openxr_lifecycle import tracking_status  # noqa: E402
from core.devices.openxr_source import OpenXRSource  # noqa: E402


def raw_stream_pose(xr_pose) -> np.ndarray:
    """An XrPosef as the stream lays a pose out (px, py, pz, qw, qx, qy, qz), written out field by field."""
    o, p = xr_pose.orientation, xr_pose.position
    return np.array([p.x, p.y, p.z, o.w, o.x, o.y, o.z])


def pose_errors(frame_poses: np.ndarray, expected: np.ndarray) -> tuple[float, float]:
    """Largest position error (m) and rotation error (degrees) between two (n, 7) pose lists."""
    position = np.linalg.norm(frame_poses[:, :3] - expected[:, :3], axis=-1).max()
    q = expected[:, 3:] / np.linalg.norm(expected[:, 3:], axis=-1, keepdims=True)
    dots = np.clip(np.abs(np.sum(frame_poses[:, 3:] * q, axis=-1)), 0.0, 1.0)
    return float(position), float(np.degrees(2.0 * np.arccos(dots)).max())


def session(graphics: str, seconds: float = 1.0, reference_spaces=None) -> dict:
    """Open a source, run it `seconds`, check each frame's poses against the runtime's own xrLocateSpace, close."""
    kwargs = {"reference_spaces": tuple(reference_spaces)} if reference_spaces else {}
    started = time.perf_counter()
    with OpenXRSource(graphics=graphics, **kwargs) as source:
        opened_s = time.perf_counter() - started
        frames, worst = [], (0.0, 0.0)
        end = time.monotonic() + seconds
        while time.monotonic() < end and not source.finished:
            frame = source.poll()
            if frame is None:
                continue
            frames.append(frame)
            spaces = [source._view, *source._grips]
            expected = np.array([raw_stream_pose(xr.locate_space(s, source._base, frame.time_ns).pose) for s in spaces])
            seen = frame.tracked
            if seen.any():
                got = np.concatenate([frame.positions, frame.rotations], axis=1)[seen]
                errors = pose_errors(got, expected[seen])
                worst = (max(worst[0], errors[0]), max(worst[1], errors[1]))
        last = frames[-1] if frames else None
        result = {
            "graphics": source.graphics, "opened_s": opened_s, "reference_space": source.reference_space,
            "offered_spaces": source.offered_spaces, "profiles": source.profiles,
            "current_profiles": source.current_profiles(), "frames": len(frames),
            "rate_hz": (len(frames) - 1) / ((frames[-1].time_ns - frames[0].time_ns) * 1e-9) if len(frames) > 2 else 0,
            "times_increase": bool(np.all(np.diff([f.time_ns for f in frames]) > 0)),
            "flags": None if last is None else [int(f) for f in last.flags],
            "tracked": None if last is None else [bool(t) for t in last.tracked],
            "positions": None if last is None else last.positions.tolist(),
            "tracked_all": [bool(f.tracked.all()) for f in frames].count(True),
            "button_bound": source.button_bound, "button_held": sum(f.button for f in frames),
            "status": tracking_status(source.lifecycle, None if last is None else last.tracked),
            "max_position_error_m": worst[0], "max_rotation_error_deg": worst[1],
        }
        if source.reference_space != "STAGE" and "STAGE" in source.offered_spaces and last is not None:
            stage = source._reference(xr.ReferenceSpaceType.STAGE)
            head_in_stage = raw_stream_pose(xr.locate_space(source._view, stage, last.time_ns).pose)
            base_in_stage = raw_stream_pose(xr.locate_space(source._base, stage, last.time_ns).pose)
            result["head_in_stage"], result["base_in_stage"] = head_in_stage.tolist(), base_in_stage.tolist()
            result["head_in_base"] = np.concatenate([last.positions[0], last.rotations[0]]).tolist()
            xr.destroy_space(stage)
    result["states"] = [state.name for state, _ in source.lifecycle.history]
    result["stop_reason"] = source.lifecycle.stop_reason
    result["closed"] = source.session is None and source.instance is None
    return result


def lifecycle(graphics: str) -> dict:
    """Two sessions one after the other in one process: the first closed and destroyed, the second made anew."""
    return {"runs": [session(graphics, 1.5), session(graphics, 0.5)]}


def fallback() -> dict:
    """STAGE left out of the preferences: LOCAL_FLOOR (not offered without XR_EXT_local_floor), then LOCAL."""
    return session("headless", 0.3, ("LOCAL_FLOOR", "LOCAL"))


def live(graphics: str, seconds: float, lose_hands: str = "", pin_core: bool = False, method: str = "mm",
         broken_head: int = 0) -> dict:
    """core's solver (`method`: "mm", motion matching; "hybrid", the default method) stepped from every located
    frame; with `lose_hands` "A:B", the hands' tracking is dropped (flags cleared) from frame A to B of the run, then
    returns; the first `broken_head` frames report the headset tracked at an absurd position (a headset that starts
    untracked but says otherwise). `pin_core` keeps this thread (the solver's) on one CPU once the runtime's own threads have started,
    free to run on any."""
    from core.files.bvh import read_bvh
    from core.devices.attachments import joints_from_devices
    from core.devices.live import run_live
    from core.hybrid.solver import HybridSolver
    from core.n3p.model import N3PModel
    from core.n3p.solver import N3PSolver
    from core.orientation.window_model import load_orientation_model
    from core.matching.pose_database import build_database
    from core.matching.solver import MotionMatchingSolver

    if method == "hybrid":
        solver = HybridSolver(N3PSolver(N3PModel.load()), load_orientation_model())
    elif method == "mm":
        solver = MotionMatchingSolver([build_database([read_bvh(WALK_1)])], orientation_model=load_orientation_model())
    else:
        raise ValueError(f"method {method!r}: mm or hybrid")
    first, last = (int(v) for v in lose_hands.split(":")) if lose_hands else (-1, -1)
    count, hand_errors = [0], []

    def drop_hands(frame):
        count[0] += 1
        if count[0] <= broken_head:
            frame.positions[0] = (0.0, 1e308, 0.0)
        if first <= count[0] < last:
            frame.tracked = frame.tracked & [True, False, False]
            frame.positions[1:], frame.rotations[1:] = np.nan, np.nan
        return frame

    def follows(frame, positions):
        if frame.tracked.all():
            wrists = joints_from_devices(frame.positions, frame.rotations, solver.offsets)[1:]
            hands = positions[[solver.mapping.joints["l_hand"], solver.mapping.joints["r_hand"]]]
            hand_errors.append((count[0], float(np.linalg.norm(hands - wrists, axis=-1).max())))

    with OpenXRSource(graphics=graphics) as source:
        if pin_core and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})  # this thread only (Linux)
        run = run_live(source, solver, seconds, follows, drop_hands)
        period = 1.0 / 90.0 if source.headless else None
        if period is None:
            period = float(np.median(np.diff(run.display_times_ns))) * 1e-9
    return {"located": run.located, "stepped": run.stepped, "skipped": run.skipped(period), "period_s": period,
            "statuses": run.statuses, **run.latency_ms(), "hand_errors": hand_errors}


def addon(folder: str, ticks: str = "90") -> dict:
    """The add-on's Live Preview and Record with core's pyopenxr source, in the real bpy, driven tick by tick.

    The avatar is the Bandai walk's armature, solved by Neural3Points (no database needed). Each
    tick calls the running operator's modal with a timer event, as Blender's event loop would.
    """
    from types import SimpleNamespace

    sys.path.insert(0, str(ROOT / "tests"))
    from blender_home import use_temporary_blender_home

    use_temporary_blender_home("vr_avatar_openxr_")
    import bpy

    import vr_avatar_addon as add_on
    from core.files.stream import read_stream

    add_on.register()
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    assert bpy.ops.vr_avatar.import_bvh(filepath=str(WALK_1)) == {'FINISHED'}
    obj = bpy.context.view_layer.objects.active
    obj.animation_data.action = None
    scene.vr_avatar.target_armature = obj
    assert bpy.ops.vr_avatar.map_bones() == {'FINISHED'}
    solve = scene.vr_avatar.solve
    solve.method, solve.calibration, solve.user_height = 'N3P', 'EXPLICIT', 1.6
    head_bone = {item.joint: item.bone for item in scene.vr_avatar.bone_map}["head"]

    def pose():
        return [(b.rotation_mode, *b.rotation_quaternion, *b.location) for b in obj.pose.bones]

    ticks, before, objects = int(ticks), pose(), len(bpy.data.objects)
    timer = SimpleNamespace(type='TIMER', value='NOTHING', timer=None)
    assert bpy.ops.vr_avatar.preview_live(source='OPENXR') == {'RUNNING_MODAL'}
    preview = add_on.operators.live.VR_AVATAR_OT_preview_live.running()
    read, seen = preview.live.source.read, []

    def reading(context):
        devices = read(context)
        seen.append(devices)
        return devices

    preview.live.source.read = reading
    gaps, heads, moved = [], [], 0
    for _ in range(ticks):
        assert preview.modal(bpy.context, timer) == {'RUNNING_MODAL'}
        bpy.context.view_layer.update()
        if seen[-1] is not None:
            head = np.array(obj.matrix_world @ obj.pose.bones[head_bone].head)
            head = np.array([head[0], head[2], -head[1]])  # Blender's +Z up to core's +Y up
            positions, rotations, _ = (np.asarray(a) for a in seen[-1])
            implied = joints_from_devices(positions, rotations, device_offsets(DeviceOffsets()))[0]
            gaps.append(float(np.linalg.norm(head - implied)))
            heads.append([head.tolist(), implied.tolist()])
            moved += pose() != before
    assert preview.modal(bpy.context, SimpleNamespace(type='ESC', value='PRESS')) == {'FINISHED'}
    result = {"preview_ticks": ticks, "located": sum(d is not None for d in seen), "head_gaps": gaps,
              "heads": heads, "posed_ticks": moved, "pose_restored": pose() == before,
              "objects_unchanged": len(bpy.data.objects) == objects,
              "preview_stopped": add_on.operators.live.VR_AVATAR_OT_preview_live.running() is None}

    scene.vr_avatar.stream.record_path = str(Path(folder) / "recorded.csv")
    scene.vr_avatar.stream.countdown_s = 0.0
    target = Path(folder) / "recorded_001.csv"
    assert bpy.ops.vr_avatar.record_stream(source='OPENXR') == {'RUNNING_MODAL'}
    recorder = add_on.operators.stream.VR_AVATAR_OT_record_stream._recording
    for _ in range(ticks):
        assert recorder.modal(bpy.context, SimpleNamespace(type='TIMER', value='NOTHING', timer=recorder.timer)) \
            == {'PASS_THROUGH'}
    assert bpy.ops.vr_avatar.record_stream() == {'FINISHED'}  # the second call asks the recorder to stop
    assert recorder.modal(bpy.context, SimpleNamespace(type='MOUSEMOVE', value='NOTHING', timer=None)) == {'FINISHED'}
    stream = read_stream(target)
    result.update({"recorded": len(stream), "recorded_tracked": bool(stream.tracked.all()),
                   "recorded_head": stream.positions[:, 0].tolist(), "record_source_closed": recorder.recording.openxr.closed,
                   "comment": [line for line in target.read_text().splitlines() if line.startswith("#")],
                   "after_record_unchanged": pose() == before and len(bpy.data.objects) == objects})
    result["button_takes"] = button_takes(bpy, add_on, Path(folder))
    add_on.unregister()
    return result


BUTTON_HELD = [*[False] * 5, True, True, *[False] * 30, True, *[False] * 5, True, *[False] * 20]
"""The record button per frame of button_takes: a take from frame 5 to 37, and one from 43 to the end."""


def button_takes(bpy, add_on, folder: Path) -> dict:
    """Record OpenXR with Controller Button: the runtime's frames, their record button held as BUTTON_HELD says (the
    simulated controllers cannot press it), one modal call per frame, then Esc."""
    from types import SimpleNamespace

    from core.files.stream import read_stream

    stream = bpy.context.scene.vr_avatar.stream
    stream.record_path, stream.record_by_button, listed = str(folder / "button.csv"), True, len(stream.takes)
    assert bpy.ops.vr_avatar.record_stream(source='OPENXR') == {'RUNNING_MODAL'}
    recorder = add_on.operators.stream.VR_AVATAR_OT_record_stream._recording
    source = recorder.recording.openxr.source  # the add-on's shared session: its frames, the button held
    poll, held = source.poll, iter(BUTTON_HELD)

    def pressing():
        frame = poll()
        if frame is not None:
            frame.button = next(held)
        return frame

    source.poll = pressing
    tick = SimpleNamespace(type='TIMER', value='NOTHING', timer=recorder.timer)
    for _ in BUTTON_HELD:
        recorder.modal(bpy.context, tick)
    assert recorder.modal(bpy.context, SimpleNamespace(type='ESC', value='PRESS', timer=None)) == {'FINISHED'}
    stream.record_by_button = False
    files = sorted(p.name for p in folder.glob("button_*.csv"))
    return {"files": files, "samples": [len(read_stream(folder / f)) for f in files],
            "listed": [t.name for t in stream.takes][listed:]}


def extension_wheel(zip_path: str, folder: str) -> dict:
    """The extension zip (pyopenxr's wheel inside) installed through Blender's extensions API; then `xr` imported
    from where Blender unpacked the wheel, not from this environment, and its loader pointed at Monado."""
    import importlib
    import os

    sys.path.insert(0, str(ROOT / "tests"))
    from blender_home import use_temporary_blender_home

    use_temporary_blender_home("vr_avatar_wheel_")
    import bpy

    bpy.context.preferences.use_preferences_save = False
    bpy.context.preferences.extensions.repos.new(name="VR Avatar wheel test", module="vr_avatar_wheel", source='USER',
                                                 custom_directory=str(Path(folder) / "repo"))
    installed = bpy.ops.extensions.package_install_files(filepath=zip_path, repo="vr_avatar_wheel",
                                                         enable_on_install=True)
    unpacked = sorted(Path(os.environ["BLENDER_USER_RESOURCES"]).glob("extensions/.local/lib/python*/site-packages"))
    result = {"installed": sorted(installed), "site_packages": [str(p) for p in unpacked]}
    if unpacked:
        result["on_sys_path"] = str(unpacked[0]) in sys.path  # Blender put it there on install
        sys.modules.pop("xr", None)
        for name in [n for n in sys.modules if n.startswith("xr.")]:
            sys.modules.pop(name)
        sys.path.insert(0, str(unpacked[0]))  # ahead of this environment's own pyopenxr
        importlib.invalidate_caches()  # a directory listed while the install was writing it would hide modules
        bundled = importlib.import_module("xr")
        result["xr_file"] = bundled.__file__
        result["extensions"] = sorted(str(e) for e in bundled.enumerate_instance_extension_properties())
        addon = sys.modules["bl_ext.vr_avatar_wheel.vr_avatar"]
        with addon.core.devices.openxr_source.OpenXRSource() as source:
            result["source_xr"] = source._xr.__file__
            result["frames"] = sum(source.poll() is not None for _ in range(20))
    return result


def garbage(graphics: str, seconds: float) -> dict:
    """Cyclic garbage the frame loop leaves: the automatic collector off while the source polls for `seconds`
    (after a warm-up), then one collection counts what only it could free. Such garbage makes the collector run
    in the middle of a frame, inside the live latency."""
    import gc

    with OpenXRSource(graphics=graphics) as source:
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            source.poll()
        gc.collect()
        gc.disable()
        frames, end = 0, time.monotonic() + seconds
        while time.monotonic() < end:
            frames += source.poll() is not None
        unreachable = gc.collect()
        gc.enable()
    return {"frames": frames, "unreachable": unreachable}


def broken_head(graphics: str, seconds: float, frames: str) -> dict:
    """`live` with the default solver, the headset's first `frames` poses absurd though flagged tracked."""
    return live(graphics, seconds, method="hybrid", broken_head=int(frames))


SCENARIOS = {"lifecycle": lifecycle, "fallback": fallback, "session": session, "live": live, "addon": addon,
             "extension_wheel": extension_wheel, "garbage": garbage, "broken_head": broken_head}

if __name__ == "__main__":
    name, *arguments = sys.argv[1:]
    if name in ("live", "garbage", "broken_head"):
        arguments[1] = float(arguments[1])
    elif name == "session" and len(arguments) > 1:
        arguments[1] = float(arguments[1])
    print(json.dumps(SCENARIOS[name](*arguments)))
