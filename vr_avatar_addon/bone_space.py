"""Bone space: conversion between core's global joint rotations and Blender pose-bone basis values.

A bone's orientation here is its own rest axes carried into the world, in core's frame (+Y up):
world = delta · rest, where rest includes the armature object's world rotation. Blender composes
a pose bone as world_j = world_p · rest_p⁻¹ · rest_j · basis_j, so the basis that gives the
wanted world orientations G is basis_j = rest_j⁻¹ · rest_p · G_p⁻¹ · G_j (root: rest_j⁻¹ · G_j).
"""
import numpy as np

from . import core
from .axes import y_up_from_z_up, y_up_rotation_from_z_up, z_up_from_y_up, z_up_rotation_from_y_up

quat = core.math.quat


def _matrices(collection, name: str) -> np.ndarray:
    """(N, 4, 4) matrix property of every item of a bpy collection, rows first (foreach_get is column-major)."""
    flat = np.empty(len(collection) * 16, dtype=np.float32)
    collection.foreach_get(name, flat)
    return flat.reshape(-1, 4, 4).transpose(0, 2, 1).astype(float)


def _world(obj) -> np.ndarray:
    """(4, 4) the object's world matrix."""
    return np.array(obj.matrix_world, dtype=float)


def matrix_rotations(matrices: np.ndarray) -> np.ndarray:
    """(..., 4) quaternions of the rotation part of (..., 3+, 3+) matrices, scale removed."""
    basis = matrices[..., :3, :3]
    return quat.from_matrix(basis / np.linalg.norm(basis, axis=-2, keepdims=True))


def parents(obj) -> np.ndarray:
    """(J,) parent index of each bone of obj.data.bones (-1 for a root)."""
    bones = obj.data.bones
    index = {bone.name: j for j, bone in enumerate(bones)}
    return np.array([index[bone.parent.name] if bone.parent else -1 for bone in bones])


def rest_rotations(obj) -> np.ndarray:
    """(J, 4) each bone's rest orientation in the world, core's frame, obj.data.bones order."""
    world = quat.from_matrix(np.array(obj.matrix_world.to_3x3().normalized(), dtype=float))
    local = matrix_rotations(_matrices(obj.data.bones, "matrix_local"))
    return y_up_rotation_from_z_up(quat.multiply(world, local))


def rest_positions(obj) -> np.ndarray:
    """(J, 3) bone heads in the world at rest, core's frame (metres when the object is unscaled)."""
    heads = np.empty(len(obj.data.bones) * 3, dtype=np.float32)
    obj.data.bones.foreach_get("head_local", heads)
    world = _world(obj)
    return y_up_from_z_up(heads.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3])


def basis_rotations(global_rotations, rest, parents) -> np.ndarray:
    """(F, J, 4) pose-bone rotation_quaternion values that give each bone the world orientation global_rotations."""
    global_rotations = np.asarray(global_rotations, dtype=float)
    rest = np.asarray(rest, dtype=float)
    parents = np.asarray(parents)
    basis = quat.inverse_multiply(rest, global_rotations)
    child = parents >= 0
    if child.any():
        p = parents[child]
        parent_delta = quat.multiply_inverse(rest[p], global_rotations[..., p, :])  # rest_p · G_p⁻¹
        basis[..., child, :] = quat.inverse_multiply(
            rest[child], quat.multiply(parent_delta, global_rotations[..., child, :]))
    return continuous(basis)


def continuous(rotations: np.ndarray) -> np.ndarray:
    """(F, J, 4) the same rotations with each frame in the previous frame's hemisphere (f-curves interpolate
    the components, so q and -q on neighbouring frames would swing through a full turn)."""
    return quat.unroll(rotations) if rotations.ndim >= 3 else rotations


def basis_root_location(root_positions, obj, bone) -> np.ndarray:
    """(F, 3) the root pose bone's `location` (its rest frame, armature units) putting its head at root_positions.

    root_positions: (F, 3) world positions in core's frame; bone: the parentless bone (a `bpy.types.Bone`).
    """
    world = np.linalg.inv(_world(obj))
    armature_space = z_up_from_y_up(root_positions) @ world[:3, :3].T + world[:3, 3]
    rest = np.array(bone.matrix_local, dtype=float)
    return (armature_space - rest[:3, 3]) @ rest[:3, :3]


