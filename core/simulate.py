"""Three-point streams simulated from mocap, with optional look-around, keeping the ground truth.

Each device is a rigid attachment to a joint (HMD to the head, controllers to the hands), the way
a headset sits on the head and a controller in the fist. The attachment is expressed in the
joint's local frame, which differs from rig to rig, so it is calibrated per clip from anatomy:
- HMD: looks along the body's facing with level gaze, on average over the clip.
- Controller grip: -Z along the thumb direction, +Y back along the forearm (OpenXR grip axes),
  where the thumb direction is the elbow-to-shoulder direction made perpendicular to the forearm
  (a neutral forearm), averaged over frames weighted by how bent the elbow is.
The positional offsets are DeviceOffsets (config.py), given in each device's frame.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import quat
from .character import body_yaw
from .config import DeviceOffsets, SimulationConfig
from .devices import device_offsets
from .humanoid import HumanoidMapping, find_mapping
from .motion import Motion, local_from_global
from .stream import ThreePointStream
from .vector import unit

# Device frame (looks along -Z) from the character frame (faces +Z): half a turn about +Y.
_DEVICE_FROM_FACING = quat.from_yaw(np.pi)


@dataclass
class SimulatedStream:
    """A stream and the motion it was simulated from (with the added look-around applied)."""

    stream: ThreePointStream
    truth: Motion
    mapping: HumanoidMapping
    look_around: np.ndarray
    """Head yaw added about the neck per frame, radians."""
    config: SimulationConfig


def simulate_stream(motion: Motion, config: SimulationConfig = SimulationConfig(),
                    mapping: HumanoidMapping | None = None) -> SimulatedStream:
    """Simulate HMD and controller poses from a clip at `config.fps`, with look-around if asked."""
    mapping = mapping or find_mapping(motion.skeleton)
    motion = motion.resampled(config.fps)
    rotations, positions = motion.global_transforms()
    head, hands = mapping["head"], (mapping["l_hand"], mapping["r_hand"])

    hmd_attachment = _head_attachment(rotations, positions, mapping)
    grip_attachments = [_grip_attachment(rotations, positions, mapping, side, config.devices) for side in "lr"]

    look_around = look_around_profile(len(motion), motion.fps, config)
    truth = with_head_yaw(motion, mapping["neck"], look_around) if config.look_around_deg > 0 else motion
    if truth is not motion:
        rotations, positions = truth.global_transforms()

    device_rotations = np.stack([quat.multiply(rotations[:, head], hmd_attachment)] +
                                [quat.multiply(rotations[:, j], a) for j, a in zip(hands, grip_attachments)], axis=1)
    device_positions = positions[:, [head, *hands]] + quat.rotate(device_rotations, device_offsets(config.devices))
    stream = ThreePointStream(np.arange(len(motion)) / motion.fps, device_positions,
                              quat.unroll(quat.positive_hemisphere(device_rotations)),
                              np.ones((len(motion), 3), dtype=bool))
    return SimulatedStream(stream, truth, mapping, look_around, config)


def _head_attachment(rotations, positions, mapping) -> np.ndarray:
    """HMD rotation in the head joint's frame: level, looking where the body faces, on average."""
    facing = quat.multiply(quat.from_yaw(body_yaw(positions, mapping)), _DEVICE_FROM_FACING)
    return quat.mean(quat.inverse_multiply(rotations[:, mapping["head"]], facing))


def _grip_attachment(rotations, positions, mapping, side: str, devices: DeviceOffsets) -> np.ndarray:
    """Controller grip rotation in the hand joint's frame, from forearm and elbow geometry."""
    shoulder, elbow, wrist = (positions[:, mapping[f"{side}_{j}"]] for j in ("upper_arm", "forearm", "hand"))
    along = unit(wrist - elbow)
    up_arm = shoulder - elbow
    thumb = up_arm - np.sum(up_arm * along, axis=-1, keepdims=True) * along
    bend = np.sum(thumb * thumb, axis=-1) / np.maximum(np.sum(up_arm * up_arm, axis=-1), 1e-12)  # sin^2 of the elbow angle
    thumb = unit(thumb)
    tilt = np.radians(devices.grip_tilt_deg)
    z_axis = -unit(np.cos(tilt) * thumb + np.sin(tilt) * along)
    y_axis = -unit(np.cos(tilt) * along - np.sin(tilt) * thumb)
    x_axis = quat.cross(y_axis, z_axis)
    grip = quat.from_matrix(np.stack([x_axis, y_axis, z_axis], axis=-1))
    relative = quat.inverse_multiply(rotations[:, mapping[f"{side}_hand"]], grip)
    weights = bend if bend.sum() > 1e-6 else None
    return quat.mean(relative, weights)


def look_around_profile(frames: int, fps: float, config: SimulationConfig) -> np.ndarray:
    """Smooth random head yaw (radians) within +-look_around_deg: eased moves between random targets."""
    if config.look_around_deg <= 0:
        return np.zeros(frames)
    rng = np.random.default_rng(config.seed)
    low, high = config.look_around_hold_s
    duration = frames / fps
    knots = [0.0]
    while knots[-1] <= duration:
        knots.append(knots[-1] + rng.uniform(low, high))
    targets = rng.uniform(-1.0, 1.0, len(knots)) * np.radians(config.look_around_deg)
    t = np.arange(frames) / fps
    segment = np.searchsorted(knots, t, side="right") - 1
    phase = (t - np.take(knots, segment)) / (np.take(knots, segment + 1) - np.take(knots, segment))
    ease = 0.5 - 0.5 * np.cos(np.pi * phase)
    return targets[segment] + ease * (targets[segment + 1] - targets[segment])


def with_head_yaw(motion: Motion, neck: int, yaw: np.ndarray) -> Motion:
    """The motion with the neck (and so the head) turned by `yaw` radians about the world's up axis."""
    rotations, _ = motion.global_transforms()
    turned = rotations.copy()
    descendants = [j for j in range(len(motion.skeleton)) if motion.skeleton.is_ancestor(neck, j)]
    turn = quat.from_yaw(yaw)[:, None]
    turned[:, descendants] = quat.multiply(turn, rotations[:, descendants])
    local = local_from_global(motion.skeleton.parents, turned)
    return Motion(motion.skeleton, local, motion.positions, motion.fps, motion.name)
