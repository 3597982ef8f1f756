"""Retargeting: a solved motion carried onto another humanoid's skeleton, rest pose and proportions.

The target is described by its bones at rest in world space (core's frame): head positions, each
bone's own orientation (its axes, whatever the rig's rolls), optionally its tails, plus the
humanoid mapping of SPEC §6 (optional joints such as toes, chest, shoulders or hands may be absent).

Standing reference. Neither skeleton's rest pose is trusted to be upright (a BVH's rest often is
not: the Bandai data's rest lays every bone along X). Each side gets an anatomical frame per
canonical joint, built from an upright standing pose: the bone's direction (toward its canonical
child) and the body's forward (the body's up for the feet, which point forward). The source's
standing pose is measured from its own motion (the most upright frames); a rig's is its rest
pose unless another is given. With A_s the source bone's anatomical frame in its own axes and
B_t the target bone's axes in its anatomical frame, a frame's target orientation is

    G_t[j] = G_s[c] · A_s[c] · B_t[j]

so every mapped bone points where the source bone points, with the twist read anatomically.
Unmapped target bones (extra spine bones, twist bones, fingers) keep their rest orientation
relative to their parent.

Placement, in order: the hips' height scales with the legs (leg lengths over the floor of the
standing poses) and keeps the solve's horizontal track; the whole body is moved so the head
joint meets the headset-implied head (`head_targets`); stance feet are planted flat on the floor
at the avatar's own ankle and toe heights (contacts read from the source's toes), rolled heel-up
or toes-up as in gait where the leg cannot reach them flat, and neither heel nor toes go under
their rest heights, with two-bone IK on the avatar's own legs; last, the arms are
re-solved on the avatar's own arm lengths so the wrists reach the controller-implied wrists, and
half of the hand's twist about the forearm moves onto the forearm's twist bone, or the forearm
itself without one (no candy-wrapper wrist).

The avatar's size: `fit` (the default) scales the avatar so its head meets the person's standing
head height; `keep` keeps its size and scales the solve (positions and devices) to it instead.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..anim.character import UP, hips_forward
from ..anim.motion import Motion, forward_kinematics
from ..anim.skeleton import Skeleton
from ..devices.attachments import implied_joint_positions
from ..ik.two_bone import two_bone_ik
from ..math import quat
from ..math.vector import dot, length, unit, unit_across
from .humanoid import HumanoidMapping, find_mapping
from .humanoid_structure import tails_along_bones

# Each joint's bone points at the first of these that the skeleton has; joints without one take
# the alignment of the joint named in ALIGNED_LIKE (a rig's own bone tail serves where given).
CANONICAL_CHILDREN = {
    "hips": ("spine", "chest", "neck"), "spine": ("chest", "neck"), "chest": ("neck",), "neck": ("head",),
    **{f"{s}_{j}": tuple(f"{s}_{c}" for c in children) for s in "lr" for j, children in (
        ("shoulder", ("upper_arm",)), ("upper_arm", ("forearm",)), ("forearm", ("hand",)),
        ("thigh", ("shin",)), ("shin", ("foot",)), ("foot", ("toes",)))},
}
ALIGNED_LIKE = {"head": "neck", "l_hand": "l_forearm", "r_hand": "r_forearm", "l_toes": "l_foot",
                "r_toes": "r_foot"}
# Bones that point forward take the body's up as their second axis; the others its forward.
POINTS_FORWARD = ("l_foot", "r_foot", "l_toes", "r_toes")
# Each canonical joint's canonical parent, where the rig's own parent may differ (IK rigs).
CANONICAL_PARENTS = {
    "spine": ("hips",), "chest": ("spine", "hips"), "neck": ("chest", "spine", "hips"), "head": ("neck",),
    **{f"{s}_{j}": tuple(f"{s}_{p}" if p not in ("chest", "spine", "hips") else p for p in parents)
       for s in "lr" for j, parents in (
           ("shoulder", ("chest", "spine")), ("upper_arm", ("shoulder", "chest", "spine")), ("forearm", ("upper_arm",)),
           ("hand", ("forearm",)), ("thigh", ("hips",)), ("shin", ("thigh",)), ("foot", ("shin",)),
           ("toes", ("foot",)))},
}
SIZE_MODES = ("fit", "keep")
UPRIGHT_LIMIT_DEG = 60.0
"""The most a target's standing pose may lean: torso and both legs from vertical, added up."""
UPRIGHT_REFERENCE_DEG = 30.0
"""Frames whose torso and legs lean at most this from vertical (added up) serve the standing reference."""
STANDING_FRAMES = 8
"""How many of the source's most upright frames make its standing reference."""
CONTACT_HEIGHT_M = (0.03, 0.06)
"""A source toe this high above its planted height is fully planted (first) or free (second)."""
CONTACT_SPEED_M_S = (0.25, 0.6)
"""A source toe this fast horizontally is fully planted (first) or free (second)."""
OVERREACH_SLACK = 0.995
"""A stance leg reaches at most this share of its length; where a flat foot is out of that reach it rolls (heel
or toes up, see HEEL_RISE_LIMIT_DEG) ..."""
OVERREACH_ALLOWANCE_M = 0.05
"""... and where it still falls short by more than this, the hips come down by the rest (the head then misses
the headset by as much): a foot lifted a little is less wrong than a body left hanging."""
HIPS_RISE_LIMIT = 1.2
"""The hips rise at most this share of their standing height: a body whose legs are too short for its head to
meet the headset (a cartoon's) is not lifted further off the floor; its head misses by the rest."""
SHRUG_LIMIT_DEG = 25.0
"""Largest turn of a shoulder (clavicle) toward a wrist target out of the arm's reach."""
LEAF_REACH = {"foot": (("shin", "foot"), 0.4), "forearm": (("upper_arm", "forearm"), 1.0), "toes": (("shin", "foot"), 0.2)}
"""A bone standing in for a missing child (a foot for its toes, a forearm for its hand) or a toe bone's tip
ends along its tail, at most this share of the distance between the two named joints from its head:
importers give leaf bones any length (the Godot robot's foot is 1.4 m long)."""
TWIST_SHARE = 0.5
"""Share of the hand's twist about the forearm that the forearm takes."""
TWIST_WORDS = ("twist", "roll")
"""Words that name a forearm's twist bone (Unreal's lowerarm_twist_01_l, Rigify's forearm roll bones)."""
HEEL_RISE_LIMIT_DEG = 50.0
"""Largest tilt of a planted foot behind the hips about its toe point, heel up (push-off: the foot stands about
50 degrees off the floor at toe-off in walking gait)."""
TOE_RISE_LIMIT_DEG = 25.0
"""Largest tilt of a planted foot ahead of the hips about its heel, toes up (heel strike: about 25 degrees)."""


