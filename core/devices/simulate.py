"""Three-point streams simulated from mocap, with optional look-around, keeping the ground truth.

Each device is a rigid attachment to a joint (HMD to the head, controllers to the hands), the way
a headset sits on the head and a controller in the fist. The attachment is expressed in the
joint's local frame, which differs from rig to rig, so it is calibrated per clip from anatomy:
- HMD: looks along the body's facing with level gaze, on average over the clip.
- Controller grip: -Z along the thumb direction, +Y back along the forearm (OpenXR grip axes),
  where the thumb direction is the elbow-to-shoulder direction made perpendicular to the forearm
  (a neutral forearm), averaged over frames weighted by how bent the elbow is.
The positional offsets are DeviceOffsets (config.py), given in each device's frame.
Two departures from that, for evaluating calibration (issue 28), both random per clip: controllers
held differently from DeviceOffsets (`attachment_noise_m` / `_deg`: the grip moved off its assumed
centre and turned about it), and the calibration gesture (`calibration_pose_s`: a T-pose with the
wrists circling, held imprecisely, before the clip; calibration.py). With `two_handed_m` the left controller is
tied to the right one on a shared object (the truth's left hand does not hold it: score the hands against the
wrists the controllers imply). With `grip` the controllers report another tool's pose (devices/grips.py), and
`offsets` say where the wrists are from it.
With `device_noise` the stream is what a real headset would have written (`with_device_noise`): its own rate,
jittered capture, missed samples, a latency on the timestamps, millisecond clocks, position noise, quaternions
rounded, brief controller dropouts.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from ..anim.character import body_yaw
from ..anim.motion import Motion, local_from_global
from ..config import DeviceNoise, DeviceOffsets, SimulationConfig
from ..files.stream import ThreePointStream
from ..math import quat
from ..math.vector import unit
from ..rig.humanoid import HumanoidMapping, find_mapping
from .attachments import device_offsets
from .calibration import t_pose_grips
from .grips import from_openxr_grip, grip

CALIBRATION_BLEND_S = 0.6
"""After the calibration pose the person eases into the clip's first pose over this long."""
POSE_SPREAD_DEG = 5.0
"""How imprecisely the T-pose is held, per clip: arms raised / forward and hands turned up to this."""
ARM_SWAY_DEG = 2.0
"""The held arms sway this much (0.4 Hz) while the wrists circle."""
ARMS_DOWN_DEG = {"T": 0.0, "A": 45.0}
"""The calibration pose's arms below level (SimulationConfig.calibration_arms)."""
WRIST_CIRCLE_DEG = (20.0, 30.0)
"""Amplitudes of the wrist circle (1 Hz): radial-ulnar deviation and flexion-extension."""

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
    offsets: np.ndarray
    """(3, 3) each device's origin from its joint in the device's frame, as really held (device_offsets
    unless the simulation adds attachment noise): joints_from_devices with these gives the true joints."""
    clip_start: int = 0
    """Frames of the calibration pose before the clip (truth and stream hold them too)."""
    grip_turns: np.ndarray | None = None
    """(2, 4) each controller's turn in the grip DeviceOffsets assumes (identity without attachment noise)."""
    latency_s: float = 0.0
    """With device noise: how much later than its capture each sample is stamped. The stream's time t shows the
    truth's frame at t - latency_s (the first sample is captured at the clip's first frame)."""
    exact: ThreePointStream | None = None
    """With device noise: the stream as simulated before it (every 1/fps s from 0, the truth's frames)."""


