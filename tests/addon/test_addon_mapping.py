"""The add-on's bone mapping on real third-party rigs in the real bpy: Map Bones by structure, guessed joints
marked, mapping presets saved and loaded through the operators, built-in presets, a VRM file's own map."""
import json

import pytest

from conftest import RIGS, shared_exists


def import_rig(bpy, scene, name: str):
    if not shared_exists(RIGS / name):
        pytest.skip(f"the shared rigs are missing: expected {RIGS / name}")
    bpy.ops.import_scene.gltf(filepath=str(RIGS / name))
    obj = max((o for o in bpy.data.objects if o.type == 'ARMATURE'), key=lambda o: len(o.data.bones))
    scene.vr_avatar.target_armature = obj
    return obj


def mapped(scene) -> dict[str, str]:
    return {item.joint: item.bone for item in scene.vr_avatar.bone_map}


def test_map_bones_marks_guesses_and_a_preset_round_trips(bpy, empty_scene, tmp_path):
    scene = empty_scene
    obj = import_rig(bpy, scene, "godot_platformer_robot.glb")
    assert bpy.ops.vr_avatar.map_bones() == {'FINISHED'}
    bones = mapped(scene)
    guessed = {item.joint for item in scene.vr_avatar.bone_map if item.guessed}
    assert bones["l_thigh"] == "r-thigh" and bones["r_upper_arm"] == "l-arm" and bones["l_hand"] == ""
    assert {"l_thigh", "r_upper_arm"} <= guessed and "neck" not in guessed
    assert "sit on the figure's right" in scene.vr_avatar.bone_map_notes
    # The user's correction is no longer a guess.
    item = next(item for item in scene.vr_avatar.bone_map if item.joint == "l_thigh")
    item.bone = "r-thigh"
    assert not item.guessed
    # Save, spoil the list, load: the same mapping comes back, with the metadata in the file.
    path = tmp_path / "robot.json"
    assert bpy.ops.vr_avatar.save_mapping_preset(filepath=str(path)) == {'FINISHED'}
    saved = json.loads(path.read_text())
    assert saved["l_thigh"] == "r-thigh" and saved["_rig"] == obj.name and "r_thigh" in saved["_guessed"]
    assert saved["l_hand"] == ""  # an optional joint the robot lacks stays left out
    for entry in scene.vr_avatar.bone_map:
        entry.bone = ""
    assert bpy.ops.vr_avatar.load_mapping_preset(filepath=str(path)) == {'FINISHED'}
    assert mapped(scene) == bones
    assert not any(item.guessed for item in scene.vr_avatar.bone_map)  # every joint came from the preset
    # The armature with that mapping is a retargeting target: the rig has no hands, and that is allowed.
    from bl_ext.vr_avatar_test.vr_avatar import avatar
    target = avatar.target_skeleton(obj, mapped(scene))
    assert "l_hand" not in target.mapping.joints and target.names[target.mapping["l_foot"]] == "r-foot"


def test_built_in_and_vrm_presets(bpy, empty_scene):
    scene = empty_scene
    obj = import_rig(bpy, scene, "gdquest_mannequiny.glb")
    assert bpy.ops.vr_avatar.apply_mapping_preset(preset="unreal") == {'FINISHED'}
    bones = mapped(scene)
    # clavicle_l finds clavicle.l; spine_03, which Mannequiny lacks, is found by name instead.
    assert bones["l_shoulder"] == "clavicle.l" and bones["r_toes"] == "ball.r" and bones["chest"] == "spine_02"
    bpy.data.objects.remove(obj)
    obj = import_rig(bpy, scene, "vrm0_cryptovoxels.vrm")
    assert bpy.ops.vr_avatar.load_mapping_preset(filepath=str(RIGS / "vrm0_cryptovoxels.vrm")) == {'FINISHED'}
    bones = mapped(scene)
    assert bones["l_thigh"] == "Left leg" and bones["l_upper_arm"] == "Left arm" and bones["r_toes"] == "Right toe"
    assert not any(item.guessed for item in scene.vr_avatar.bone_map)
    with pytest.raises(RuntimeError, match="README.md: cannot read the joint mapping"):
        bpy.ops.vr_avatar.load_mapping_preset(filepath=str(RIGS / "README.md"))
    assert mapped(scene)["l_thigh"] == "Left leg"  # a failed load leaves the list as it was


def test_ik_rig_with_a_foot_outside_its_leg(bpy, empty_scene):
    """Quaternius Male Casual (FBX): Foot.L hangs from the root bone; it is the foot all the same, and no toes."""
    scene = empty_scene
    if not shared_exists(RIGS / "quaternius_male_casual.fbx"):
        pytest.skip(f"the shared rigs are missing: expected {RIGS}")
    bpy.ops.import_scene.fbx(filepath=str(RIGS / "quaternius_male_casual.fbx"))
    obj = next(o for o in bpy.data.objects if o.type == 'ARMATURE')
    scene.vr_avatar.target_armature = obj
    assert bpy.ops.vr_avatar.map_bones() == {'FINISHED'}
    bones = mapped(scene)
    assert bones["hips"] == "Body" and bones["l_foot"] == "Foot.L" and bones["l_toes"] == "" and bones["r_toes"] == ""
    assert "Foot.L" in scene.vr_avatar.bone_map_notes and "PoleTarget.L" not in bones.values()
    from bl_ext.vr_avatar_test.vr_avatar import avatar
    target = avatar.target_skeleton(obj, bones)
    assert target.names[target.mapping["r_foot"]] == "Foot.R" and "l_toes" not in target.mapping.joints