def rig_skeleton(names, parents, rest_positions) -> Skeleton:
    """A rig's bones as a core Skeleton for name matching; bones outside the first root's tree
    (controls, props) hang from that root."""
    parents = np.asarray(parents)
    tree = np.where((parents < 0) & (np.arange(len(parents)) > 0), 0, parents)
    offsets = rest_positions - np.where(tree[:, None] >= 0, rest_positions[np.maximum(tree, 0)], 0.0)
    return Skeleton(tuple(names), tree, offsets)


@dataclass(frozen=True)
class TargetSkeleton:
    """A humanoid rig at rest in world space, core's frame: what retargeting writes onto."""

    names: tuple[str, ...]
    parents: np.ndarray
    """(J,) parent index, -1 for roots; parents come before children."""
    rest_positions: np.ndarray
    """(J, 3) bone heads."""
    rest_rotations: np.ndarray
    """(J, 4) each bone's axes in the world."""
    mapping: HumanoidMapping
    tails: np.ndarray | None = None
    """(J, 3) bone tails, where the rig has them (Blender bones do): the direction of a bone whose
    canonical child is missing (a foot without toes, a forearm without a hand)."""
    floor: float | None = None
    """Height of the floor the rig stands on at rest (its skinned mesh's lowest point); None: the
    lowest foot or toe joint."""
    standing: tuple[np.ndarray, np.ndarray] | None = None
    """(bone axes (J, 4), heads (J, 3)) of an upright standing pose when the rest pose is not one."""
    skin: tuple[np.ndarray, np.ndarray] | None = None
    """(bone (P,), rest positions (P, 3)) of points of the skinned mesh bound to the feet and toes: what must
    stay above the floor."""

    @classmethod
    def build(cls, names, parents, rest_positions, rest_rotations, override: dict[str, str] | None = None,
              tails=None, floor: float | None = None, standing=None, skin=None):
        """The rig with its humanoid mapping found by name (or given per canonical joint in `override`)."""
        parents = np.asarray(parents)
        rest_positions = np.asarray(rest_positions, dtype=float)
        rest_rotations = quat.normalize(np.asarray(rest_rotations, float))
        tails = tails_along_bones(rest_positions, rest_rotations, parents) if tails is None else np.asarray(tails, float)
        mapping = find_mapping(rig_skeleton(names, parents, rest_positions), override, tails=tails)
        return cls(tuple(names), parents, rest_positions, rest_rotations, mapping, tails, floor, standing, skin)

    def floor_height(self) -> float:
        """Height of the floor it stands on: the given one, else its lowest foot or toe joint standing."""
        if self.floor is not None:
            return float(self.floor)
        feet = [self.mapping.joints[f"{s}_{j}"] for s in "lr" for j in ("foot", "toes") if f"{s}_{j}" in self.mapping.joints]
        return float(self.standing_pose()[1][feet, 1].min())

    def standing_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """(bone axes (J, 4), heads (J, 3)) of the upright standing pose: the rest unless given."""
        return self.standing if self.standing is not None else (self.rest_rotations, self.rest_positions)

    def head_height(self) -> float:
        """The head joint's standing height above the floor."""
        return float(self.standing_pose()[1][self.mapping["head"], 1] - self.floor_height())


def _present(mapping: HumanoidMapping, joints) -> str | None:
    return next((j for j in joints if j in mapping.joints), None)


def bone_directions(positions: np.ndarray, mapping: HumanoidMapping, tails: np.ndarray | None = None) -> dict:
    """Each canonical joint's bone direction (..., 3): toward its canonical child, else its tail, else like
    the joint ALIGNED_LIKE names."""
    directions = {}
    for joint, children in CANONICAL_CHILDREN.items():
        if joint not in mapping.joints:
            continue
        child = _present(mapping, children)
        j = mapping[joint]
        if child is not None:
            directions[joint] = unit(positions[..., mapping[child], :] - positions[..., j, :])
        elif tails is not None:
            directions[joint] = unit(np.broadcast_to(tails[j] - positions[..., j, :], positions[..., j, :].shape))
    for joint, like in ALIGNED_LIKE.items():
        if joint in mapping.joints and joint not in directions and like in directions:
            directions[joint] = directions[like]
    return directions


def anatomical_frames(positions: np.ndarray, mapping: HumanoidMapping, tails: np.ndarray | None = None) -> dict:
    """Each canonical joint's anatomical frame (..., 4) in the world: x along its bone, y toward the body's
    forward (its up for the feet), z = x × y."""
    forward = hips_forward(positions[..., mapping["l_thigh"], :], positions[..., mapping["r_thigh"], :])
    up = np.broadcast_to(UP, forward.shape)
    frames = {}
    for joint, along in bone_directions(positions, mapping, tails).items():
        second = up if joint in POINTS_FORWARD else forward
        fallback = forward if joint in POINTS_FORWARD else up
        y = unit_across(second, along, fallback)
        frames[joint] = quat.from_matrix(np.stack([along, y, quat.cross(along, y)], axis=-1))
    return frames


def uprightness(positions: np.ndarray, mapping: HumanoidMapping) -> np.ndarray:
    """How far a pose is from standing upright (...,): the torso's and both legs' angles from vertical."""
    torso = unit(positions[..., mapping["neck"], :] - positions[..., mapping["hips"], :])
    legs = [unit(positions[..., mapping[f"{s}_thigh"], :] - positions[..., mapping[f"{s}_foot"], :]) for s in "lr"]
    return sum(np.arccos(np.clip(v[..., 1], -1.0, 1.0)) for v in [torso, *legs])


def standing_frames(positions: np.ndarray, mapping: HumanoidMapping, count: int = STANDING_FRAMES) -> np.ndarray:
    """Indices of the `count` most upright frames of a motion's global positions (F, J, 3)."""
    return np.argsort(uprightness(positions, mapping), kind="stable")[:count]


