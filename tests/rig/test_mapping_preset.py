"""Mapping presets: JSON round trip, the built-in presets, a VRM file's own humanoid map, `--mapping` on the CLI."""
import json
import struct
from pathlib import Path

import pytest

from conftest import RIGS, WALK_1, shared_exists
from core.files.bvh import read_bvh
from core.tools.cli import main
from core.rig.humanoid import CANONICAL_JOINTS, HumanoidMappingError, find_mapping
from core.rig.mapping_preset import (builtin_presets, load_preset, mapping_override, preset_for_rig, read_vrm_humanoid,
                                 save_preset)



def test_preset_round_trip(tmp_path, walk1):
    names = find_mapping(walk1.skeleton).names(walk1.skeleton.names)
    path = save_preset(tmp_path / "bandai.json", names, rig="walk1", guessed=["chest"])
    data = json.loads(path.read_text())
    assert data["_rig"] == "walk1" and data["_guessed"] == ["chest"] and list(tmp_path.iterdir()) == [path]
    assert load_preset(path) == names
    assert find_mapping(walk1.skeleton, path).names(walk1.skeleton.names) == names
    with pytest.raises(HumanoidMappingError, match="canonical joints only, not: pelvis"):
        save_preset(tmp_path / "bad.json", {"pelvis": "Hips"})
    assert not (tmp_path / "bad.json").exists()


def test_built_in_presets():
    assert set(builtin_presets()) == {"mixamo", "rigify", "vroid", "unreal"}
    for name in builtin_presets():
        assert set(load_preset(name)) == set(CANONICAL_JOINTS)
    assert load_preset("mixamo")["l_upper_arm"] == "mixamorig:LeftArm"
    assert load_preset("unreal")["r_shin"] == "calf_r" and load_preset("rigify")["hips"] == "DEF-spine"
    # Loose matching: another Mixamo namespace, Blender's '.l' for '_l'; what the rig lacks is reported.
    resolved, unresolved = preset_for_rig(load_preset("mixamo"), ["mixamorig1:Hips", "mixamorig1:LeftArm"])
    assert resolved == {"hips": "mixamorig1:Hips", "l_upper_arm": "mixamorig1:LeftArm"} and len(unresolved) == 19
    assert preset_for_rig({"l_thigh": "thigh_l"}, ["thigh.l", "thigh.r"])[0] == {"l_thigh": "thigh.l"}
    with pytest.raises(HumanoidMappingError, match="neither a JSON mapping file nor a built-in preset"):
        load_preset("mixamo2")


def _glb(document: dict) -> bytes:
    chunk = json.dumps(document).encode()
    chunk += b" " * (-len(chunk) % 4)
    return struct.pack("<III", 0x46546C67, 2, 20 + len(chunk)) + struct.pack("<II", len(chunk), 0x4E4F534A) + chunk


def test_vrm_humanoid_map(tmp_path):
    nodes = [{"name": "root"}, {"name": "Pelvis"}, {"name": "L_Up"}]
    vrm1 = tmp_path / "one.vrm"
    vrm1.write_bytes(_glb({"nodes": nodes, "extensions": {"VRMC_vrm": {"humanoid": {"humanBones": {
        "hips": {"node": 1}, "leftUpperLeg": {"node": 2}, "upperChest": {"node": 0}}}}}}))
    assert read_vrm_humanoid(vrm1) == {"hips": "Pelvis", "l_thigh": "L_Up"}
    plain = tmp_path / "plain.glb"
    plain.write_bytes(_glb({"nodes": nodes}))
    with pytest.raises(HumanoidMappingError, match="no VRM humanoid map"):
        read_vrm_humanoid(plain)
    (tmp_path / "text.vrm").write_text("not glTF")
    with pytest.raises(HumanoidMappingError, match="not a glTF/GLB file"):
        read_vrm_humanoid(tmp_path / "text.vrm")
    if not shared_exists(RIGS / "vrm0_cryptovoxels.vrm"):
        pytest.skip(f"the shared rigs are missing: expected {RIGS}")
    real = read_vrm_humanoid(RIGS / "vrm0_cryptovoxels.vrm")  # VRM 0.x: a list of {bone, node}
    assert set(real) == set(CANONICAL_JOINTS)
    assert real["l_thigh"] == "Left leg" and real["l_forearm"] == "Left elbow" and real["chest"] == "Chest"


def test_mapping_on_the_command_line(tmp_path, capsys):
    cmu = Path(__file__).resolve().parents[1] / "data" / "cmu_3dsmax_names.bvh"
    preset = save_preset(tmp_path / "p.json", {"spine": "lowerback", "chest": "Chest"})
    assert main(["bvh", "info", str(cmu), "--mapping", str(preset), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["files"][0]
    assert report["mapping"]["spine"] == "lowerback" and report["convention"] == "cmu_3dsmax + override"
    assert report["guessed"] == [] and report["notes"] == ""
    skeleton = read_bvh(WALK_1).skeleton
    assert mapping_override("vroid", skeleton.names) == {}  # a built-in preset keeps only what the rig has
    bad = save_preset(tmp_path / "bad.json", {"hips": "Pelvis"})
    assert main(["bvh", "info", str(cmu), "--mapping", str(bad), "--json"]) == 0
    assert "no bone of that name" in json.loads(capsys.readouterr().out)["files"][0]["mapping_error"]
    out = tmp_path / "s.csv"
    assert main(["stream", "simulate", str(cmu), "-o", str(out), "--mapping", str(preset)]) == 0 and out.is_file()
    # Mixamo's LeftShoulder is the collar; in this naming it is the upper arm: the preset is refused, not obeyed.
    assert main(["stream", "simulate", str(cmu), "-o", str(tmp_path / "t.csv"), "--mapping", "mixamo"]) == 1
    assert "l_upper_arm (LeftShoulder) is not below l_shoulder (LeftShoulder)" in capsys.readouterr().err
    assert not (tmp_path / "t.csv").exists()


def test_db_build_keeps_its_mapping(tmp_path):
    from core.matching.pose_database import PoseDatabase

    preset = save_preset(tmp_path / "bandai.json", {"hips": "Hips", "chest": "Chest"})
    database = tmp_path / "db.npz"
    assert main(["db", "build", str(WALK_1), "-o", str(database), "--mapping", str(preset), "--json"]) == 0
    loaded = PoseDatabase.load(database)
    assert loaded.info["mapping"] == {"hips": "Hips", "chest": "Chest"}
    assert loaded.skeleton.names[loaded.mapping["chest"]] == "Chest"


def test_bvh_info_says_which_joints_were_guessed(tmp_path, capsys):
    from dataclasses import replace

    from core.files.bvh import write_bvh
    from core.anim.skeleton import Skeleton

    motion = read_bvh(Path(__file__).resolve().parents[1] / "data" / "cmu_3dsmax_names.bvh")
    swapped = tuple(n.replace("Left", "Tmp").replace("Right", "Left").replace("Tmp", "Right")
                    for n in motion.skeleton.names)
    skeleton = Skeleton(swapped, motion.skeleton.parents, motion.skeleton.offsets, motion.skeleton.end_sites)
    write_bvh(tmp_path / "mirrored.bvh", replace(motion, skeleton=skeleton))
    assert main(["bvh", "info", str(tmp_path / "mirrored.bvh")]) == 0
    out = capsys.readouterr().out
    assert "l_thigh=RightHip (guessed)" in out and "note: bones named left (LeftHip" in out
