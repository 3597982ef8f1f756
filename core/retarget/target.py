"""The target skeleton: a rig's or a BVH character's bones at rest with its humanoid mapping (SPEC §6), and what
retargeting reads from it and from the source: anatomical frames, uprightness, the standing reference and size.

Standing reference. Neither skeleton's rest pose is trusted to be upright (a BVH's rest often is
not: the Bandai data's rest lays every bone along X). Each side gets an anatomical frame per
canonical joint, built from an upright standing pose: the bone's direction (toward its canonical
child) and the body's forward (the body's up for the feet, which point forward). The source's
standing pose is measured from its own motion (the most upright frames); a rig's is its rest
pose unless another is given.

The avatar's size: `fit` (the default) scales the avatar so its head meets the person's standing
head height; `keep` keeps its size and scales the solve (positions and devices) to it instead.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..anim.character import UP, hips_forward
from ..anim.contacts import contact_weights
from ..anim.motion import Motion, forward_kinematics
from ..anim.skeleton import Skeleton
from ..math import quat
from ..math.vector import length, unit, unit_across
from ..rig.humanoid import HumanoidMapping, HumanoidMappingError, find_mapping
from ..rig.humanoid_structure import tails_along_bones

# Each joint's bone points at the first of these that the skeleton has; joints without one take
# the alignment of the joint named in ALIGNED_LIKE (a rig's own bone tail serves where given).
MIN_BONE_M = 1e-4
"""A bone shorter than this has no direction (a BVH joint placed on its parent's head)."""

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

CLIP_TORSO_LIMIT_DEG = 60.0
"""A capture clip's torso (hips to neck) leans at most this from +Y in its most upright frame (a dash's: 33)."""

STANDING_FRAMES = 8
"""How many of the source's most upright frames make its standing reference."""

LEAF_REACH = {"foot": (("shin", "foot"), 0.4), "forearm": (("upper_arm", "forearm"), 1.0), "toes": (("shin", "foot"), 0.2)}
"""A bone standing in for a missing child (a foot for its toes, a forearm for its hand) or a toe bone's tip
ends along its tail, at most this share of the distance between the two named joints from its head:
importers give leaf bones any length (the Godot robot's foot is 1.4 m long)."""

TWIST_WORDS = ("twist", "roll")
"""Words that name a forearm's twist bone (Unreal's lowerarm_twist_01_l, Rigify's forearm roll bones)."""


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
    planted: tuple | None = None
    """Per side, left then right, (bone axes (J, 4), heads (J, 3)) of a pose with that foot flat on the floor: its
    standing heights and flat turn; None: the standing pose (a BVH's most upright frame may have a foot in the air)."""

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
        """Height of the floor it stands on: the given one, else its lowest foot joint or toe point (the toe joint, else
        the foot's end) where it is planted."""
        if self.floor is not None:
            return float(self.floor)
        return min(min(float(self.foot_pose(side)[1][self.mapping[f"{side}_foot"], 1]), float(toe_point(self, side)[1]))
                   for side in "lr")

    def standing_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """(bone axes (J, 4), heads (J, 3)) of the upright standing pose: the rest unless given."""
        return self.standing if self.standing is not None else (self.rest_rotations, self.rest_positions)

    def foot_pose(self, side: str) -> tuple[np.ndarray, np.ndarray]:
        """(bone axes (J, 4), heads (J, 3)) of a pose with `side`'s foot ("l" or "r") planted: `planted`'s, else the
        standing pose."""
        return self.planted["lr".index(side)] if self.planted is not None else self.standing_pose()

    def tail(self, joint: int, pose: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """(3,) where `joint`'s bone ends in `pose` (None: standing): its tail carried with the bone from the standing
        pose; its head where there are no tails."""
        axes, heads = pose if pose is not None else self.standing_pose()
        if self.tails is None:
            return heads[joint]
        standing_axes, standing_heads = self.standing_pose()
        turn = quat.multiply_inverse(axes[joint], standing_axes[joint])
        return heads[joint] + quat.rotate(turn, self.tails[joint] - standing_heads[joint])

    def head_height(self) -> float:
        """The head joint's standing height above the floor."""
        return float(self.standing_pose()[1][self.mapping["head"], 1] - self.floor_height())



def first_present(mapping: HumanoidMapping, joints) -> str | None:
    return next((j for j in joints if j in mapping.joints), None)



def bone_directions(positions: np.ndarray, mapping: HumanoidMapping, tails: np.ndarray | None = None) -> dict:
    """Each canonical joint's bone direction (..., 3): toward its nearest canonical child that is not at its head (a
    zero-length bone points nowhere), else its tail, else like the joint ALIGNED_LIKE names."""
    directions = {}
    for joint, children in CANONICAL_CHILDREN.items():
        if joint not in mapping.joints:
            continue
        j = mapping[joint]
        child = next((c for c in children if c in mapping.joints and np.all(
            length(positions[..., mapping[c], :] - positions[..., j, :]) > MIN_BONE_M)), None)
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



def leaf_reach(bone_length: float, reference_length: float, share: float) -> float:
    """The fraction of a leaf bone, head to tail, that LEAF_REACH lets stand for the body part beyond it."""
    return float(min(1.0, share * reference_length / bone_length)) if bone_length > 1e-9 else 0.0



def leaf_end(target: TargetSkeleton, side: str, joint: str, pose: tuple | None = None) -> np.ndarray:
    """(3,) where `side`'s `joint` bone ends in `pose` (None: standing): along its tail, as far as LEAF_REACH
    allows."""
    tm = target.mapping
    heads = (pose if pose is not None else target.standing_pose())[1]
    j = tm[f"{side}_{joint}"]
    (start, stop), share = LEAF_REACH[joint]
    reference = length(heads[tm[f"{side}_{stop}"]] - heads[tm[f"{side}_{start}"]])
    along = target.tail(j, pose) - heads[j]
    return heads[j] + leaf_reach(length(along), reference, share) * along



def toe_point(target: TargetSkeleton, side: str) -> np.ndarray:
    """(3,) `side`'s toe point where its foot is planted: the toe joint, else the foot bone's end."""
    pose = target.foot_pose(side)
    toes = target.mapping.joints.get(f"{side}_toes")
    return pose[1][toes] if toes is not None else leaf_end(target, side, "foot", pose)


def avatar_scale(target: TargetSkeleton, head_height_m: float, mode: str) -> float:
    """The avatar's size over its rest size: `fit` brings its standing head to the person's, `keep` keeps it."""
    if mode not in SIZE_MODES:
        raise ValueError(f"size mode must be one of {', '.join(SIZE_MODES)}, not {mode!r}")
    return head_height_m / target.head_height() if mode == "fit" else 1.0



MIN_LIMB_BONE_M = 0.01
"""A mapped upper arm, forearm, thigh or shin shorter than this cannot be bent by the limbs' IK (a hand would end
a bone's length off its controller)."""
LIMB_BONES = {"upper arm": ("upper_arm", "forearm"), "forearm": ("forearm", "hand"), "thigh": ("thigh", "shin"),
              "shin": ("shin", "foot")}
"""Each limb bone the IK bends: (the canonical joint at its head, the one at its tail)."""


def check_limb_bones(names, rest_positions: np.ndarray, mapping: HumanoidMapping) -> None:
    """HumanoidMappingError naming the first mapped limb bone shorter than MIN_LIMB_BONE_M at the rest pose."""
    for side, word in (("l", "left"), ("r", "right")):
        for bone, (head, tail) in LIMB_BONES.items():
            head, tail = mapping.joints.get(f"{side}_{head}"), mapping.joints.get(f"{side}_{tail}")
            if head is None or tail is None:
                continue
            bone_m = float(np.linalg.norm(rest_positions[tail] - rest_positions[head]))
            if bone_m < MIN_LIMB_BONE_M:
                raise HumanoidMappingError(f"the {word} {bone} ({names[head]} to {names[tail]}) is {bone_m * 100:.2f} cm "
                                           f"long; the limbs' IK needs at least {MIN_LIMB_BONE_M * 100:g} cm")


def clip_mapping(motion: Motion, override: dict[str, str] | str | None = None, where: str = "") -> HumanoidMapping:
    """A capture clip's humanoid mapping, its torso upright (+Y up) in one of up to 200 frames spread over it (a
    Z-up export's is not); else HumanoidMappingError, its message starting with `where` (the clip or file)."""
    try:
        mapping = find_mapping(motion.skeleton, override)
    except HumanoidMappingError as error:
        raise HumanoidMappingError(f"{where}: {error}" if where else str(error)) from None
    positions = motion[:: max(1, len(motion) // 200)].global_positions()
    torso = unit(positions[:, mapping["neck"]] - positions[:, mapping["hips"]])
    tilt = float(np.degrees(np.arccos(np.clip(torso[:, 1].max(), -1.0, 1.0))))
    if tilt > CLIP_TORSO_LIMIT_DEG:
        raise HumanoidMappingError(f"{where + ': ' if where else ''}the body is not upright in any frame: its torso "
                                   f"leans at least {tilt:.0f} degrees from +Y (at most {CLIP_TORSO_LIMIT_DEG:.0f}); "
                                   "motion capture must be +Y up (a Z-up export?)")
    return mapping


def bvh_target(motion: Motion, override: dict[str, str] | str | None = None) -> TargetSkeleton:
    """A BVH character as a target: its joints with world-aligned axes at the file's rest pose, standing as in
    its most upright frame (a BVH rest pose need not stand). Limb bones too short to bend and a character
    that does not stand upright in any frame are refused (HumanoidMappingError)."""
    skeleton = motion.skeleton
    rest_rotations, rest_positions = forward_kinematics(skeleton.parents, quat.identity(len(skeleton)), skeleton.offsets)
    mapping = find_mapping(skeleton, override)
    check_limb_bones(skeleton.names, rest_positions, mapping)
    rotations, positions = motion.global_transforms()
    frame = int(standing_frames(positions, mapping, 1)[0])
    tilt = float(np.degrees(uprightness(positions[frame], mapping)))
    if tilt > UPRIGHT_LIMIT_DEG:  # a Z-up rig: refused before a solve, with the same words as Retargeting.between
        raise HumanoidMappingError(f"the target's standing pose is not upright: its torso and legs lean {tilt:.0f} "
                                   f"degrees from vertical in all (at most {UPRIGHT_LIMIT_DEG:.0f}); a rig's rest pose "
                                   "must stand (a Z-up file?)")
    tails = bvh_tails(skeleton, rotations[frame], positions[frame])
    planted = tuple((rotations[k], positions[k]) for k in planted_frames(skeleton, rotations, positions, mapping))
    return TargetSkeleton(skeleton.names, skeleton.parents, rest_positions, rest_rotations, mapping, tails,
                          standing=(rotations[frame], positions[frame]), planted=planted)


def bvh_tails(skeleton, rotations: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """(..., J, 3) each joint's bone tail in poses (global rotations (..., J, 4), positions (..., J, 3)): its End
    Site, else the head of its child farthest from it (by the skeleton's offsets), else its head."""
    tails = positions.copy()
    reach = np.zeros(len(skeleton.parents))
    for j, parent in enumerate(skeleton.parents):
        if parent >= 0 and length(skeleton.offsets[j]) > reach[parent]:
            reach[parent] = length(skeleton.offsets[j])
            tails[..., parent, :] = positions[..., j, :]
    for j, offset in skeleton.end_sites:
        tails[..., j, :] = positions[..., j, :] + quat.rotate(rotations[..., j, :], np.asarray(offset, float))
    return tails


def planted_frames(skeleton, rotations: np.ndarray, positions: np.ndarray, mapping: HumanoidMapping) -> list[int]:
    """Per side, left then right, the frame of a motion (global rotations (F, J, 4), positions (F, J, 3)) whose
    foot is lowest and flattest: its ankle and its toe point (the toe joint, else the foot's tail) nearest the
    floor together."""
    tails = None
    frames = []
    for side in "lr":
        foot, toes = mapping[f"{side}_foot"], mapping.joints.get(f"{side}_toes")
        if toes is None and tails is None:
            tails = bvh_tails(skeleton, rotations, positions)
        toe = positions[:, toes, 1] if toes is not None else tails[:, foot, 1]
        frames.append(int(np.argmin(positions[:, foot, 1] + toe)))
    return frames


def twist_bone(target: TargetSkeleton, forearm: int) -> int:
    """A twist bone of the forearm: an unmapped bone hanging from it whose name says twist or roll; -1 if none."""
    mapped = set(target.mapping.joints.values())
    return next((j for j, parent in enumerate(target.parents) if parent == forearm and j not in mapped
                 and any(word in target.names[j].lower() for word in TWIST_WORDS)), -1)


def placement_parents(target: TargetSkeleton) -> np.ndarray:
    """(J,) the bone each bone's head is placed from: a mapped bone's nearest present canonical parent (an IK
    rig may hang a foot from its root), any other bone's own parent."""
    placement = np.array(target.parents, copy=True)
    mapping = target.mapping.joints
    for joint, parents in CANONICAL_PARENTS.items():
        parent = first_present(target.mapping, parents)
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


def is_below(parents: np.ndarray, joint: int, ancestor: int) -> bool:
    """Whether `ancestor` is `joint` or one of its ancestors."""
    while joint >= 0:
        if joint == ancestor:
            return True
        joint = parents[joint]
    return False
