"""The upper-body IK applied to an avatar: joint rotations for the neck, head, shoulders, arms and hands.

The torso (hips, spine, chest) comes from elsewhere (the lower-body solution, or the ground truth
in evaluation). On it, each joint is turned by the smallest rotation that points its bone at the
IK's answer: the neck at the head joint the HMD implies, each shoulder at the IK's arm anchor, the
upper arm at the elbow and the forearm at the wrist; head and hands take the devices' rotations
through the attachments calibrated on a reference pose. The arm IK is re-solved from the avatar's
own arm anchors with its own bone lengths, so the hands land on the targets whenever they reach.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..anim.character import body_yaw
from ..anim.motion import Motion, forward_kinematics, joints_with_ancestors
from ..config import UpperBodyIKConfig
from ..math import quat
from ..math.vector import length
from ..rig.humanoid import HumanoidMapping
from .upper_body_ik import UpperBodyCalibration, arm_positions, shoulder_positions

ARM_JOINTS = ("shoulder", "upper_arm", "forearm", "hand")


@dataclass(frozen=True)
class DeviceAttachments:
    """Each device's rotation in its joint's frame: HMD in the head, grips in the hands (left, right)."""

    hmd_in_head: np.ndarray
    """(4,)"""
    grips_in_hands: np.ndarray
    """(2, 4)"""

    @classmethod
    def calibrate(cls, global_rotations: np.ndarray, device_rotations: np.ndarray, mapping: HumanoidMapping):
        """Averaged over reference frames: joint rotations (N, J, 4) and device rotations (N, 3, 4)."""
        head = quat.inverse_multiply(global_rotations[:, mapping["head"]], device_rotations[:, 0])
        hands = [quat.inverse_multiply(global_rotations[:, mapping[f"{s}_hand"]], device_rotations[:, 1 + i])
                 for i, s in enumerate("lr")]
        return cls(quat.mean(head), np.stack([quat.mean(h) for h in hands]))


def calibrate_upper_body(motion: Motion, stream, mapping: HumanoidMapping, frames: int):
    """(UpperBodyCalibration, DeviceAttachments, neck frame in the chest) measured on the first `frames`
    frames of a standing motion and the devices on it (a ThreePointStream)."""
    rotations, positions = motion.global_transforms()
    rotations, positions = rotations[:frames], positions[:frames]
    arm = {j: [mapping[f"{s}_{j}"] for s in "lr"] for j in ARM_JOINTS}
    facing = body_yaw(positions, mapping)
    calibration = UpperBodyCalibration.from_pose(
        stream.positions[:frames, 0], stream.rotations[:frames, 0], positions[:, mapping["neck"]],
        positions[:, arm["upper_arm"]], positions[:, arm["forearm"]], positions[:, arm["hand"]], facing)
    attachments = DeviceAttachments.calibrate(rotations, stream.rotations[:frames], mapping)
    frame_in_chest = quat.mean(quat.inverse_multiply(rotations[:, mapping["chest"]], quat.from_yaw(facing)))
    return calibration, attachments, frame_in_chest


def solved_joints(mapping: HumanoidMapping) -> list[int]:
    """The joints that pose_upper_body sets: neck, head, and both arms from the shoulder to the hand."""
    return [mapping["neck"], mapping["head"]] + [mapping[f"{s}_{j}"] for s in "lr" for j in ARM_JOINTS]


@dataclass(frozen=True)
class UpperBodyJoints:
    """What pose_upper_body needs of a skeleton, found once: joint indices (arms as left, right pairs)
    and the arms' bone lengths."""

    parents: np.ndarray
    chest: int
    neck: int
    head: int
    shoulder: np.ndarray
    upper_arm: np.ndarray
    forearm: np.ndarray
    hand: np.ndarray
    solved: np.ndarray
    """solved_joints, as an index array."""
    upper_arm_m: float
    forearm_m: float
    shoulders_on_neck: bool
    """Whether the shoulders hang from the neck (3ds Max Biped's clavicles do) rather than from the torso."""
    neck_and_shoulders: np.ndarray
    """The joints aimed first, whose global poses pose_upper_body starts from (with all above them)."""
    head_and_upper_arms: np.ndarray
    """Their children, in the same order."""

    @classmethod
    def of(cls, skeleton, mapping: HumanoidMapping) -> "UpperBodyJoints":
        arm = {name: np.array([mapping[f"{s}_{name}"] for s in "lr"]) for name in ARM_JOINTS}
        neck = mapping["neck"]
        return cls(skeleton.parents, mapping["chest"], neck, mapping["head"], arm["shoulder"],
                   arm["upper_arm"], arm["forearm"], arm["hand"], np.array(solved_joints(mapping)),
                   float(length(skeleton.offsets[arm["forearm"]]).mean()),
                   float(length(skeleton.offsets[arm["hand"]]).mean()),
                   any(neck in joints_with_ancestors(skeleton.parents, [s]) for s in arm["shoulder"]),
                   np.array([neck, *arm["shoulder"]]), np.array([mapping["head"], *arm["upper_arm"]]))


