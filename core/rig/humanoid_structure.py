"""Humanoid structure: the canonical joints read off a skeleton's hierarchy and rest geometry, for rigs
whose names do not say (numbered joints, mislabelled sides, unknown conventions).

The rest pose is taken as standing upright, +Y up (core's frame). The hips are the bone with two
chains hanging down from it (the legs) and one going up (the spine); the spine is followed to the
highest point (the head); the arms are the two chains branching off it that reach farthest to
either side. Left is the figure's left: left = up × forward, with forward from `forward` when
given, else along the feet (foot → toe joint, or the foot bone's tail). That is core's frame
convention: `character.hips_forward` takes forward = (left thigh − right thigh) × up.

Inside a chain, names break ties (a bone whose name says `forearm` is the forearm when several
bones could be), and bones that are controls rather than body (IK targets, poles, trackers,
`*_end` markers) are never picked.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..math import quat

UP = np.array([0.0, 1.0, 0.0])
# Bones that move the rig rather than the body: IK controls, poles, trackers, Rigify helpers.
CONTROL = re.compile(r"control|ctrl|pole|target|master|tracker|orient|(^|[^a-z])ik([^a-z]|$)|^(mch|org|wgt)[-_.]",
                     re.IGNORECASE)
# Leaf markers at a chain's end (Head_End, Foot.L_end, LeftToe_End): geometry, never a joint.
END_MARKER = re.compile(r"[_.\s-]end$", re.IGNORECASE)
LEG_DROP = 0.25
"""A chain hangs down (a leg) or goes up (the spine) when it reaches this share of the figure's height."""
ANKLE_HEIGHT = 0.2
"""The foot is the first leg bone whose head is this share of the leg's height above its lowest point."""
SHOULDER_RATIO = 0.6
"""An arm chain's first bone is a shoulder when it is shorter than this share of the arm up to the hand."""
FLAT_FOOT = 0.3
"""The feet give the facing when their direction on the floor is at least this share of their length."""
AT_CHAIN_END = 0.1
"""A bone outside a chain continues it when its head is within this share of the chain's length of its end."""


@dataclass(frozen=True)
class Structure:
    """Canonical joint -> bone index placed by structure, what could not be placed, and remarks."""

    joints: dict[str, int]
    unplaced: str
    """Why the structure could not be read ('' when it was)."""
    notes: tuple[str, ...]


def is_control(name: str) -> bool:
    return bool(CONTROL.search(name))


def bone_ends(skeleton, positions: np.ndarray, tails=None) -> np.ndarray:
    """(J, 3) where each bone ends: its tail when given, else its end site or only child's head (NaN if unknown)."""
    if tails is not None:
        return np.asarray(tails, dtype=float).reshape(len(skeleton), 3)
    ends = np.full((len(skeleton), 3), np.nan)
    children = _children(skeleton.parents)
    for j, kids in enumerate(children):
        if len(kids) == 1:
            ends[j] = positions[kids[0]]
    for j, offset in skeleton.end_sites:
        ends[j] = positions[j] + np.asarray(offset)
    return ends


def tails_along_bones(positions: np.ndarray, rotations: np.ndarray, parents) -> np.ndarray:
    """(J, 3) bone tails of a rig whose bones point along their own +Y axis (Blender's): each bone reaches
    as far as its farthest child's head, a leaf a tenth of the figure's height."""
    positions = np.asarray(positions, dtype=float)
    reach = np.zeros(len(positions))
    leaf = np.ones(len(positions), dtype=bool)
    for j, p in enumerate(parents):
        if p >= 0:
            reach[p] = max(reach[p], np.linalg.norm(positions[j] - positions[p]))
            leaf[p] = False
    reach[leaf] = 0.1 * np.ptp(positions[:, 1])
    axes = quat.rotate(np.asarray(rotations, dtype=float), np.broadcast_to([0.0, 1.0, 0.0], positions.shape))
    return positions + axes * reach[:, None]


