"""Avatar: the target armature as core sees it (a TargetSkeleton), and its humanoid bone mapping.

Bones are handed to core parents first (core's convention); `bone_order` is that order as indices
into `obj.data.bones`, which bone_space's arrays follow.
"""
import numpy as np

from . import bone_space, core
from .axes import y_up_from_z_up

CANONICAL_JOINTS = core.rig.humanoid.CANONICAL_JOINTS
REQUIRED_JOINTS = core.rig.humanoid.REQUIRED_JOINTS


class MappingError(ValueError):
    """The target armature's bone mapping is incomplete or names bones it lacks."""


def bone_order(obj) -> np.ndarray:
    """Indices into obj.data.bones with every parent before its children."""
    bones = obj.data.bones
    order, placed = [], set()
    for root in (b for b in bones if b.parent is None):
        for bone in [root, *root.children_recursive]:
            if bone.name not in placed:
                placed.add(bone.name)
                order.append(bones.find(bone.name))
    return np.array(order)


def _skeleton_arrays(obj):
    """(names, parents, rest positions, rest rotations, rest tails) in bone_order."""
    order = bone_order(obj)
    names = [obj.data.bones[i].name for i in order]
    position_in_order = {name: k for k, name in enumerate(names)}
    parents = np.array([position_in_order[obj.data.bones[i].parent.name] if obj.data.bones[i].parent else -1
                        for i in order])
    return (names, parents, bone_space.rest_positions(obj)[order], bone_space.rest_rotations(obj)[order],
            bone_space.rest_tails(obj)[order])


def skinned_meshes(obj) -> list:
    """The mesh objects an Armature modifier deforms with `obj`."""
    import bpy
    return [mesh for mesh in bpy.data.objects if mesh.type == 'MESH' and any(
        modifier.type == 'ARMATURE' and modifier.object == obj for modifier in mesh.modifiers)]


def rest_floor(obj) -> float | None:
    """Height (core's +Y) of the lowest vertex of the armature's skinned meshes at rest, or None without one."""
    lowest = None
    for mesh in skinned_meshes(obj):
        vertices = np.empty(len(mesh.data.vertices) * 3, dtype=np.float32)
        mesh.data.vertices.foreach_get("co", vertices)
        if not len(vertices):
            continue
        world = np.array(mesh.matrix_world, dtype=float)
        heights = (vertices.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3])[:, 2]
        lowest = float(heights.min()) if lowest is None else min(lowest, float(heights.min()))
    return lowest


SKIN_POINTS_PER_BONE = 512
"""At most this many skin points per foot or toe bone go to core (an even subsample)."""


def foot_skin(obj, names, bone_map: dict[str, str]):
    """(bone index (P,), rest positions (P, 3), core's frame) of the skinned meshes' vertices that the mapped foot
    and toe bones carry most; None without such vertices."""
    feet = {bone_map.get(f"{s}_{j}", "") for s in "lr" for j in ("foot", "toes")} - {""}
    bones, points = [], []
    for mesh in skinned_meshes(obj):
        groups = {group.index: group.name for group in mesh.vertex_groups if group.name in feet}
        if not groups:
            continue
        world = np.array(mesh.matrix_world, dtype=float)
        for vertex in mesh.data.vertices:
            weights = [(g.weight, g.group) for g in vertex.groups if g.weight > 0.0]
            if not weights:
                continue
            weight, group = max(weights)
            if group in groups and weight >= 0.5:
                bones.append(names.index(groups[group]))
                points.append(world[:3, :3] @ np.array(vertex.co) + world[:3, 3])
    if not points:
        return None
    bones, points = np.array(bones), y_up_from_z_up(np.array(points))
    keep = np.concatenate([np.flatnonzero(bones == b)[::max(1, int(np.sum(bones == b)) // SKIN_POINTS_PER_BONE)]
                           for b in np.unique(bones)])
    return bones[keep], points[keep]


def posed_points(skin, rest_heads, rest_rotations, standing) -> np.ndarray:
    """Skin points (bone (P,), rest positions (P, 3)) where they are in the standing pose (bone axes, heads): each
    carried by its bone from the rest."""
    bones, points = skin
    axes, heads = standing
    turns = core.math.quat.multiply(axes[bones], core.math.quat.conjugate(rest_rotations[bones]))
    return heads[bones] + core.math.quat.rotate(turns, points - rest_heads[bones])


def standing_pose(obj, names, rest_rotations):
    """(bone axes, heads) of an upright pose for an armature imported from BVH by the add-on (its rest is the
    file's, often not upright): the file's most upright frames; None for any other armature."""
    source = obj.get("vr_avatar_source")
    if not source:
        return None
    try:
        motion = core.files.bvh.read_bvh(source)
    except (OSError, core.files.bvh.BVHError):
        return None
    mapping = core.rig.humanoid.find_mapping(motion.skeleton)
    rotations, positions = motion.global_transforms()
    frame = int(core.retarget.target.standing_frames(positions, mapping, 1)[0])
    order = [motion.skeleton.index(name) for name in names]
    return core.math.quat.multiply(rotations[frame, order], rest_rotations), positions[frame, order]


def automatic_mapping(obj, override: dict[str, str] | None = None):
    """(canonical joint -> bone name, '' where nothing fits; joints guessed by structure; notes), by name
    and, where names fail, by the hierarchy and rest geometry; `override` entries win."""
    names, parents, positions, _, tails = _skeleton_arrays(obj)
    try:
        mapping = core.rig.humanoid.find_mapping(core.retarget.target.rig_skeleton(names, parents, positions), override,
                                             required=(), tails=tails)
    except core.rig.humanoid.HumanoidMappingError as error:
        return {joint: (override or {}).get(joint, "") for joint in CANONICAL_JOINTS}, (), str(error)
    found = mapping.names(names)
    return {joint: found.get(joint, "") for joint in CANONICAL_JOINTS}, mapping.guessed, mapping.notes


def mapping_problems(obj, bone_map: dict[str, str]) -> list[str]:
    """What keeps the mapping from driving the armature, one message per joint (optional joints may be empty)."""
    problems = []
    for joint in CANONICAL_JOINTS:
        bone = bone_map.get(joint, "")
        if not bone:
            if joint in REQUIRED_JOINTS:
                problems.append(f"joint '{joint}' is not mapped to a bone")
        elif bone not in obj.data.bones:
            problems.append(f"joint '{joint}' is mapped to bone '{bone}', which '{obj.name}' does not have")
    return problems


def target_skeleton(obj, bone_map: dict[str, str]):
    """The armature as a core TargetSkeleton with the given mapping; MappingError says what is missing."""
    problems = mapping_problems(obj, bone_map)
    if problems:
        raise MappingError(f"armature '{obj.name}': " + "; ".join(problems))
    names, parents, positions, rotations, tails = _skeleton_arrays(obj)
    standing, skin, floor = standing_pose(obj, names, rotations), foot_skin(obj, names, bone_map), rest_floor(obj)
    if standing is not None:  # the rest is a BVH file's, not upright: its mesh stands where the bones stand
        skin = None if skin is None else (skin[0], posed_points(skin, positions, rotations, standing))
        floor = None if skin is None else float(skin[1][:, 1].min())
    try:
        return core.retarget.target.TargetSkeleton.build(names, parents, positions, rotations, bone_map, tails,
                                                  floor, standing, skin)
    except core.rig.humanoid.HumanoidMappingError as error:
        raise MappingError(f"armature '{obj.name}': {error}") from None