def simulate_stream(motion: Motion, config: SimulationConfig = SimulationConfig(),
                    mapping: HumanoidMapping | None = None) -> SimulatedStream:
    """Simulate HMD and controller poses from a clip at `config.fps`, with look-around if asked."""
    mapping = mapping or find_mapping(motion.skeleton)
    motion = motion.resampled(config.fps)
    if config.body_scale != 1.0:
        motion = motion.scaled(config.body_scale)
    rotations, positions = motion.global_transforms()
    head, hands = mapping["head"], (mapping["l_hand"], mapping["r_hand"])

    hmd_attachment = _head_attachment(rotations, positions, mapping)
    grip_attachments = [_grip_attachment(rotations, positions, mapping, side, config.devices) for side in "lr"]

    rng = np.random.default_rng([config.seed, zlib.crc32(motion.name.encode())])
    clip_start = 0
    if config.calibration_pose_s > 0:
        motion = with_calibration_pose(motion, mapping, np.stack(grip_attachments), config.calibration_pose_s, rng,
                                       ARMS_DOWN_DEG[config.calibration_arms])
        clip_start = len(motion) - len(rotations)
        rotations, positions = motion.global_transforms()
    look_around = look_around_profile(len(motion), motion.fps, config)
    truth = with_head_yaw(motion, mapping["neck"], look_around) if config.look_around_deg > 0 else motion
    if truth is not motion:
        rotations, positions = truth.global_transforms()

    device_rotations = np.stack([quat.multiply(rotations[:, head], hmd_attachment)] +
                                [quat.multiply(rotations[:, j], a) for j, a in zip(hands, grip_attachments)], axis=1)
    offsets, turns = device_offsets(config.devices), quat.identity(2)
    device_positions = positions[:, [head, *hands]] + quat.rotate(device_rotations, offsets)
    if config.attachment_noise_m > 0 or config.attachment_noise_deg > 0:
        shifts, turns = attachment_noise(rng, config.attachment_noise_m, config.attachment_noise_deg)
        device_positions[:, 1:] += quat.rotate(device_rotations[:, 1:], shifts)
        device_rotations[:, 1:] = quat.multiply(device_rotations[:, 1:], turns)
        offsets = offsets.copy()
        offsets[1:] = quat.inverse_rotate(turns, offsets[1:] + shifts)
    if config.two_handed_m > 0:
        device_rotations[:, 1] = device_rotations[:, 2]
        device_positions[:, 1] = device_positions[:, 2] + quat.rotate(device_rotations[:, 2],
                                                                      np.array([0.0, 0.0, -config.two_handed_m]))
    stream = ThreePointStream(np.arange(len(motion)) / motion.fps, device_positions, device_rotations,
                              np.ones((len(motion), 3), dtype=bool))
    if config.grip != "openxr":  # the wrists from the reported poses: the grip's origin and turn in them first
        stream = from_openxr_grip(stream, config.grip)
        origins, turns_in_reported = grip(config.grip).transforms()
        offsets = offsets.copy()
        offsets[1:] = quat.rotate(turns_in_reported, offsets[1:]) - origins
    stream = ThreePointStream(stream.times, stream.positions,
                              quat.unroll(quat.positive_hemisphere(stream.rotations)), stream.tracked)
    if config.device_noise is None:
        return SimulatedStream(stream, truth, mapping, look_around, config, offsets, clip_start, turns)
    noisy, latency = with_device_noise(stream, config.device_noise, rng)
    return SimulatedStream(noisy, truth, mapping, look_around, config, offsets, clip_start, turns, latency, stream)


def with_device_noise(stream: ThreePointStream, noise: DeviceNoise, rng) -> tuple[ThreePointStream, float]:
    """(the stream as a real device would have written it, its latency in seconds): DeviceNoise's traits, drawn
    from `rng`. Capture times run at the device's rate from the stream's first time, jittered (not the first) and
    with missed runs of samples; each is stamped its latency later, rounded to the device's clock."""
    rate = float(rng.choice(noise.rates_hz))
    start, duration = stream.times[0], stream.duration
    capture = np.arange(int(np.floor(duration * rate)) + 1) / rate
    capture[1:] += rng.uniform(-noise.jitter_s, noise.jitter_s, len(capture) - 1)
    kept = (capture >= 0.0) & (capture <= duration)
    for _ in range(rng.poisson(noise.gaps_per_minute * duration / 60.0)):
        gap_start = rng.uniform(0.0, duration)
        kept &= ~((capture > gap_start) & (capture < gap_start + rng.uniform(*noise.gap_s)))
    capture = capture[kept]
    latency = round(rng.uniform(*noise.latency_s) / noise.clock_s) * noise.clock_s
    stamps = np.round((start + capture + latency) / noise.clock_s) * noise.clock_s
    distinct = np.r_[True, np.diff(stamps) > 0]  # two captures within one clock tick: the later is not written
    capture, stamps = capture[distinct], stamps[distinct]
    sampled = stream.sampled_at(start + capture)
    positions = sampled.positions + rng.normal(0.0, rng.uniform(*noise.position_noise_m), sampled.positions.shape)
    rotations = np.round(sampled.rotations, noise.quaternion_decimals)
    tracked = sampled.tracked.copy()
    for _ in range(rng.poisson(noise.dropouts_per_minute * duration / 60.0)):
        lost = rng.uniform(0.0, duration)
        tracked[(capture > lost) & (capture < lost + rng.uniform(*noise.dropout_s)), rng.integers(1, 3)] = False
    positions[~tracked], rotations[~tracked] = np.nan, np.nan
    return ThreePointStream(stamps, positions, rotations, tracked), latency


