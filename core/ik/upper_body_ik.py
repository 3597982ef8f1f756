"""Upper-body IK from the head and hands (Parger et al. 2018, §3): neck, shoulders and elbows.

The chain starts at the HMD and goes down to the hands: the neck hangs at a fixed offset below the
HMD, turns toward the hands and bends forward as the head drops (eq. 2); the shoulders sit on
either side of it and turn toward a far-reaching hand (eq. 3); each elbow lies on the circle that
the cosine rule leaves, at a swivel angle from the hand's position relative to the shoulder
(eq. 4), pulled toward a fixed rest direction near the singularities, and turned to spare the wrist
(eq. 5). Every step is a closed-form function of one frame, written over leading axes, so a whole
stream solves in one call and the live path calls the same code with one frame.

Frames: world +Y up. The neck frame has x to the body's left, y up and z forward. Arms are index
0 = left and 1 = right; SIDE holds +1 / -1, the sign that mirrors the body's x axis for each arm,
so "outward" is SIDE * x. Swivel angles are in degrees: 0 points the elbow along the neck's up
axis, 90 outward, 180 down. Controllers report OpenXR grip poses (devices.py).
"""
from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from ..config import UpperBodyIKConfig, fitted_ik_constants
from ..devices.attachments import controller_axes, hmd_forward
from ..math import quat
from ..math.angle import wrap_angle
from ..math.vector import dot, length, reject, unit, unit_across, unit_or

SIDE = np.array([1.0, -1.0])
MIRROR = np.stack([SIDE, np.ones(2), np.ones(2)], axis=-1)
"""(2, 3): multiplies a left-arm vector in the body frame into each arm's own (x mirrored for the right)."""
UP = np.array([0.0, 1.0, 0.0])
_X, _Y, _Z = np.eye(3)
def ik_constants(choice: str) -> UpperBodyIKConfig:
    """'paper' (the printed constants), 'fitted' (the shipped refit) or the path of a `train ik` file."""
    if choice == "paper":
        return UpperBodyIKConfig()
    return fitted_ik_constants() if choice == "fitted" else UpperBodyIKConfig.load(choice)


def arm_length_from_span(span_m: float, shoulder_half_width_m: float) -> float:
    """Eq. 1: l_l = l_u = (span - 2 l_s) / 4 from the wrists' distance in a T-pose."""
    arm = (span_m - 2.0 * shoulder_half_width_m) / 4.0
    if arm <= 0.0:
        raise ValueError(f"T-pose calibration: wrists {span_m:.3f} m apart, not wider than the shoulders "
                         f"({2 * shoulder_half_width_m:.3f} m); hold the arms straight out to the sides")
    return arm


