"""Bone space: core's global joint rotations to pose-bone basis values and back, through Blender's own evaluation."""
import importlib

import numpy as np
import pytest

from conftest import ADDON_MODULE

# (name, parent, head, tail, roll in radians): a spine with two branches, rolls all different.
BONES = [("root", None, (0.0, 0.0, 1.0), (0.0, 0.1, 1.2), 0.3),
         ("spine", "root", (0.0, 0.1, 1.2), (0.0, 0.0, 1.5), -0.7),
         ("arm", "spine", (0.2, 0.0, 1.5), (0.5, 0.1, 1.4), 1.2),
         ("hand", "arm", (0.5, 0.1, 1.4), (0.6, 0.2, 1.35), -2.0),
         ("leg", "root", (0.1, 0.0, 0.9), (0.15, -0.05, 0.5), 2.5)]


def _random_rotations(rng, shape):
    q = rng.normal(size=shape + (4,))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


@pytest.fixture
def rolled_armature(bpy, empty_scene):
    armature = bpy.data.armatures.new("Rolled")
    obj = bpy.data.objects.new("Rolled", armature)
    empty_scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode='EDIT')
    for name, parent, head, tail, roll in BONES:
        bone = armature.edit_bones.new(name)
        bone.head, bone.tail, bone.roll = head, tail, roll
        if parent:
            bone.parent = armature.edit_bones[parent]
    bpy.ops.object.mode_set(mode='OBJECT')
    obj.rotation_euler = (0.4, -0.9, 2.1)
    obj.location = (1.0, -2.0, 0.5)
    bpy.context.view_layer.update()
    return obj


def test_posed_bones_take_the_requested_world_orientations_and_root_head(bpy, installed, rolled_armature):
    bone_space = importlib.import_module(f"{ADDON_MODULE}.bone_space")
    axes = installed.axes
    quat = installed.core.math.quat
    obj = rolled_armature
    assert [b.name for b in obj.data.bones] == [b[0] for b in BONES]
    parents = bone_space.parents(obj)
    np.testing.assert_array_equal(parents, [-1, 0, 1, 2, 0])

    rng = np.random.default_rng(7)
    frames = 4
    wanted = _random_rotations(rng, (frames, len(BONES)))
    wanted_root = rng.normal(size=(frames, 3))
    rest = bone_space.rest_rotations(obj)
    basis = bone_space.basis_rotations(wanted, rest, parents)
    locations = bone_space.basis_root_location(wanted_root, obj, obj.data.bones["root"])

    world = np.array(obj.matrix_world)
    for f in range(frames):
        bone_space.pose_from_basis(obj, basis[f], locations[f])
        bpy.context.view_layer.update()
        matrices = np.array([world @ np.array(b.matrix) for b in obj.pose.bones])
        rotations = matrices[:, :3, :3] / np.linalg.norm(matrices[:, :3, :3], axis=-2, keepdims=True)
        got = axes.y_up_rotation_from_z_up(quat.from_matrix(rotations))
        dots = np.abs(np.sum(got * wanted[f], axis=-1))
        np.testing.assert_allclose(dots, 1.0, atol=1e-5)
        np.testing.assert_allclose(axes.y_up_from_z_up(matrices[0, :3, 3]), wanted_root[f], atol=1e-4)


def test_rest_pose_is_identity_basis_and_rest_heads(bpy, installed, rolled_armature):
    bone_space = importlib.import_module(f"{ADDON_MODULE}.bone_space")
    obj = rolled_armature
    rest = bone_space.rest_rotations(obj)
    parents = bone_space.parents(obj)
    basis = bone_space.basis_rotations(rest[None], rest, parents)
    np.testing.assert_allclose(np.abs(basis[..., 0]), 1.0, atol=1e-6)
    heads = bone_space.rest_positions(obj)
    world = np.array(obj.matrix_world)
    expected = np.array([(world @ np.append(b.head_local, 1.0))[:3] for b in obj.data.bones])
    np.testing.assert_allclose(installed.axes.z_up_from_y_up(heads), expected, atol=1e-5)
    np.testing.assert_allclose(bone_space.basis_root_location(heads[:1], obj, obj.data.bones[0]), 0.0, atol=1e-5)


def test_basis_keeps_consecutive_frames_in_one_hemisphere(installed):
    bone_space = importlib.import_module(f"{ADDON_MODULE}.bone_space")
    rng = np.random.default_rng(1)
    rotations = _random_rotations(rng, (1, 3)) * np.where(rng.random((50, 3, 1)) < 0.5, -1.0, 1.0)
    smooth = bone_space.continuous(rotations)
    assert (np.sum(smooth[1:] * smooth[:-1], axis=-1) > 0).all()
    np.testing.assert_allclose(np.abs(smooth), np.abs(rotations))