def basis_locations(displacements, rest) -> np.ndarray:
    """(F, J, 3) pose-bone `location` values that move each bone's head by `displacements` (core's frame, metres,
    object unrotated and unscaled), given in the frame its parent's pose carries the world axes to (core's
    joint convention: a local offset's change from its rest value)."""
    return quat.inverse_rotate(np.asarray(rest, dtype=float), np.asarray(displacements, dtype=float))


def pose_from_basis(obj, rotations, root_location) -> None:
    """Set every pose bone's rotation_quaternion ((J, 4), obj.data.bones order) and the root bone's location."""
    pose_bones = obj.pose.bones
    for pose_bone in pose_bones:
        pose_bone.rotation_mode = 'QUATERNION'
    rotations = np.asarray(rotations, dtype=np.float32)
    order = [obj.data.bones.find(pose_bone.name) for pose_bone in pose_bones]
    pose_bones.foreach_set("rotation_quaternion", rotations[order].ravel())
    root = next(pose_bone for pose_bone in pose_bones if pose_bone.parent is None)
    root.location = tuple(float(v) for v in root_location)


def rest_matrices(obj) -> np.ndarray:
    """(J, 4, 4) each bone's rest matrix in armature space, obj.data.bones order."""
    return _matrices(obj.data.bones, "matrix_local")


def rest_tails(obj) -> np.ndarray:
    """(J, 3) bone tails in the world at rest, core's frame, obj.data.bones order."""
    tails = np.empty(len(obj.data.bones) * 3, dtype=np.float32)
    obj.data.bones.foreach_get("tail_local", tails)
    world = _world(obj)
    return y_up_from_z_up(tails.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3])


def armature_matrices(obj, rotations, heads, scale: float) -> np.ndarray:
    """(F, J, 4, 4) pose-bone matrices in armature space: bone axes (F, J, 4) and heads (F, J, 3) in the world
    (core's frame), every bone scaled by `scale` (a pose scale on the root bones, inherited)."""
    world = _world(obj)
    inverse = np.linalg.inv(world)
    turn = quat.from_matrix(world[:3, :3] / np.linalg.norm(world[:3, :3], axis=0, keepdims=True))
    axes = quat.inverse_multiply(turn, z_up_rotation_from_y_up(rotations))
    matrices = np.zeros(np.shape(heads)[:-1] + (4, 4))
    matrices[..., :3, :3] = quat.to_matrix(axes) * scale
    matrices[..., :3, 3] = z_up_from_y_up(heads) @ inverse[:3, :3].T + inverse[:3, 3]
    matrices[..., 3, 3] = 1.0
    return matrices


def root_frames(bone, rest) -> tuple[np.ndarray, np.ndarray]:
    """(rotation-and-scale frame (3, 3), location frame (4, 4)) Blender takes a parentless `bone`'s basis in (rest
    matrix `rest`): its rest, except that a bone with Local Location off takes its location along armature axes."""
    location = rest.copy()
    if not bone.use_local_location:
        location[:3, :3] = np.eye(3)
    return rest[:3, :3], location


def inherited_frames(bone, rest_parent, rest, parent_pose) -> tuple[np.ndarray, np.ndarray]:
    """(rotation-and-scale frame (..., 3, 3), location frame (..., 4, 4)) Blender takes `bone`'s basis in (rest
    matrix `rest`) under its parent's pose matrices (..., 4, 4) (rest `rest_parent`): pose_p · rest_p⁻¹ · rest_j for
    both, except that a bone not inheriting its parent's rotation (Inherit Rotation off) turns with the parent's rest
    axes, one not inheriting its scale (Inherit Scale None) drops the parent's scale (Average: keeps its mean), and
    one with Local Location off takes its location along the parent's posed axes, not its own
    (BKE_bone_parent_transform_calc_from_matrices)."""
    offset = np.linalg.inv(rest_parent) @ rest
    axes = parent_pose[..., :3, :3]
    scales = np.linalg.norm(axes, axis=-2, keepdims=True)
    if bone.inherit_scale in ('NONE', 'NONE_LEGACY'):
        kept = np.ones_like(scales)
    elif bone.inherit_scale == 'AVERAGE':
        kept = np.broadcast_to(np.cbrt(np.abs(np.linalg.det(axes)))[..., None, None], scales.shape)
    else:
        kept = scales
    turned = axes / scales if bone.use_inherit_rotation else np.broadcast_to(rest_parent[:3, :3], axes.shape)
    location = parent_pose @ offset
    if not bone.use_local_location:
        location[..., :3, :3] = axes
    return (turned * kept) @ offset[:3, :3], location


