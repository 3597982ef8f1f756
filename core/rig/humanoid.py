"""Humanoid mapping: the canonical joints of SPEC §6 and matching them to any skeleton's joint names.

A joint name is reduced to a side (left, right or centre) and a core word: the prefix every name shares
(`Character1_`) and prefixes such as `mixamorig:`, `DEF-`, `J_Bip_L_` or `m_avg_` are dropped, side tokens (`Left`, `_L`, `.L`, `L_`)
are read off, and what remains is lower-cased without separators. Each naming convention then
lists, per canonical joint, the core words it uses in order of preference. The convention that
explains the most canonical joints wins, and its choices must respect the hierarchy (a forearm
below its upper arm, and so on).

Names are trusted when they explain every canonical joint, respect the hierarchy and put the
left-named limbs on the figure's left. Otherwise the joints are read off the hierarchy and rest
geometry (humanoid_structure.py), names breaking ties inside a chain; the mapping then lists the
joints so `guessed` (placed by structure, not confirmed by a name) and says in `notes` what it
overruled. Optional joints (chest, shoulders, hands, toes) are left out when the rig has none.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..anim.sides import side_keys
from ..errors import MappingError
from ..files.json_value import json_value
from .humanoid_structure import bone_ends, facing, is_control, is_upright, left_axis, read_structure, sides_agree

CENTRE_JOINTS = ("hips", "spine", "chest", "neck", "head")
OPTIONAL_JOINTS = ("chest", "l_shoulder", "r_shoulder", "l_hand", "r_hand", "l_toes", "r_toes")
"""Joints a full humanoid may lack: the robot has no hand bones, some rigs no toes or chest."""
SIDED_JOINTS = ("shoulder", "upper_arm", "forearm", "hand", "thigh", "shin", "foot", "toes")
CANONICAL_JOINTS = CENTRE_JOINTS + tuple(f"{side}_{j}" for side in "lr" for j in SIDED_JOINTS)
REQUIRED_JOINTS = tuple(j for j in CANONICAL_JOINTS if j not in OPTIONAL_JOINTS)
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
        "upper_arm": ("upperarm",), "forearm": ("lowerarm", "forearm"), "hand": ("hand", "palm"),
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
        "hips": ("spine", "hips"), "spine": ("spine001",), "chest": ("spine003", "spine002"),
        "neck": ("spine004", "neck"), "head": ("spine006", "spine005", "head"), "shoulder": ("shoulder",),
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
    # Unreal mannequin: pelvis, spine_01.., clavicle_l, upperarm_l, lowerarm_l, thigh_l, calf_l, ball_l.
    "unreal": {
        "hips": ("pelvis",), "spine": ("spine01",), "chest": ("spine03", "spine02"),
        "neck": ("neck01", "neck"), "head": ("head",), "shoulder": ("clavicle",),
        "upper_arm": ("upperarm",), "forearm": ("lowerarm",), "hand": ("hand",),
        "thigh": ("thigh",), "shin": ("calf",), "foot": ("foot",), "toes": ("ball",),
    },
    # CMU's "3ds Max-friendly" BVH release: Hips, lowerback, Chest, Chest2, LeftCollar, LeftShoulder,
    # LeftElbow, LeftWrist, LeftHip, LeftKnee, LeftAnkle, LeftToe (Chest2 carries the collars).
    "cmu_3dsmax": {
        "hips": ("hips",), "spine": ("chest",), "chest": ("chest2",),
        "neck": ("neck",), "head": ("head",), "shoulder": ("collar",),
        "upper_arm": ("shoulder",), "forearm": ("elbow",), "hand": ("wrist",),
        "thigh": ("hip",), "shin": ("knee",), "foot": ("ankle",), "toes": ("toe",),
    },
}

class HumanoidMappingError(MappingError):
    """A skeleton cannot be mapped onto the canonical humanoid joints."""


@dataclass(frozen=True)
class HumanoidMapping:
    """Canonical joint name -> index into a skeleton, with the convention that produced it.

    `joints` leaves out optional joints the skeleton lacks (`"l_toes" in mapping.joints`);
    `guessed` names the joints placed by hierarchy and geometry rather than confirmed by a name,
    `notes` says in words what the structure overruled (sides, hips, a foot outside its leg).
    """

    joints: dict[str, int]
    convention: str
    guessed: tuple[str, ...] = ()
    notes: str = ""

    def __getitem__(self, canonical: str) -> int:
        return self.joints[canonical]

    def indices(self, canonical_names=CANONICAL_JOINTS) -> np.ndarray:
        return np.array([self.joints[c] for c in canonical_names])

    def names(self, skeleton_names) -> dict[str, str]:
        return {c: skeleton_names[j] for c, j in self.joints.items()}


def _base(canonical: str) -> tuple[str, str]:
    """(side, side-less joint) of a canonical joint: 'l_forearm' -> ('l', 'forearm')."""
    return (canonical[0], canonical[2:]) if canonical[:2] in ("l_", "r_") else ("", canonical)


def _match_convention(keys, table, controls) -> dict[str, int]:
    found: dict[str, int] = {}
    for canonical in CANONICAL_JOINTS:
        side, base = _base(canonical)
        for word in table[base]:
            hits = [i for i, k in enumerate(keys) if k == (side, word) and not controls[i]]
            if hits:
                found[canonical] = hits[0]
                break
    return found


def name_roles(keys) -> dict[int, set[tuple[str, str]]]:
    """Per joint index, every (side, side-less canonical joint) some convention's words give its name."""
    roles: dict[int, set[tuple[str, str]]] = {}
    for table in CONVENTIONS.values():
        for base, words in table.items():
            for i, (side, word) in enumerate(keys):
                if word in words and (side == "") == (base in CENTRE_JOINTS):
                    roles.setdefault(i, set()).add((side, base))
    return roles


