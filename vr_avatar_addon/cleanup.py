"""Clean-up of the cached solve before it is baked: each bone's rotation and location smoothed by the one-euro
filter, forward and backward (core/anim/one_euro.py), with its own strength for the body, the arms and the legs;
then, where a foot is planted, the leg re-solved (two-bone IK in armature space) so that the foot stands where it
stood before, turned as it was (the hips easing back to the solve's travel where a leg could not reach). The cache is changed in place: scrubbing previews it, undo takes
it back, Bake Action keys it.
"""
from dataclasses import replace

import numpy as np

from . import core, solve_cache
from .axes import y_up_from_z_up, z_up_from_y_up
from .bone_map import mapping_for
from .bone_space import matrix_rotations, pose_basis
from .handlers import pose_frame
from .root_motion import armature_space, restore_placement
from .scene_timing import scene_fps

quat = core.math.quat
GROUPS = {"body": ("hips", "spine", "chest", "neck", "head"),
          "arms": tuple(f"{s}_{j}" for s in "lr" for j in ("shoulder", "upper_arm", "forearm", "hand")),
          "legs": tuple(f"{s}_{j}" for s in "lr" for j in ("thigh", "shin", "foot", "toes"))}
"""The bone groups smoothed each with its own cutoff; a bone outside the mapping goes with its nearest mapped
ancestor's group (the body's where it has none)."""


def bone_groups(obj, cache, mapping: dict[str, str]) -> list[str]:
    """Each cached bone's group name."""
    group_of = {mapping[joint]: group for group, joints in GROUPS.items() for joint in joints if joint in mapping}
    groups = []
    for name in cache.bones:
        bone = obj.data.bones[name]
        while bone is not None and bone.name not in group_of:
            bone = bone.parent
        groups.append(group_of[bone.name] if bone is not None else "body")
    return groups


def smoothed_bases(cache, groups: list[str], fps: float, cutoffs: dict[str, float], beta: float):
    """(basis, locations) of every bone smoothed with its group's minimum cutoff (Hz)."""
    basis, locations = quat.unroll(cache.basis.copy()), cache.locations.copy()
    for group, cutoff in cutoffs.items():
        bones = [j for j, g in enumerate(groups) if g == group]
        if bones:
            basis[:, bones] = core.anim.one_euro.smoothed(basis[:, bones], fps, cutoff, beta)
            locations[:, bones] = core.anim.one_euro.smoothed(locations[:, bones], fps, cutoff, beta)
    return quat.normalize(basis), locations


LEG_JOINTS = ("thigh", "shin", "foot")
"""The joints of each leg Smooth Solve re-solves: they must be mapped."""
OVERREACH_MARGIN = 0.995
"""A planted leg reaches at most this share of its length before the hips give back their smoothing."""
EASE_FRAMES = 6
"""Over this many frames either side, the hips ease between their smoothed and their solved travel."""


def overreaching(matrices: np.ndarray, legs, planted: np.ndarray, goals: np.ndarray) -> np.ndarray:
    """(F,) frames where a planted leg (weight > 0) cannot reach its foot's goal (F, 2, 3) from its hip."""
    out = np.zeros(len(matrices), dtype=bool)
    for side, (thigh, shin, foot) in enumerate(legs):
        hip, knee, ankle = (matrices[:, j, :3, 3] for j in (thigh, shin, foot))
        reach = np.linalg.norm(knee - hip, axis=-1) + np.linalg.norm(ankle - knee, axis=-1)
        out |= (planted[:, side] > 0) & (np.linalg.norm(goals[:, side] - hip, axis=-1) > OVERREACH_MARGIN * reach)
    return out


def eased(mask: np.ndarray) -> np.ndarray:
    """(F,) 1 on the frames of `mask`, easing to 0 over EASE_FRAMES either side (smoothstep)."""
    frames = np.arange(len(mask))
    marked = np.flatnonzero(mask)
    if not len(marked):
        return np.zeros(len(mask))
    distance = np.abs(frames[:, None] - marked[None, :]).min(axis=1)
    s = np.clip(1.0 - distance / (EASE_FRAMES + 1.0), 0.0, 1.0)
    return s * s * (3.0 - 2.0 * s)


def _rotation(matrices):
    """(rotation, per-axis scale) of pose matrices."""
    return matrix_rotations(matrices), np.linalg.norm(matrices[..., :3, :3], axis=-2)


