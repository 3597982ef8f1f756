"""Humanoid mapping: the canonical joints of SPEC §6 and matching them to any skeleton's joint names.

A joint name is reduced to a side (left, right or centre) and a core word: prefixes such as
`mixamorig:`, `DEF-`, `J_Bip_L_` or `m_avg_` are dropped, side tokens (`Left`, `_L`, `.L`, `L_`)
are read off, and what remains is lower-cased without separators. Each naming convention then
lists, per canonical joint, the core words it uses in order of preference. The convention that
explains the most canonical joints wins, and its choices must respect the hierarchy (a forearm
below its upper arm, and so on).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CENTRE_JOINTS = ("hips", "spine", "chest", "neck", "head")
SIDED_JOINTS = ("shoulder", "upper_arm", "forearm", "hand", "thigh", "shin", "foot", "toes")
CANONICAL_JOINTS = CENTRE_JOINTS + tuple(f"{side}_{j}" for side in "lr" for j in SIDED_JOINTS)
UPPER_BODY = ("spine", "chest", "neck", "head") + tuple(
    f"{s}_{j}" for s in "lr" for j in ("shoulder", "upper_arm", "forearm", "hand"))
LOWER_BODY = ("hips",) + tuple(f"{s}_{j}" for s in "lr" for j in ("thigh", "shin", "foot", "toes"))

# Each chain must appear in this order from ancestor to descendant.
CHAINS = [("hips", "spine", "chest", "neck", "head")] + [
    tuple(f"{s}_{j}" for j in chain) for s in "lr"
    for chain in (("chest", "shoulder", "upper_arm", "forearm", "hand"), ("hips", "thigh", "shin", "foot", "toes"))
]

# Per convention: canonical joint (side-less) -> core words, preferred first.
CONVENTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    # Bandai-Namco, Unity Mecanim and VRM humanoid (UpperArm, LowerArm, UpperLeg, LowerLeg, Toes).
    "humanoid": {
        "hips": ("hips", "pelvis"), "spine": ("spine",), "chest": ("chest", "upperchest"),
        "neck": ("neck",), "head": ("head",), "shoulder": ("shoulder", "clavicle"),
        "upper_arm": ("upperarm",), "forearm": ("lowerarm", "forearm"), "hand": ("hand",),
        "thigh": ("upperleg",), "shin": ("lowerleg",), "foot": ("foot",), "toes": ("toes", "toebase", "toe"),
    },
    # Mixamo, CMU (cgspeed BVH) and LaFAN1: Arm, ForeArm, UpLeg, Leg, ToeBase / Toe.
    "mixamo_cmu_lafan": {
        "hips": ("hips",), "spine": ("spine",), "chest": ("spine2", "spine1"),
        "neck": ("neck",), "head": ("head",), "shoulder": ("shoulder",),
        "upper_arm": ("arm",), "forearm": ("forearm",), "hand": ("hand",),
        "thigh": ("upleg",), "shin": ("leg",), "foot": ("foot",), "toes": ("toebase", "toe"),
    },
    # Blender Rigify deform bones: DEF-spine ... DEF-spine.006, DEF-upper_arm.L, DEF-thigh.L, DEF-toe.L.
    "rigify": {
        "hips": ("spine",), "spine": ("spine001",), "chest": ("spine003", "spine002"),
        "neck": ("spine004",), "head": ("spine006", "spine005"), "shoulder": ("shoulder",),
        "upper_arm": ("upperarm",), "forearm": ("forearm",), "hand": ("hand",),
        "thigh": ("thigh",), "shin": ("shin",), "foot": ("foot",), "toes": ("toe",),
    },
    # SMPL / SMPL-H / SMPL-X: the "shoulder" is the upper arm, the collar is the shoulder.
    "smpl": {
        "hips": ("pelvis",), "spine": ("spine1",), "chest": ("spine3", "spine2"),
        "neck": ("neck",), "head": ("head",), "shoulder": ("collar",),
        "upper_arm": ("shoulder",), "forearm": ("elbow",), "hand": ("wrist",),
        "thigh": ("hip",), "shin": ("knee",), "foot": ("ankle",), "toes": ("foot",),
    },
}

# Rig prefixes that carry no meaning for matching (Rigify deform, VRM, SMPL exports, Biped, CC).
_PREFIXES = re.compile(r"^(mixamorig\d*_|def[-_]|j_bip_c_|j_bip_|m_avg_|f_avg_|bip0*1[ _]?|cc_base_)")


class HumanoidMappingError(ValueError):
    """A skeleton cannot be mapped onto the canonical humanoid joints."""


def split_side(name: str) -> tuple[str, str]:
    """('l' | 'r' | '', core word) for a joint name, e.g. 'mixamorig:LeftForeArm' -> ('l', 'forearm')."""
    lowered = _PREFIXES.sub("", re.split(r"[:|]", name)[-1].lower())
    side = ""
    # Left/Right as a word at the start: LeftArm, left_hip, Left Arm.
    match = re.match(r"^(left|right)", lowered)
    if match:
        side = match.group(1)[0]
        lowered = lowered[match.end():]
    else:
        # A single-letter side token at the start or end, or between separators: L_Hip, Shoulder_L,
        # upper_arm.L, upper_arm.L.001, J_Bip_L_UpperArm (after the prefix), LHipJoint (CMU).
        match = (re.match(r"^([lr])[_.\s-]", lowered) or re.search(r"[_.\s-]([lr])(?=$|[_.\s-]\d+$)", lowered)
                 or re.search(r"[_.\s-]([lr])[_.\s-]", lowered))
        if match:
            side = match.group(1)
            lowered = lowered[:match.start(1)] + lowered[match.end(1):]
        elif re.match(r"^[lr](hipjoint|thumb|hand|foot|upleg|arm)", lowered):
            side, lowered = lowered[0], lowered[1:]
    core = re.sub(r"[^a-z0-9]", "", lowered)
    return side, core


def mirror_pairs(names) -> np.ndarray:
    """For each joint, the index of its left/right partner (itself for centre joints)."""
    keys = [split_side(n) for n in names]
    lookup = {k: i for i, k in enumerate(keys)}
    pairs = np.arange(len(names))
    for i, (side, core) in enumerate(keys):
        if side:
            partner = lookup.get(("r" if side == "l" else "l", core))
            if partner is None:
                raise ValueError(f"joint {names[i]!r} has no {'right' if side == 'l' else 'left'} partner")
            pairs[i] = partner
    return pairs


@dataclass(frozen=True)
class HumanoidMapping:
    """Canonical joint name -> index into a skeleton, with the convention that produced it."""

    joints: dict[str, int]
    convention: str

    def __getitem__(self, canonical: str) -> int:
        return self.joints[canonical]

    def indices(self, canonical_names=CANONICAL_JOINTS) -> np.ndarray:
        return np.array([self.joints[c] for c in canonical_names])

    def names(self, skeleton_names) -> dict[str, str]:
        return {c: skeleton_names[j] for c, j in self.joints.items()}


def _match_convention(keys, table) -> dict[str, int]:
    found: dict[str, int] = {}
    for canonical in CANONICAL_JOINTS:
        side, base = (canonical[0], canonical[2:]) if canonical[:2] in ("l_", "r_") else ("", canonical)
        for word in table[base]:
            hits = [i for i, k in enumerate(keys) if k == (side, word)]
            if hits:
                found[canonical] = hits[0]
                break
    return found


def _hierarchy_problems(skeleton, joints: dict[str, int]) -> list[str]:
    problems = []
    for chain in CHAINS:
        present = [c for c in chain if c in joints]
        for upper, lower in zip(present, present[1:]):
            if not skeleton.is_ancestor(joints[upper], joints[lower]) or joints[upper] == joints[lower]:
                problems.append(f"{lower} ({skeleton.names[joints[lower]]}) is not below "
                                f"{upper} ({skeleton.names[joints[upper]]})")
    return problems


def find_mapping(skeleton, override: dict[str, str] | str | Path | None = None,
                 required=CANONICAL_JOINTS) -> HumanoidMapping:
    """Match a skeleton's joints to the canonical humanoid; `override` (a dict or JSON file) wins.

    Raises HumanoidMappingError naming every required joint it could not find.
    """
    override = load_override(override) if isinstance(override, (str, Path)) else dict(override or {})
    unknown = sorted(set(override) - set(CANONICAL_JOINTS))
    if unknown:
        raise HumanoidMappingError(f"mapping override names unknown canonical joints: {', '.join(unknown)}; "
                                   f"canonical joints are {', '.join(CANONICAL_JOINTS)}")
    keys = [split_side(n) for n in skeleton.names]
    best_name, best = max(((name, _match_convention(keys, table)) for name, table in CONVENTIONS.items()),
                          key=lambda item: (len(item[1]) - len(_hierarchy_problems(skeleton, item[1]))))
    joints = dict(best)
    for canonical, joint_name in override.items():
        if joint_name not in skeleton.names:
            raise HumanoidMappingError(f"mapping override: {canonical} -> {joint_name!r}, but the skeleton has "
                                       f"no joint of that name")
        joints[canonical] = skeleton.names.index(joint_name)
    missing = [c for c in required if c not in joints]
    if missing:
        raise HumanoidMappingError(f"skeleton lacks required humanoid joints: {', '.join(missing)} "
                                   f"(closest naming convention: {best_name}; give a JSON mapping to override)")
    problems = _hierarchy_problems(skeleton, joints)
    if problems:
        raise HumanoidMappingError("humanoid mapping contradicts the hierarchy: " + "; ".join(problems))
    return HumanoidMapping(joints, best_name + (" + override" if override else ""))


def load_override(path: str | Path) -> dict[str, str]:
    """A JSON object {canonical joint: skeleton joint name}."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise HumanoidMappingError(f"{path}: cannot read the joint mapping: {reason}") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise HumanoidMappingError(f"{path}: a joint mapping is a JSON object of canonical name -> joint name")
    return data
