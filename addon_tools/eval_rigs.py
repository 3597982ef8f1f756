"""Rig evaluation: the add-on's whole user path on third-party characters, measured on the baked avatar.

    python build.py eval-rigs [--rigs PATH...] [--out DIR] [--json] [--mappings DIR] [--seconds S]

For each rig file (.glb/.gltf/.vrm through Blender's glTF importer, .fbx through its FBX importer,
default settings) in a fresh scene at 30 fps with the add-on registered from this checkout: import,
take the armature that deforms a mesh as the target, Map Bones (automatic; a `<rig stem>.mapping.json`
in --mappings, canonical joint -> bone, then corrects the list as a user would), add the motion
database (built once per run from the default database files, like `core demo`), Load Stream (one
simulated per run from a validation walking clip with ±30° look-around), Solve, Bake Action. A step
that refuses ends the rig's row with `"refused": "<message>"` and `"step"`. After the bake, every
figure is read from Blender's own data frame by frame (scene.frame_set, pose bones' world heads and
tails, the skinned meshes evaluated through the depsgraph), never from the add-on's cached solve;
positions compared with the stream are taken to core's frame (+Y up) first. Blender's floor (world
z = 0) is the stream's floor (y = 0).

The figures are the bake's own avatar quality report (vr_avatar_addon.avatar_quality, which says how
each is read), measured here on every frame, with `clip_foot_slide_cm_s` beside them: SPEC §5 foot
skating of the ground-truth clip the stream was simulated from, at the scene's rate and with SPEC's
floor (1st percentile of its toe heights), and `foot_slide_ratio`, the avatar's over the clip's.

Each rig also gets a contact sheet `<rig stem>.contact.png`: six frames spread over the clip
(columns) seen from the front, the figure's left and from above front-left (rows), with the headset
(red) and the controllers (left green, right blue) as spheres and the floor as a thin dark slab,
rendered with Workbench. The table goes to stderr (and eval_rigs.md), the JSON {rig: {metric: value}}
to stdout with --json (and eval_rigs.json). Run by build.py with bpy as a Python module; left out
of the extension zip.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import bpy
import bmesh
import numpy as np
from mathutils import Vector

from core.files.atomic import write_text, written_path
from core.files.bvh import read_bvh
from core.config import SimulationConfig, describe
from core.devices.attachments import controller_axes, hmd_forward, implied_joint_positions
from core.rig.humanoid import find_mapping
from core.quality.metrics import foot_skate_cm_s
from core.files.mocap import MocapNotFound, find_bvh_files
from core.tools.mocap_split import default_database_files, default_mocap_dir, split_by_file
from core.matching.pose_database import build_database
from core.devices.simulate import simulate_stream
from core.files.stream import read_stream, write_stream

from vr_avatar_addon import avatar_quality
from vr_avatar_addon.avatar import skinned_meshes
from vr_avatar_addon.axes import y_up_from_z_up, z_up_from_y_up

RIG_SUFFIXES = {".glb": "gltf", ".gltf": "gltf", ".vrm": "gltf", ".fbx": "fbx"}
DEFAULT_RIGS = Path(__file__).resolve().parents[2] / "shared" / "rigs"
DEFAULT_OUT = Path("out") / "eval_rigs"
CLIP = "dataset-2_walk-turn-left_active_005.bvh"
"""A validation clip (4.5 s) of walking and turning, the one the demo uses."""
LOOK_AROUND_DEG = 30.0
SEED = 25
FPS = 30
SHEET_FRAMES, TILE_PX = 6, 256
VIEW_ELEVATION_DEG = 35.0
STATURE_PER_HIPS = 1.9  # a standing human is about this many hip heights tall
# Device marker colours (RGBA) and radii (metres): headset, left controller, right controller.
MARKERS = (((0.9, 0.1, 0.1, 1.0), 0.05), ((0.1, 0.75, 0.1, 1.0), 0.04), ((0.15, 0.3, 0.95, 1.0), 0.04))
AVATAR_COLOUR, FLOOR_COLOUR = (0.85, 0.6, 0.4, 1.0), (0.25, 0.25, 0.28, 1.0)


class Refused(Exception):
    """A step of the user path refused this rig; the message is what the user would read."""

    def __init__(self, step: str, message: str):
        super().__init__(message)
        self.step = step


@dataclass
class Inputs:
    """What every rig shares: the stream file, the database file, and the references measured against."""

    clip: str
    stream_path: Path
    database_path: Path
    database_poses: int
    implied: np.ndarray
    """(F, 3, 3) headset-implied head and controller-implied wrists at the scene's rate, core's frame."""
    tracked: np.ndarray
    """(F, 3) whether each device is tracked."""
    hmd_forward: np.ndarray
    """(F, 3) where the headset looks, Blender's frame."""
    truth_toes: np.ndarray
    """(F, 2, 3) the ground truth's toes at the scene's rate, core's frame."""
    thumbs: np.ndarray
    """(F, 2, 3) each controller's thumb direction across the fist (its grip's -Z), core's frame."""
    method: str = "HYBRID"
    """The Solve panel's Method (HYBRID, the default; MM; N3P)."""