FOOT_LOCKS = (('AUTO', "Auto", "Where the solve's toe is planted (near its floor and still), the foot stands where "
                "and as it stood"),
              ('ALWAYS', "Always", "Wherever the solve's toe is near its floor, moving or not, the foot stands where "
               "and as it stood"),
              ('GROUNDING', "Grounding", "The feet never lower than the solve put them (nothing sinks), free to "
               "slide"),
              ('NEVER', "Never", "The smoothed legs as they are"))
"""Smooth Solve's foot lock modes, after DeepMotion's (Auto, Always, Never, Grounding)."""


def lock_weights(mode: str, toes: np.ndarray, fps: float) -> np.ndarray:
    """(F,) how locked one foot is, from its toe's positions (F, 3) in the solve: AUTO by height and speed
    (core/anim/contacts.py), ALWAYS by height alone."""
    if mode == 'AUTO':
        return core.anim.contacts.contact_weights(toes, fps)
    height = toes[:, 1] - core.anim.contacts.floor_height(toes[:, 1])
    return core.anim.contacts.contact_weight(height, 0.0)


def replanted(before: np.ndarray, after: np.ndarray, legs, planted: np.ndarray, parents,
              grounding: np.ndarray | None = None, shifts: np.ndarray | None = None) -> np.ndarray:
    """Armature-space matrices `after` with each leg (thigh, shin, foot indices) re-solved where it is planted
    (weights (F, 2)): the foot back at its place in `before`, then moved by `shifts` (F, 2, 3), turned as in `before`,
    the bones below it carried along. With `grounding` (the armature object's world matrix (4, 4)), each ankle is
    only raised back, along the world's vertical, to its height in `before` where it went lower."""
    result = after.copy()
    moved = np.zeros(after.shape[1], dtype=bool)
    for side, (thigh, shin, foot) in enumerate(legs):
        weight = planted[:, side]
        hip, knee, ankle = (after[:, j, :3, 3] for j in (thigh, shin, foot))
        goal = ankle + weight[:, None] * (before[:, foot, :3, 3] - ankle) + (0.0 if shifts is None else shifts[:, side])
        if grounding is not None:
            sunk = np.maximum((before[:, foot, :3, 3] - ankle) @ grounding[2, :3], 0.0)  # world height lost
            goal = ankle + sunk[:, None] * np.linalg.inv(grounding[:3, :3])[:, 2]
        (thigh_rotation, thigh_scale), (shin_rotation, shin_scale) = _rotation(after[:, thigh]), _rotation(after[:, shin])
        new_thigh, new_shin = core.ik.two_bone.two_bone_ik(hip, knee, ankle, goal, thigh_rotation, shin_rotation)
        new_knee = hip + quat.rotate(quat.multiply_inverse(new_thigh, thigh_rotation), knee - hip)
        new_ankle = new_knee + quat.rotate(quat.multiply_inverse(new_shin, shin_rotation), ankle - knee)
        foot_rotation, foot_scale = _rotation(after[:, foot])
        new_foot = quat.slerp(foot_rotation, _rotation(before[:, foot])[0], weight)
        for j, rotation, scale, head in ((thigh, new_thigh, thigh_scale, hip), (shin, new_shin, shin_scale, new_knee),
                                         (foot, new_foot, foot_scale, new_ankle)):
            result[:, j, :3, :3] = quat.to_matrix(rotation) * scale[:, None, :]
            result[:, j, :3, 3] = head
            moved[j] = True
    for j, parent in enumerate(parents):  # parents first: what hangs below a moved bone follows it
        if parent >= 0 and moved[parent] and not moved[j]:
            result[:, j] = result[:, parent] @ np.linalg.inv(after[:, parent]) @ after[:, j]
            moved[j] = True
    return result


def held_shifts(obj, cache, toes: list[int], planted: np.ndarray, fps: float,
                stabilisation) -> tuple[np.ndarray, np.ndarray]:
    """(shifts (F, 2, 3), planted (F, 2)): how far each foot moves, in the armature's space, to stand on its hold's
    spot (core/anim/foot_holds.py, from the solve's toe along the world's floor, in metres, whatever the armature's
    units and axes), and the planted weights, full while held."""
    to_armature = np.linalg.inv(np.array(obj.matrix_world, dtype=float)[:3, :3])
    shifts, planted = np.zeros((len(cache.positions), 2, 3)), planted.copy()
    for side, toe in enumerate(toes):
        along, holds = core.anim.foot_holds.foot_holds(cache.positions[:, toe][:, [0, 2]], planted[:, side], fps,
                                                       stabilisation)
        world = z_up_from_y_up(np.stack([along[:, 0], np.zeros(len(along)), along[:, 1]], axis=-1))
        shifts[:, side] = world @ to_armature.T
        planted[holds >= 1.0, side] = 1.0
    return shifts, planted