@dataclass(frozen=True)
class UpperBodyCalibration:
    """The user's (or avatar's) proportions that the IK needs (§3)."""

    hmd_height_m: float
    """h_0: the HMD's height above the floor when standing upright."""
    upper_arm_m: float
    """l_u: shoulder to elbow."""
    forearm_m: float
    """l_l: elbow to wrist."""
    neck_from_hmd: tuple[float, float, float] = (0.0, -0.13, 0.09)
    """Neck position in the HMD's frame: l_n = 0.13 m below it (the paper), and 9 cm behind it
    because the HMD sits at the eyes, in front of the neck (DeviceOffsets.hmd_from_head)."""
    shoulder_from_neck: tuple[float, float, float] = (0.155, 0.0, 0.0)
    """Left shoulder in the neck's frame: l_s = 0.155 m to the side (the paper); the right mirrors it."""

    @classmethod
    def from_t_pose(cls, hmd_position, left_wrist, right_wrist, shoulder_half_width_m: float = 0.155):
        """Eq. 1: both arms' lengths from the wrists' distance in a T-pose, l_l = l_u = (span - 2 l_s) / 4."""
        span = float(length(np.asarray(left_wrist, float) - np.asarray(right_wrist, float)))
        arm = arm_length_from_span(span, shoulder_half_width_m)
        return cls(float(np.asarray(hmd_position)[1]), arm, arm,
                   shoulder_from_neck=(shoulder_half_width_m, 0.0, 0.0))

    @classmethod
    def from_pose(cls, hmd_positions, hmd_rotations, neck, shoulders, elbows, wrists, facing_yaw):
        """Measured on a standing pose of a known skeleton, averaged over the given frames.

        neck (N, 3), shoulders / elbows / wrists (N, 2, 3) with the left arm first, facing_yaw (N,)
        radians: the body's facing, which is the neck frame of a standing pose (§3.1: pitch 0).
        """
        hmd_positions, hmd_rotations = np.reshape(hmd_positions, (-1, 3)), np.reshape(hmd_rotations, (-1, 4))
        neck, shoulders = np.reshape(neck, (-1, 3)), np.reshape(shoulders, (-1, 2, 3))
        elbows, wrists = np.reshape(elbows, (-1, 2, 3)), np.reshape(wrists, (-1, 2, 3))
        neck_rotation = quat.from_yaw(np.reshape(facing_yaw, -1))
        neck_offset = quat.inverse_rotate(hmd_rotations, neck - hmd_positions).mean(axis=0)
        shoulder = quat.inverse_rotate(neck_rotation[:, None], shoulders - neck[:, None])
        shoulder[:, :, 0] *= SIDE
        return cls(float(hmd_positions[:, 1].mean()),
                   float(length(elbows - shoulders).mean()), float(length(wrists - elbows).mean()),
                   tuple(neck_offset.tolist()), tuple(shoulder.mean(axis=(0, 1)).tolist()))


@dataclass
class UpperBodyChain:
    """The IK's answer per frame: joint positions (world) and the neck's frame."""

    neck: np.ndarray
    """(..., 3)"""
    neck_rotation: np.ndarray
    """(..., 4): x left, y up, z forward."""
    shoulders: np.ndarray
    """(..., 2, 3) arm anchors (the upper arms' roots), left first."""
    elbows: np.ndarray
    """(..., 2, 3)"""
    wrists: np.ndarray
    """(..., 2, 3) on the targets when reachable, else at full stretch toward them."""


def hmd_pitch_deg(hmd_rotations: np.ndarray) -> np.ndarray:
    """beta_H: how far the HMD looks below the horizon, degrees (positive down)."""
    forward = hmd_forward(hmd_rotations)
    return np.degrees(np.arctan2(-forward[..., 1], np.hypot(forward[..., 0], forward[..., 2])))


def neck_pitch_deg(hmd_height, hmd_pitch, standing_height: float, config: UpperBodyIKConfig) -> np.ndarray:
    """Eq. 2: beta_n = (h_0 - h) / h_0 * (beta_n,0 + b * beta_H), degrees, positive bent forward."""
    drop = (standing_height - np.asarray(hmd_height)) / standing_height
    return drop * (config.neck_pitch_base_deg + config.neck_pitch_hmd_weight * np.asarray(hmd_pitch))


def neck_yaw(hmd_positions, hmd_rotations, wrists, config: UpperBodyIKConfig) -> np.ndarray:
    """The neck's yaw (radians, 0 faces +Z) from the sum of the unit head-to-hand directions (§3.1).

    The HMD's own yaw settles the two cases the hands cannot: both hands behind the head (the body
    then faces away from them) and hands whose directions cancel (it takes over smoothly below a
    summed length of 0.2). The result stays within neck_max_yaw_from_hmd_deg of the HMD's yaw.
    """
    looking = hmd_forward(hmd_rotations)
    head_up = quat.rotate(hmd_rotations, UP)
    hmd_facing = unit_across(looking, UP, head_up)
    to_hands = wrists - hmd_positions[..., None, :]
    behind = np.all(dot(to_hands, hmd_facing[..., None, :]) < 0.0, axis=-1)
    towards = reject(unit(to_hands).sum(axis=-2), UP)
    towards = np.where(behind[..., None], -towards, towards)
    weak = np.clip(1.0 - length(towards) / 0.2, 0.0, 1.0)[..., None]
    towards = towards + 0.2 * weak * hmd_facing
    hmd_yaw = quat.yaw_of_direction(hmd_facing)
    limit = np.radians(config.neck_max_yaw_from_hmd_deg)
    offset = wrap_angle(quat.yaw_of_direction(towards) - hmd_yaw)
    return hmd_yaw + np.clip(offset, -limit, limit)