def rest_positions(skeleton) -> np.ndarray:
    """(J, 3) joint positions of the rest pose (every rotation the identity, as in BVH)."""
    positions = np.zeros((len(skeleton), 3))
    for j, p in enumerate(skeleton.parents):
        positions[j] = skeleton.offsets[j] + (positions[p] if p >= 0 else 0.0)
    return positions


def _hierarchy_problems(skeleton, joints: dict[str, int], positions=None, ends=None) -> tuple[list[str], list[str]]:
    """(problems, notes): chain order violations; a foot that starts at its shin's end outside it is noted, not refused."""
    problems, notes = [], []
    for chain in CHAINS:
        present = [c for c in chain if c in joints]
        for upper, lower in zip(present, present[1:]):
            if skeleton.is_ancestor(joints[upper], joints[lower]) and joints[upper] != joints[lower]:
                continue
            if lower.endswith("_foot") and upper.endswith("_shin") and ends is not None and \
                    _starts_at_end(positions, ends, joints, lower[0]):
                note = (f"{lower} ({skeleton.names[joints[lower]]}) is not below {upper} "
                        f"({skeleton.names[joints[upper]]}) but starts at its end (placed by location)")
                if note not in notes:
                    notes.append(note)
                continue
            problems.append(f"{lower} ({skeleton.names[joints[lower]]}) is not below "
                            f"{upper} ({skeleton.names[joints[upper]]})")
    return problems, notes


def _starts_at_end(positions, ends, joints, side: str) -> bool:
    shin, foot, thigh = joints[f"{side}_shin"], joints[f"{side}_foot"], joints.get(f"{side}_thigh", joints[f"{side}_shin"])
    end = ends[shin]
    if not np.all(np.isfinite(end)):
        return False
    leg = np.linalg.norm(end - positions[thigh])
    return bool(np.linalg.norm(positions[foot] - end) < 0.1 * leg)


