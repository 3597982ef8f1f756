"""Humanoid mapping (SPEC §6) on real Bandai skeletons and on skeletons named after other conventions."""
import json

import numpy as np
import pytest

from core.humanoid import CANONICAL_JOINTS, HumanoidMappingError, find_mapping, split_side
from core.skeleton import Skeleton


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