def neck_pose(hmd_positions, hmd_rotations, wrists, calibration: UpperBodyCalibration,
              config: UpperBodyIKConfig = UpperBodyIKConfig()):
    """The neck's position (fixed offset in HMD space) and rotation (yaw from the hands, eq. 2 pitch, no roll)."""
    position = hmd_positions + quat.rotate(hmd_rotations, np.asarray(calibration.neck_from_hmd, float))
    pitch = neck_pitch_deg(hmd_positions[..., 1], hmd_pitch_deg(hmd_rotations), calibration.hmd_height_m, config)
    rotation = quat.multiply(quat.from_yaw(neck_yaw(hmd_positions, hmd_rotations, wrists, config)),
                             quat.from_axis_rotation("x", np.radians(pitch)))
    return position, rotation


def shoulder_turn_deg(reach_along_axis, arm_length: float, config: UpperBodyIKConfig) -> np.ndarray:
    """Eq. 3: c * (reach / (l_u + l_l) - d), clamped to [0, shoulder_max_deg]; yaw with the neck's
    forward axis, roll with its up axis."""
    turn = config.shoulder_gain_deg * (np.asarray(reach_along_axis) / arm_length - config.shoulder_threshold)
    return np.clip(turn, 0.0, config.shoulder_max_deg)


def shoulder_positions(neck, neck_axes, wrists, calibration: UpperBodyCalibration,
                       config: UpperBodyIKConfig = UpperBodyIKConfig()) -> np.ndarray:
    """Arm anchors (..., 2, 3): the neutral shoulders turned forward (yaw) and up (roll) toward far hands.

    neck_axes (..., 3, 3): the neck frame's rotation matrix (columns x left, y up, z forward)."""
    offset = np.asarray(calibration.shoulder_from_neck, float) * MIRROR
    axes = neck_axes[..., None, :, :]
    neutral = neck[..., None, :] + (axes @ offset[:, :, None])[..., 0]
    # The reach in the neck's frame: its z part turns the shoulder forward (yaw), its y part up (roll).
    reach = ((wrists - neutral)[..., None, :] @ axes)[..., 0, :]
    arm = calibration.upper_arm_m + calibration.forearm_m
    half = 0.5 * np.radians(shoulder_turn_deg(reach[..., [2, 1]], arm, config)) * SIDE[:, None]
    cos, sin = np.cos(half), np.sin(half)
    # Rotation about y by -SIDE * yaw, then about z by SIDE * roll: (c_y c_z, -s_y s_z, -s_y c_z, c_y s_z) in halves.
    cy, cz, sy, sz = cos[..., 0], cos[..., 1], sin[..., 0], sin[..., 1]
    turn = np.stack([cy * cz, -sy * sz, -sy * cz, cy * sz], axis=-1)
    return neck[..., None, :] + (axes @ quat.rotate(turn, offset)[..., None])[..., 0]


def swivel_from_hand_deg(hand_in_shoulder, config: UpperBodyIKConfig) -> np.ndarray:
    """Eq. 4: phi = phi_0 + sum_i max(0, X_i w_i + b_i), clamped; X = hand from shoulder (outward, up, forward) in m."""
    terms = np.maximum(0.0, np.asarray(hand_in_shoulder) * np.asarray(config.elbow_weights_deg_per_m)
                       + np.asarray(config.elbow_biases_deg))
    return np.clip(config.elbow_offset_deg + terms.sum(axis=-1), config.elbow_min_deg, config.elbow_max_deg)


