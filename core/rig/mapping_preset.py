"""Mapping presets: a rig's humanoid mapping kept as JSON, the built-in presets, and a VRM file's own humanoid map.

A preset is the JSON object `find_mapping` reads as an override, {canonical joint: bone name},
plus metadata keys starting with '_' (`_preset` a label, `_rig`, `_convention`, `_guessed`,
`_notes`) that loading leaves out. A bone name '' leaves an optional joint out. Built-in presets
live in assets/mapping_presets/<name>.json (Mixamo, Rigify, VRoid, Unreal). A preset is matched
to a rig's bones by exact name, else loosely: case, namespace (`mixamorig1:`) and the separators
`. _ - space` do not matter, so `clavicle_l` finds Mannequiny's `clavicle.l`.

VRM files (glTF binary) name their humanoid bones themselves: `extensions.VRM.humanoid.humanBones`
(VRM 0.x, a list of {bone, node}) or `extensions.VRMC_vrm.humanoid.humanBones` (VRM 1.0, {bone:
{node}}); the nodes' names are the bones Blender's glTF importer creates.
"""
from __future__ import annotations

import json
import re
import struct
from pathlib import Path

from ..assets import asset
from ..files.atomic import write_text
from .humanoid import CANONICAL_JOINTS, HumanoidMappingError, load_override
from ..files.json_value import json_value

BUILTIN = asset("mapping_presets")
VRM_BONES = {"hips": "hips", "spine": "spine", "chest": "chest", "neck": "neck", "head": "head",
             **{f"{side}{part}": f"{s}_{joint}" for side, s in (("left", "l"), ("right", "r")) for part, joint in (
                 ("Shoulder", "shoulder"), ("UpperArm", "upper_arm"), ("LowerArm", "forearm"), ("Hand", "hand"),
                 ("UpperLeg", "thigh"), ("LowerLeg", "shin"), ("Foot", "foot"), ("Toes", "toes"))}}
"""VRM humanoid bone -> canonical joint (VRM's upperChest and fingers have no canonical joint)."""
GLB_MAGIC, GLB_JSON = 0x46546C67, 0x4E4F534A


def builtin_presets() -> dict[str, str]:
    """Built-in preset name -> its label, e.g. 'mixamo' -> 'Adobe Mixamo (mixamorig:)'."""
    return {path.stem: json_value(path.read_text()).get("_preset", path.stem)
            for path in sorted(BUILTIN.glob("*.json"))}


def load_preset(source: str | Path) -> dict[str, str]:
    """{canonical joint: bone name} from a built-in preset's name, a JSON preset, or a .vrm/.glb/.gltf file's VRM map."""
    path = Path(source)
    if str(source) in builtin_presets():
        return load_override(BUILTIN / f"{source}.json")
    if path.suffix.lower() in (".vrm", ".glb", ".gltf"):
        return read_vrm_humanoid(path)
    if not path.is_file() and path.suffix.lower() != ".json":
        raise HumanoidMappingError(f"{source}: neither a JSON mapping file nor a built-in preset "
                                   f"({', '.join(builtin_presets())})")
    return load_override(path)


def save_preset(path: str | Path, bones: dict[str, str], **metadata) -> Path:
    """Write {canonical joint: bone name} (and metadata as '_key' entries) as a JSON preset, atomically."""
    path = Path(path)
    unknown = sorted(set(bones) - set(CANONICAL_JOINTS))
    if unknown:
        raise HumanoidMappingError(f"a mapping preset holds canonical joints only, not: {', '.join(unknown)}")
    data = {f"_{key}": value for key, value in metadata.items() if value not in (None, "", (), [])}
    data.update({joint: bones[joint] for joint in CANONICAL_JOINTS if joint in bones})
    write_text(path, json.dumps(data, indent=2) + "\n")
    return path


def _loose(name: str) -> str:
    """A bone name with case, namespace, Mixamo's prefix and separators ignored."""
    name = re.split(r"[:|]", name)[-1].lower()
    return re.sub(r"[._\s-]+", "_", re.sub(r"^mixamorig\d*_", "", name))


def preset_for_rig(preset: dict[str, str], bone_names) -> tuple[dict[str, str], list[str]]:
    """(the preset's bones as the rig names them, the preset's joints whose bone the rig lacks)."""
    exact = set(bone_names)
    loose = {}
    for name in bone_names:
        loose.setdefault(_loose(name), name)
    resolved, unresolved = {}, []
    for joint, bone in preset.items():
        found = bone if (bone in exact or not bone) else loose.get(_loose(bone))
        if found is None:
            unresolved.append(joint)
        else:
            resolved[joint] = found
    return resolved, unresolved


def mapping_override(source: str | Path | None, bone_names) -> dict[str, str]:
    """The override `--mapping` gives for a skeleton: a built-in preset keeps the joints the rig has (the rest
    are matched as usual); a file must name bones the skeleton has."""
    if source is None:
        return {}
    resolved, unresolved = preset_for_rig(load_preset(source), bone_names)
    if unresolved and str(source) not in builtin_presets():
        preset = load_preset(source)
        raise HumanoidMappingError(f"{source}: {unresolved[0]} -> {preset[unresolved[0]]!r}, but the skeleton has no "
                                   f"bone of that name" + (f" (and {len(unresolved) - 1} more)" if len(unresolved) > 1 else ""))
    return resolved


def read_gltf_json(path: str | Path) -> dict:
    """The JSON part of a glTF file: a .gltf's text, or a .glb/.vrm's first chunk."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise HumanoidMappingError(f"{path}: cannot read: {error}") from None
    try:
        if data[:4] == b"glTF":
            magic, _, _ = struct.unpack_from("<III", data, 0)
            length, kind = struct.unpack_from("<II", data, 12)
            if magic != GLB_MAGIC or kind != GLB_JSON:
                raise ValueError("the first chunk is not JSON")
            return json_value(data[20:20 + length])
        return json_value(data)
    except (ValueError, struct.error, UnicodeDecodeError) as error:
        raise HumanoidMappingError(f"{path}: not a glTF/GLB file: {error}") from None


def read_vrm_humanoid(path: str | Path) -> dict[str, str]:
    """{canonical joint: node name} from a VRM file's own humanoid map (VRM 0.x or 1.0); a map of another shape
    than VRM's (lists where objects belong, and so on) is refused in one line naming the file."""
    try:
        return _vrm_humanoid(path, read_gltf_json(path))
    except (AttributeError, TypeError) as error:
        raise HumanoidMappingError(f"{path}: its VRM humanoid map is not shaped as VRM's ({error})") from None


def _vrm_humanoid(path, gltf: dict) -> dict[str, str]:
    extensions = gltf.get("extensions", {})
    nodes = gltf.get("nodes", [])
    if "VRMC_vrm" in extensions:
        bones = {bone: entry.get("node") for bone, entry in extensions["VRMC_vrm"].get("humanoid", {})
                 .get("humanBones", {}).items()}
    elif "VRM" in extensions:
        bones = {entry.get("bone"): entry.get("node") for entry in extensions["VRM"].get("humanoid", {})
                 .get("humanBones", [])}
    else:
        raise HumanoidMappingError(f"{path}: has no VRM humanoid map (no VRM or VRMC_vrm extension)")
    mapping = {}
    for bone, node in bones.items():
        if bone in VRM_BONES and isinstance(node, int) and 0 <= node < len(nodes):
            mapping[VRM_BONES[bone]] = nodes[node].get("name", f"node{node}")
    if not mapping:
        raise HumanoidMappingError(f"{path}: its VRM humanoid map names no bones")
    return mapping