def prepare_inputs(mocap: Path, clip_name: str, seconds: float, database_clips: int, work: Path) -> Inputs:
    """Simulate the stream from the validation clip and build the default database, both written under `work`."""
    files = find_bvh_files([mocap])
    training, validation = split_by_file(files)
    clip = next((f for f in validation if f.name == clip_name), None)
    if clip is None:
        raise MocapNotFound(f"validation clip {clip_name} not found under {mocap}")
    motion = read_bvh(clip)
    if seconds:
        motion = motion[:max(2, round(seconds * motion.fps))]
    config = SimulationConfig(look_around_deg=LOOK_AROUND_DEG, seed=SEED)
    simulated = simulate_stream(motion, config)
    stream_path = work / f"{clip.stem}.stream.csv"
    write_stream(stream_path, simulated.stream, [f"simulated from {clip.name}", f"config {json.dumps(describe(config))}"])
    chosen = default_database_files(files, clip)
    chosen = chosen[:database_clips] if database_clips else chosen
    print(f"eval-rigs: building the database from {len(chosen)} clips ...", file=sys.stderr)
    database = build_database([read_bvh(f) for f in chosen])
    database_path = work / "default.db.npz"
    database.save(database_path)
    stream = read_stream(stream_path).resampled(FPS)
    truth = simulated.truth.resampled(FPS)
    mapping = find_mapping(truth.skeleton)
    toes = truth.global_positions()[:, [mapping["l_toes"], mapping["r_toes"]]]
    return Inputs(clip.name, stream_path, database_path, len(database), implied_joint_positions(stream),
                  stream.tracked, z_up_from_y_up(hmd_forward(stream.rotations[:, 0])), toes,
                  controller_axes(stream.rotations[:, 1:])[1])


def rig_files(paths) -> list[Path]:
    """Rig files named directly or found in the given folders, sorted."""
    found = []
    for path in map(Path, paths):
        if path.is_dir():
            found += sorted(p for p in path.iterdir() if p.suffix.lower() in RIG_SUFFIXES and p.is_file())
        elif path.is_file() and path.suffix.lower() in RIG_SUFFIXES:
            found.append(path)
        else:
            raise FileNotFoundError(f"not a rig file ({', '.join(RIG_SUFFIXES)}) or folder: {path}")
    if not found:
        raise FileNotFoundError(f"no rig files ({', '.join(RIG_SUFFIXES)}) in {', '.join(map(str, paths))}")
    return found


def _operator(step: str, call, **kwargs) -> None:
    """Run an operator; its error report becomes Refused(step, message)."""
    try:
        result = call(**kwargs)
    except RuntimeError as error:
        raise Refused(step, str(error).strip().removeprefix("Error: ").strip()) from None
    if result != {'FINISHED'}:
        raise Refused(step, f"{call.idname_py()} returned {sorted(result)}")


def import_rig(path: Path):
    """(armature, its skinned meshes) after Blender's own importer; the armature deforming the most vertices."""
    importer = getattr(bpy.ops.import_scene, RIG_SUFFIXES[path.suffix.lower()])
    _operator("import", importer, filepath=str(path))
    armatures = [(sum(len(m.data.vertices) for m in skinned_meshes(obj)), obj.name)
                 for obj in bpy.context.scene.objects if obj.type == 'ARMATURE']
    armatures = [item for item in armatures if item[0]]
    if not armatures:
        raise Refused("import", f"{path.name}: no armature with a skinned mesh")
    armature = bpy.data.objects[max(armatures)[1]]
    return armature, skinned_meshes(armature)