def reference_weights(positions: np.ndarray, mapping: HumanoidMapping, fps: float) -> dict:
    """Per canonical joint, the weight of each frame (F,) in its standing reference: a foot's planted frames
    (flat on the floor) for the feet and toes, for an arm's joints the upright frames weighted by how straight
    down the arm hangs (a hanging arm holds its thumb forward), every upright frame for the rest (the most
    upright ones if none is): the head looks around, and only many frames average its yaw out."""
    level = uprightness(positions, mapping) < np.radians(UPRIGHT_REFERENCE_DEG)
    upright = level.astype(float)
    if not level.any():
        upright[standing_frames(positions, mapping)] = 1.0
    weights = {joint: upright for joint in mapping.joints}
    for side in "lr":
        planted = contact_weights(positions[:, mapping[f"{side}_toes"]], fps) if len(positions) > 1 else upright
        if planted.sum() > 1.0:
            weights[f"{side}_foot"] = weights[f"{side}_toes"] = planted
        chain = [mapping[f"{side}_{j}"] for j in ("upper_arm", "forearm", "hand")]
        down = np.prod([np.clip(-unit(positions[:, b] - positions[:, a])[:, 1], 0.0, 1.0)
                        for a, b in zip(chain, chain[1:])], axis=0) ** 4 * level
        if down.sum() > 1e-3:
            for joint in ("shoulder", "upper_arm", "forearm", "hand"):
                weights[f"{side}_{joint}"] = down
    return weights


def leg_length(positions: np.ndarray, mapping: HumanoidMapping, side: str, ankle_height: float) -> float:
    """Hip joint to the floor along a straight leg: thigh and shin lengths plus the ankle's height."""
    thigh, shin, foot = (positions[mapping[f"{side}_{j}"]] for j in ("thigh", "shin", "foot"))
    return float(length(shin - thigh) + length(foot - shin) + ankle_height)


@dataclass(frozen=True)
class Legs:
    """One side's leg joints on the target, with their heights above the floor at standing (scaled)."""

    thigh: int
    shin: int
    foot: int
    toes: int | None
    ankle_height: float
    heel_offset: np.ndarray
    """(3,) the point under the ankle on the floor at standing (the heel's underside), in the foot bone's axes."""
    toe_offset: np.ndarray
    """(3,) the toe point (toe joint, else the foot's tail) in the foot bone's axes."""
    toe_height: float
    """The toe point's standing height above the floor."""
    tip_offset: np.ndarray | None
    """(3,) the toe bone's tail in its axes, when the rig has a toe bone and tails."""
    tip_height: float | None
    """The toe bone's tail's standing height above the floor."""
    skin: np.ndarray
    """(K, 3) points of the skin the foot bone carries, in its axes, above the floor at standing (may be empty)."""
    toe_skin: np.ndarray
    """(K, 3) likewise for the toe bone."""
    length: float
    """Thigh plus shin, scaled."""
    source_toe: int


