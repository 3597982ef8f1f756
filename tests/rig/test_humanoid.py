"""Humanoid mapping (SPEC §6) on real Bandai skeletons and on skeletons named after other conventions."""
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import RIGS, shared_exists

from core.math import quat
from core.anim.sides import common_prefix, mirror_pairs, split_side
from core.rig.humanoid import CANONICAL_JOINTS, REQUIRED_JOINTS, HumanoidMappingError, find_mapping
from core.files.bvh import read_bvh
from core.rig.humanoid_structure import is_control
from core.retarget.target import TargetSkeleton, rig_skeleton
from core.anim.skeleton import Skeleton


def build(edges):
    """A skeleton from (name, parent name) pairs in hierarchy order; offsets are irrelevant to naming."""
    names = [n for n, _ in edges]
    parents = [names.index(p) if p else -1 for _, p in edges]
    return Skeleton(tuple(names), np.array(parents), np.ones((len(names), 3)) * 0.1)


def sided(side, prefix_left, prefix_right):
    return prefix_left if side == "l" else prefix_right


MIXAMO = [("mixamorig:Hips", None), ("mixamorig:Spine", "mixamorig:Hips"), ("mixamorig:Spine1", "mixamorig:Spine"),
          ("mixamorig:Spine2", "mixamorig:Spine1"), ("mixamorig:Neck", "mixamorig:Spine2"),
          ("mixamorig:Head", "mixamorig:Neck")] + [
    item for s in ("Left", "Right") for item in [
        (f"mixamorig:{s}Shoulder", "mixamorig:Spine2"), (f"mixamorig:{s}Arm", f"mixamorig:{s}Shoulder"),
        (f"mixamorig:{s}ForeArm", f"mixamorig:{s}Arm"), (f"mixamorig:{s}Hand", f"mixamorig:{s}ForeArm"),
        (f"mixamorig:{s}HandThumb1", f"mixamorig:{s}Hand"),
        (f"mixamorig:{s}UpLeg", "mixamorig:Hips"), (f"mixamorig:{s}Leg", f"mixamorig:{s}UpLeg"),
        (f"mixamorig:{s}Foot", f"mixamorig:{s}Leg"), (f"mixamorig:{s}ToeBase", f"mixamorig:{s}Foot")]]
CMU = [("Hips", None), ("LowerBack", "Hips"), ("Spine", "LowerBack"), ("Spine1", "Spine"), ("Neck", "Spine1"),
       ("Neck1", "Neck"), ("Head", "Neck1")] + [
    item for s, c in (("Left", "L"), ("Right", "R")) for item in [
        (f"{s}Shoulder", "Spine1"), (f"{s}Arm", f"{s}Shoulder"), (f"{s}ForeArm", f"{s}Arm"),
        (f"{s}Hand", f"{s}ForeArm"), (f"{s}FingerBase", f"{s}Hand"), (f"{c}Thumb", f"{s}Hand"),
        (f"{c}HipJoint", "Hips"), (f"{s}UpLeg", f"{c}HipJoint"), (f"{s}Leg", f"{s}UpLeg"),
        (f"{s}Foot", f"{s}Leg"), (f"{s}ToeBase", f"{s}Foot")]]
RIGIFY = [("root", None), ("DEF-spine", "root"), ("DEF-spine.001", "DEF-spine"), ("DEF-spine.002", "DEF-spine.001"),
          ("DEF-spine.003", "DEF-spine.002"), ("DEF-spine.004", "DEF-spine.003"), ("DEF-spine.005", "DEF-spine.004"),
          ("DEF-spine.006", "DEF-spine.005")] + [
    item for s in ("L", "R") for item in [
        (f"DEF-shoulder.{s}", "DEF-spine.003"), (f"DEF-upper_arm.{s}", f"DEF-shoulder.{s}"),
        (f"DEF-upper_arm.{s}.001", f"DEF-upper_arm.{s}"), (f"DEF-forearm.{s}", f"DEF-upper_arm.{s}.001"),
        (f"DEF-forearm.{s}.001", f"DEF-forearm.{s}"), (f"DEF-hand.{s}", f"DEF-forearm.{s}.001"),
        (f"DEF-pelvis.{s}", "DEF-spine"), (f"DEF-thigh.{s}", "DEF-spine"), (f"DEF-thigh.{s}.001", f"DEF-thigh.{s}"),
        (f"DEF-shin.{s}", f"DEF-thigh.{s}.001"), (f"DEF-foot.{s}", f"DEF-shin.{s}"), (f"DEF-toe.{s}", f"DEF-foot.{s}")]]