def cleaned(obj, cache, mapping: dict[str, str], fps: float, cutoffs: dict[str, float], beta: float,
            foot_lock: str = 'AUTO', stabilisation=core.config.FootStabilisation()):
    """The cache smoothed (module docstring); `cutoffs` the minimum cutoff (Hz) per group of GROUPS, `foot_lock`
    one of FOOT_LOCKS, `stabilisation` how a locked foot is held (lock time, radius, recovery). Where a locked leg
    could not reach its foot from the smoothed hips, the hips ease back to the solve's travel."""
    before, order, parents = armature_space(obj, cache)
    basis, locations = smoothed_bases(cache, bone_groups(obj, cache, mapping), fps, cutoffs, beta)
    after = armature_space(obj, replace(cache, basis=basis, locations=locations))[0]
    legs = [tuple(cache.bones.index(mapping[f"{s}_{j}"]) for j in LEG_JOINTS) for s in "lr"]
    if foot_lock in ('AUTO', 'ALWAYS'):
        toes = [cache.bones.index(mapping.get(f"{s}_toes") or mapping[f"{s}_foot"]) for s in "lr"]
        planted = np.stack([lock_weights(foot_lock, cache.positions[:, t], fps) for t in toes], axis=-1)
        shifts, planted = held_shifts(obj, cache, toes, planted, fps, stabilisation)
        goals = np.stack([before[:, foot, :3, 3] for _, _, foot in legs], axis=1) + shifts
        back = eased(overreaching(after, legs, planted, goals))[:, None, None]
        if back.any():
            locations = locations + back * (cache.locations - locations)
            after = armature_space(obj, replace(cache, basis=basis, locations=locations))[0]
        after = replanted(before, after, legs, planted, parents, shifts=shifts)
    elif foot_lock == 'GROUNDING':
        after = replanted(before, after, legs, np.zeros((len(after), 2)), parents,
                          grounding=np.array(obj.matrix_world, dtype=float))
    basis, locations, scales = pose_basis(obj, after, order, parents)
    world = np.array(obj.matrix_world, dtype=float)
    heads = after[..., :3, 3] @ world[:3, :3].T + world[:3, 3]
    return replace(cache, basis=basis, locations=locations, scales=scales, positions=y_up_from_z_up(heads))


def clean_solve(context, report, cutoffs: dict[str, float], beta: float, foot_lock: str,
                stabilisation=core.config.FootStabilisation()) -> set:
    """The scene's cached solve cleaned (`cleaned`) and stored back; the current frame posed from it."""
    scene = context.scene
    cache = solve_cache.load(scene)
    obj = solve_cache.cached_object(scene)
    if cache is None or obj is None or set(cache.bones) != set(obj.data.bones.keys()):
        report({'ERROR'}, "Nothing to clean: solve the stream onto the target armature first")
        return {'CANCELLED'}
    settings = scene.vr_avatar
    fps, mapping = scene_fps(scene), mapping_for(settings, obj)
    unmapped = [f"{s}_{j}" for s in "lr" for j in LEG_JOINTS if mapping.get(f"{s}_{j}") not in cache.bones]
    if unmapped:
        report({'ERROR'}, f"Smooth Solve re-solves the legs: map {', '.join(unmapped)} on '{obj.name}' first")
        return {'CANCELLED'}
    restore_placement(obj)  # where an Object bake's travel was keyed from, whatever frame the scene is on
    result = cleaned(obj, cache, mapping, fps, cutoffs, beta, foot_lock, stabilisation)
    solve_cache.store(scene, result, obj)
    pose_frame(obj, solve_cache.cached_frame(scene, scene.frame_current))
    before, after = (core.quality.metrics.jitter(c.positions, fps) for c in (cache, result))
    report({'INFO'}, f"Smoothed the solve onto '{obj.name}': jitter {before:.0f} -> {after:.0f} m/s³"
                     + {'AUTO': "; planted feet kept where they stood", 'ALWAYS': "; feet near the floor kept where "
                        "they stood", 'GROUNDING': "; no foot lower than solved", 'NEVER': ""}[foot_lock])
    return {'FINISHED'}
