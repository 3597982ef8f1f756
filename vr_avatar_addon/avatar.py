"""Avatar: the target armature as core sees it (a TargetSkeleton), and its humanoid bone mapping.

Bones are handed to core parents first (core's convention); `bone_order` is that order as indices
into `obj.data.bones`, which bone_space's arrays follow.
"""
import numpy as np

from . import bone_space, core

CANONICAL_JOINTS = core.humanoid.CANONICAL_JOINTS


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
    """(names, parents, rest positions, rest rotations) in bone_order."""
    order = bone_order(obj)
    names = [obj.data.bones[i].name for i in order]
    position_in_order = {name: k for k, name in enumerate(names)}
    parents = np.array([position_in_order[obj.data.bones[i].parent.name] if obj.data.bones[i].parent else -1
                        for i in order])
    return names, parents, bone_space.rest_positions(obj)[order], bone_space.rest_rotations(obj)[order]


def automatic_mapping(obj) -> dict[str, str]:
    """Canonical joint -> bone name found by name matching ('' where nothing matches)."""
    names, parents, positions, _ = _skeleton_arrays(obj)
    try:
        found = core.humanoid.find_mapping(core.retarget.rig_skeleton(names, parents, positions),
                                           required=()).names(names)
    except core.humanoid.HumanoidMappingError:
        found = {}
    return {joint: found.get(joint, "") for joint in CANONICAL_JOINTS}


def mapping_problems(obj, bone_map: dict[str, str]) -> list[str]:
    """What keeps the mapping from driving the armature, one message per joint."""
    problems = []
    for joint in CANONICAL_JOINTS:
        bone = bone_map.get(joint, "")
        if not bone:
            problems.append(f"joint '{joint}' is not mapped to a bone")
        elif bone not in obj.data.bones:
            problems.append(f"joint '{joint}' is mapped to bone '{bone}', which '{obj.name}' does not have")
    return problems


def target_skeleton(obj, bone_map: dict[str, str]):
    """The armature as a core TargetSkeleton with the given mapping; MappingError says what is missing."""
    problems = mapping_problems(obj, bone_map)
    if problems:
        raise MappingError(f"armature '{obj.name}': " + "; ".join(problems))
    names, parents, positions, rotations = _skeleton_arrays(obj)
    try:
        return core.retarget.TargetSkeleton.build(names, parents, positions, rotations, bone_map)
    except core.humanoid.HumanoidMappingError as error:
        raise MappingError(f"armature '{obj.name}': {error}") from None