def bone_frames(obj, order, parents, matrices) -> tuple[np.ndarray, np.ndarray]:
    """(rotation-and-scale frames (F, J, 3, 3), location frames (F, J, 4, 4)) the bases of the bones `order`
    (indices into obj.data.bones; `parents` index the same list) are taken in under armature-space pose matrices
    (F, J, 4, 4): a bone's pose is its frame times its basis, as `root_frames` and `inherited_frames` say."""
    bones, rest = obj.data.bones, _matrices(obj.data.bones, "matrix_local")[np.asarray(order)]
    locations = np.empty(matrices.shape)
    turns = np.empty(matrices.shape[:-2] + (3, 3))
    for j, parent in enumerate(parents):
        bone = bones[order[j]]
        frames = inherited_frames(bone, rest[parent], rest[j], matrices[..., parent, :, :]) if parent >= 0 \
            else root_frames(bone, rest[j])
        turns[..., j, :, :], locations[..., j, :, :] = frames
    return turns, locations


def pose_matrices(obj, order, parents, basis) -> np.ndarray:
    """(F, J, 4, 4) armature-space pose matrices of the bones `order` (parents first; `parents` index the same list)
    from their basis matrices (F, J, 4, 4), as Blender composes them (`bone_frames`; a Connected bone's location
    ignored)."""
    bones, rest = obj.data.bones, _matrices(obj.data.bones, "matrix_local")[np.asarray(order)]
    matrices = np.empty_like(basis)
    for j, parent in enumerate(parents):
        bone = bones[order[j]]
        turn, frame = inherited_frames(bone, rest[parent], rest[j], matrices[:, parent]) if parent >= 0 \
            else root_frames(bone, rest[j])
        matrices[:, j] = frame if bone.use_connect else frame @ basis[:, j]
        matrices[:, j, :3, :3] = turn @ basis[:, j, :3, :3]
    return matrices


CONNECTED_TOLERANCE = 1e-4
"""A Connected bone posed further than this share of its length off its parent's tail moves its parent along."""


def held_to_parents(obj, matrices, order, parents) -> np.ndarray:
    """The armature-space pose matrices (F, J, 4, 4) with the parent of each Connected bone that has bones below it
    moved by how far the pose puts the bone's head off the parent's tail, up to the first bone free to move (Blender
    holds a connected bone's head there and ignores its location): a hips bone connected to a root bone below it has
    the root carry its travel."""
    bones, rest = obj.data.bones, _matrices(obj.data.bones, "matrix_local")[np.asarray(order)]
    moved = np.array(matrices, dtype=float)
    for j in reversed(range(len(parents))):  # children before their parents: a parent moved moves its own parent
        bone, parent = bones[order[j]], parents[j]
        if parent < 0 or not bone.use_connect or not bone.children:  # an end bone does not move the bone it ends
            continue
        head = (np.linalg.inv(rest[parent]) @ rest[j])[:3, 3]  # the parent's tail, in its rest frame
        off = moved[..., j, :3, 3] - moved[..., parent, :3, :3] @ head - moved[..., parent, :3, 3]
        if np.abs(off).max() > CONNECTED_TOLERANCE * bone.length:
            moved[..., parent, :3, 3] += off
    return moved


def pose_basis(obj, matrices, order, parents) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rotation_quaternion (F, J, 4), location (F, J, 3), scale (F, J, 3)) of each pose bone for armature-space
    pose matrices (F, J, 4, 4) of the bones `order` (indices into obj.data.bones) whose `parents` index the
    same list: Blender composes a bone's rotation and scale in one frame and its location in another (`bone_frames`;
    both pose_p · rest_p⁻¹ · rest_j where the bone inherits its parent's rotation and scale, root: rest_j). A
    Connected bone has no location: where the pose moves it off its parent's tail, its parent moves
    (`held_to_parents`)."""
    parents = np.asarray(parents)
    matrices = held_to_parents(obj, matrices, order, parents)
    turns, frames = bone_frames(obj, order, parents, matrices)
    axes = np.linalg.solve(turns, matrices[..., :3, :3])
    scale = np.linalg.norm(axes, axis=-2)
    rotation = quat.from_matrix(axes / scale[..., None, :])
    locations = np.linalg.solve(frames, matrices)[..., :3, 3]
    locations[..., np.array([obj.data.bones[i].use_connect for i in order], dtype=bool), :] = 0.0
    return continuous(rotation), locations, scale