SMPL = [("pelvis", None), ("spine1", "pelvis"), ("spine2", "spine1"), ("spine3", "spine2"), ("neck", "spine3"),
        ("head", "neck")] + [
    item for s in ("left", "right") for item in [
        (f"{s}_hip", "pelvis"), (f"{s}_knee", f"{s}_hip"), (f"{s}_ankle", f"{s}_knee"), (f"{s}_foot", f"{s}_ankle"),
        (f"{s}_collar", "spine3"), (f"{s}_shoulder", f"{s}_collar"), (f"{s}_elbow", f"{s}_shoulder"),
        (f"{s}_wrist", f"{s}_elbow")]]
VRM = [("J_Bip_C_Hips", None), ("J_Bip_C_Spine", "J_Bip_C_Hips"), ("J_Bip_C_Chest", "J_Bip_C_Spine"),
       ("J_Bip_C_UpperChest", "J_Bip_C_Chest"), ("J_Bip_C_Neck", "J_Bip_C_UpperChest"),
       ("J_Bip_C_Head", "J_Bip_C_Neck")] + [
    item for s in ("L", "R") for item in [
        (f"J_Bip_{s}_Shoulder", "J_Bip_C_UpperChest"), (f"J_Bip_{s}_UpperArm", f"J_Bip_{s}_Shoulder"),
        (f"J_Bip_{s}_LowerArm", f"J_Bip_{s}_UpperArm"), (f"J_Bip_{s}_Hand", f"J_Bip_{s}_LowerArm"),
        (f"J_Bip_{s}_UpperLeg", "J_Bip_C_Hips"), (f"J_Bip_{s}_LowerLeg", f"J_Bip_{s}_UpperLeg"),
        (f"J_Bip_{s}_Foot", f"J_Bip_{s}_LowerLeg"), (f"J_Bip_{s}_ToeBase", f"J_Bip_{s}_Foot")]]
UNITY = [("Hips", None), ("Spine", "Hips"), ("Chest", "Spine"), ("Neck", "Chest"), ("Head", "Neck")] + [
    item for s in ("Left", "Right") for item in [
        (f"{s}Shoulder", "Chest"), (f"{s}UpperArm", f"{s}Shoulder"), (f"{s}LowerArm", f"{s}UpperArm"),
        (f"{s}Hand", f"{s}LowerArm"), (f"{s}UpperLeg", "Hips"), (f"{s}LowerLeg", f"{s}UpperLeg"),
        (f"{s}Foot", f"{s}LowerLeg"), (f"{s}Toes", f"{s}Foot")]]

LAFAN = [("Hips", None)] + [
    item for s in ("Left", "Right") for item in [
        (f"{s}UpLeg", "Hips"), (f"{s}Leg", f"{s}UpLeg"), (f"{s}Foot", f"{s}Leg"), (f"{s}Toe", f"{s}Foot")]] + [
    ("Spine", "Hips"), ("Spine1", "Spine"), ("Spine2", "Spine1"), ("Neck", "Spine2"), ("Head", "Neck")] + [
    item for s in ("Left", "Right") for item in [
        (f"{s}Shoulder", "Spine2"), (f"{s}Arm", f"{s}Shoulder"), (f"{s}ForeArm", f"{s}Arm"), (f"{s}Hand", f"{s}ForeArm")]]