def is_upright(positions: np.ndarray, joints: dict[str, int]) -> bool:
    """Whether a rest pose stands on +Y: the head well above the hips, the feet well below them, and each leg
    hanging (its knee, where mapped, between its thigh and its foot): a pose its geometry can be read from."""
    if not {"hips", "head", "l_foot", "r_foot"} <= set(joints):
        return False
    y = positions[:, 1]
    height = np.ptp(y)
    hips = y[joints["hips"]]
    hanging = all(y[joints[f"{s}_thigh"]] > y[joints[f"{s}_shin"]] > y[joints[f"{s}_foot"]]
                  for s in "lr" if f"{s}_thigh" in joints and f"{s}_shin" in joints)
    return bool(height > 0 and y[joints["head"]] - hips > 0.2 * height and hanging
                and hips - max(y[joints["l_foot"]], y[joints["r_foot"]]) > 0.2 * height)


def facing(positions: np.ndarray, ends: np.ndarray, joints: dict[str, int]) -> np.ndarray | None:
    """The figure's forward on the floor from its feet (foot → toe joint, else along the foot bone); None when
    the feet do not say (no direction, pointing mostly down, or the two feet disagreeing)."""
    along = []
    for s in "lr":
        foot = joints.get(f"{s}_foot")
        if foot is None:
            continue
        toes = joints.get(f"{s}_toes")
        tip = positions[toes] if toes is not None else ends[foot]
        if np.all(np.isfinite(tip)):
            along.append(tip - positions[foot])
    if not along:
        return None
    along = np.array(along)
    flat = along * [1.0, 0.0, 1.0]
    forward = flat.sum(axis=0)
    norm = np.linalg.norm(forward)
    if norm < FLAT_FOOT * np.linalg.norm(along, axis=1).sum() or (len(flat) == 2 and flat[0] @ flat[1] <= 0.0):
        return None
    return forward / norm


def left_axis(forward: np.ndarray) -> np.ndarray:
    """The figure's left on the floor for a forward direction: up × forward."""
    forward = np.asarray(forward, dtype=float) * [1.0, 0.0, 1.0]
    left = np.cross(UP, forward / max(np.linalg.norm(forward), 1e-12))
    return left


def sides_agree(positions: np.ndarray, joints: dict[str, int], left: np.ndarray) -> bool:
    """False when the left-named thighs and upper arms (those mapped) all sit clearly on the figure's right."""
    height = np.ptp(positions[:, 1])
    across = [(positions[joints[f"l_{part}"]] - positions[joints[f"r_{part}"]]) @ left
              for part in ("thigh", "upper_arm") if f"l_{part}" in joints and f"r_{part}" in joints]
    return not across or max(across) >= -0.01 * height


def _children(parents) -> list[list[int]]:
    children = [[] for _ in parents]
    for j, p in enumerate(parents):
        if p >= 0:
            children[p].append(j)
    return children


class _Rig:
    """The skeleton's hierarchy with the geometry needed to read its structure."""

    def __init__(self, skeleton, positions, ends, roles):
        self.names, self.parents = skeleton.names, np.asarray(skeleton.parents)
        self.positions, self.ends, self.roles = positions, ends, roles
        self.children = _children(self.parents)
        n = len(self.names)
        self.end_marker = np.array([not self.children[j] and bool(END_MARKER.search(self.names[j])) for j in range(n)])
        self.control = np.array([is_control(name) for name in self.names])
        self.eligible = ~self.end_marker & ~self.control
        shape = ~self.control  # bones whose heads describe the body's shape (end markers included)
        y = positions[:, 1]
        self.height = float(np.ptp(y[shape])) if shape.any() else 0.0
        self.low = np.where(shape, y, np.inf)
        self.high = np.where(shape, y, -np.inf)
        self.depth = np.zeros(n, dtype=int)
        for j in range(n):
            if self.parents[j] >= 0:
                self.depth[j] = self.depth[self.parents[j]] + 1
        for j in reversed(range(1, n)):
            p = self.parents[j]
            if p >= 0:
                self.low[p] = min(self.low[p], self.low[j])
                self.high[p] = max(self.high[p], self.high[j])

    def subtree_extreme(self, values: np.ndarray, pick) -> np.ndarray:
        """Per bone, pick (np.maximum or np.minimum) of `values` over its subtree's body bones."""
        out = np.where(~self.control, values, np.nan)
        for j in reversed(range(1, len(self.names))):
            p = self.parents[j]
            if p >= 0 and np.isfinite(out[j]):
                out[p] = out[j] if not np.isfinite(out[p]) else pick(out[p], out[j])
        return out

    def has_role(self, bone: int, base: str) -> bool:
        """Whether the bone's name says `base` and nothing else (Chest, both chest and spine somewhere, says neither)."""
        return {b for _, b in self.roles.get(bone, ())} == {base}

    def hinted(self, candidates, base: str):
        return next((b for b in candidates if self.has_role(b, base)), None)

    def follow(self, start: int, score: np.ndarray) -> list[int]:
        """From `start` down the hierarchy, always into the child of highest score; the body bones passed."""
        path, joint = [], start
        while True:
            path.append(joint)
            options = [c for c in self.children[joint] if np.isfinite(score[c])]
            if not options:
                break
            joint = max(options, key=lambda c: score[c])
        return self.body_bones(path)

    def body_bones(self, path: list[int], start_at=None) -> list[int]:
        """Eligible bones of a path, dropping one whose head sits on the previous bone's head (CMU's LHipJoint)."""
        kept, previous = [], start_at
        for bone in path:
            if not self.eligible[bone]:
                continue
            if previous is not None and np.linalg.norm(self.positions[bone] - self.positions[previous]) < 0.01 * self.height:
                if not kept:  # a zero-length lead-in bone at the chain's start: the next bone plays the joint
                    previous = bone
                    continue
            kept.append(bone)
            previous = bone
        return kept


