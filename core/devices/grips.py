"""Named controller grips: where OpenXR's grip pose lies in the pose another tool reports for a controller.

Every method assumes the controllers report OpenXR's grip pose (the fist's centre, -Z along its tube). Tools built
on OpenVR record SteamVR's device ("raw") pose instead, whose origin and axes differ per controller: a stream
recorded that way puts the wrists 10-13 cm and 15-20 degrees off. SteamVR's render models give, per controller,
the OpenXR grip as a component in the device's frame ("openxr_grip": an origin, then XYZ Euler degrees); those
are the named grips here. A named grip re-expresses the stream's controllers as OpenXR grips before anything
else reads them (`as_openxr_grip`); `from_openxr_grip` does the opposite, to simulate such a recording.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..files.stream import ThreePointStream
from ..math import quat


@dataclass(frozen=True)
class Grip:
    """The OpenXR grip pose in the frame a controller's reported pose defines, per hand (left, right)."""

    origins: tuple[tuple[float, float, float], tuple[float, float, float]]
    """The grip's origin in the reported frame, metres."""
    euler_xyz_deg: tuple[tuple[float, float, float], tuple[float, float, float]]
    """The grip's rotation in the reported frame: intrinsic X, Y, Z angles, degrees."""

    def transforms(self) -> tuple[np.ndarray, np.ndarray]:
        """Origins (2, 3) and rotations (2, 4) of the grip in the reported frames."""
        angles = np.radians(np.array(self.euler_xyz_deg, dtype=float))
        return np.array(self.origins, dtype=float), quat.from_euler(angles, "xyz")


GRIPS: dict[str, Grip] = {
    "openxr": Grip(((0.0, 0.0, 0.0), (0.0, 0.0, 0.0)), ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))),
    "index-openvr": Grip(((0.0, -0.015, 0.13), (0.0, -0.015, 0.13)),
                         ((15.392, -2.071, 0.303), (15.392, 2.071, -0.303))),
    "touch-openvr": Grip(((-0.007, -0.00183, 0.10195), (0.007, -0.00183, 0.10195)),
                         ((20.6, 0.0, 0.0), (20.6, 0.0, 0.0))),
    "vive-wand-openvr": Grip(((0.0, 0.0, 0.0), (0.0, 0.0, 0.0)), ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))),
}
"""`openxr`: the stream reports OpenXR's grip pose (the default; OpenXR runtimes, this project's recorder).
`index-openvr`, `touch-openvr`: SteamVR's device pose of a Valve Index controller, of a Meta Quest (2) Touch
controller, from SteamVR's render models' "openxr_grip" components. `vive-wand-openvr`: the HTC Vive wand's,
which SteamVR reports at its grip already (its render model names no separate OpenXR grip)."""


def grip(name: str) -> Grip:
    """The named grip; one line naming the choices for an unknown name."""
    if name not in GRIPS:
        raise ValueError(f"unknown controller grip {name!r}; grips are {', '.join(GRIPS)}")
    return GRIPS[name]


def _moved(stream: ThreePointStream, origins: np.ndarray, rotations: np.ndarray) -> ThreePointStream:
    """The stream with each controller's pose (c = 1, 2) composed with the transform (origin, rotation) in its frame."""
    positions, device_rotations = stream.positions.copy(), stream.rotations.copy()
    for side, c in enumerate((1, 2)):
        positions[:, c] = positions[:, c] + quat.rotate(device_rotations[:, c], origins[side])
        device_rotations[:, c] = quat.multiply(device_rotations[:, c], rotations[side])
    return ThreePointStream(stream.times, positions, device_rotations, stream.tracked)


def as_openxr_grip(stream: ThreePointStream, name: str) -> ThreePointStream:
    """The stream's controllers, reported as the named grip, re-expressed as OpenXR grip poses."""
    if name == "openxr":
        return stream
    return _moved(stream, *grip(name).transforms())


def from_openxr_grip(stream: ThreePointStream, name: str) -> ThreePointStream:
    """The stream's controllers, reported as OpenXR grip poses, as the named grip would report them."""
    if name == "openxr":
        return stream
    origins, rotations = grip(name).transforms()
    inverse = quat.conjugate(rotations)
    return _moved(stream, -quat.rotate(inverse, origins), inverse)
