"""Avatar quality: a baked avatar measured in Blender's own data (posed bones, skinned meshes), frame by frame.

Not core's positions: what the user sees. Rest heights are read off the avatar standing as retargeting
reads it (its rest pose, or a BVH import's most upright frame) above the floor it stands on (its skinned
meshes' lowest point at rest, or its lowest foot joint), scaled by the pose scale the bake gives the hips. The figures
follow SPEC §5's baked-avatar metrics:
- `mesh_below_floor_frames`: share of frames whose lowest skinned vertex is more than 2 cm under the floor;
- `toe_below_rest_cm`: the deepest a toe goes under its rest height while planted (no more than 2.5 cm
  above it); the toe is the toe bone's head, or where the foot bone ends (core.retarget.target.LEAF_REACH);
- `foot_slide_cm_s`: SPEC §5 foot skating of the two toes, each one's floor its rest height;
- `hand_cm`: hand bone's head (or the forearm's end) to the controller-implied wrist;
- `head_cm`: head bone's head to the headset-implied head joint (the eyes to the headset, when the eyes
  sit where DeviceOffsets.hmd_from_head puts them);
- `hips_height_ratio`: [min, max] of the hips' height over their rest height.
"""
import math

import bpy
import numpy as np

from . import avatar, core
from .axes import y_up_from_z_up

UNDER_FLOOR_M = 0.02
"""Mesh deeper than this under the floor counts as under it."""
PLANTED_M = 0.025
"""A toe at most this high above its rest height is planted."""
LIMITS = {"mesh_below_floor_frames": (0.05, "the mesh is under the floor in {value:.0%} of frames"),
          "toe_below_rest_cm": (2.0, "a planted toe sinks {value:.1f} cm under its rest height"),
          "hand_cm": (1.0, "the hands are {value:.1f} cm from the controllers on average"),
          "head_cm": (2.0, "the head is {value:.1f} cm from the headset on average")}
"""Figure -> (the most it may be, what the warning says): the panel warns past these."""
HIPS_RATIO = (0.7, 1.2)
"""The hips' height over their rest height stays within these."""


def standing_heights(armature, bone_map: dict[str, str], points: dict) -> dict:
    """Each point's height above the floor in the avatar's standing pose as retargeting reads it (its rest
    pose, or a BVH import's most upright frame), at the armature's rest size; points as `point` gives them."""
    target = avatar.target_skeleton(armature, bone_map)
    axes, heads = target.standing_pose()
    index = {name: j for j, name in enumerate(target.names)}
    heights = {}
    for key, (bone, share) in points.items():
        j = index[bone]
        along_bone = core.math.quat.inverse_rotate(target.rest_rotations[j], target.tails[j] - target.rest_positions[j])
        heights[key] = float(heads[j, 1] + share * core.math.quat.rotate(axes[j], along_bone)[1] - target.floor_height())
    return heights


def lowest_vertex(meshes) -> float:
    """World height of the lowest vertex of the evaluated (skinned) meshes at the current frame."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    lowest = math.inf
    for obj in meshes:
        evaluated = obj.evaluated_get(depsgraph)
        mesh = evaluated.to_mesh()
        try:
            co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
            mesh.vertices.foreach_get("co", co)
            world = np.array(evaluated.matrix_world)
            if len(co):
                lowest = min(lowest, float((co.reshape(-1, 3) @ world[2, :3] + world[2, 3]).min()))
        finally:
            evaluated.to_mesh_clear()
    return lowest


def point(bone_map: dict[str, str], armature, joint: str, fallback: str):
    """(bone name, share of the way from its head to its tail) of a mapped joint (its head), else of the
    fallback joint's bone: its end, as far along its tail as LEAF_REACH allows (as retargeting reads it)."""
    bone = bone_map.get(joint, "")
    if bone and bone in armature.pose.bones:
        return bone, 0.0
    side, part = fallback.split("_", 1)
    (start, stop), share = core.retarget.target.LEAF_REACH[part]
    bones = armature.data.bones
    reference = (bones[bone_map[f"{side}_{stop}"]].head_local - bones[bone_map[f"{side}_{start}"]].head_local).length
    return bone_map[fallback], core.retarget.target.leaf_reach(bones[bone_map[fallback]].length, reference, share)


def along(bone, share: float) -> np.ndarray:
    """(3,) the point `share` of the way from a bone's head to its tail (a Bone at rest or a PoseBone posed)."""
    names = ("head", "tail") if isinstance(bone, bpy.types.PoseBone) else ("head_local", "tail_local")
    head, tail = (np.array(getattr(bone, name)) for name in names)
    return head + share * (tail - head)