def correct_mapping(settings, mapping_file: Path) -> None:
    """Set the bone list's entries that a JSON {canonical joint: bone} names, as a user edits the list."""
    try:
        wanted = json.loads(mapping_file.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise Refused("map", f"{mapping_file}: cannot read the mapping: {error}") from None
    items = {item.joint: item for item in settings.bone_map}
    unknown = sorted(set(wanted) - set(items))
    if unknown or not all(isinstance(v, str) for v in wanted.values()):
        raise Refused("map", f"{mapping_file}: not a mapping of canonical joints to bone names "
                             f"(unknown: {', '.join(unknown) or 'none'})")
    for joint, bone in wanted.items():
        items[joint].bone = bone


def run_user_path(path: Path, inputs: Inputs, mappings: Path | None) -> tuple:
    """Import, map, add the database, load the stream, solve and bake in a fresh scene; (armature, meshes, mapping)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    armature, meshes = import_rig(path)
    scene.render.fps, scene.render.fps_base = FPS, 1.0  # after the import: Blender's FBX importer sets the file's rate
    settings = scene.vr_avatar
    settings.target_armature = armature
    _operator("map", bpy.ops.vr_avatar.map_bones)
    how = "automatic"
    mapping_file = (mappings or path.parent) / f"{path.stem}.mapping.json"
    if mapping_file.is_file():
        correct_mapping(settings, mapping_file)
        how += f" + {mapping_file.name}"
    settings.library.databases.add().path = str(inputs.database_path)
    _operator("load stream", bpy.ops.vr_avatar.load_stream, filepath=str(inputs.stream_path))
    settings.solve.method = inputs.method
    _operator("solve", bpy.ops.vr_avatar.solve_stream)
    _operator("bake", bpy.ops.vr_avatar.bake_action)
    return armature, meshes, how


def measure(armature, meshes, bone_map: dict[str, str], inputs: Inputs) -> tuple[dict, dict]:
    """(figures, per-frame series in Blender's frame) of the baked action, read frame by frame from Blender
    (avatar_quality, as the bake reports it), with the ground-truth clip's own foot skating beside it."""
    start, end = (int(round(v)) for v in armature.animation_data.action.frame_range)
    frames = np.arange(start, min(end, start + len(inputs.implied) - 1) + 1)
    n = len(frames)
    figures, series = avatar_quality.measure(armature, bone_map, inputs.implied[:n, 0], inputs.implied[:n, 1:],
                                             inputs.tracked[:n], FPS, frames, meshes)
    figures.update(hand_roll(armature, bone_map, inputs.thumbs[:n], frames))
    clip_slide = foot_skate_cm_s(inputs.truth_toes[:n], FPS)
    figures["clip_foot_slide_cm_s"] = clip_slide
    figures["foot_slide_ratio"] = figures["foot_slide_cm_s"] / clip_slide if clip_slide > 0 else float("nan")
    return figures, series


def thumb_bone(armature, hand: str) -> str | None:
    """The first bone below the hand whose name says thumb, or None."""
    return next((bone.name for bone in armature.data.bones[hand].children_recursive if "thumb" in bone.name.lower()),
                None)


def hand_roll(armature, bone_map: dict[str, str], thumbs, frames) -> dict:
    """`hand_roll_deg`: the mean angle, about the forearm, between where each hand's thumb bone points and where
    its controller's thumb axis does (a hand rolled thumb-outward reads 90 degrees and more), and the share of
    hand-frames past 60 degrees (`hand_rolled_frames`); absent when the rig has no thumb bones."""
    scene = bpy.context.scene
    sides = [(i, bone_map.get(f"{s}_hand"), bone_map[f"{s}_forearm"]) for i, s in enumerate("lr")]
    sides = [(i, hand, fore, thumb_bone(armature, hand)) for i, hand, fore in sides if hand]
    sides = [side for side in sides if side[3]]
    if not sides:
        return {}
    angles = []
    for k, frame in enumerate(frames):
        scene.frame_set(int(frame))
        world = np.array(armature.matrix_world)[:3, :3]
        bones = armature.pose.bones
        for i, hand, fore, thumb in sides:
            axis = y_up_from_z_up(world @ (np.array(bones[hand].head) - np.array(bones[fore].head)))
            pointing = y_up_from_z_up(world @ (np.array(bones[thumb].head) - np.array(bones[hand].head)))
            angles.append(angle_about(axis, pointing, thumbs[k, i]))
    angles = np.degrees(np.array(angles))
    return {"hand_roll_deg": float(angles.mean()), "hand_rolled_frames": float(np.mean(angles > 60.0))}


def angle_about(axis, a, b) -> float:
    """The angle in radians between a and b seen along `axis` (both projected across it)."""
    axis = axis / np.linalg.norm(axis)
    a, b = a - np.dot(a, axis) * axis, b - np.dot(b, axis) * axis
    return float(np.arccos(np.clip(np.dot(a, b) / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12), -1.0, 1.0)))


def _sphere(name: str, radius: float, colour, parent) -> None:
    mesh = bpy.data.meshes.new(name)
    shape = bmesh.new()
    bmesh.ops.create_uvsphere(shape, u_segments=16, v_segments=8, radius=radius)
    shape.to_mesh(mesh)
    shape.free()
    obj = bpy.data.objects.new(name, mesh)
    obj.color = colour
    bpy.context.scene.collection.objects.link(obj)
    obj.parent = parent


def _floor(size: float) -> None:
    """A thin dark slab whose top is the floor: seen edge-on it is a line with what sinks under it visible."""
    mesh = bpy.data.meshes.new("Eval Floor")
    shape = bmesh.new()
    bmesh.ops.create_cube(shape, size=1.0)
    bmesh.ops.scale(shape, vec=(size, size, 0.01), verts=shape.verts)
    bmesh.ops.translate(shape, vec=(0.0, 0.0, -0.005), verts=shape.verts)
    shape.to_mesh(mesh)
    shape.free()
    obj = bpy.data.objects.new("Eval Floor", mesh)
    obj.color = FLOOR_COLOUR
    bpy.context.scene.collection.objects.link(obj)


def contact_sheet(path: Path, armature, meshes, inputs: Inputs, series: dict) -> None:
    """Six frames from three sides with the devices as spheres, composed into one PNG at `path`."""
    scene = bpy.context.scene
    stream = scene.vr_avatar.stream
    for device, (colour, radius) in zip((stream.head, stream.left, stream.right), MARKERS):
        _sphere(f"Eval Marker {device.name}", radius, colour, device)
    for obj in meshes:
        obj.color = AVATAR_COLOUR
    _floor(40.0)
    camera = bpy.data.objects.new("Eval Camera", bpy.data.cameras.new("Eval Camera"))
    camera.data.type = 'ORTHO'
    scene.collection.objects.link(camera)
    scene.camera = camera
    scene.world = bpy.data.worlds.new("Eval World")
    scene.world.color = (0.8, 0.82, 0.85)
    scene.render.engine = 'BLENDER_WORKBENCH'
    scene.display.shading.light = 'STUDIO'
    scene.display.shading.color_type = 'OBJECT'
    scene.view_settings.view_transform = 'Standard'
    scene.render.resolution_x = scene.render.resolution_y = TILE_PX
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = 'PNG'
    scene.render.image_settings.color_mode = 'RGBA'

    frames, hips, head = series["frames"], series["hips"], series["head"]
    picks = np.linspace(0, len(frames) - 1, SHEET_FRAMES).round().astype(int)
    # One scale for the whole sheet: from under the lowest mesh point to over the headset and the mesh's top.
    stature = series["rest_hips"] * STATURE_PER_HIPS
    bottom = min(-0.15 * stature, float(series["lowest"][picks].min()) - 0.05)
    mesh_top = max(float((np.array(obj.bound_box) @ np.array(obj.matrix_world)[2, :3]).max() + obj.matrix_world[2][3])
                   for obj in meshes)
    top = max(1.1 * stature, float(inputs.implied[:, 0, 1].max()) + 0.2, float(head[picks, 2].max()) + 0.3,
              mesh_top + 0.1)
    sheet = np.zeros((3 * TILE_PX, SHEET_FRAMES * TILE_PX, 4), dtype=np.float32)
    elevation = math.radians(VIEW_ELEVATION_DEG)
    camera.data.ortho_scale = top - bottom
    camera.data.clip_end = 40.0
    with tempfile.TemporaryDirectory(prefix="eval_rigs_tiles_") as tiles:
        for column, k in enumerate(picks):
            scene.frame_set(int(frames[k]))
            forward = inputs.hmd_forward[k] * [1.0, 1.0, 0.0]
            forward = forward / max(np.linalg.norm(forward), 1e-9)
            left = np.cross([0.0, 0.0, 1.0], forward)
            headset = z_up_from_y_up(inputs.implied[k, 0])
            target = np.array([(hips[k, 0] + headset[0]) / 2, (hips[k, 1] + headset[1]) / 2, (top + bottom) / 2])
            views = (forward, left, math.cos(elevation) * (forward + left) / math.sqrt(2.0) + [0, 0, math.sin(elevation)])
            for row, direction in enumerate(views):
                camera.location = Vector(target + 10.0 * np.asarray(direction))
                camera.rotation_euler = Vector(-np.asarray(direction)).to_track_quat('-Z', 'Y').to_euler()
                tile = Path(tiles) / f"{row}_{column}.png"
                scene.render.filepath = str(tile)
                bpy.ops.render.render(write_still=True)
                image = bpy.data.images.load(str(tile))
                pixels = np.empty(TILE_PX * TILE_PX * 4, dtype=np.float32)
                image.pixels.foreach_get(pixels)
                bpy.data.images.remove(image)
                sheet[row * TILE_PX:(row + 1) * TILE_PX, column * TILE_PX:(column + 1) * TILE_PX] = \
                    pixels.reshape(TILE_PX, TILE_PX, 4)[::-1]
    write_png(path, sheet)


def write_png(path: Path, pixels: np.ndarray) -> None:
    """An RGBA float image (rows top first) written as an RGB PNG through a temporary file in the same folder."""
    height, width = pixels.shape[:2]
    image = bpy.data.images.new("Eval Contact Sheet", width, height)
    image.pixels.foreach_set(np.ascontiguousarray(pixels[::-1]).ravel())
    settings = bpy.context.scene.render.image_settings
    settings.file_format, settings.color_mode, settings.compression = 'PNG', 'RGB', 100
    try:
        with written_path(path, suffix=".png") as temporary:
            image.save_render(str(temporary), scene=bpy.context.scene)
    finally:
        bpy.data.images.remove(image)


def solve_hand_cm(scene) -> float | None:
    """The add-on's own hand-to-wrist figure from core's positions (its solve report), None if it has none."""
    try:
        return json.loads(scene["vr_avatar_solve"]["report"])["figures"]["avatar_hand_cm"]
    except (KeyError, TypeError, ValueError):
        return None


def evaluate_rig(path: Path, inputs: Inputs, out: Path, mappings: Path | None) -> dict:
    """One rig's row: its figures and contact sheet, or where and why the user path refused it."""
    began = time.perf_counter()
    try:
        armature, meshes, how = run_user_path(path, inputs, mappings)
    except Refused as refusal:
        return {"refused": str(refusal), "step": refusal.step, "seconds": round(time.perf_counter() - began, 2)}
    bone_map = {item.joint: item.bone for item in bpy.context.scene.vr_avatar.bone_map}
    figures, series = measure(armature, meshes, bone_map, inputs)
    figures["solve_hand_cm"] = solve_hand_cm(bpy.context.scene)
    measured = time.perf_counter()
    sheet = out / f"{path.stem}.contact.png"
    contact_sheet(sheet, armature, meshes, inputs, series)
    done = time.perf_counter()
    return {"armature": armature.name, "mapping": how, **figures, "contact_sheet": str(sheet),
            "seconds": round(done - began, 2), "contact_sheet_seconds": round(done - measured, 2)}


COLUMNS = (("mesh_below_floor_frames", "mesh under floor (frames)", "{:.0%}"), ("mesh_lowest_cm", "lowest mesh cm", "{:.1f}"),
           ("toe_below_rest_cm", "toe under rest cm", "{:.1f}"), ("foot_slide_cm_s", "foot slide cm/s", "{:.1f}"),
           ("clip_foot_slide_cm_s", "clip's cm/s", "{:.1f}"), ("foot_slide_ratio", "slide ratio", "{:.2f}"),
           ("hand_cm", "hand cm", "{:.1f}"), ("hand_roll_deg", "hand roll °", "{:.0f}"), ("head_cm", "head cm", "{:.1f}"),
           ("hips_height_ratio", "hips / rest", "{0[0]:.2f}–{0[1]:.2f}"), ("frames", "frames", "{}"),
           ("seconds", "s", "{:.1f}"))


def markdown_table(results: dict) -> str:
    """One row per rig; a refused rig's row carries its message."""
    lines = ["| rig | " + " | ".join(title for _, title, _ in COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for rig, row in results.items():
        if "refused" in row:
            lines.append(f"| {rig} | refused at {row['step']}: {row['refused'].replace('|', '/')} |"
                         + " |" * (len(COLUMNS) - 1))
        else:
            lines.append(f"| {rig} | " + " | ".join(form.format(row[key]) if row.get(key) is not None else "–"
                                                    for key, _, form in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def run(rigs, out: Path, mappings: Path | None, mocap: Path, seconds: float, database_clips: int,
        method: str = "HYBRID") -> dict:
    """Every rig's row, with the JSON and markdown table written into `out`."""
    files = rig_files(rigs)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.resolve() == f.parent.resolve() for f in files):
        raise ValueError(f"--out {out} is a rigs folder: choose another output folder")
    import vr_avatar_addon

    bpy.context.preferences.use_preferences_save = False
    vr_avatar_addon.register()
    try:
        with tempfile.TemporaryDirectory(prefix="eval_rigs_") as work:
            inputs = replace(prepare_inputs(mocap, CLIP, seconds, database_clips, Path(work)), method=method)
            results = {}
            for path in files:
                print(f"eval-rigs: {path.name} ...", file=sys.stderr)
                results[path.name] = evaluate_rig(path, inputs, out, mappings)
    finally:
        vr_avatar_addon.unregister()
    setup = (f"Stream simulated from {inputs.clip} ({len(inputs.implied) / FPS:.1f} s, look-around "
             f"±{LOOK_AROUND_DEG:g}°, seed {SEED}), {FPS} fps, database of {inputs.database_poses} poses, method "
             f"{inputs.method}.\n\n")
    write_text(out / "eval_rigs.json", json.dumps(results, indent=2) + "\n")
    write_text(out / "eval_rigs.md", setup + markdown_table(results))
    return results


@contextlib.contextmanager
def stdout_to_stderr():
    """Blender's own prints (importers, renders) go to stderr, so stdout carries only the JSON."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rigs", nargs="+", default=[str(DEFAULT_RIGS)], help="rig files or folders "
                        "(default: ../shared/rigs)")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="output folder (default: out/eval_rigs)")
    parser.add_argument("--json", action="store_true", help="print {rig: {metric: value}} on stdout")
    parser.add_argument("--mappings", help="folder of <rig stem>.mapping.json corrections to Map Bones "
                        "(default: beside each rig)")
    parser.add_argument("--mocap", help="BVH folder (default: $VR_AVATAR_MOCAP or ../shared/data/bandai)")
    parser.add_argument("--seconds", type=float, default=0.0, help="only the clip's first seconds (default: all)")
    parser.add_argument("--database-clips", type=int, default=0, help="only the first N database clips (0: all)")
    parser.add_argument("--method", choices=("HYBRID", "MM", "N3P"), default="HYBRID",
                        help="the Solve panel's Method (default HYBRID, the add-on's default)")
    args = parser.parse_args(argv)
    try:
        with stdout_to_stderr():
                results = run(args.rigs, Path(args.out), Path(args.mappings) if args.mappings else None,
                          Path(args.mocap) if args.mocap else default_mocap_dir(), args.seconds, args.database_clips,
                          args.method)
    except (OSError, ValueError) as error:
        print(f"eval-rigs: {error}", file=sys.stderr)
        return 2
    print(markdown_table(results), file=sys.stderr, end="")
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