def find_mapping(skeleton, override: dict[str, str] | str | Path | None = None,
                 required=REQUIRED_JOINTS, forward=None, tails=None) -> HumanoidMapping:
    """Match a skeleton's joints to the canonical humanoid; `override` (a dict or JSON preset) wins.

    `forward` (3,) is the figure's facing at rest, core's frame (default: read off its feet);
    `tails` (J, 3) are bone ends at rest (a rig's bone tails), which show where toe-less feet
    point. An override entry mapped to '' leaves an optional joint out. Raises
    HumanoidMappingError naming every required joint it could not find, and why.
    """
    override = load_override(override) if isinstance(override, (str, Path)) else dict(override or {})
    unknown = sorted(set(override) - set(CANONICAL_JOINTS))
    if unknown:
        raise HumanoidMappingError(f"mapping override names unknown canonical joints: {', '.join(unknown)}; "
                                   f"canonical joints are {', '.join(CANONICAL_JOINTS)}")
    for canonical, joint_name in override.items():
        if joint_name and joint_name not in skeleton.names:
            raise HumanoidMappingError(f"mapping override: {canonical} -> {joint_name!r}, but the skeleton has "
                                       f"no joint of that name")
    left_out = sorted(c for c, name in override.items() if not name and c in required)
    if left_out:
        raise HumanoidMappingError(f"mapping override leaves out required joints: {', '.join(left_out)}")
    keys = side_keys(skeleton.names)
    controls = [is_control(n) for n in skeleton.names]
    positions = rest_positions(skeleton)
    ends = bone_ends(skeleton, positions, tails)

    def with_override(joints):
        joints = dict(joints)
        for canonical, joint_name in override.items():
            if joint_name:
                joints[canonical] = skeleton.names.index(joint_name)
            else:
                joints.pop(canonical, None)
        return joints

    scored = [(name, _match_convention(keys, table, controls)) for name, table in CONVENTIONS.items()]
    best_name, best = max(scored, key=lambda item: len(item[1]) - len(_hierarchy_problems(skeleton, item[1])[0]))
    joints = with_override(best)
    suffix = " + override" if override else ""
    upright = is_upright(positions, joints)
    problems, notes = _hierarchy_problems(skeleton, joints, positions, ends)
    facing_forward = forward if forward is not None else facing(positions, ends, joints)
    names_hold = (set(REQUIRED_JOINTS) <= set(joints) and not problems
                  and (not upright or facing_forward is None
                       or sides_agree(positions, joints, left_axis(facing_forward))))
    if (names_hold and set(CANONICAL_JOINTS) <= set(joints)) or set(CANONICAL_JOINTS) <= set(override):
        return _checked(skeleton, joints, best_name + suffix, (), notes, required, "", positions, ends)
    roles = name_roles(keys)
    structure = read_structure(skeleton, positions, ends, roles, [k[0] for k in keys], forward)
    if names_hold:  # names explain every required joint: the structure only adds optional joints they missed
        extra = {c: j for c, j in structure.joints.items()
                 if c in OPTIONAL_JOINTS and c not in joints and c not in override}
        if extra and not _hierarchy_problems(skeleton, {**joints, **extra}, positions, ends)[0]:
            guessed = tuple(c for c in CANONICAL_JOINTS if c in extra and _base(c) not in roles.get(extra[c], set()))
            return _checked(skeleton, {**joints, **extra}, f"{best_name} + structure{suffix}", guessed, notes,
                            required, "", positions, ends)
        return _checked(skeleton, joints, best_name + suffix, (), notes, required, "", positions, ends)
    placed = with_override(structure.joints)
    if not set(required) <= set(placed) and (set(required) <= set(joints) or not structure.joints):
        return _checked(skeleton, joints, best_name + suffix, (), notes, required, structure.unplaced, positions, ends)
    guessed = tuple(c for c in CANONICAL_JOINTS if c in placed and c not in override
                    and _base(c) not in roles.get(placed[c], set()))
    notes = list(structure.notes) + _side_notes(skeleton, placed, keys)
    confirmed = len(placed) - len(guessed)
    convention = (f"{best_name} + structure" if confirmed else "structure") + suffix
    return _checked(skeleton, placed, convention, guessed, notes, required, structure.unplaced, positions, ends,
                    best_name)


def _side_notes(skeleton, joints: dict[str, int], keys) -> list[str]:
    """A note per side whose named limbs sit on the figure's other side."""
    notes = []
    for side, other, word in (("l", "r", "left"), ("r", "l", "right")):
        named = [skeleton.names[j] for c, j in joints.items() if c.startswith(other + "_") and keys[j][0] == side]
        if named:
            notes.append(f"bones named {word} ({', '.join(named[:3])}{', ...' if len(named) > 3 else ''}) sit on "
                         f"the figure's {'right' if side == 'l' else 'left'}: sides taken from the geometry")
    return notes


def _checked(skeleton, joints, convention, guessed, notes, required, unplaced, positions, ends,
             closest=None) -> HumanoidMapping:
    """The mapping, or HumanoidMappingError listing the missing required joints or the hierarchy's objections."""
    missing = [c for c in required if c not in joints]
    if missing:
        why = f"; by structure: {unplaced}" if unplaced else ""
        raise HumanoidMappingError(f"skeleton lacks required humanoid joints: {', '.join(missing)} "
                                   f"(closest naming convention: {closest or convention.split(' ')[0]}{why}; "
                                   f"give a JSON mapping to override)")
    problems, hierarchy_notes = _hierarchy_problems(skeleton, joints, positions, ends)
    if problems:
        raise HumanoidMappingError("humanoid mapping contradicts the hierarchy: " + "; ".join(problems))
    notes = list(notes) + [n for n in hierarchy_notes if n not in notes]
    return HumanoidMapping(joints, convention, tuple(guessed), "; ".join(notes))


def load_override(path: str | Path) -> dict[str, str]:
    """A JSON object {canonical joint: skeleton joint name}; keys starting with '_' are metadata and left out."""
    path = Path(path)
    try:
        data = json_value(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise HumanoidMappingError(f"{path}: cannot read the joint mapping: {reason}") from None
    if not isinstance(data, dict):
        raise HumanoidMappingError(f"{path}: a joint mapping is a JSON object of canonical name -> joint name")
    data = {k: v for k, v in data.items() if not k.startswith("_")}
    if not all(isinstance(v, str) for v in data.values()):
        raise HumanoidMappingError(f"{path}: a joint mapping is a JSON object of canonical name -> joint name")
    unknown = [k for k in data if k not in CANONICAL_JOINTS]
    if unknown:
        raise HumanoidMappingError(f"{path}: {', '.join(map(repr, unknown))} not among the canonical joints "
                                   f"({', '.join(CANONICAL_JOINTS)})")
    return data