def random_rotations(rng, count: int, max_deg: float) -> np.ndarray:
    """(count, 4) rotations about uniformly random axes by angles uniform in [0, max_deg]."""
    axes = unit(rng.normal(size=(count, 3)))
    return quat.from_rotation_vector(axes * np.radians(rng.uniform(0.0, max_deg, (count, 1))))


def attachment_noise(rng, max_m: float, max_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """Per controller, the grip's shift (2, 3) from its assumed centre (uniform in a ball of radius max_m) and
    its turn (2, 4) about that centre (random_rotations), both in the assumed grip's frame."""
    shifts = unit(rng.normal(size=(2, 3))) * max_m * rng.uniform(0.0, 1.0, (2, 1)) ** (1.0 / 3.0)
    return shifts, random_rotations(rng, 2, max_deg)


def with_calibration_pose(motion: Motion, mapping, grips_in_hands: np.ndarray, seconds: float, rng,
                          arms_down_deg: float = 0.0) -> Motion:
    """The clip after `seconds` of calibration.py's gesture: standing as in the first frame, arms out to the
    sides `arms_down_deg` below level (raised and forward by random angles up to POSE_SPREAD_DEG, swaying
    ARM_SWAY_DEG), hands in line, palms down (turned up to POSE_SPREAD_DEG), circling the wrists; then eased into
    the first frame."""
    fps = motion.fps
    hold, blend = int(round(seconds * fps)), int(round(CALIBRATION_BLEND_S * fps))
    first = motion[:1]
    rotations, positions = first.global_transforms()
    rotations, positions = rotations[0], positions[0]
    facing = quat.from_yaw(body_yaw(positions, mapping))
    left, up, forward = quat.rotate(facing, np.eye(3))
    t = np.arange(hold)[:, None] / fps
    local = np.repeat(first.rotations, hold, axis=0)
    offsets = motion.skeleton.offsets
    for side, sign in zip(range(2), (1.0, -1.0)):
        raised, ahead = np.radians(rng.uniform(-POSE_SPREAD_DEG, POSE_SPREAD_DEG, 2) - [arms_down_deg, 0.0])
        raised = raised + np.radians(ARM_SWAY_DEG) * np.sin(2 * np.pi * 0.4 * t + rng.uniform(0, 2 * np.pi))
        arm = np.cos(raised) * np.cos(ahead) * sign * left + np.sin(raised) * up + np.cos(raised) * np.sin(ahead) * forward
        upper, fore, hand = (mapping[f"{'lr'[side]}_{j}"] for j in ("upper_arm", "forearm", "hand"))
        parent = rotations[motion.skeleton.parents[upper]]
        turned = []
        for joint, child in ((upper, fore), (fore, hand)):
            turned.append(quat.multiply(quat.between(quat.rotate(rotations[joint], offsets[child]), arm), rotations[joint]))
        grip = t_pose_grips(sign * arm, forward)[:, side]
        circle = np.radians(np.concatenate([WRIST_CIRCLE_DEG[0] * np.cos(2 * np.pi * t), np.zeros_like(t),
                                            WRIST_CIRCLE_DEG[1] * np.sin(2 * np.pi * t)], axis=-1))
        held = random_rotations(rng, 1, POSE_SPREAD_DEG)[0]
        hand_rotation = quat.multiply_inverse(quat.multiply(quat.multiply(grip, held), quat.from_rotation_vector(circle)),
                                              grips_in_hands[side])
        local[:, upper] = quat.inverse_multiply(np.broadcast_to(parent, turned[0].shape), turned[0])
        local[:, fore] = quat.inverse_multiply(turned[0], turned[1])
        local[:, hand] = quat.inverse_multiply(turned[1], hand_rotation)
    ease = (0.5 - 0.5 * np.cos(np.pi * (np.arange(1, blend + 1) / (blend + 1))))[:, None]
    eased = quat.slerp(np.broadcast_to(local[-1], (blend, *local.shape[1:])),
                       quat.nearest_sign(np.broadcast_to(first.rotations[0], (blend, *local.shape[1:])), local[-1]), ease)
    prefix = np.concatenate([local, eased])
    return Motion(motion.skeleton, np.concatenate([prefix, motion.rotations]),
                  np.concatenate([np.repeat(motion.positions[:1], hold + blend, axis=0), motion.positions]),
                  fps, motion.name)


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
