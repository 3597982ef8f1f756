"""Retargeting: a solved motion carried onto another humanoid's skeleton, rest pose and proportions.

The target is described by its bones at rest in world space (core's frame): head positions and
each bone's own orientation (its axes, whatever the rig's rolls), plus the humanoid mapping of
SPEC §6. The source is a Motion whose rest is the identity pose (BVH convention: every joint's
frame is the world's at rest).

Rest alignment: the target may rest in a T-pose or an A-pose and face another way than the
source. For every mapped joint, the source pose that looks like the target's rest is the source
rest with each bone swung onto the target's bone direction (after turning the target to face the
source's way). A frame's target orientation is then the source orientation times the inverse of
that aligned pose times the target's rest:

    G_t[j] = G_s[c] · D_j⁻¹ · Y⁻¹ · R_t[j]

with D_j the swing of bone j onto the target's direction and Y the yaw between the rests.
Unmapped target bones (extra spine bones, twist bones, fingers) keep their rest orientation
relative to their parent. The hips' height is scaled by the ratio of the rests' hip heights (leg
length); the horizontal position stays where the solve put it, so the avatar stays under the
headset (`stride_scaled` scales it too, for avatars that need not meet the devices). Last, the arms
are re-solved with two-bone IK on the avatar's own arm lengths so its wrists reach the
controller-implied wrist positions.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import quat
from .character import hips_forward
from .devices import implied_joint_positions
from .humanoid import HumanoidMapping, find_mapping
from .humanoid_structure import tails_along_bones
from .leg_ik import two_bone_ik
from .motion import Motion, forward_kinematics
from .skeleton import Skeleton

# The bone of each canonical joint points at this canonical child; joints without one (head,
# hands, toes) take their parent joint's alignment.
CANONICAL_CHILD = {
    "hips": "spine", "spine": "chest", "chest": "neck", "neck": "head",
    **{f"{s}_{j}": f"{s}_{c}" for s in "lr" for j, c in (
        ("shoulder", "upper_arm"), ("upper_arm", "forearm"), ("forearm", "hand"),
        ("thigh", "shin"), ("shin", "foot"), ("foot", "toes"))},
}
ALIGNED_LIKE_PARENT = {"head": "neck", "l_hand": "l_forearm", "r_hand": "r_forearm",
                       "l_toes": "l_foot", "r_toes": "r_foot"}


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

    @classmethod
    def build(cls, names, parents, rest_positions, rest_rotations, override: dict[str, str] | None = None):
        """The rig with its humanoid mapping found by name (or given per canonical joint in `override`)."""
        parents = np.asarray(parents)
        rest_positions = np.asarray(rest_positions, dtype=float)
        tails = tails_along_bones(rest_positions, quat.normalize(np.asarray(rest_rotations, float)), parents)
        mapping = find_mapping(rig_skeleton(names, parents, rest_positions), override, tails=tails)
        return cls(tuple(names), parents, rest_positions, quat.normalize(np.asarray(rest_rotations, float)), mapping)

    def floor_height(self) -> float:
        """Height of the lowest foot or toe joint at rest: where the rig stands."""
        feet = [self.mapping[f"{s}_{j}"] for s in "lr" for j in ("foot", "toes")]
        return float(self.rest_positions[feet, 1].min())


@dataclass(frozen=True)
class Retargeting:
    """What stays fixed between a source skeleton and a target rig: the per-joint rest alignment."""

    target: TargetSkeleton
    source_joint: np.ndarray
    """(J,) source joint that drives each target joint, -1 for unmapped ones."""
    alignment: np.ndarray
    """(J, 4) D_j⁻¹ · Y⁻¹ · R_t[j] per mapped target joint (identity for unmapped)."""
    source_hips: int
    hips_scale: float
    """Target hip height over source hip height, both above their rests' floors."""
    source_floor: float
    target_floor: float
    rest_local: np.ndarray
    """(J, 4) each bone's rest orientation in its parent's (its own for roots)."""
    rest_offsets: np.ndarray
    """(J, 3) each bone's head in its parent's rest frame."""
    follows_hips: np.ndarray
    """(J,) bones placed from the hips down; the others stay where they rest."""

    @classmethod
    def between(cls, source: Skeleton, source_mapping: HumanoidMapping, target: TargetSkeleton):
        """The alignment of `source` (identity rest) onto `target`."""
        _, source_rest = forward_kinematics(source.parents, quat.identity(len(source)), source.offsets)
        target_rest = target.rest_positions
        tm, sm = target.mapping, source_mapping
        # Y: the yaw that turns the source's rest facing onto the target's.
        facing_source = hips_forward(source_rest[sm["l_thigh"]], source_rest[sm["r_thigh"]])
        facing_target = hips_forward(target_rest[tm["l_thigh"]], target_rest[tm["r_thigh"]])
        yaw = quat.between(facing_source, facing_target)
        swings = {}
        for joint, child in CANONICAL_CHILD.items():
            toward_source = source_rest[sm[child]] - source_rest[sm[joint]]
            toward_target = quat.inverse_rotate(yaw, target_rest[tm[child]] - target_rest[tm[joint]])
            swings[joint] = quat.between(toward_source, toward_target)
        for joint, like in ALIGNED_LIKE_PARENT.items():
            swings[joint] = swings[like]
        source_joint = np.full(len(target.names), -1)
        alignment = quat.identity(len(target.names))
        for joint, swing in swings.items():
            j = tm[joint]
            source_joint[j] = sm[joint]
            alignment[j] = quat.multiply(quat.conjugate(swing), quat.inverse_multiply(yaw, target.rest_rotations[j]))
        source_floor = float(source_rest[[sm[f"{s}_{j}"] for s in "lr" for j in ("foot", "toes")], 1].min())
        hips_scale = (target_rest[tm["hips"], 1] - target.floor_height()) / (source_rest[sm["hips"], 1] - source_floor)
        parent = np.maximum(target.parents, 0)
        rest = target.rest_rotations
        rest_local = np.where(target.parents[:, None] >= 0, quat.inverse_multiply(rest[parent], rest), rest)
        rest_offsets = quat.inverse_rotate(rest[parent], target_rest - target_rest[parent])
        follows_hips = np.array([_below(target.parents, j, tm["hips"]) for j in range(len(target.names))])
        return cls(target, source_joint, alignment, sm["hips"], float(hips_scale), source_floor,
                   target.floor_height(), rest_local, rest_offsets, follows_hips)

    def apply(self, motion: Motion, wrist_targets: np.ndarray | None = None, stride_scaled: bool = False):
        """(global rotations (F, J, 4), global positions (F, J, 3)) of the target following `motion`.

        `wrist_targets` (F, 2, 3), left then right, re-solve the arms so the wrists reach them; a NaN
        target (an untracked controller) leaves that arm as retargeted.
        """
        source_rotations, source_positions = motion.global_transforms()
        frames = len(motion)
        mapped = self.source_joint >= 0
        rotations = np.empty((frames, len(self.target.names), 4))
        rotations[:, mapped] = quat.multiply(source_rotations[:, self.source_joint[mapped]], self.alignment[mapped])
        hips = source_positions[:, self.source_hips].copy()
        hips[:, 1] = self.target_floor + (hips[:, 1] - self.source_floor) * self.hips_scale
        if stride_scaled:
            hips[:, [0, 2]] *= self.hips_scale
        rotations = self._carry_unmapped(rotations)
        positions = self._positions(rotations, hips)
        if wrist_targets is not None:
            rotations = self._reach(rotations, positions, wrist_targets)
            positions = self._positions(rotations, hips)
        return rotations, positions

    def _carry_unmapped(self, rotations: np.ndarray) -> np.ndarray:
        """Unmapped bones keep their rest orientation relative to their parent (roots stay at rest)."""
        for j, parent in enumerate(self.target.parents):
            if self.source_joint[j] >= 0:
                continue
            rotations[:, j] = self.rest_local[j] if parent < 0 else quat.multiply(rotations[:, parent],
                                                                                   self.rest_local[j])
        return rotations

    def _positions(self, rotations: np.ndarray, hips: np.ndarray) -> np.ndarray:
        """Bone heads: the hips where placed, every other bone at its rest offset in its posed parent."""
        target, hips_joint = self.target, self.target.mapping["hips"]
        positions = np.empty(rotations.shape[:2] + (3,))
        for j, parent in enumerate(target.parents):
            if j == hips_joint:
                positions[:, j] = hips
            elif not self.follows_hips[j]:
                positions[:, j] = target.rest_positions[j]
            else:
                positions[:, j] = positions[:, parent] + quat.rotate(rotations[:, parent], self.rest_offsets[j])
        return positions

    def _reach(self, rotations: np.ndarray, positions: np.ndarray, wrist_targets: np.ndarray) -> np.ndarray:
        """Upper arms and forearms turned so each wrist reaches its target, keeping the elbow's plane."""
        tm = self.target.mapping
        rotations = rotations.copy()
        for i, side in enumerate("lr"):
            upper, fore, hand = tm[f"{side}_upper_arm"], tm[f"{side}_forearm"], tm[f"{side}_hand"]
            target = np.where(np.isnan(wrist_targets[:, i]), positions[:, hand], wrist_targets[:, i])
            rotations[:, upper], rotations[:, fore] = two_bone_ik(
                positions[:, upper], positions[:, fore], positions[:, hand], target,
                rotations[:, upper], rotations[:, fore])
        return self._carry_unmapped(rotations)


def _below(parents: np.ndarray, joint: int, ancestor: int) -> bool:
    """Whether `ancestor` is `joint` or one of its ancestors."""
    while joint >= 0:
        if joint == ancestor:
            return True
        joint = parents[joint]
    return False


def retarget_solution(solution, target: TargetSkeleton, fps: float, stride_scaled: bool = False):
    """An offline solve (solver.Solution) on the target rig at `fps`, its wrists on the controllers.

    Returns (global rotations (F, J, 4), global positions (F, J, 3), wrist targets (F, 2, 3) with NaN
    where a controller is untracked); frame k is the stream's first time plus k / fps.
    """
    motion = solution.motion.resampled(fps)
    wrists = implied_joint_positions(solution.stream.resampled(fps))[:len(motion), 1:]
    source_mapping = find_mapping(motion.skeleton)
    retargeting = Retargeting.between(motion.skeleton, source_mapping, target)
    rotations, positions = retargeting.apply(motion, wrists, stride_scaled)
    return rotations, positions, wrists
