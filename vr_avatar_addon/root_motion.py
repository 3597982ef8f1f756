"""Root motion: where a bake puts the avatar's travel over the floor and its turn about the vertical.

The solve moves the hips (`HIPS`, the default). The other modes take the travel T (the hips' horizontal
place and heading, each frame, against their rest) off the hips and give it to a root bone above them
(`ROOT_BONE`), to the armature object (`OBJECT`), or to no transform at all (`IN_PLACE`: the body kept over
its rest place, T keyed in the object's custom property TRAVEL_PROPERTY as x, y and heading, in the armature's
upright space, for a game engine to read). T is a move over the world's floor and a turn about its vertical,
taken in the armature's upright space: armature space turned so that the world's up is its +Z (armature space
itself on a Z-up rig; an FBX rig's +Y-up armature space turned 90° about X). In every mode the bones end where the solve put them in the world:
world = object · T · armature space for `OBJECT` (and for `IN_PLACE` once T is applied), the root bone
carrying T for `ROOT_BONE`. An `OBJECT` bake's action keeps the placement it was keyed from, so that a later bake
starts from there, not from where that action has moved the object by the present frame.
"""
import numpy as np
from mathutils import Matrix

from . import core, keyframes
from .bone_space import matrix_rotations, pose_basis, pose_matrices, rest_matrices
from .errors import VRAvatarError
from .rotation_modes import rotation_values

quat = core.math.quat

ROOT_MOTION_MODES = (('HIPS', "Hips", "The hips carry the travel (the solve as it is)"),
                     ('ROOT_BONE', "Root Bone", "The bone at the top of the hips' chain carries the travel"),
                     ('OBJECT', "Object", "The armature object carries the travel; its bones stay over it"),
                     ('IN_PLACE', "In Place", "The body stays over its rest place; the travel is keyed in the "
                      "object's custom property vr_avatar_root_motion (x, y, heading) for a game engine"))
TRAVEL_PROPERTY = "vr_avatar_root_motion"
PLACEMENT_PROPERTY = "vr_avatar_placement"
"""On an Object root-motion bake's action: the object's world matrix (row by row) its travel was keyed from."""


def armature_space(obj, cache) -> tuple[np.ndarray, list, np.ndarray]:
    """(pose matrices (F, J, 4, 4) in armature space, bone indices into obj.data.bones, parents in the cache's
    order) of the cached solve, as Blender poses it (`bone_space.pose_matrices`)."""
    order = [obj.data.bones.find(name) for name in cache.bones]
    index = {name: j for j, name in enumerate(cache.bones)}
    parents = np.array([index.get(obj.data.bones[name].parent.name, -1) if obj.data.bones[name].parent else -1
                        for name in cache.bones])
    basis = np.zeros(cache.basis.shape[:2] + (4, 4))
    basis[..., :3, :3] = quat.to_matrix(cache.basis) * cache.scales[..., None, :]
    basis[..., :3, 3] = cache.locations
    basis[..., 3, 3] = 1.0
    return pose_matrices(obj, order, parents, basis), order, parents


def upright_turn(obj) -> np.ndarray:
    """(4, 4) the least turn from armature space into its upright space: the direction the object's world matrix
    carries to the world's +Z onto +Z (the identity on a Z-up rig)."""
    up = np.linalg.inv(np.array(obj.matrix_world, dtype=float))[:3, 2]
    up /= np.linalg.norm(up)
    axis, cosine = np.cross(up, [0.0, 0.0, 1.0]), float(up[2])
    turn = np.eye(4)
    if np.linalg.norm(axis) < 1e-9:
        turn[:3, :3] = np.eye(3) if cosine > 0.0 else np.diag([1.0, -1.0, -1.0])
        return turn
    cross = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    turn[:3, :3] = np.eye(3) + cross + cross @ cross / (1.0 + cosine)
    return turn


