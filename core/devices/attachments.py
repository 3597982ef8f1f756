"""Where the three devices sit on the body, and the body directions each device reports.

Device frames follow OpenXR: the HMD looks along -Z with +Y up; a controller's grip pose has -Z
along the fist from the little finger to the thumb and +Y back along the forearm, so the fingers
point along -Y. The offsets (config.DeviceOffsets) are given in each device's own frame.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..config import DeviceOffsets
from ..files.stream import ThreePointStream
from ..math import quat


def grip_offset(devices: DeviceOffsets) -> np.ndarray:
    """Grip centre relative to the wrist, in grip coordinates: along the fingers, -(cos t, sin t) in (Y, Z)."""
    tilt = np.radians(devices.grip_tilt_deg)
    return devices.grip_from_wrist_m * np.array([0.0, -np.cos(tilt), -np.sin(tilt)])


def device_offsets(devices: DeviceOffsets) -> np.ndarray:
    """Each device's origin relative to its joint, in the device's frame (3, 3): HMD, left grip, right grip (made
    once per set of offsets, read-only)."""
    return _device_offsets(tuple(float(x) for x in devices.hmd_from_head), float(devices.grip_from_wrist_m),
                           float(devices.grip_tilt_deg))


@lru_cache(maxsize=64)
def _device_offsets(hmd_from_head: tuple, grip_from_wrist_m: float, grip_tilt_deg: float) -> np.ndarray:
    grip = grip_offset(DeviceOffsets(hmd_from_head, grip_from_wrist_m, grip_tilt_deg))
    offsets = np.stack([np.array(hmd_from_head), grip, grip])
    offsets.setflags(write=False)
    return offsets


def joints_from_devices(positions: np.ndarray, rotations: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Head and wrist positions (..., 3, 3) implied by device poses and their `device_offsets`."""
    return positions - quat.rotate(rotations, offsets)


def implied_joint_positions(stream: ThreePointStream, devices: DeviceOffsets = DeviceOffsets()) -> np.ndarray:
    """Head and wrist positions (N, 3, 3) that the device poses imply, the inverse of the attachments."""
    return joints_from_devices(stream.positions, stream.rotations, device_offsets(devices))


def head_on_floor(hmd_positions: np.ndarray, hmd_rotations: np.ndarray, head_centre) -> np.ndarray:
    """The centre of the head (given in the HMD's frame) projected on the floor (..., 3): MMVR §5.3's target."""
    target = hmd_positions + quat.rotate(hmd_rotations, np.asarray(head_centre, dtype=float))
    target[..., 1] = 0.0
    return target


def hmd_forward(rotations: np.ndarray) -> np.ndarray:
    """Where the HMD looks (..., 3): its -Z axis."""
    return quat.rotate(rotations, np.array([0.0, 0.0, -1.0]))


def hmd_frame_rotations(hmd_rotations: np.ndarray) -> np.ndarray:
    """Yaw-only rotations (..., 4) of the HMD frame: +Z along the HMD's forward on the floor.

    The body faces +Z in character space while devices look along -Z, so the HMD frame
    turns +Z onto the HMD's floor-projected view direction.
    """
    return quat.from_yaw(quat.yaw_of_direction(hmd_forward(hmd_rotations)))


def controller_axes(rotations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Directions (..., 3) from the wrist toward the fingers (the grip's -Y axis) and from the little finger
    to the thumb across the fist (its -Z axis)."""
    axes = quat.to_matrix(rotations)
    return -axes[..., :, 1], -axes[..., :, 2]
