"""Armatures as core sees them: built from a skeleton, actions played on them and read back as motion, the target."""
import bpy
import numpy as np

from . import bone_space, core
from .axes import y_up_from_z_up, y_up_rotation_from_z_up, z_up_from_y_up
from .errors import VRAvatarError
from .scene_timing import scene_fps

# Length of a leaf bone that has no child and no End Site to point at, in metres.
STUB_LENGTH = 0.05
# Bones shorter than this would be deleted by Blender, so they get a stub instead.
MIN_BONE_LENGTH = 1e-4


def skeleton_rest_heads(skeleton) -> np.ndarray:
    """(J, 3) global joint positions of the skeleton's rest layout, Blender axes (+Z up)."""
    identity = core.math.quat.identity(len(skeleton))
    _, positions = core.anim.motion.forward_kinematics(skeleton.parents, identity, skeleton.offsets)
    return z_up_from_y_up(positions)


def _tails(skeleton, heads: np.ndarray) -> np.ndarray:
    """Each bone's tail: its first child that is not on top of it, else its End Site, else a stub."""
    end_sites = {j: z_up_from_y_up(offset) for j, offset in skeleton.end_sites}
    tails = np.empty_like(heads)
    for j, head in enumerate(heads):
        targets = [heads[c] - head for c in skeleton.children(j)] + [end_sites.get(j, np.zeros(3))]
        step = next((t for t in targets if np.linalg.norm(t) > MIN_BONE_LENGTH), None)
        if step is None:  # continue the parent bone's direction, or point up from a lone root
            parent = skeleton.parents[j]
            along = head - heads[parent] if parent >= 0 else np.zeros(3)
            norm = np.linalg.norm(along)
            step = along / norm * STUB_LENGTH if norm > MIN_BONE_LENGTH else np.array([0.0, 0.0, STUB_LENGTH])
        tails[j] = head + step
    return tails


def build_armature(context, skeleton, name: str):
    """A new armature object, linked to the active collection, whose bones follow the skeleton at rest."""
    if context.object is not None and context.object.mode != 'OBJECT':
        bpy.ops.object.mode_set(mode='OBJECT')
    armature = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, armature)
    context.collection.objects.link(obj)
    context.view_layer.objects.active = obj
    heads = skeleton_rest_heads(skeleton)
    tails = _tails(skeleton, heads)
    bpy.ops.object.mode_set(mode='EDIT')
    bones = []
    for j, joint in enumerate(skeleton.names):
        bone = armature.edit_bones.new(joint)
        bone.head, bone.tail = heads[j], tails[j]
        if skeleton.parents[j] >= 0:
            bone.parent = bones[skeleton.parents[j]]
        bones.append(bone)
    bpy.ops.object.mode_set(mode='OBJECT')
    return obj


def motion_channels(obj, motion) -> list:
    """Action channels (data path, values, group) that play `motion` on its armature built by build_armature.

    Core's joint frames are world-aligned at rest, so bone j's world orientation is G_j · rest_j; a joint
    whose offset is animated (BVH position channels) gets a location channel as well as the root.
    """
    bones = obj.data.bones
    order = [motion.skeleton.index(bone.name) for bone in bones]
    global_rotations, _ = motion.global_transforms()
    rest = bone_space.rest_rotations(obj)
    parents = bone_space.parents(obj)
    basis = bone_space.basis_rotations(core.math.quat.multiply(global_rotations[:, order], rest), rest, parents)
    displacements = motion.positions[:, order] - motion.skeleton.offsets[order]
    locations = bone_space.basis_locations(displacements, rest)
    roots = parents < 0
    for j in np.flatnonzero(roots):
        locations[:, j] = bone_space.basis_root_location(motion.positions[:, order[j]], obj, bones[j])
    moving = roots | (np.abs(displacements).max(axis=(0, 2)) > 1e-6)
    paths = [f'pose.bones["{bpy.utils.escape_identifier(bone.name)}"]' for bone in bones]
    channels = [(f"{path}.rotation_quaternion", basis[:, j], bone.name)
                for j, (path, bone) in enumerate(zip(paths, bones))]
    channels += [(f"{paths[j]}.location", locations[:, j], bones[j].name) for j in np.flatnonzero(moving)]
    return channels


def action_motion(scene, obj):
    """The armature's action sampled into a core Motion (metres, +Y up), one pose per scene frame of the action.

    Joint frames are world-aligned at rest: a joint's global rotation is its bone's world orientation
    times the bone's rest orientation inverted, so the skeleton's offsets are the rest heads' differences.
    """
    action = obj.animation_data.action
    bones = obj.data.bones
    if not bones:
        raise ValueError(f"Armature '{obj.name}' has no bones: its action '{action.name}' moves nothing")
    parents = bone_space.parents(obj)
    start, end = (int(round(frame)) for frame in action.frame_range)
    order = [obj.pose.bones.find(bone.name) for bone in bones]
    world = np.array(obj.matrix_world, dtype=float)
    flat = np.empty(len(bones) * 16, dtype=np.float32)
    matrices = np.empty((end - start + 1, len(bones), 4, 4))
    current = scene.frame_current
    for i, frame in enumerate(range(start, end + 1)):
        scene.frame_set(frame)
        obj.pose.bones.foreach_get("matrix", flat)
        matrices[i] = flat.reshape(-1, 4, 4).transpose(0, 2, 1)[order]
    scene.frame_set(current)
    matrices = world @ matrices
    orientations = y_up_rotation_from_z_up(bone_space.matrix_rotations(matrices))
    global_rotations = core.math.quat.multiply_inverse(orientations, bone_space.rest_rotations(obj))
    heads = y_up_from_z_up(matrices[..., :3, 3])

    rest_heads = bone_space.rest_positions(obj)
    child = parents >= 0
    offsets = rest_heads.copy()
    offsets[child] -= rest_heads[parents[child]]
    tails = np.empty(len(bones) * 3, dtype=np.float32)
    bones.foreach_get("tail_local", tails)
    tails = y_up_from_z_up(tails.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3])
    leaves = sorted(set(range(len(bones))) - set(parents.tolist()))
    end_sites = tuple((j, tuple(float(v) for v in tails[j] - rest_heads[j])) for j in leaves)
    skeleton = core.anim.skeleton.Skeleton(tuple(bone.name for bone in bones), parents, offsets, end_sites)

    positions = heads.copy()
    positions[:, child] = core.math.quat.inverse_rotate(global_rotations[:, parents[child]],
                                                   heads[:, child] - heads[:, parents[child]])
    rotations = core.anim.motion.local_from_global(parents, global_rotations)
    return core.anim.motion.Motion(skeleton, rotations, positions, scene_fps(scene), action.name)


def object_by_uid(session_uid: int):
    """The object of this session_uid (which a rename and an undo keep), or None where it is gone."""
    return next((obj for obj in bpy.data.objects if obj.session_uid == session_uid), None)


def target_armature(context):
    """The scene's Target Armature; VRAvatarError where there is none, it is not in the scene (deleted: the setting
    still holds it) or it has no bones."""
    obj = context.scene.vr_avatar.target_armature
    if obj is None or obj.type != 'ARMATURE':
        raise VRAvatarError("Select an armature as the Target Armature (VR Avatar › Avatar)")
    if context.scene not in obj.users_scene:
        raise VRAvatarError(f"Target Armature '{obj.name}' is not in scene '{context.scene.name}' (deleted, or in "
                            "another scene): pick another or link it back")
    if not obj.data.bones:
        raise VRAvatarError(f"Armature '{obj.name}' has no bones: give it a humanoid skeleton or pick another")
    return obj