def read_structure(skeleton, positions: np.ndarray, ends: np.ndarray, roles: dict[int, set], name_sides,
                   forward=None) -> Structure:
    """Place the canonical joints by hierarchy and rest geometry (see the module docstring); `roles` are what
    each bone's name says it is, `name_sides` the side ('l', 'r', '') each name says."""
    rig = _Rig(skeleton, positions, ends, roles)
    notes: list[str] = []
    if rig.height <= 0:
        return Structure({}, "its rest pose has no height", ())
    hips, legs = _hips(rig)
    if hips is None:
        return Structure({}, _why_no_hips(rig), ())
    leg_joints = [_leg(rig, hips, leg) for leg in legs]
    if forward is None:
        forward = _leg_facing(positions, ends, legs, leg_joints, name_sides, notes)
    joints = {"hips": hips}
    left = left_axis(forward)
    across = [(positions[placed.get("thigh", leg)] - positions[hips]) @ left
              for placed, leg in zip(leg_joints, legs)]
    order = (0, 1) if across[0] >= across[1] else (1, 0)
    for side, k in zip("lr", order):
        joints.update({f"{side}_{name}": bone for name, bone in leg_joints[k].items()})

    lateral = (positions - positions[hips]) @ left
    reach_left = rig.subtree_extreme(lateral, np.maximum)
    reach_right = rig.subtree_extreme(lateral, np.minimum)
    path_all = _upward_path(rig, hips)
    arm_roots = _arm_roots(rig, path_all, reach_left, reach_right)
    if len(arm_roots) < 2:
        return Structure(joints, "no two chains branch off the spine to either side (arms)", tuple(notes))
    branch_index = min(path_all.index(b) for b, _ in arm_roots.values())
    branch = path_all[branch_index]
    joints.update(_spine_joints(rig, path_all, branch_index))
    for side, (_, root) in arm_roots.items():
        sign = 1.0 if side == "l" else -1.0
        reach = reach_left if side == "l" else reach_right
        arm = rig.body_bones(rig.follow(root, sign * reach), start_at=branch)
        joints.update({f"{side}_{name}": bone for name, bone in _arm(rig, arm).items()})
    named_hips = [b for b in range(len(rig.names)) if rig.has_role(b, "hips") and rig.eligible[b]]
    if named_hips and hips not in named_hips:
        notes.append(f"the hips are {rig.names[hips]!r}, where both legs start, not "
                     f"{rig.names[named_hips[0]]!r} as its name says")
    return Structure(joints, "", tuple(notes))


def _leg_facing(positions: np.ndarray, ends: np.ndarray, legs, leg_joints, name_sides, notes: list[str]) -> np.ndarray:
    """The figure's forward from its feet; else from the sides the thighs' names say; else +Z (noted in `notes`)."""
    both = {f"{s}_{k}": v for s, placed in zip("lr", leg_joints) for k, v in placed.items()}
    forward = facing(positions, ends, both)
    if forward is None:
        thighs = [placed.get("thigh", leg) for placed, leg in zip(leg_joints, legs)]
        said = [name_sides[t] for t in thighs]
        if sorted(said) == ["l", "r"]:
            named_left, named_right = thighs if said[0] == "l" else thighs[::-1]
            forward = np.cross(positions[named_left] - positions[named_right], UP)
            notes.append("the feet show no facing: left and right taken from the names")
        else:
            forward = np.array([0.0, 0.0, 1.0])
            notes.append("the feet show no facing and the names no sides: the figure is taken to face +Z")
    return forward