@dataclass(frozen=True)
class Retargeting:
    """What stays fixed between a source skeleton and a target rig: the per-joint rest alignment and scales."""

    target: TargetSkeleton
    source_joint: np.ndarray
    """(J,) source joint that drives each target joint, -1 for unmapped ones."""
    alignment: np.ndarray
    """(J, 4) A_s · B_t per mapped target joint (identity for unmapped)."""
    source_hips: int
    hips_scale: float
    """Target hip height over source hip height, both above their floors, standing, legs straight."""
    scale: float
    """The avatar's size over its rest size (`fit`)."""
    target_floor: float
    """The target's floor height at rest: heights are measured from it; the output stands on y = 0."""
    rest_local: np.ndarray
    """(J, 4) each bone's rest orientation in its placement parent's (its own for roots)."""
    rest_offsets: np.ndarray
    """(J, 3) each bone's head in its placement parent's rest frame, scaled."""
    placement_parents: np.ndarray
    """(J,) the bone each bone's head is placed from: its canonical parent for mapped bones, else its parent."""
    placement_order: np.ndarray
    """(J,) the bones in an order with every placement parent before its children."""
    follows_hips: np.ndarray
    """(J,) bones placed from the hips down; the others stay where they rest."""
    above_spine: np.ndarray
    """Indices of the spine bone and every bone placed from it (the torso, head and arms)."""
    legs: tuple[Legs, Legs]
    twist_bones: np.ndarray
    """(2,) each forearm's twist bone (an unmapped child named for twist or roll), -1 where it has none."""
    forearm_axes: np.ndarray
    """(2, 3) each forearm's direction in its own bone axes."""
    forearm_lengths: np.ndarray
    """(2,) each forearm's length, scaled."""
    arm_lengths: np.ndarray
    """(2,) each arm's reach from the shoulder joint (upper arm plus forearm), scaled."""
    hips_ceiling: float
    """The highest the head targets may move the hips: HIPS_RISE_LIMIT of their standing height, scaled."""

    @classmethod
    def between(cls, source: Skeleton, source_mapping: HumanoidMapping, target: TargetSkeleton,
                source_standing: Motion | None = None, scale: float = 1.0):
        """The alignment of `source` onto `target` scaled by `scale`; the source's standing reference is the
        most upright frames of `source_standing` (a motion on `source`), else its rest pose."""
        tm, sm = target.mapping, source_mapping
        if source_standing is not None:
            rotations, positions = source_standing.global_transforms()
            source_ankle = float(np.percentile(positions[:, [sm["l_foot"], sm["r_foot"]], 1], 5))
        else:
            rotations, positions = forward_kinematics(source.parents, quat.identity(1, len(source)), source.offsets[None])
            source_ankle = float(positions[0, [sm["l_foot"], sm["r_foot"]], 1].min()
                                 - positions[0, [sm["l_toes"], sm["r_toes"]], 1].min())
        weights = reference_weights(positions, sm, source_standing.fps if source_standing is not None else 30.0)
        source_frames = anatomical_frames(positions, sm)
        target_r, target_p = target.standing_pose()
        tilt = np.degrees(uprightness(target_p, tm))
        if tilt > UPRIGHT_LIMIT_DEG:
            raise ValueError(f"the target's standing pose is not upright: its torso and legs lean {tilt:.0f} degrees "
                             f"from vertical in all (at most {UPRIGHT_LIMIT_DEG:.0f}); a rig's rest pose must stand")
        target_frames = anatomical_frames(target_p, tm, target.tails)
        source_joint = np.full(len(target.names), -1)
        alignment = quat.identity(len(target.names))
        for joint, frame in target_frames.items():
            if joint not in source_frames:
                continue
            s, j = sm[joint], tm[joint]
            in_source_bone = quat.mean(quat.inverse_multiply(rotations[:, s], source_frames[joint]), weights[joint])
            source_joint[j] = s
            alignment[j] = quat.multiply(in_source_bone, quat.inverse_multiply(frame, target_r[j]))  # A_s · B_t
        stand_p = positions[standing_frames(positions, sm)]
        floor = target.floor_height()
        target_ankle = float(min(target_p[tm[f"{s}_foot"], 1] for s in "lr") - floor)
        source_leg = np.mean([leg_length(stand_p.mean(0), sm, side, source_ankle) for side in "lr"])
        target_leg = np.mean([leg_length(target_p, tm, s, target_ankle) for s in "lr"])
        placement = placement_parents(target)
        rest = target_r
        parent = np.maximum(placement, 0)
        rest_local = np.where(placement[:, None] >= 0, quat.inverse_multiply(rest[parent], rest), rest)
        rest_offsets = scale * quat.inverse_rotate(rest[parent], target_p - target_p[parent])
        follows_hips = np.array([_below(placement, j, tm["hips"]) for j in range(len(target.names))])
        legs = tuple(_legs(target, sm, side, scale) for side in "lr")
        directions = bone_directions(target_p, tm, target.tails)
        forearms = [tm[f"{s}_forearm"] for s in "lr"]
        forearm_axes = np.stack([quat.inverse_rotate(target_r[j], directions[f"{s}_forearm"])
                                 for s, j in zip("lr", forearms)])
        ends = [tm.joints.get(f"{s}_hand") for s in "lr"]
        forearm_lengths = scale * np.array([length((target_p[e] if e is not None else leaf_end(target, s, "forearm"))
                                                   - target_p[j]) for s, j, e in zip("lr", forearms, ends)])
        uppers = [tm[f"{s}_upper_arm"] for s in "lr"]
        arm_lengths = forearm_lengths + scale * np.array([length(target_p[f] - target_p[u]) for u, f in zip(uppers, forearms)])
        return cls(target, source_joint, alignment, sm["hips"], float(scale * target_leg / source_leg), float(scale),
                   floor, rest_local, rest_offsets, placement, parents_first(placement), follows_hips,
                   np.array([j for j in range(len(target.names)) if _below(placement, j, tm["spine"])]), legs,
                   np.array([twist_bone(target, tm[f"{s}_forearm"]) for s in "lr"]), forearm_axes, forearm_lengths,
                   arm_lengths, HIPS_RISE_LIMIT * scale * float(target_p[tm["hips"], 1] - floor))

    def apply(self, motion: Motion, wrist_targets: np.ndarray | None = None, stride_scaled: bool = False,
              head_targets: np.ndarray | None = None, plant_feet: bool = False, stances: LiveStances | None = None):
        """(global rotations (F, J, 4), global positions (F, J, 3)) of the target following `motion`.

        `wrist_targets` (F, 2, 3), left then right, re-solve the arms so the wrists reach them; a NaN
        target (an untracked controller) leaves that arm as retargeted. `head_targets` (F, 3) move the
        body so its head joint meets them, the hips rising no higher than `hips_ceiling`. `plant_feet` plants the source's stance feet (offline: it
        reads contacts over the whole motion) and keeps heel and toes above their standing heights; `stances`
        does the same live, one frame per call, reading contacts as they come.
        """
        source_rotations, source_positions = motion.global_transforms()
        frames = len(motion)
        mapped = self.source_joint >= 0
        rotations = np.empty((frames, len(self.target.names), 4))
        rotations[:, mapped] = quat.multiply(source_rotations[:, self.source_joint[mapped]], self.alignment[mapped])
        hips = source_positions[:, self.source_hips].copy()
        hips[:, 1] *= self.hips_scale
        if stride_scaled:
            hips[:, [0, 2]] *= self.hips_scale
        rotations = self._carry_unmapped(rotations)
        positions = self._positions(rotations, hips)
        if head_targets is not None:
            head = positions[:, self.target.mapping["head"]]
            shift = np.where(np.isnan(head_targets), 0.0, head_targets - head)
            shift[:, 1] -= np.maximum(0.0, hips[:, 1] + shift[:, 1] - self.hips_ceiling)
            hips = hips + shift
            positions = positions + np.where(self.follows_hips[:, None], shift[:, None], 0.0)
        if plant_feet or stances is not None:
            rotations, hips = self._plant(rotations, positions, hips, source_positions, motion.fps, head_targets,
                                          stances)
            positions = self._positions(rotations, hips)
        if wrist_targets is not None:
            rotations = self._reach(rotations, positions, wrist_targets)
            positions = self._positions(rotations, hips)
        return rotations, positions

    def _carry_unmapped(self, rotations: np.ndarray) -> np.ndarray:
        """Unmapped bones keep their rest orientation relative to their parent (roots stay at rest)."""
        for j in self.placement_order:
            parent = self.placement_parents[j]
            if self.source_joint[j] >= 0:
                continue
            rotations[:, j] = self.rest_local[j] if parent < 0 else quat.multiply(rotations[:, parent],
                                                                                   self.rest_local[j])
        return rotations

    def _positions(self, rotations: np.ndarray, hips: np.ndarray) -> np.ndarray:
        """Bone heads: the hips where placed, every other bone at its rest offset in its posed placement parent."""
        target, hips_joint = self.target, self.target.mapping["hips"]
        positions = np.empty(rotations.shape[:2] + (3,))
        for j in self.placement_order:
            parent = self.placement_parents[j]
            if j == hips_joint:
                positions[:, j] = hips
            elif not self.follows_hips[j]:
                positions[:, j] = target.rest_positions[j]
            else:
                positions[:, j] = positions[:, parent] + quat.rotate(rotations[:, parent], self.rest_offsets[j])
        return positions

    def _plant(self, rotations, positions, hips, source_positions, fps: float, head_targets=None,
               stances: LiveStances | None = None):
        """(rotations, hips) with the legs re-solved: stance feet lie flat and still on the floor (rolled where the
        leg cannot reach them flat), neither heel nor toes dip under their standing heights nor the foot's skin
        under the floor, and the hips come down where a stance leg could not reach even a rolled foot, the
        torso then leaning toward the head target. Offline, each stance holds the foot at its mean place and
        yaw; live (`stances`), where the stance began."""
        rotations = rotations.copy()
        axes = self.target.standing_pose()[0]
        plans = []
        for side, leg in enumerate(self.legs):
            # Flat: the standing foot turned about the vertical by the foot's own turn.
            yaw = _yaw_turn(rotations[:, leg.foot], axes[leg.foot])
            ankle = positions[:, leg.foot].copy()
            toe = source_positions[:, leg.source_toe]
            if stances is None:
                planted = contact_weights(toe, fps)
                toe_point, yaw = held_over_stances(planted, ankle + quat.rotate(rotations[:, leg.foot], leg.toe_offset),
                                                   yaw)
            else:
                planted, ankle, yaw = stances.hold(side, toe, ankle, yaw, fps)
            foot_rotation = quat.slerp(rotations[:, leg.foot], quat.multiply(yaw, axes[leg.foot]), planted)
            if stances is None:  # the toe point held: a foot flattening as it lands turns about it
                ankle[:, [0, 2]] = (toe_point - quat.rotate(foot_rotation, leg.toe_offset))[:, [0, 2]]
            ankle[:, 1] = (1.0 - planted) * ankle[:, 1] + planted * leg.ankle_height
            toe_rotation = None
            if leg.toes is not None:
                toe_rotation = quat.slerp(rotations[:, leg.toes], quat.multiply(yaw, axes[leg.toes]), planted)
            ankle, foot_rotation, toe_rotation = self._roll(leg, positions[:, leg.thigh], ankle, foot_rotation,
                                                            toe_rotation, planted > 0.0)
            source_floor = stances.source_floor if stances is not None else float(np.percentile(toe[:, 1], 5))
            clearance = self.hips_scale * np.maximum(toe[:, 1] - source_floor, 0.0)
            foot_rotation, toe_rotation = self._clear(leg, ankle, foot_rotation, toe_rotation, clearance,
                                                      1.0 - planted)
            ankle[:, 1] += self._dip(leg, ankle, foot_rotation, toe_rotation)
            plans.append((leg, planted, ankle, foot_rotation, toe_rotation))
        drop = np.max([planted * self._overreach(leg, positions, ankle) for leg, planted, ankle, _, _ in plans], axis=0)
        if drop.any():
            hips = hips - drop[:, None] * [0.0, 1.0, 0.0]
            positions = self._positions(rotations, hips)
            if head_targets is not None:
                rotations = self._lean(rotations, positions, head_targets, drop > 0.0)
                positions = self._positions(rotations, hips)
        for leg, _, ankle, foot_rotation, toe_rotation in plans:
            rotations[:, leg.thigh], rotations[:, leg.shin] = two_bone_ik(
                positions[:, leg.thigh], positions[:, leg.shin], positions[:, leg.foot], ankle,
                rotations[:, leg.thigh], rotations[:, leg.shin])
            rotations[:, leg.foot] = foot_rotation
            if toe_rotation is not None:
                rotations[:, leg.toes] = toe_rotation
        return self._carry_unmapped(rotations), hips

    def _lean(self, rotations, positions, head_targets, frames) -> np.ndarray:
        """The torso above the hips turned, on `frames`, by the least rotation about the spine joint that points
        it at the head target (the hips came down: the head follows the headset as far as the torso allows)."""
        tm = self.target.mapping
        spine, head = tm["spine"], tm["head"]
        pivot = positions[:, spine]
        turn = quat.between(positions[:, head] - pivot, np.where(np.isnan(head_targets), positions[:, head],
                                                                  head_targets) - pivot)
        turn = np.where(frames[:, None], turn, quat.identity(len(turn)))
        rotations = rotations.copy()
        torso = self.above_spine
        rotations[:, torso] = quat.multiply(turn[:, None], rotations[:, torso])
        return rotations

    def _roll(self, leg: Legs, hip, ankle, foot_rotation, toe_rotation, planted):
        """(ankle, foot rotation, toe rotation) with a planted foot out of the leg's reach rolled as in gait, by
        as little as brings its ankle within reach: about its toe point (heel up, the toe bone stays flat) or
        about its heel (toes up, a foot ahead of the hips), whichever reaches with the smaller share of its
        limit, or else comes closer."""
        reach = OVERREACH_SLACK * leg.length
        rolling = np.flatnonzero(planted & (length(hip - ankle) > reach))
        if not len(rolling):
            return ankle, foot_rotation, toe_rotation
        hip, flat, turn = hip[rolling], ankle[rolling], foot_rotation[rolling]
        toe_point = flat + quat.rotate(turn, leg.toe_offset)
        forward = unit_across(toe_point - flat, UP, np.array([0.0, 0.0, 1.0]))
        side_axis = np.cross(UP, forward)
        rolls = []
        for pivot, axis, limit in ((toe_point, side_axis, HEEL_RISE_LIMIT_DEG),
                                   (flat + quat.rotate(turn, leg.heel_offset), -side_axis, TOE_RISE_LIMIT_DEG)):
            low, high = np.zeros(len(rolling)), np.full(len(rolling), np.radians(limit))
            for _ in range(12):  # bisection on the tilt: the smallest that brings the ankle within reach
                middle = 0.5 * (low + high)
                tilted = pivot + quat.rotate(quat.from_rotation_vector(middle[:, None] * axis), flat - pivot)
                short = length(hip - tilted) > reach
                low, high = np.where(short, middle, low), np.where(short, high, middle)
            tilt = quat.from_rotation_vector(high[:, None] * axis)
            rolled = pivot + quat.rotate(tilt, flat - pivot)
            rolls.append((tilt, rolled, high / np.radians(limit), length(hip - rolled)))
        (heel_tilt, heel_up, heel_share, heel_miss), (toe_tilt, toes_up, toe_share, toe_miss) = rolls
        reached = np.minimum(heel_miss, toe_miss) <= reach
        heel = np.where(reached, heel_share <= toe_share, heel_miss <= toe_miss)[:, None]
        tilt = np.where(heel, heel_tilt, toe_tilt)
        ankle, foot_rotation = ankle.copy(), foot_rotation.copy()
        ankle[rolling], foot_rotation[rolling] = np.where(heel, heel_up, toes_up), quat.multiply(tilt, turn)
        if toe_rotation is not None:
            toe_rotation = toe_rotation.copy()
            toe_rotation[rolling] = np.where(heel, toe_rotation[rolling], quat.multiply(tilt, toe_rotation[rolling]))
        return ankle, foot_rotation, toe_rotation

    def _clear(self, leg: Legs, ankle, foot_rotation, toe_rotation, clearance, swinging):
        """(foot rotation, toe rotation) with a swinging foot (weight `swinging` (F,)) pitched up about its ankle
        as far as needed for its toe point to clear its standing height by the source toe's `clearance` (F,)
        over its own: a longer foot than the source's, pitched as the source's, would drag its toes."""
        toe = quat.rotate(foot_rotation, leg.toe_offset)
        reach = float(length(leg.toe_offset))
        wanted = np.clip((leg.toe_height + clearance - ankle[:, 1]) / max(reach, 1e-9), -1.0, 1.0)
        lift = swinging * np.maximum(np.arcsin(wanted) - np.arcsin(np.clip(toe[:, 1] / max(reach, 1e-9), -1, 1)), 0.0)
        if not lift.any():
            return foot_rotation, toe_rotation
        pitch = quat.from_rotation_vector(unit_across(np.cross(toe, UP), UP, np.array([1.0, 0.0, 0.0]))
                                          * lift[:, None])
        return (quat.multiply(pitch, foot_rotation),
                None if toe_rotation is None else quat.multiply(pitch, toe_rotation))

    def _dip(self, leg: Legs, ankle, foot_rotation, toe_rotation) -> np.ndarray:
        """(F,) how far to lift the ankle so that neither the heel nor the toes are under their standing heights
        and no point of the foot's skin is under the floor."""
        toe_point = ankle + quat.rotate(foot_rotation, leg.toe_offset)
        dips = [-(ankle + quat.rotate(foot_rotation, leg.heel_offset))[:, 1], leg.toe_height - toe_point[:, 1]]
        if leg.tip_offset is not None and toe_rotation is not None:
            dips.append(leg.tip_height - (toe_point + quat.rotate(toe_rotation, leg.tip_offset))[:, 1])
        if len(leg.skin):
            dips.append(-(ankle[:, None, 1] + quat.rotate(foot_rotation[:, None], leg.skin)[..., 1]).min(axis=1))
        if len(leg.toe_skin) and toe_rotation is not None:
            skin = toe_point[:, None] + quat.rotate(toe_rotation[:, None], leg.toe_skin)
            dips.append(-skin[..., 1].min(axis=1))
        return np.maximum(0.0, np.max(dips, axis=0))

    def _overreach(self, leg: Legs, positions, ankle) -> np.ndarray:
        """(F,) how far the hips must come down for the leg to reach `ankle` (with a little bend to spare)."""
        reach = OVERREACH_SLACK * leg.length
        hip = positions[:, leg.thigh]
        across = np.hypot(*(hip - ankle)[:, [0, 2]].T)
        highest = ankle[:, 1] + np.sqrt(np.maximum(reach ** 2 - across ** 2, 0.0))
        return np.maximum(0.0, hip[:, 1] - highest - OVERREACH_ALLOWANCE_M)

    def wrists(self, rotations: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """(F, 2, 3) the avatar's wrists: its hand joints, or where its forearms end."""
        tm = self.target.mapping
        ends = []
        for i, side in enumerate("lr"):
            hand, fore = tm.joints.get(f"{side}_hand"), tm[f"{side}_forearm"]
            ends.append(positions[:, hand] if hand is not None else positions[:, fore] + quat.rotate(
                rotations[:, fore], self.forearm_lengths[i] * self.forearm_axes[i]))
        return np.stack(ends, axis=1)

    def _shrug(self, rotations, positions, shoulder: int, upper: int, target: np.ndarray, arm: float):
        """(rotations, where the upper arm's head goes) with the shoulder turned toward a wrist target out of the
        arm's reach, by as little as brings it in reach and at most SHRUG_LIMIT_DEG."""
        head, joint = positions[:, shoulder], positions[:, upper]
        toward = quat.between(joint - head, target - head)
        limit = np.radians(SHRUG_LIMIT_DEG)
        angle = length(quat.to_rotation_vector(toward))
        low, high = np.zeros(len(target)), np.minimum(angle, limit)
        axis = unit(quat.to_rotation_vector(toward))
        for _ in range(12):  # bisection on the turn: the smallest that brings the target within reach
            middle = 0.5 * (low + high)
            moved = head + quat.rotate(quat.from_rotation_vector(middle[:, None] * axis), joint - head)
            short = length(target - moved) > arm
            low, high = np.where(short, middle, low), np.where(short, high, middle)
        out_of_reach = length(target - joint) > arm
        turn = quat.from_rotation_vector(np.where(out_of_reach, high, 0.0)[:, None] * axis)
        rotations = rotations.copy()
        rotations[:, shoulder] = quat.multiply(turn, rotations[:, shoulder])
        return rotations, head + quat.rotate(turn, joint - head)

    def _reach(self, rotations: np.ndarray, positions: np.ndarray, wrist_targets: np.ndarray) -> np.ndarray:
        """Upper arms and forearms turned so each wrist reaches its target, keeping the elbow's plane; a share
        of the hand's twist about the forearm moves onto the forearm's twist bone, or the forearm without one."""
        tm = self.target.mapping
        rotations = rotations.copy()
        axes = self.target.standing_pose()[0]
        twists = []
        for i, side in enumerate("lr"):
            upper, fore = tm[f"{side}_upper_arm"], tm[f"{side}_forearm"]
            hand = tm.joints.get(f"{side}_hand")
            along = self.forearm_axes[i]
            wrist = self.wrists(rotations, positions)[:, i]
            target = np.where(np.isnan(wrist_targets[:, i]), wrist, wrist_targets[:, i])
            shoulder = tm.joints.get(f"{side}_shoulder")
            if shoulder is not None:  # the arm below the turned shoulder moves with it, its bones' turns unchanged
                rotations, moved = self._shrug(rotations, positions, shoulder, upper, target, self.arm_lengths[i])
                shift = moved - positions[:, upper]
                positions = positions.copy()
                positions[:, [j for j in (upper, fore, hand) if j is not None]] += shift[:, None]
                wrist = wrist + shift
            rotations[:, upper], rotations[:, fore] = two_bone_ik(
                positions[:, upper], positions[:, fore], wrist, target, rotations[:, upper], rotations[:, fore])
            if hand is None:
                continue
            rigid = quat.multiply(rotations[:, fore], quat.inverse_multiply(axes[fore], axes[hand]))
            axis = quat.rotate(rotations[:, fore], along)
            spread = quat.from_rotation_vector(TWIST_SHARE * twist_angle(
                quat.multiply_inverse(rotations[:, hand], rigid), axis)[:, None] * axis)
            if self.twist_bones[i] >= 0:
                twists.append((self.twist_bones[i], spread))
            else:
                rotations[:, fore] = quat.multiply(spread, rotations[:, fore])
        rotations = self._carry_unmapped(rotations)
        for bone, spread in twists:
            rotations[:, bone] = quat.multiply(spread, rotations[:, bone])
        return rotations


def twist_bone(target: TargetSkeleton, forearm: int) -> int:
    """A twist bone of the forearm: an unmapped bone hanging from it whose name says twist or roll; -1 if none."""
    mapped = set(target.mapping.joints.values())
    return next((j for j, parent in enumerate(target.parents) if parent == forearm and j not in mapped
                 and any(word in target.names[j].lower() for word in TWIST_WORDS)), -1)


def twist_angle(q: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """(...,) the angle in radians of q's twist about the unit `axis` (its swing-twist decomposition)."""
    return 2.0 * np.arctan2(dot(q[..., 1:], axis), q[..., 0])


def placement_parents(target: TargetSkeleton) -> np.ndarray:
    """(J,) the bone each bone's head is placed from: a mapped bone's nearest present canonical parent (an IK
    rig may hang a foot from its root), any other bone's own parent."""
    placement = np.array(target.parents, copy=True)
    mapping = target.mapping.joints
    for joint, parents in CANONICAL_PARENTS.items():
        parent = _present(target.mapping, parents)
        if joint in mapping and parent is not None:
            placement[mapping[joint]] = mapping[parent]
    return placement


def parents_first(parents: np.ndarray) -> np.ndarray:
    """(J,) the joints ordered so that every parent comes before its children (roots first)."""
    depth = np.zeros(len(parents), dtype=int)
    for j in range(len(parents)):
        k = j
        while parents[k] >= 0:
            depth[j] += 1
            k = parents[k]
    return np.argsort(depth, kind="stable")


def _below(parents: np.ndarray, joint: int, ancestor: int) -> bool:
    """Whether `ancestor` is `joint` or one of its ancestors."""
    while joint >= 0:
        if joint == ancestor:
            return True
        joint = parents[joint]
    return False


def leaf_reach(bone_length: float, reference_length: float, share: float) -> float:
    """The fraction of a leaf bone, head to tail, that LEAF_REACH lets stand for the body part beyond it."""
    return float(min(1.0, share * reference_length / bone_length)) if bone_length > 1e-9 else 0.0


def leaf_end(target: TargetSkeleton, side: str, joint: str) -> np.ndarray:
    """(3,) where `side`'s `joint` bone ends at standing: along its tail, as far as LEAF_REACH allows."""
    tm = target.mapping
    heads = target.standing_pose()[1]
    j = tm[f"{side}_{joint}"]
    (start, stop), share = LEAF_REACH[joint]
    reference = length(heads[tm[f"{side}_{stop}"]] - heads[tm[f"{side}_{start}"]])
    along = (target.tails[j] if target.tails is not None else heads[j]) - heads[j]
    return heads[j] + leaf_reach(length(along), reference, share) * along


def _legs(target: TargetSkeleton, source_mapping: HumanoidMapping, side: str, scale: float) -> Legs:
    """One side's leg on the target at `scale`: joints, standing heights above its floor, the feet's skin."""
    tm = target.mapping
    axes, heads = target.standing_pose()
    floor = target.floor_height()
    foot, toes = tm[f"{side}_foot"], tm.joints.get(f"{side}_toes")
    toe_point = heads[toes] if toes is not None else leaf_end(target, side, "foot")
    tip = leaf_end(target, side, "toes") if toes is not None and target.tails is not None else None

    def skin(bone: int | None) -> np.ndarray:
        """The skin points bound to `bone`, from its head in its axes, scaled."""
        if bone is None or target.skin is None:
            return np.zeros((0, 3))
        points = target.skin[1][target.skin[0] == bone]
        return scale * quat.inverse_rotate(axes[bone], points - heads[bone])

    ankle_height = scale * float(heads[foot, 1] - floor)
    return Legs(tm[f"{side}_thigh"], tm[f"{side}_shin"], foot, toes, ankle_height,
                quat.inverse_rotate(axes[foot], np.array([0.0, -ankle_height, 0.0])),
                scale * quat.inverse_rotate(axes[foot], toe_point - heads[foot]), scale * float(toe_point[1] - floor),
                None if tip is None else scale * quat.inverse_rotate(axes[toes], tip - heads[toes]),
                None if tip is None else scale * float(tip[1] - floor), skin(foot), skin(toes),
                scale * leg_length(heads, tm, side, 0.0), source_mapping[f"{side}_toes"])


def _yaw_turn(rotations: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """(F, 4) the turn about the vertical that carries a bone's standing direction onto its posed one."""
    forward = quat.rotate(quat.multiply_inverse(rotations, rest), np.array([0.0, 0.0, 1.0]))
    return quat.from_yaw(quat.yaw_of_direction(forward))


def contact_weight(height, speed):
    """How planted a source toe is, 0 to 1, from its height above its floor and its horizontal speed."""
    low_h, high_h = CONTACT_HEIGHT_M
    low_v, high_v = CONTACT_SPEED_M_S
    return np.clip((high_h - height) / (high_h - low_h), 0.0, 1.0) * np.clip((high_v - speed) / (high_v - low_v),
                                                                              0.0, 1.0)


def contact_weights(toe_positions: np.ndarray, fps: float) -> np.ndarray:
    """(F,) how planted a source toe is over a whole motion: its floor the 5th percentile of its heights."""
    height = toe_positions[:, 1] - np.percentile(toe_positions[:, 1], 5)
    velocity = np.gradient(toe_positions[:, [0, 2]], axis=0) * fps if len(toe_positions) > 1 else np.zeros((1, 2))
    return contact_weight(height, length(velocity))


def held_over_stances(planted: np.ndarray, ankle: np.ndarray, yaw: np.ndarray) -> tuple:
    """(ankle, yaw) of one leg over a whole motion with each stance (frames of positive contact weight `planted`
    (F,)) held at its mean place and turn. Between stances the foot carries the hold's offset from its own path,
    easing from the last stance's to the next one's over the swing, so it neither jumps at a touchdown nor at a
    lift-off."""
    ankle, yaw = ankle.copy(), yaw.copy()
    segments = contact_segments(planted)
    if not segments:
        return ankle, yaw
    offsets = np.zeros((len(ankle), 2))
    for start, stop in segments:
        weights = planted[start:stop] + 1e-9
        place = np.average(ankle[start:stop, [0, 2]], axis=0, weights=weights)
        offsets[start:stop] = place - ankle[start:stop, [0, 2]]
        yaw[start:stop] = quat.mean(yaw[start:stop], weights)
    offsets[:segments[0][0]] = offsets[segments[0][0]]
    offsets[segments[-1][1]:] = offsets[segments[-1][1] - 1]
    for (_, stop), (start, _) in zip(segments, segments[1:]):
        s = (np.arange(stop, start) - stop + 1.0) / (start - stop + 1.0)
        s = (s * s * (3.0 - 2.0 * s))[:, None]
        offsets[stop:start] = (1.0 - s) * offsets[stop - 1] + s * offsets[start]
    ankle[:, [0, 2]] += offsets
    return ankle, yaw


class LiveStances:
    """Planting a live retargeting's feet one frame at a time: contacts read from each source toe's height
    over the source's floor and its speed since the last frame, each stance held where it began."""

    def __init__(self, source_floor: float):
        self.source_floor = source_floor
        self.previous_toes: list[np.ndarray | None] = [None, None]
        self.held: list[tuple | None] = [None, None]

    @classmethod
    def of(cls, standing: Motion) -> "LiveStances":
        """Stances over the floor of `standing`, a motion on the source skeleton (its toes' 5th percentile)."""
        mapping = find_mapping(standing.skeleton)
        toes = standing.global_positions()[:, [mapping["l_toes"], mapping["r_toes"]], 1]
        return cls(float(np.percentile(toes, 5)))

    def hold(self, side: int, toe: np.ndarray, ankle: np.ndarray, yaw: np.ndarray, fps: float) -> tuple:
        """(planted (1,), ankle (1, 3), yaw (1, 4)) of leg `side` (0 left, 1 right) this frame."""
        previous = self.previous_toes[side]
        speed = 0.0 if previous is None else float(length(toe[0, [0, 2]] - previous[[0, 2]])) * fps
        self.previous_toes[side] = toe[0].copy()
        planted = np.atleast_1d(contact_weight(toe[0, 1] - self.source_floor, speed))
        if planted[0] <= 0.0:
            self.held[side] = None
            return planted, ankle, yaw
        if self.held[side] is None:
            self.held[side] = (ankle[0, [0, 2]].copy(), yaw[0].copy())
        place, held_yaw = self.held[side]
        ankle = ankle.copy()
        ankle[:, [0, 2]] = (1.0 - planted[0]) * ankle[:, [0, 2]] + planted[0] * place
        return planted, ankle, held_yaw[None].copy()


def contact_segments(weights: np.ndarray) -> list[tuple[int, int]]:
    """[(start, stop)) runs of frames with a positive contact weight."""
    on = np.concatenate([[False], weights > 0.0, [False]])
    edges = np.flatnonzero(on[1:] != on[:-1])
    return list(zip(edges[::2], edges[1::2]))


def avatar_scale(target: TargetSkeleton, head_height_m: float, mode: str) -> float:
    """The avatar's size over its rest size: `fit` brings its standing head to the person's, `keep` keeps it."""
    if mode not in SIZE_MODES:
        raise ValueError(f"size mode must be one of {', '.join(SIZE_MODES)}, not {mode!r}")
    return head_height_m / target.head_height() if mode == "fit" else 1.0


@dataclass(frozen=True)
class RetargetedMotion:
    """An offline solve on a target rig: what the add-on caches and bakes."""

    rotations: np.ndarray
    """(F, J, 4) bone axes in the world."""
    positions: np.ndarray
    """(F, J, 3) bone heads in the world."""
    wrist_targets: np.ndarray
    """(F, 2, 3) the controller-implied wrists (scaled with the solve in `keep` mode), NaN where untracked."""
    head_targets: np.ndarray
    """(F, 3) the headset-implied head joint (likewise)."""
    wrists: np.ndarray
    """(F, 2, 3) the avatar's wrists: its hand joints, or its forearms' ends."""
    scale: float
    """The avatar's pose scale (its root bones'), 1 in `keep` mode."""


def retarget_solution(solution, target: TargetSkeleton, fps: float, stride_scaled: bool = False,
                      size: str = "fit") -> RetargetedMotion:
    """An offline solve (solver.Solution) on the target rig at `fps`: frame k is the stream's first time plus
    k / fps. The head meets the headset, the wrists the controllers, stance feet stay planted."""
    motion = solution.motion.resampled(fps)
    implied = implied_joint_positions(solution.stream.resampled(fps))[:len(motion)]
    implied = np.where(solution.stream.resampled(fps).tracked[:len(motion), :, None], implied, np.nan)
    standing = np.nanmedian(implied[:max(1, int(fps / 2)), 0, 1])
    person_head = standing if np.isfinite(standing) else float(np.nanmedian(implied[:, 0, 1]))
    scale = avatar_scale(target, person_head, size)
    if size == "keep":
        shrink = target.head_height() / person_head
        motion, implied = motion.scaled(shrink), implied * shrink
    source_mapping = find_mapping(motion.skeleton)
    retargeting = Retargeting.between(motion.skeleton, source_mapping, target, motion, scale)
    heads, wrists = implied[:, 0], implied[:, 1:]
    rotations, positions = retargeting.apply(motion, wrists, stride_scaled, heads, plant_feet=True)
    return RetargetedMotion(rotations, positions, wrists, heads, retargeting.wrists(rotations, positions), scale)


def bvh_target(motion: Motion, override: dict[str, str] | str | None = None) -> TargetSkeleton:
    """A BVH character as a target: its joints with world-aligned axes at the file's rest pose, standing as in
    its most upright frame (a BVH rest pose need not stand)."""
    skeleton = motion.skeleton
    rest_rotations, rest_positions = forward_kinematics(skeleton.parents, quat.identity(len(skeleton)), skeleton.offsets)
    mapping = find_mapping(skeleton, override)
    rotations, positions = motion.global_transforms()
    frame = int(standing_frames(positions, mapping, 1)[0])
    return TargetSkeleton(skeleton.names, skeleton.parents, rest_positions, rest_rotations, mapping,
                          standing=(rotations[frame], positions[frame]))


def on_bvh_skeleton(retargeted: RetargetedMotion, skeleton: Skeleton, fps: float) -> Motion:
    """A retargeted solve as a Motion on the BVH character's skeleton (its offsets scaled by the avatar's size)."""
    rotations, positions = retargeted.rotations, retargeted.positions
    parents = skeleton.parents
    local_rotations = quat.normalize(np.where(parents[:, None] >= 0, quat.inverse_multiply(
        rotations[:, np.maximum(parents, 0)], rotations), rotations))
    local_positions = np.where(parents[:, None] >= 0, quat.inverse_rotate(
        rotations[:, np.maximum(parents, 0)], positions - positions[:, np.maximum(parents, 0)]), positions)
    return Motion(skeleton.scaled(retargeted.scale), local_rotations, local_positions, fps)