CASES = {
    "lafan1": (LAFAN, "mixamo_cmu_lafan", {"chest": "Spine2", "l_toes": "LeftToe", "r_thigh": "RightUpLeg"}),
    "mixamo": (MIXAMO, "mixamo_cmu_lafan", {"chest": "mixamorig:Spine2", "l_upper_arm": "mixamorig:LeftArm",
                                             "r_shin": "mixamorig:RightLeg", "l_toes": "mixamorig:LeftToeBase"}),
    "cmu": (CMU, "mixamo_cmu_lafan", {"spine": "Spine", "chest": "Spine1", "l_thigh": "LeftUpLeg",
                                      "r_forearm": "RightForeArm", "r_toes": "RightToeBase"}),
    "rigify": (RIGIFY, "rigify", {"hips": "DEF-spine", "chest": "DEF-spine.003", "neck": "DEF-spine.004",
                                  "head": "DEF-spine.006", "l_upper_arm": "DEF-upper_arm.L", "r_toes": "DEF-toe.R"}),
    "smpl": (SMPL, "smpl", {"hips": "pelvis", "l_shoulder": "left_collar", "l_upper_arm": "left_shoulder",
                            "r_hand": "right_wrist", "r_foot": "right_ankle", "r_toes": "right_foot"}),
    "vrm": (VRM, "humanoid", {"hips": "J_Bip_C_Hips", "chest": "J_Bip_C_Chest", "l_forearm": "J_Bip_L_LowerArm",
                              "r_toes": "J_Bip_R_ToeBase"}),
    "unity": (UNITY, "humanoid", {"l_upper_arm": "LeftUpperArm", "r_shin": "RightLowerLeg", "l_toes": "LeftToes"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_conventions(case):
    edges, convention, expected = CASES[case]
    skeleton = build(edges)
    mapping = find_mapping(skeleton)
    assert mapping.convention == convention
    assert sorted(mapping.joints) == sorted(CANONICAL_JOINTS)
    names = mapping.names(skeleton.names)
    for canonical, joint in expected.items():
        assert names[canonical] == joint
    # Left and right are never swapped.
    for canonical, joint in names.items():
        if canonical[:2] in ("l_", "r_"):
            assert split_side(joint)[0] == canonical[0]


def test_names_are_case_insensitive():
    upper = build([(n.upper(), p.upper() if p else None) for n, p in UNITY])
    assert find_mapping(upper).names(upper.names)["l_hand"] == "LEFTHAND"


@pytest.mark.parametrize("fixture", ["walk1", "walk2"])
def test_bandai(fixture, request):
    skeleton = request.getfixturevalue(fixture).skeleton
    names = find_mapping(skeleton).names(skeleton.names)
    assert names["hips"] == "Hips" and names["l_forearm"] == "LowerArm_L" and names["r_thigh"] == "UpperLeg_R"
    assert names["l_toes"] == "Toes_L" and names["chest"] == "Chest"


def test_missing_joints_are_listed():
    no_feet = build([(n, p) for n, p in UNITY if "Foot" not in n and "Toes" not in n])
    with pytest.raises(HumanoidMappingError) as caught:
        find_mapping(no_feet)
    # Toes are optional (a rig may have none); feet are required.
    assert "joints: l_foot, r_foot (" in str(caught.value) and "closest naming convention: humanoid" in str(caught.value)


def test_json_override(tmp_path, walk1):
    path = tmp_path / "mapping.json"
    path.write_text(json.dumps({"head": "Head", "neck": "Neck"}))
    mapping = find_mapping(walk1.skeleton, path)
    assert mapping.names(walk1.skeleton.names)["neck"] == "Neck" and mapping.convention == "humanoid + override"
    with pytest.raises(HumanoidMappingError, match=r"chest \(Spine\) is not below spine \(Spine\)"):
        find_mapping(walk1.skeleton, {"chest": "Spine"})
    # An override that breaks the hierarchy is refused, naming the problem.
    with pytest.raises(HumanoidMappingError, match=r"l_hand \(LowerArm_L\) is not below l_forearm \(Hand_L\)"):
        find_mapping(walk1.skeleton, {"l_forearm": "Hand_L", "l_hand": "LowerArm_L"})
    with pytest.raises(HumanoidMappingError, match="no joint of that name"):
        find_mapping(walk1.skeleton, {"chest": "Torso"})
    with pytest.raises(HumanoidMappingError, match="unknown canonical joints: torso"):
        find_mapping(walk1.skeleton, {"torso": "Chest"})
    path.write_text("[1, 2]")
    with pytest.raises(HumanoidMappingError, match="JSON object"):
        find_mapping(walk1.skeleton, path)


def test_override_completes_an_unusual_rig():
    odd = build([("pelvis_bone", None), ("torso_low", "pelvis_bone"), ("torso_high", "torso_low"),
                 ("neck", "torso_high"), ("head", "neck")] + [
        item for s in ("Left", "Right") for item in [
            (f"{s}Shoulder", "torso_high"), (f"{s}UpperArm", f"{s}Shoulder"), (f"{s}LowerArm", f"{s}UpperArm"),
            (f"{s}Hand", f"{s}LowerArm"), (f"{s}UpperLeg", "pelvis_bone"), (f"{s}LowerLeg", f"{s}UpperLeg"),
            (f"{s}Foot", f"{s}LowerLeg"), (f"{s}Toes", f"{s}Foot")]])
    with pytest.raises(HumanoidMappingError, match="lacks required humanoid joints: hips, spine "):
        find_mapping(odd)
    mapping = find_mapping(odd, {"hips": "pelvis_bone", "spine": "torso_low", "chest": "torso_high"})
    assert len(mapping.joints) == 21


def test_split_side():
    assert split_side("mixamorig:LeftForeArm") == ("l", "forearm")
    assert split_side("DEF-upper_arm.R.001") == ("r", "upperarm001")
    assert split_side("LHipJoint") == ("l", "hipjoint")
    assert split_side("LowerBack") == ("", "lowerback")
    assert split_side("m_avg_R_Collar") == ("r", "collar")


# --- Real third-party rigs (../shared/rigs), imported with Blender's own importers --------------------------------

# Each rig's facing in core's frame (+Y up), from ../shared/rigs/README.md ("faces": Blender's -Y is core's +Z).
FACING = {"vrm0_cryptovoxels.vrm": (0.0, 0.0, -1.0)}


def import_rig(bpy, path: Path):
    """(names, parents, heads, tails, rotations) of the file's armature at rest in core's frame (+Y up)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    if path.suffix == ".fbx":
        bpy.ops.import_scene.fbx(filepath=str(path))
    else:
        bpy.ops.import_scene.gltf(filepath=str(path))
    obj = max((o for o in bpy.data.objects if o.type == 'ARMATURE'), key=lambda o: len(o.data.bones))
    world = np.array(obj.matrix_world)
    to_core = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])  # Blender (x, y, z) -> (x, z, -y)
    bones = list(obj.data.bones)
    names = [b.name for b in bones]
    parents = np.array([names.index(b.parent.name) if b.parent else -1 for b in bones])

    def place(points):
        return (np.array(points) @ world[:3, :3].T + world[:3, 3]) @ to_core.T

    turn = to_core @ world[:3, :3] / np.linalg.norm(world[:3, :3], axis=0)
    rotations = np.array([quat.from_matrix(turn @ np.array(b.matrix_local.to_3x3().normalized())) for b in bones])
    return names, parents, place([b.head_local for b in bones]), place([b.tail_local for b in bones]), rotations


@pytest.fixture(scope="module")
def rigs(bpy):
    if not shared_exists(RIGS):
        pytest.skip(f"the shared rigs are missing: expected {RIGS} beside the repository")
    found = {path.name: import_rig(bpy, path) for path in sorted(RIGS.iterdir())
             if path.suffix in (".glb", ".vrm", ".fbx")}
    bpy.ops.wm.read_homefile(use_empty=True)
    return found


def rig_mapping(rig, tails=True):
    names, parents, heads, bone_tails, rotations = rig
    skeleton = rig_skeleton(names, parents, heads)
    return skeleton, find_mapping(skeleton, tails=bone_tails if tails else None)


# Per rig: the convention reported, bones expected for some joints (None: the rig has no such bone).
RIG_CASES = {
    "quaternius_ual1_mannequin.glb": ("rigify", {
        "hips": "DEF-hips", "spine": "DEF-spine.001", "chest": "DEF-spine.003", "neck": "DEF-neck", "head": "DEF-head",
        "l_shoulder": "DEF-shoulder.L", "l_upper_arm": "DEF-upper_arm.L", "r_hand": "DEF-hand.R",
        "l_thigh": "DEF-thigh.L", "r_shin": "DEF-shin.R", "l_foot": "DEF-foot.L", "r_toes": "DEF-toe.R"}),
    "gdquest_mannequiny.glb": ("unreal", {
        "hips": "pelvis", "spine": "spine_01", "chest": "spine_02", "neck": "neck_01", "l_shoulder": "clavicle.l",
        "l_upper_arm": "upperarm.l", "r_forearm": "lowerarm.r", "l_thigh": "thigh.l", "r_shin": "calf.r",
        "l_foot": "foot.l", "r_toes": "ball.r"}),
    "quaternius_male_casual.fbx": ("humanoid + structure", {
        "hips": "Body", "spine": "Abdomen", "chest": "Torso", "neck": "Neck", "head": "Head",
        "l_shoulder": "Shoulder.L", "l_upper_arm": "UpperArm.L", "l_forearm": "LowerArm.L", "r_hand": "Palm.R",
        "l_thigh": "UpperLeg.L", "r_shin": "LowerLeg.R", "l_foot": "Foot.L", "r_foot": "Foot.R",
        "l_toes": None, "r_toes": None}),
    "vrm0_cryptovoxels.vrm": (None, {
        "hips": "Hips", "spine": "Spine", "chest": "Chest", "neck": "Neck", "head": "Head",
        "l_shoulder": "Left shoulder", "l_upper_arm": "Left arm", "l_forearm": "Left elbow", "l_hand": "Left wrist",
        "r_thigh": "Right leg", "l_shin": "Left knee", "l_foot": "Left ankle", "r_toes": "Right toe"}),
    "khronos_riggedfigure.glb": ("structure", {
        "hips": "torso_joint_1", "spine": "torso_joint_2", "chest": "torso_joint_3", "neck": "neck_joint_1",
        "head": "neck_joint_2", "l_shoulder": None, "l_upper_arm": "arm_joint_L_1", "l_forearm": "arm_joint_L_2",
        "l_hand": "arm_joint_L_3", "r_thigh": "leg_joint_R_1", "r_shin": "leg_joint_R_2", "r_foot": "leg_joint_R_3",
        "r_toes": "leg_joint_R_5"}),
    # The robot's l- bones sit on its right: the figure's left leg is r-thigh.
    "godot_platformer_robot.glb": (None, {
        "hips": "hip", "spine": "waist", "chest": "chest", "neck": "neck", "head": "head",
        "l_upper_arm": "r-arm", "l_forearm": "r-forearm", "r_upper_arm": "l-arm", "l_hand": None, "r_hand": None,
        "l_thigh": "r-thigh", "l_shin": "r-leg", "l_foot": "r-foot", "r_foot": "l-foot", "l_toes": None}),
}


@pytest.mark.parametrize("rig_file", sorted(RIG_CASES))
def test_real_rigs_map(rigs, rig_file):
    convention, expected = RIG_CASES[rig_file]
    skeleton, mapping = rig_mapping(rigs[rig_file])
    names = mapping.names(skeleton.names)
    assert set(REQUIRED_JOINTS) <= set(names)
    if convention:
        assert mapping.convention == convention
    for joint, bone in expected.items():
        assert names.get(joint) == bone, (joint, names.get(joint), bone)
    # Left is on the figure's left (its facing from the rigs' README), and no control bone is picked.
    heads = rigs[rig_file][2]
    left = np.cross([0.0, 1.0, 0.0], FACING.get(rig_file, (0.0, 0.0, 1.0)))
    for part in ("thigh", "upper_arm", "foot"):
        assert (heads[mapping[f"l_{part}"]] - heads[mapping[f"r_{part}"]]) @ left > 0.05
    assert not [bone for bone in names.values() if is_control(bone)]
    # The add-on's path (bone tails along each bone's rest axis, TargetSkeleton.build) finds the same mapping.
    names_, parents, rest_heads, _, rotations = rigs[rig_file]
    assert TargetSkeleton.build(names_, parents, rest_heads, rotations).mapping.joints == mapping.joints


def test_rig_guesses_are_reported(rigs):
    _, ual1 = rig_mapping(rigs["quaternius_ual1_mannequin.glb"])
    assert ual1.guessed == () and ual1.notes == ""
    _, khronos = rig_mapping(rigs["khronos_riggedfigure.glb"])
    assert set(khronos.guessed) == set(khronos.joints)  # numbered names confirm nothing
    _, robot = rig_mapping(rigs["godot_platformer_robot.glb"])
    assert {"l_thigh", "r_thigh", "l_upper_arm", "r_forearm"} <= set(robot.guessed)
    assert "bones named left (l-thigh" in robot.notes and "sit on the figure's right" in robot.notes
    _, casual = rig_mapping(rigs["quaternius_male_casual.fbx"])
    assert {"hips", "spine", "chest"} == set(casual.guessed)
    assert "the hips are 'Body', where both legs start, not 'Hips'" in casual.notes
    assert "l_foot (Foot.L) is not below l_shin (LowerLeg.L) but starts at its end" in casual.notes
    _, vrm = rig_mapping(rigs["vrm0_cryptovoxels.vrm"])
    assert set(vrm.guessed) == {"l_thigh", "r_thigh"}  # 'Left leg' is Mixamo's word for the shin


def test_robot_sides_come_from_geometry_not_names(rigs):
    """Mirrored left and right: the result follows the facing, whichever way the feet say it is."""
    skeleton, mapping = rig_mapping(rigs["godot_platformer_robot.glb"])
    assert mapping.names(skeleton.names)["l_thigh"] == "r-thigh"
    # Told that the robot faces the other way, the sides swap back to what its names say.
    turned = find_mapping(skeleton, forward=np.array([0.0, 0.0, -1.0]), tails=rigs["godot_platformer_robot.glb"][3])
    assert turned.names(skeleton.names)["l_thigh"] == "l-thigh" and turned.notes == ""
    # Without tails a foot with no toe bone shows no facing: the names' sides are taken, and that is said.
    _, untailed = rig_mapping(rigs["godot_platformer_robot.glb"], tails=False)
    assert untailed.names(skeleton.names)["l_thigh"] == "l-thigh"
    assert "the feet show no facing: left and right taken from the names" in untailed.notes


def test_kenney_chibi_is_refused_in_one_line(rigs):
    names, parents, heads, tails, _ = rigs["kenney_mini_female_a.glb"]
    with pytest.raises(HumanoidMappingError) as caught:
        find_mapping(rig_skeleton(names, parents, heads), tails=tails)
    message = str(caught.value)
    assert "\n" not in message and "lacks required humanoid joints: hips, spine, neck, l_upper_arm" in message
    assert "no elbows, knees or ankles" in message and "arm-left" in message


CMU_3DSMAX = Path(__file__).resolve().parents[1] / "data" / "cmu_3dsmax_names.bvh"


def test_cmu_3ds_max_naming_maps():
    """CMU's "3ds Max-friendly" BVH release: Chest2 carries the collars, LeftHip is the thigh."""
    skeleton = read_bvh(CMU_3DSMAX).skeleton
    mapping = find_mapping(skeleton)
    names = mapping.names(skeleton.names)
    assert mapping.convention == "cmu_3dsmax" and sorted(names) == sorted(CANONICAL_JOINTS) and mapping.guessed == ()
    assert names["hips"] == "Hips" and names["spine"] == "Chest" and names["chest"] == "Chest2"
    assert names["l_shoulder"] == "LeftCollar" and names["l_upper_arm"] == "LeftShoulder"
    assert names["r_hand"] == "RightWrist" and names["l_thigh"] == "LeftHip" and names["r_toes"] == "RightToe"


def test_structure_alone_maps_a_bvh_and_its_mirror():
    """With every name replaced by a number, the structure still finds the joints, left on the figure's left."""
    skeleton = read_bvh(CMU_3DSMAX).skeleton
    numbered = Skeleton(tuple(f"j{k}" for k in range(len(skeleton))), skeleton.parents, skeleton.offsets,
                        skeleton.end_sites)
    mapping = find_mapping(numbered)
    expected = {"hips": "Hips", "spine": "lowerback", "chest": "Chest2", "neck": "Neck", "head": "Head",
                "l_shoulder": "LeftCollar", "l_upper_arm": "LeftShoulder", "l_forearm": "LeftElbow",
                "l_hand": "LeftWrist", "r_thigh": "RightHip", "r_shin": "RightKnee", "r_foot": "RightAnkle",
                "r_toes": "RightToe"}
    assert {c: skeleton.names[j] for c, j in mapping.joints.items() if c in expected} == expected
    assert mapping.convention == "structure" and set(mapping.guessed) == set(CANONICAL_JOINTS)
    # Left and right names swapped: the geometry wins and the mapping says so.
    swapped = Skeleton(tuple(n.replace("Left", "Tmp").replace("Right", "Left").replace("Tmp", "Right")
                             for n in skeleton.names), skeleton.parents, skeleton.offsets, skeleton.end_sites)
    mirrored = find_mapping(swapped)
    assert mirrored.names(swapped.names)["l_thigh"] == "RightHip" and "l_thigh" in mirrored.guessed
    assert "bones named left (LeftHip" in mirrored.notes and "figure's right" in mirrored.notes


def test_optional_joints_left_out_by_override():
    skeleton = read_bvh(CMU_3DSMAX).skeleton
    mapping = find_mapping(skeleton, {"l_toes": "", "r_toes": ""})
    assert "l_toes" not in mapping.joints and mapping["l_foot"] == skeleton.index("LeftAnkle")
    with pytest.raises(HumanoidMappingError, match="leaves out required joints: l_foot"):
        find_mapping(skeleton, {"l_foot": ""})


def test_names_kept_and_structure_adds_only_optional_joints():
    """Names explain every required joint but not the toes: the names stand, the toes come from the structure."""
    skeleton = read_bvh(CMU_3DSMAX).skeleton
    renamed = Skeleton(tuple({"LeftToe": "tip_a", "RightToe": "tip_b"}.get(n, n) for n in skeleton.names),
                       skeleton.parents, skeleton.offsets, skeleton.end_sites)
    mapping = find_mapping(renamed)
    names = mapping.names(renamed.names)
    assert mapping.convention == "cmu_3dsmax + structure" and set(mapping.guessed) == {"l_toes", "r_toes"}
    assert names["l_toes"] == "tip_a" and names["r_toes"] == "tip_b" and names["spine"] == "Chest"


@pytest.mark.parametrize("yaw_deg, scale", [(0.0, 1.0), (90.0, 0.01), (180.0, 100.0), (250.0, 1.0)])
def test_structure_holds_for_any_facing_and_size(yaw_deg, scale):
    """Numbered joints, the figure turned about +Y and scaled, an IK control hanging from the hips to the floor:
    the same joints, left still on the figure's left, the control never picked."""
    skeleton = read_bvh(CMU_3DSMAX).skeleton
    turn = quat.from_axis_rotation("y", np.array(np.radians(yaw_deg)))
    offsets = quat.rotate(np.broadcast_to(turn, (len(skeleton), 4)), skeleton.offsets) * scale
    names = tuple(f"j{k}" for k in range(len(skeleton))) + ("foot_ik_ctrl",)
    control = quat.rotate(turn, np.array([2.0, -35.0, 0.0])) * scale
    turned = Skeleton(names, np.append(skeleton.parents, 0), np.vstack([offsets, control]),
                      tuple((j, tuple(quat.rotate(turn, np.array(o)) * scale)) for j, o in skeleton.end_sites))
    mapping = find_mapping(turned)
    assert {c: skeleton.names[j] for c, j in mapping.joints.items()} == {
        **{c: n for c, n in find_mapping(skeleton).names(skeleton.names).items()}, "spine": "lowerback"}


@pytest.mark.parametrize("prefix", ["Character1_", "Jim_", "rig.", "Studio Guy "])
def test_a_prefix_every_joint_shares_is_read_past(prefix):
    """MotionBuilder's HumanIK export names every joint `Character1_...`; a studio names them after the actor:
    the mapping and the mirror partners are those of the plain names. A VRM's `J_Bip_C_` stays a known prefix."""
    plain = build([(n.split(":")[1], p and p.split(":")[1]) for n, p in MIXAMO])
    named = Skeleton(tuple(prefix + n for n in plain.names), plain.parents, plain.offsets)
    assert find_mapping(named).joints == find_mapping(plain).joints
    assert (mirror_pairs(named.names) == mirror_pairs(plain.names)).all()
    assert (mirror_pairs(plain.names) != np.arange(len(plain.names))).sum() == 18


def test_a_lone_name_or_a_shared_word_without_a_separator_is_no_prefix():
    assert common_prefix(["Hips"]) == "" and common_prefix(["Bip01", "Bip01 Pelvis"]) == ""
    assert common_prefix(["LeftHip", "LeftKnee"]) == "" and common_prefix(["a_b_Hips", "a_b_Leg"]) == "a_b_"