def _upward_path(rig: _Rig, hips: int) -> list[int]:
    """The hips, then up the chain rising highest above them, always into the child reaching highest."""
    up = [c for c in rig.children[hips] if rig.high[c] - rig.positions[hips, 1] > LEG_DROP * rig.height]
    path = [hips]
    joint = max(up, key=lambda c: rig.high[c])
    while True:
        path.append(joint)
        options = [c for c in rig.children[joint] if np.isfinite(rig.high[c])]
        if not options:
            break
        joint = max(options, key=lambda c: rig.high[c])
    return path


def _arm_roots(rig: _Rig, path: list[int], reach_left: np.ndarray, reach_right: np.ndarray) -> dict:
    """Side ('l', 'r') -> (bone on `path`, its child off it) of the branch reaching farthest to that side, when
    it reaches beyond 15% of the figure's height."""
    on_path = set(path)
    branches = [(b, c) for b in path[1:] for c in rig.children[b] if c not in on_path]
    arm_roots = {}
    for side, reach, sign in (("l", reach_left, 1.0), ("r", reach_right, -1.0)):
        scored = [(sign * reach[c], b, c) for b, c in branches if np.isfinite(reach[c])]
        if scored:
            best = max(scored)
            if best[0] > 0.15 * rig.height:
                arm_roots[side] = best[1:]
    return arm_roots


def _spine_joints(rig: _Rig, path: list[int], branch_index: int) -> dict[str, int]:
    """Spine, chest, neck and head on the upward `path` from the hips, the arms branching off at `branch_index`."""
    positions, hips, branch = rig.positions, path[0], path[branch_index]
    spine_path = rig.body_bones(path[1:])
    below = [b for b in spine_path if path.index(b) <= branch_index]
    above = [b for b in spine_path if path.index(b) > branch_index]
    joints = {}
    spine = next((b for b in below if positions[b, 1] > positions[hips, 1]), None)
    if spine is not None:
        joints["spine"] = spine
        rest = below[below.index(spine) + 1:]
        chest = rig.hinted(rest, "chest") or (branch if branch in rest else None)
        if chest is not None:
            joints["chest"] = chest
    neck = rig.hinted(above, "neck") or (above[0] if len(above) > 1 else None)
    if neck is not None:
        joints["neck"] = neck
        after = above[above.index(neck) + 1:]
        head = rig.hinted(after, "head") or (after[0] if after else None)
    else:
        head = above[0] if above else None
    if head is not None:
        joints["head"] = head
    return joints


def _hips(rig: _Rig):
    """The deepest bone with two chains hanging down (the two lowest) and one going up; None if there is none."""
    best = None
    y = rig.positions[:, 1]
    for j in range(len(rig.names)):
        if not rig.eligible[j]:
            continue
        up = {c for c in rig.children[j] if rig.high[c] - y[j] > LEG_DROP * rig.height}
        down = [c for c in rig.children[j] if y[j] - rig.low[c] > LEG_DROP * rig.height and c not in up]
        if len(down) >= 2 and up and (best is None or rig.depth[j] > rig.depth[best[0]]):
            best = (j, sorted(down, key=lambda c: rig.low[c])[:2])
    return best if best is not None else (None, None)


def _why_no_hips(rig: _Rig) -> str:
    """One line on why no bone can be the hips: the limbs' chain lengths when they are too short."""
    leaves = [j for j in range(len(rig.names)) if rig.eligible[j] and not any(rig.eligible[c] for c in rig.children[j])]
    chains = {}
    for leaf in leaves:
        length, joint = 0, leaf
        while joint >= 0 and len([c for c in rig.children[joint] if rig.eligible[c]]) <= 1:
            length += int(rig.eligible[joint])
            joint = int(rig.parents[joint])
        chains[rig.names[leaf]] = length
    longest = max(chains.values(), default=0)
    reason = "no bone has two chains hanging down from it (legs) and one going up (a spine)"
    if longest <= 2:
        reason += (f"; its limbs are chains of at most {longest} bone(s) ({', '.join(sorted(chains))}): "
                   f"no elbows, knees or ankles")
    return reason