def measure(armature, bone_map: dict[str, str], head_targets, wrist_targets, tracked, fps: float, frames,
            meshes=None) -> tuple[dict, dict]:
    """(figures, per-frame series) of the armature as posed at scene `frames` (the scene is left at the last
    one); head_targets (F, 3), wrist_targets (F, 2, 3) and tracked (F, 3) in core's frame for those frames."""
    steps = measure_steps(armature, bone_map, head_targets, wrist_targets, tracked, fps, frames, meshes)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def measure_steps(armature, bone_map: dict[str, str], head_targets, wrist_targets, tracked, fps: float, frames,
                  meshes=None):
    """`measure` one frame at a time: a generator yielding the share of frames measured, returning what `measure`
    returns."""
    scene = bpy.context.scene
    meshes = avatar.skinned_meshes(armature) if meshes is None else meshes
    points = {"hips": (bone_map["hips"], 0.0), "head": (bone_map["head"], 0.0),
              "l_toe": point(bone_map, armature, "l_toes", "l_foot"),
              "r_toe": point(bone_map, armature, "r_toes", "r_foot"),
              "l_hand": point(bone_map, armature, "l_hand", "l_forearm"),
              "r_hand": point(bone_map, armature, "r_hand", "r_forearm")}
    scene.frame_set(int(frames[0]))
    hips_scale = float(np.linalg.norm(np.array(armature.pose.bones[bone_map["hips"]].matrix)[:3, :3], axis=0).mean())
    rest = {key: height * hips_scale for key, height in standing_heights(armature, bone_map, points).items()}
    series = {key: np.empty((len(frames), 3)) for key in points}
    lowest = np.empty(len(frames))
    for i, frame in enumerate(frames):
        scene.frame_set(int(frame))
        world = np.array(armature.matrix_world)
        for key, (bone, share) in points.items():
            series[key][i] = (world @ np.append(along(armature.pose.bones[bone], share), 1.0))[:3]
        lowest[i] = lowest_vertex(meshes) if meshes else math.inf
        yield (i + 1) / len(frames)
    toes = np.stack([series["l_toe"], series["r_toe"]], axis=1)
    above_rest = toes[..., 2] - np.array([rest["l_toe"], rest["r_toe"]])
    planted = above_rest < PLANTED_M
    toes_core = y_up_from_z_up(toes)
    toes_core[..., 1] = above_rest
    slide = core.quality.metrics.foot_skate_per_frame(toes_core, fps, 0.0)
    hands = y_up_from_z_up(np.stack([series["l_hand"], series["r_hand"]], axis=1))
    hand_gap = np.where(tracked[:, 1:], np.linalg.norm(hands - wrist_targets, axis=-1), np.nan)
    head_gap = np.where(tracked[:, 0], np.linalg.norm(y_up_from_z_up(series["head"]) - head_targets, axis=-1), np.nan)
    hips_ratio = series["hips"][:, 2] / rest["hips"]
    sinking = np.where(planted, np.maximum(0.0, -above_rest), 0.0).max(axis=1)
    figures = {
        "frames": len(frames),
        "mesh_below_floor_frames": float(np.mean(lowest < -UNDER_FLOOR_M)),
        "mesh_lowest_cm": float(lowest.min() * 100.0) if meshes else None,
        "toe_below_rest_cm": float(sinking.max() * 100.0),
        "planted_share": float(planted.mean()),
        "foot_slide_cm_s": float(slide.mean() * 100.0) if slide.size else 0.0,
        "hand_cm": _mean_cm(hand_gap),
        "head_cm": _mean_cm(head_gap),
        "hips_height_ratio": [float(hips_ratio.min()), float(hips_ratio.max())],
    }
    per_frame = {"mesh_below_floor_cm": np.maximum(0.0, -lowest) * 100.0 if meshes else np.zeros(len(frames)),
                 "toe_below_rest_cm": sinking * 100.0, "hand_cm": np.nanmean(hand_gap, axis=1) * 100.0,
                 "head_cm": head_gap * 100.0, "hips_height_ratio": hips_ratio}
    return figures, {"frames": np.asarray(frames), "hips": series["hips"], "head": series["head"], "lowest": lowest,
                     "rest_hips": rest["hips"], "per_frame": per_frame}


def _mean_cm(gaps: np.ndarray) -> float | None:
    return float(np.nanmean(gaps) * 100.0) if np.isfinite(gaps).any() else None


def warnings(figures: dict) -> list[str]:
    """What the panel warns about: each figure past its limit, in words."""
    found = [message.format(value=figures[key]) for key, (limit, message) in LIMITS.items()
             if figures.get(key) is not None and figures[key] > limit]
    low, high = figures["hips_height_ratio"]
    if low < HIPS_RATIO[0] or high > HIPS_RATIO[1]:
        found.append(f"the hips go from {low:.2f} to {high:.2f} of their rest height")
    return found


def keep(quality, figures: dict, found: list[str]) -> None:
    """The figures the panel lists (those VRAvatarBakedQuality has; NaN where not measured) and the warnings
    `found`, in the scene's `quality`."""
    quality.measured = True
    for key, value in figures.items():
        if hasattr(quality, key):
            setattr(quality, key, math.nan if value is None else value)
    quality.warnings.clear()
    for warning in found:
        quality.warnings.add().text = warning