def travel(hips: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """(F, 4, 4) T: the hips' pose matrices (F, 4, 4) against their rest matrix (4, 4) as a move over the floor
    and a turn about the vertical through the rest hips (upright space, +Z up)."""
    turn = quat.multiply_inverse(matrix_rotations(hips), matrix_rotations(rest))
    heading = 2.0 * np.arctan2(turn[:, 3], turn[:, 0])
    cos, sin = np.cos(heading), np.sin(heading)
    moves = np.tile(np.eye(4), (len(hips), 1, 1))
    moves[:, 0, 0], moves[:, 0, 1], moves[:, 1, 0], moves[:, 1, 1] = cos, -sin, sin, cos
    centre = rest[:2, 3]
    moves[:, :2, 3] = hips[:, :2, 3] - np.einsum("fij,j->fi", moves[:, :2, :2], centre)
    return moves


def top_of_chain(obj, bone_name: str) -> str:
    """The parentless bone above `bone_name`; VRAvatarError where the bone itself has no parent."""
    bone = obj.data.bones[bone_name]
    if bone.parent is None:
        raise VRAvatarError(f"Armature '{obj.name}' has no bone above its hips '{bone_name}': choose Hips, Object "
                            "or In Place root motion")
    while bone.parent is not None:
        bone = bone.parent
    return bone.name


def with_root_motion(obj, cache, mode: str, hips: str) -> tuple:
    """(basis, locations, scales) of the cache's bones and the extra channels (data path, values, group) that
    give the cached world motion with the travel where `mode` puts it (the hips bone named `hips`)."""
    if mode == 'HIPS':
        return cache.basis, cache.locations, cache.scales, []
    if mode == 'OBJECT' and obj.parent is not None:
        raise VRAvatarError(f"Armature '{obj.name}' has a parent: Object root motion keys the object's own "
                            "transform; choose another mode or clear the parent")
    if mode == 'OBJECT' and not turns_unsheared(obj):
        scale = ", ".join(f"{v:.3g}" for v in obj.matrix_world.to_scale())
        raise VRAvatarError(f"Armature '{obj.name}' is scaled unevenly across the floor ({scale}): Object root motion "
                            "would shear it as it turns; choose another mode or apply the scale")
    constrained = [c.name for c in obj.constraints if not c.mute] if mode == 'OBJECT' else []
    if constrained:
        raise VRAvatarError(f"Armature '{obj.name}' has object constraints ({', '.join(constrained)}), which move it "
                            "past the transform Object root motion keys: choose another mode or mute them")
    matrices, order, parents = armature_space(obj, cache)
    h = cache.bones.index(hips)
    upright = upright_turn(obj)
    moves = travel(upright @ matrices[:, h], upright @ rest_matrices(obj)[order[h]])
    carried = upright.T @ moves @ upright  # T in armature space
    extra = []
    if mode == 'ROOT_BONE':
        root = cache.bones.index(top_of_chain(obj, hips))
        matrices[:, root] = carried @ matrices[:, root]  # the other bones stay where the solve put them
    else:
        matrices = np.linalg.inv(carried)[:, None] @ matrices
        if mode == 'OBJECT':
            extra = object_channels(obj, carried)
        else:
            heading = np.arctan2(moves[:, 1, 0], moves[:, 0, 0])
            extra = [(f'["{TRAVEL_PROPERTY}"]', np.column_stack([moves[:, 0, 3], moves[:, 1, 3], heading]),
                      "Root Motion")]
    basis, locations, scales = pose_basis(obj, matrices, order, parents)
    return basis, locations, scales, extra


def turns_unsheared(obj) -> bool:
    """Whether the object, turned about the world's vertical in its own space (T), stays a turned copy of itself
    that location and rotation keys can hold: its scale the same along every direction across the floor."""
    axes = np.array(obj.matrix_world, dtype=float)[:3, :3]
    up = np.linalg.inv(axes)[:, 2]
    up /= np.linalg.norm(up)
    gram = axes.T @ axes
    along = up @ gram @ up
    across = (np.trace(gram) - along) / 2.0
    expected = across * np.eye(3) + (along - across) * np.outer(up, up)
    return bool(np.allclose(gram, expected, rtol=0.0, atol=1e-6 * np.trace(gram)))


def delta_rotation(obj) -> np.ndarray:
    """(3, 3) the object's delta rotation, which Blender puts before its rotation (axis-angle mode has none)."""
    if obj.rotation_mode == 'QUATERNION':
        return np.array(obj.delta_rotation_quaternion.normalized().to_matrix())
    if obj.rotation_mode == 'AXIS_ANGLE':
        return np.eye(3)
    euler = obj.delta_rotation_euler.copy()
    euler.order = obj.rotation_mode
    return np.array(euler.to_matrix())


def object_channels(obj, moves: np.ndarray) -> list:
    """The object's location and rotation channels (in its rotation mode) that put it at its world matrix · T, its
    delta transforms taken off."""
    world = np.array(obj.matrix_world, dtype=float) @ moves
    axes = delta_rotation(obj).T @ (world[:, :3, :3] / np.linalg.norm(world[:, :3, :3], axis=-2, keepdims=True))
    rotation, values = rotation_values(quat.unroll(quat.from_matrix(axes)), obj.rotation_mode)
    location = world[:, :3, 3] - np.array(obj.delta_location)
    return [("location", location, "Object Transforms"), (rotation, values, "Object Transforms")]


def prepare(obj, mode: str) -> None:
    """What the mode's channels need on the object before they can be keyed: IN_PLACE's custom property."""
    if mode == 'IN_PLACE' and TRAVEL_PROPERTY not in obj:
        obj[TRAVEL_PROPERTY] = [0.0, 0.0, 0.0]


def keep_placement(action, placement: np.ndarray) -> None:
    """Mark an Object root-motion bake's action with the world matrix (4, 4) its travel was keyed from."""
    action[PLACEMENT_PROPERTY] = np.asarray(placement, dtype=float).ravel().tolist()


def kept_placement(obj) -> Matrix | None:
    """The world matrix an Object root-motion bake in the object's active action or NLA strips (the topmost) was
    keyed from, or None where none animates it."""
    animation = obj.animation_data
    if animation is None:
        return None
    actions = [animation.action] + [strip.action for track in reversed(animation.nla_tracks) for strip in track.strips]
    placement = next((a[PLACEMENT_PROPERTY] for a in actions if a is not None and PLACEMENT_PROPERTY in a), None)
    return None if placement is None else Matrix(np.reshape(placement, (4, 4)).tolist())


def restore_placement(obj) -> None:
    """Put the object back where an Object root-motion bake animating it was keyed from (`kept_placement`): the bake
    moves it, so where it stands now is that bake's travel at the present frame, which the cached solve's bones carry
    too."""
    placement = kept_placement(obj)
    if placement is not None:
        obj.matrix_world = placement


def placing_channels(obj) -> set[str]:
    """Channels (`path[index]`) of the object's active action and NLA strips, but the active action of an Object
    root-motion bake (`restore_placement` puts the object back where it was keyed from)."""
    action = obj.animation_data.action if obj.animation_data is not None else None
    own = action is not None and PLACEMENT_PROPERTY not in action
    return keyframes.animated_channels(([action] if own else []) + keyframes.strip_actions(obj))


def solved_placement(obj, object_transform: np.ndarray | None) -> list:
    """(property, value) of the object's own transform the solve was made with (`object_transform`, SolveCache's;
    None: a cache made by an earlier version, nothing), for each property the action the bake replaces or NLA strips
    under it animate (`placing_channels`), which would move the object elsewhere."""
    if object_transform is None:
        return []
    underneath = placing_channels(obj)
    location, rotation, scale = np.split(object_transform, [3, 7])
    name, values = rotation_values(rotation[None], obj.rotation_mode, obj.rotation_euler.copy())
    return [(prop, value) for prop, value in (("location", location), (name, values[0]), ("scale", scale))
            if any(f"{prop}[{i}]" in underneath for i in range(len(value)))]
