"""Retargeting: a solved motion carried onto another humanoid's skeleton, rest pose and proportions.

The target is described by its bones at rest in world space (core's frame): head positions, each
bone's own orientation (its axes, whatever the rig's rolls), optionally its tails, plus the
humanoid mapping of SPEC §6 (optional joints such as toes, chest, shoulders or hands may be absent).

With A_s the source bone's anatomical frame in its own axes (retarget/target.py) and
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
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..anim.character import UP
from ..anim.contacts import contact_weights
from ..anim.motion import Motion, forward_kinematics
from ..anim.skeleton import Skeleton
from ..devices.attachments import implied_joint_positions
from ..ik.two_bone import two_bone_ik
from ..math import quat
from ..math.vector import dot, length, unit, unit_across
from ..rig.humanoid import HumanoidMapping, find_mapping
from .stances import HEEL_RISE_LIMIT_DEG, TOE_RISE_LIMIT_DEG, LiveStances, TargetLeg, held_over_stances, leg_length, \
    leg_on_target, yaw_turn
from .target import UPRIGHT_LIMIT_DEG, TargetSkeleton, anatomical_frames, avatar_scale, bone_directions, \
    is_below, leaf_end, parents_first, placement_parents, reference_weights, standing_frames, twist_bone, \
    uprightness

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

TWIST_SHARE = 0.5
"""Share of the hand's twist about the forearm that the forearm takes."""


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
    legs: tuple[TargetLeg, TargetLeg]
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
        target_ankle = float(min(target.foot_pose(s)[1][tm[f"{s}_foot"], 1] for s in "lr") - floor)
        source_leg = np.mean([leg_length(stand_p.mean(0), sm, side, source_ankle) for side in "lr"])
        target_leg = np.mean([leg_length(target_p, tm, s, target_ankle) for s in "lr"])
        placement = placement_parents(target)
        rest = target_r
        parent = np.maximum(placement, 0)
        rest_local = np.where(placement[:, None] >= 0, quat.inverse_multiply(rest[parent], rest), rest)
        rest_offsets = scale * quat.inverse_rotate(rest[parent], target_p - target_p[parent])
        follows_hips = np.array([is_below(placement, j, tm["hips"]) for j in range(len(target.names))])
        legs = tuple(leg_on_target(target, sm, side, scale) for side in "lr")
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
                   np.array([j for j in range(len(target.names)) if is_below(placement, j, tm["spine"])]), legs,
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
        plans = []
        for side, leg in enumerate(self.legs):
            # Flat: the standing foot turned about the vertical by the foot's own turn.
            yaw = yaw_turn(rotations[:, leg.foot], leg.foot_axes, leg.forward)
            ankle = positions[:, leg.foot].copy()
            toe = source_positions[:, leg.source_toe]
            if stances is None:
                planted = contact_weights(toe, fps)
                toe_point, yaw = held_over_stances(planted, ankle + quat.rotate(rotations[:, leg.foot], leg.toe_offset),
                                                   yaw)
            else:
                planted, ankle, yaw = stances.hold(side, toe, ankle, yaw, fps)
            foot_rotation = quat.slerp(rotations[:, leg.foot], quat.multiply(yaw, leg.foot_axes), planted)
            if stances is None:  # the toe point held: a foot flattening as it lands turns about it
                ankle[:, [0, 2]] = (toe_point - quat.rotate(foot_rotation, leg.toe_offset))[:, [0, 2]]
            ankle[:, 1] = (1.0 - planted) * ankle[:, 1] + planted * leg.ankle_height
            toe_rotation = None
            if leg.toes is not None:
                toe_rotation = quat.slerp(rotations[:, leg.toes], quat.multiply(yaw, leg.toe_axes), planted)
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

    def _roll(self, leg: TargetLeg, hip, ankle, foot_rotation, toe_rotation, planted):
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

    def _clear(self, leg: TargetLeg, ankle, foot_rotation, toe_rotation, clearance, swinging):
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

    def _dip(self, leg: TargetLeg, ankle, foot_rotation, toe_rotation) -> np.ndarray:
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

    def _overreach(self, leg: TargetLeg, positions, ankle) -> np.ndarray:
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
                positions[:, upper], positions[:, fore], wrist, target, rotations[:, upper], rotations[:, fore],
                swung=True)
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


def twist_angle(q: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """(...,) the angle in radians of q's twist about the unit `axis` (its swing-twist decomposition)."""
    return 2.0 * np.arctan2(dot(q[..., 1:], axis), q[..., 0])


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


def on_bvh_skeleton(retargeted: RetargetedMotion, skeleton: Skeleton, fps: float) -> Motion:
    """A retargeted solve as a Motion on the BVH character's skeleton (its offsets scaled by the avatar's size)."""
    rotations, positions = retargeted.rotations, retargeted.positions
    parents = skeleton.parents
    local_rotations = quat.normalize(np.where(parents[:, None] >= 0, quat.inverse_multiply(
        rotations[:, np.maximum(parents, 0)], rotations), rotations))
    local_positions = np.where(parents[:, None] >= 0, quat.inverse_rotate(
        rotations[:, np.maximum(parents, 0)], positions - positions[:, np.maximum(parents, 0)]), positions)
    return Motion(skeleton.scaled(retargeted.scale), local_rotations, local_positions, fps)
