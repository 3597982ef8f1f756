"""Stitching actions in Blender: the selected armatures' actions become one new action, as core stitches them."""
import numpy as np
import pytest

from conftest import FIXTURE_WALK_1, FIXTURE_WALK_2

from core.files.bvh import read_bvh
from core.config import StitchConfig
from core.stitch.stitching import on_skeleton, stitch
from core.stitch.model import StitchModel

CLIPS = [FIXTURE_WALK_1, FIXTURE_WALK_2]
"""The fixture walks of tests/data."""


def _import(bpy, path):
    before = set(bpy.data.objects)
    assert bpy.ops.vr_avatar.import_bvh(filepath=str(path)) == {'FINISHED'}
    (obj,) = set(bpy.data.objects) - before
    return obj


def _select(bpy, objects, active):
    bpy.ops.object.select_all(action='DESELECT')
    for obj in objects:
        obj.select_set(True)
    bpy.context.view_layer.objects.active = active


def test_stitch_actions_makes_one_new_action_that_plays_cores_stitch(bpy, installed, empty_scene):
    axes = installed.axes
    first, second = (_import(bpy, path) for path in CLIPS)
    kept_action = first.animation_data.action
    kept_keys = [tuple(p.co) for p in kept_action.layers[0].strips[0].channelbags[0].fcurves[0].keyframe_points]
    _select(bpy, [second, first], first)
    assert bpy.ops.vr_avatar.stitch_actions() == {'FINISHED'}

    action = first.animation_data.action
    assert action is not kept_action and action.name.startswith("Stitched")
    assert kept_action.use_fake_user and second.animation_data.action.name == read_bvh(CLIPS[1]).name
    assert [tuple(p.co) for p in kept_action.layers[0].strips[0].channelbags[0].fcurves[0].keyframe_points] == kept_keys

    motions = sorted((read_bvh(path) for path in CLIPS), key=lambda m: m.name)  # name order, as documented
    expected = on_skeleton(stitch(motions, StitchConfig(), StitchModel.load()).motion, motions[0].skeleton)
    expected = expected.resampled(30.0)
    start = empty_scene.frame_start
    assert tuple(action.frame_range) == (start, start + len(expected) - 1)
    positions = expected.global_positions()
    names = expected.skeleton.names
    for frame in (0, 100, len(expected) // 2, len(expected) - 1):
        empty_scene.frame_set(start + frame)
        heads = np.array([first.matrix_world @ first.pose.bones[name].head for name in names])
        np.testing.assert_allclose(heads, axes.z_up_from_y_up(positions[frame]), atol=2e-3)

    # Feet From Velocity reaches core's config: 0 reads the feet from the predicted positions alone.
    first.animation_data.action = kept_action
    _select(bpy, [second, first], first)
    assert bpy.ops.vr_avatar.stitch_actions(feet_velocity_weight=0.0) == {'FINISHED'}
    assert first.animation_data.action is not action
    p_alone = on_skeleton(stitch(motions, StitchConfig(feet_velocity_weight=0.0), StitchModel.load()).motion,
                          motions[0].skeleton).resampled(30.0).global_positions()
    frame = len(expected) // 2
    empty_scene.frame_set(start + frame)
    toes = [names.index(name) for name in names if "Toe" in name]
    heads = np.array([first.matrix_world @ first.pose.bones[names[j]].head for j in toes])
    np.testing.assert_allclose(heads, axes.z_up_from_y_up(p_alone[frame, toes]), atol=2e-3)
    assert np.abs(p_alone[:, toes] - positions[:, toes]).max() > 0.01


def test_stitch_actions_needs_two_armatures_and_changes_nothing_without(bpy, installed, empty_scene):
    first = _import(bpy, CLIPS[0])
    _select(bpy, [first], first)
    actions = len(bpy.data.actions)
    with pytest.raises(RuntimeError, match="Select two or more armatures"):
        bpy.ops.vr_avatar.stitch_actions()
    assert len(bpy.data.actions) == actions