def singularity_weights(hand_in_shoulder, config: UpperBodyIKConfig):
    """How far to blend toward the rest direction: (near the shoulder's vertical axis, behind the shoulder)."""
    hand_in_shoulder = np.asarray(hand_in_shoulder)
    radius = np.hypot(hand_in_shoulder[..., 0], hand_in_shoulder[..., 2])
    near_axis = np.clip(1.0 - radius / config.singularity_radius_m, 0.0, 1.0)
    behind = np.clip(-hand_in_shoulder[..., 2] / config.behind_range_m, 0.0, 1.0)
    return near_axis, behind


def wrist_correction_deg(yaw_deg, roll_deg, config: UpperBodyIKConfig) -> np.ndarray:
    """Eq. 5 summed over its four thresholds: c * (angle - threshold)^2 for each one exceeded, degrees.

    The thresholds, in order: yaw above its upper limit, yaw below its lower (-limit, c = -1/gain), roll below
    its lower and roll above its upper; each term's excess is max(0, +-(angle - threshold))."""
    limit = config.wrist_yaw_limit_deg
    thresholds = np.array([limit, -limit, config.wrist_roll_lower_deg, config.wrist_roll_upper_deg])
    above = np.array([1.0, -1.0, -1.0, 1.0])
    gains = np.array([config.wrist_yaw_gain_deg, -config.wrist_yaw_gain_deg, config.wrist_roll_lower_gain_deg,
                      config.wrist_roll_upper_gain_deg])
    angles = np.stack([yaw_deg, yaw_deg, roll_deg, roll_deg], axis=-1)
    excess = np.maximum((angles - thresholds) * above, 0.0)
    return (excess * excess) @ (1.0 / gains)


def forearm_frame(axis, elbow_direction, reach, cos_shoulder, sin_shoulder, upper_arm_m: float, forearm_m: float):
    """The forearm's unit direction from elbow to wrist and its unit "across", toward the shoulder (..., 2, 3).

    The arm lies in the plane of the shoulder-to-wrist `axis` (a) and the unit `elbow_direction` (d) across it:
    with the elbow at l_u (c a + s d) and the wrist at r a from the shoulder, the forearm is
    (r - l_u c) a - l_u s d, of length l_l by the cosine rule, and the across direction is the same pair turned
    a quarter turn in that plane, -(l_u s a + (r - l_u c) d) / l_l. A straight arm (s = 0) gets -d.
    """
    along_axis, along_direction = reach - upper_arm_m * cos_shoulder, upper_arm_m * sin_shoulder
    along = (along_axis[..., None] * axis - along_direction[..., None] * elbow_direction) / forearm_m
    across = -(along_direction[..., None] * axis + along_axis[..., None] * elbow_direction) / forearm_m
    return along, across


def hand_angles_deg(along, across, controller_rotations):
    """The hand's yaw and roll in the forearm's frame, degrees, mirrored so both arms read alike.

    Forearm frame: z = `along` from elbow to wrist, y = `across` it toward the shoulder (forearm_frame),
    x = y cross z. With the elbow down and the forearm forward, yaw 0 / roll 0 is a straight wrist with the
    palm down; positive yaw bends the fingers outward, positive roll turns the palm up (thumb up is 90).
    Roll is read in [-135, 225) so its wrap-around sits at the most twisted hand.
    """
    side = quat.cross(across, along)
    fingers, thumb = controller_axes(controller_rotations)  # orthonormal: the thumb is across the fingers
    thumb = -SIDE[:, None] * thumb
    back = quat.cross(fingers, thumb)
    yaw = np.degrees(np.arctan2(dot(side, fingers), dot(along, fingers))) * SIDE
    roll = np.degrees(np.arctan2(dot(across, thumb), dot(across, back))) * -SIDE
    return yaw, (roll + 135.0) % 360.0 - 135.0


