"""A joint's side read from its name (Mixamo, Rigify, VRM, CMU, SMPL and the rest), and each joint's left/right
partner, for mirroring."""
from __future__ import annotations

import re

import numpy as np

# Rig prefixes that carry no meaning for matching (Rigify deform, VRM, SMPL exports, Biped, CC).
_PREFIXES = re.compile(r"^(mixamorig\d*_|def[-_]|j_bip_c_|j_bip_|m_avg_|f_avg_|bip0*1[ _]?|cc_base_)")


def bare_name(name: str) -> str:
    """A joint name lower-cased, without a namespace (`mixamorig:`, `Armature|`) or a known rig prefix."""
    return _PREFIXES.sub("", re.split(r"[:|]", name)[-1].lower())


def split_side(name: str) -> tuple[str, str]:
    """('l' | 'r' | '', core word) for a joint name, e.g. 'mixamorig:LeftForeArm' -> ('l', 'forearm')."""
    return _side_and_core(bare_name(name))


def _side_and_core(lowered: str) -> tuple[str, str]:
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


def common_prefix(names) -> str:
    """The prefix every name starts with, up to and including a separator (MotionBuilder's `Character1_`, a
    studio's `jim_`), '' when there is none or a name is nothing more."""
    names = list(names)
    shared = names[0] if names else ""
    for name in names[1:]:
        while not name.startswith(shared):
            shared = shared[:-1]
    cut = max(shared.rfind(c) for c in "_:|. -") + 1
    return shared[:cut] if all(len(n) > cut for n in names) else ""


def side_keys(names) -> list[tuple[str, str]]:
    """split_side of every joint name, the prefix their bare names all share (`character1_`) dropped first."""
    bare = [bare_name(n) for n in names]
    cut = len(common_prefix(bare))
    return [_side_and_core(b[cut:]) for b in bare]


def mirror_pairs(names) -> np.ndarray:
    """For each joint, the index of its left/right partner (itself for centre joints)."""
    keys = side_keys(names)
    lookup = {k: i for i, k in enumerate(keys)}
    pairs = np.arange(len(names))
    for i, (side, core) in enumerate(keys):
        if side:
            partner = lookup.get(("r" if side == "l" else "l", core))
            if partner is None:
                raise ValueError(f"joint {names[i]!r} has no {'right' if side == 'l' else 'left'} partner")
            pairs[i] = partner
    return pairs