def neck_frames(chest_rotations: np.ndarray, frame_in_chest: np.ndarray) -> np.ndarray:
    """The IK's neck frame (x left, y up, z forward) carried by the chest: chest rotation * its offset."""
    return quat.multiply(chest_rotations, frame_in_chest)


def pose_upper_body(motion: Motion, joints: UpperBodyJoints, head_targets: np.ndarray, hmd_rotations: np.ndarray,
                    wrist_targets: np.ndarray, controller_rotations: np.ndarray, attachments: DeviceAttachments,
                    frame_in_chest: np.ndarray, calibration: UpperBodyCalibration,
                    config: UpperBodyIKConfig = UpperBodyIKConfig(), global_pose=None) -> Motion:
    """The motion with its neck, head, shoulders, arms and hands solved; the rest untouched.

    joints: UpperBodyJoints.of(motion.skeleton, its mapping). head_targets (T, 3) and wrist_targets
    (T, 2, 3) are the joint positions the devices imply; hmd_rotations (T, 4) and controller_rotations
    (T, 2, 4) their rotations. frame_in_chest (4,) is the neck frame in the chest joint's frame (from a
    reference pose). `global_pose`: the motion's global rotations and positions (T, J, ...) if already known,
    at least for the chest, neck and shoulders; they are written over.
    """
    offsets, parents, j = motion.positions, joints.parents, joints
    # The chest and the joints hanging from it (neck and shoulders) are all forward kinematics must
    # place: each aim below sets its joint's rotation and its child's position.
    if global_pose is None:
        global_pose = forward_kinematics(parents, motion.rotations, offsets, joints.neck_and_shoulders)
    rotations, positions = global_pose

    def aim(joint, child, target: np.ndarray, rotation: np.ndarray) -> np.ndarray:
        """Global rotation of `joint` turned from `rotation` so its bone to `child` points at `target`
        (joint and child may be index arrays, both sides at once)."""
        offset, origin = offsets[:, child], positions[:, joint]
        turned = quat.multiply(quat.between(quat.rotate(rotation, offset), target - origin), rotation)
        rotations[:, joint] = turned
        positions[:, child] = origin + quat.rotate(turned, offset)
        return turned

    def below(joint, parent_rotation: np.ndarray) -> np.ndarray:
        return quat.multiply(parent_rotation, motion.rotations[:, joint])

    frame = quat.to_matrix(neck_frames(rotations[:, j.chest], frame_in_chest))
    shoulders = shoulder_positions(positions[:, j.neck], frame, wrist_targets, calibration, config)
    if j.shoulders_on_neck:  # the neck's turn carries the shoulders, so it comes first
        aim(j.neck, j.head, head_targets, below(j.neck, rotations[:, parents[j.neck]]))
        positions[:, j.shoulder] = positions[:, j.neck, None] + quat.rotate(rotations[:, j.neck, None],
                                                                             offsets[:, j.shoulder])
        aim(j.shoulder, j.upper_arm, shoulders, below(j.shoulder, rotations[:, parents[j.shoulder]]))
    else:  # neck and shoulders hang from the torso: one aim turns all three
        neck_and_shoulders = j.neck_and_shoulders
        aim(neck_and_shoulders, j.head_and_upper_arms, np.concatenate([head_targets[:, None], shoulders], axis=1),
            below(neck_and_shoulders, rotations[:, parents[neck_and_shoulders]]))
    rotations[:, j.head] = quat.multiply_inverse(hmd_rotations, attachments.hmd_in_head)
    rotations[:, j.upper_arm] = below(j.upper_arm, rotations[:, j.shoulder])
    elbows, wrists = arm_positions(positions[:, j.upper_arm], wrist_targets, controller_rotations, frame,
                                   j.upper_arm_m, j.forearm_m, config)
    upper = aim(j.upper_arm, j.forearm, elbows, rotations[:, j.upper_arm])
    aim(j.forearm, j.hand, wrists, below(j.forearm, upper))
    rotations[:, j.hand] = quat.multiply_inverse(controller_rotations, attachments.grips_in_hands)

    local = motion.rotations.copy()
    solved = j.solved
    turned = quat.inverse_multiply(rotations[:, parents[solved]], rotations[:, solved])
    # Of q and -q (the same rotation), keep the one nearer the input, so the output is one curve.
    local[:, solved] = quat.nearest_sign(turned, motion.rotations[:, solved])
    return Motion(motion.skeleton, local, offsets, motion.fps, motion.name)
