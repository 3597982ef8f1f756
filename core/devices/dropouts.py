"""Offline, a device's short loss of tracking is bridged: its pose goes from the last sample before the loss to the
first after it (positions along the line, rotations slerped), as if tracked.

Live, a lost device holds its last pose (plausibility.py), and when tracking returns the avatar catches up at
once: a headset lost for a sixth of a second mid-walk moved the body 0.38 m in one frame. Offline the pose after
the loss is known. A loss longer than DROPOUT_BRIDGE_S, at the stream's start or end, or one across which the
device moved faster than a person carries it (jumps.py: a teleport or a recentring) is left as it is.
"""
from __future__ import annotations

import numpy as np

from ..files.stream import ThreePointStream
from ..math import quat
from .jumps import CARRY_SPEED_M_S
from .plausibility import without_unusable_samples

DROPOUT_BRIDGE_S = 0.5
"""The longest loss bridged, from the last tracked sample to the next: a head turned away from the base stations,
a controller behind the back."""


def lost_runs(tracked: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) sample of each run of False in `tracked` (N,) with a True sample before and after it."""
    lost = np.concatenate([[False], ~tracked, [False]]).astype(np.int8)
    starts, ends = np.flatnonzero(np.diff(lost) == 1), np.flatnonzero(np.diff(lost) == -1) - 1
    return [(int(s), int(e)) for s, e in zip(starts, ends) if s > 0 and e < len(tracked) - 1]


def dropouts_bridged(stream: ThreePointStream, longest_s: float = DROPOUT_BRIDGE_S) -> ThreePointStream:
    """The stream with its unusable samples untracked (`without_unusable_samples`) and each device's losses of at
    most `longest_s` bridged (the module's rule)."""
    stream = without_unusable_samples(stream)[0]
    times, positions, rotations, tracked = (stream.times, stream.positions.copy(), stream.rotations.copy(),
                                            stream.tracked.copy())
    for device in range(tracked.shape[1]):
        for first, last in lost_runs(stream.tracked[:, device]):
            before, after = first - 1, last + 1
            span = times[after] - times[before]
            step = np.linalg.norm(positions[after, device] - positions[before, device])
            if span > longest_s or step > CARRY_SPEED_M_S * span:
                continue
            alpha = (times[first:after] - times[before]) / span
            positions[first:after, device] = positions[before, device] + alpha[:, None] * (positions[after, device]
                                                                                           - positions[before, device])
            rotations[first:after, device] = quat.slerp(rotations[before, device], rotations[after, device], alpha)
            tracked[first:after, device] = True
    return ThreePointStream(times, positions, rotations, tracked)