def _leg(rig: _Rig, hips: int, start: int) -> dict[str, int]:
    """thigh, shin, foot and toes of the leg chain from `start` (the foot by location if it hangs elsewhere)."""
    path = rig.body_bones(rig.follow(start, -rig.low), start_at=hips)
    placed: dict[str, int] = {}
    if not path:
        return placed
    placed["thigh"] = thigh = path[0]
    floor = rig.low[start]
    top = rig.positions[thigh, 1] - floor
    foot_at = next((k for k in range(2, len(path)) if rig.positions[path[k], 1] - floor < ANKLE_HEIGHT * top), None)
    between = path[1:foot_at] if foot_at is not None else path[1:]
    if not between:
        return placed
    target = (rig.positions[thigh, 1] + (rig.positions[path[foot_at], 1] if foot_at is not None else floor)) / 2
    shin = rig.hinted(between, "shin") or (between[0] if foot_at is None and len(between) == 1 else
                                           min(between, key=lambda b: abs(rig.positions[b, 1] - target)))
    placed["shin"] = shin
    if foot_at is not None:
        placed["foot"] = foot = path[foot_at]
        toes = path[foot_at + 1:]
        if toes:
            placed["toes"] = toes[0]
        return placed
    foot = _bone_at_end_of(rig, shin, thigh, exclude=set(path))
    if foot is not None:  # an IK rig's foot hanging from the root: the hierarchy check notes it
        placed["foot"] = foot
        toes = [c for c in rig.children[foot] if rig.eligible[c]]
        if toes:
            placed["toes"] = toes[0]
    return placed


def _bone_at_end_of(rig: _Rig, bone: int, chain_start: int, exclude=frozenset()):
    """The body bone outside `exclude` whose head is nearest `bone`'s end, within AT_CHAIN_END of the chain."""
    end = rig.ends[bone]
    if not np.all(np.isfinite(end)):
        return None
    length = np.linalg.norm(end - rig.positions[chain_start])
    distance = np.linalg.norm(rig.positions - end, axis=1)
    distance[~rig.eligible] = np.inf
    distance[list(exclude)] = np.inf
    for j in range(len(rig.names)):  # never a bone above the chain (its own ancestors)
        if rig.eligible[j] and _is_ancestor(rig.parents, j, bone):
            distance[j] = np.inf
    found = int(np.argmin(distance))
    return found if distance[found] < AT_CHAIN_END * length else None


def _is_ancestor(parents, ancestor: int, joint: int) -> bool:
    while joint >= 0:
        if joint == ancestor:
            return True
        joint = int(parents[joint])
    return False


def _arm(rig: _Rig, path: list[int]) -> dict[str, int]:
    """shoulder, upper_arm, forearm and hand along an arm chain (shoulder and hand when it has them)."""
    placed: dict[str, int] = {}
    if len(path) < 2:
        return placed
    p = rig.positions
    fingers = next((k for k in range(2, len(path))
                    if sum(1 for c in rig.children[path[k]] if rig.eligible[c]) >= 2), len(path) - 1)
    if len(path) >= 3 and not rig.has_role(path[0], "upper_arm"):
        ratio = np.linalg.norm(p[path[1]] - p[path[0]]) / max(np.linalg.norm(p[path[fingers]] - p[path[1]]), 1e-12)
        if rig.has_role(path[0], "shoulder") or ratio < SHOULDER_RATIO:
            placed["shoulder"] = path[0]
            path, fingers = path[1:], fingers - 1
    placed["upper_arm"] = path[0]
    if fingers <= 1:
        placed["forearm"] = path[1]
        forearm_at = 1
    else:
        between = path[1:fingers]
        half = np.linalg.norm(p[path[fingers]] - p[path[0]]) / 2
        forearm = rig.hinted(between, "forearm") or min(
            between, key=lambda b: abs(np.linalg.norm(p[b] - p[path[0]]) - half))
        placed["forearm"] = forearm
        forearm_at = path.index(forearm)
    hands = path[forearm_at + 1:fingers + 1]
    if hands:
        placed["hand"] = rig.hinted(hands, "hand") or hands[0]
    return placed