def arm_positions(shoulders, wrist_targets, controller_rotations, frame_axes, upper_arm_m: float,
                  forearm_m: float, config: UpperBodyIKConfig = UpperBodyIKConfig()):
    """Elbows and reached wrists (..., 2, 3) for arm anchors and wrist targets, in the body frame given.

    `frame_axes` (..., 3, 3) is the rotation matrix of the neck's frame (or the avatar's chest), whose up and
    forward axes define the swivel angle and the shoulder coordinates of eq. 4. A target out of reach gives a
    straight arm pointing at it.
    """
    axes = frame_axes[..., None, :, :]
    to_hand = wrist_targets - shoulders
    hand_in_shoulder = (to_hand[..., None, :] @ axes)[..., 0, :] * MIRROR
    up, forward = axes[..., :, 1], axes[..., :, 2]
    axis = unit_or(to_hand, -up)
    swivel_up = unit_across(up, axis, forward)
    swivel_out = SIDE[:, None] * quat.cross(swivel_up, axis)

    swivel = np.radians(swivel_from_hand_deg(hand_in_shoulder, config))[..., None]
    elbow_direction = np.cos(swivel) * swivel_up + np.sin(swivel) * swivel_out
    rest = (axes @ (np.asarray(config.elbow_rest_direction) * MIRROR)[:, :, None])[..., 0]
    near_axis, behind = singularity_weights(hand_in_shoulder, config)
    elbow_direction = elbow_direction + near_axis[..., None] * (rest - elbow_direction)
    elbow_direction = elbow_direction + behind[..., None] * (rest - elbow_direction)
    elbow_direction = unit_across(elbow_direction, axis, swivel_up)

    reach = np.clip(length(to_hand), abs(upper_arm_m - forearm_m) + 1e-9, upper_arm_m + forearm_m)
    cos_shoulder = np.clip((upper_arm_m ** 2 + reach ** 2 - forearm_m ** 2) / (2.0 * upper_arm_m * reach), -1.0, 1.0)
    sin_shoulder = np.sqrt(1.0 - cos_shoulder ** 2)
    wrists = shoulders + reach[..., None] * axis

    if config.wrist_correction:
        along, across = forearm_frame(axis, elbow_direction, reach, cos_shoulder, sin_shoulder, upper_arm_m, forearm_m)
        yaw, roll = hand_angles_deg(along, across, controller_rotations)
        correction = np.radians(wrist_correction_deg(yaw, roll, config))[..., None]
        turn_axis = -SIDE[:, None] * axis
        elbow_direction = np.cos(correction) * elbow_direction + np.sin(correction) * quat.cross(turn_axis, elbow_direction)

    elbows = shoulders + upper_arm_m * (cos_shoulder[..., None] * axis + sin_shoulder[..., None] * elbow_direction)
    return elbows, wrists


def solve_upper_body(hmd_positions, hmd_rotations, wrist_targets, controller_rotations,
                     calibration: UpperBodyCalibration, config: UpperBodyIKConfig = UpperBodyIKConfig()) -> UpperBodyChain:
    """The whole chain from the devices: HMD pose (..., 3)/(..., 4), wrist targets (..., 2, 3) implied by
    the controllers, controller rotations (..., 2, 4). Stateless: any number of frames at once.

    On an avatar whose torso is already posed, upper_body_pose.pose_upper_body takes the neck from
    the torso instead and calls shoulder_positions and arm_positions itself.
    """
    neck, neck_rotation = neck_pose(hmd_positions, hmd_rotations, wrist_targets, calibration, config)
    neck_axes = quat.to_matrix(neck_rotation)
    shoulders = shoulder_positions(neck, neck_axes, wrist_targets, calibration, config)
    elbows, wrists = arm_positions(shoulders, wrist_targets, controller_rotations, neck_axes,
                                   calibration.upper_arm_m, calibration.forearm_m, config)
    return UpperBodyChain(neck, neck_rotation, shoulders, elbows, wrists)
