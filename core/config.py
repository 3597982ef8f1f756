"""Configuration: dataclasses with documented defaults, shared by the command line and the Blender add-on."""
from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class DeviceOffsets:
    """Where the three devices sit on the body, in each device's own frame (OpenXR: +Y up, -Z forward).

    The HMD pose is the view pose, the centre between the eyes; the controllers report their
    grip pose (OpenXR: -Z along the fist's tube from little finger to thumb, +X out of the left
    palm and into the right one). These offsets turn a skeleton into simulated devices and, in the
    other direction, devices into the joints they imply.
    """

    hmd_from_head: tuple[float, float, float] = (0.0, 0.07, -0.09)
    """HMD origin relative to the head joint (top of the neck): 7 cm up and 9 cm forward, at the eyes."""
    grip_from_wrist_m: float = 0.08
    """Grip centre along the hand, from the wrist joint toward the fingers (half a palm plus the fist)."""
    grip_tilt_deg: float = 0.0
    """Tilt of the grip's -Z axis from the thumb direction toward the fingers; 0 keeps it across the fist."""


@dataclass(frozen=True)
class SimulationConfig:
    """Three-point streams simulated from mocap (SPEC §4 `stream simulate`)."""

    fps: float = 60.0
    """Rate of the simulated stream; MMVR runs at 60 fps, the mocap (30 fps) is resampled with slerp."""
    look_around_deg: float = 0.0
    """Largest head yaw about the neck added on top of the clip (VR users look around more than actors)."""
    look_around_hold_s: tuple[float, float] = (0.5, 2.0)
    """Range of seconds between look-around targets; the head eases from one target to the next."""
    seed: int = 0
    devices: DeviceOffsets = DeviceOffsets()


def describe(config) -> dict:
    """A dataclass as a plain dict (nested dataclasses included), for JSON and CSV comments."""
    out = {}
    for f in fields(config):
        value = getattr(config, f.name)
        out[f.name] = describe(value) if hasattr(value, "__dataclass_fields__") else value
    return out
