"""Where Smooth Solve holds a planted foot: each contact's landing spot, for as long as the contact lasts and the
solve's own foot stays near it, then eased back to the solve (FootStabilisation's lock time, radius and recovery).

Vectorised over frames per contact; positions are along the floor only (the height stays the solve's, so a
heel may rise while its toe is held).
"""
from __future__ import annotations

import numpy as np

from ..config import FootStabilisation
from .contacts import contact_segments

PLANTED = 0.5
"""A hold starts where the foot's contact weight reaches this: it has landed, not still sliding in."""


def foot_holds(floor_positions: np.ndarray, weights: np.ndarray, fps: float,
               settings: FootStabilisation = FootStabilisation()) -> tuple[np.ndarray, np.ndarray]:
    """(shifts (F, 2), holds (F,)) for one foot from its solved position along the floor (F, 2) and its contact
    weights (F,; a contact is where they reach PLANTED): while held (`holds` 1) the shift takes the foot to the spot
    where its contact began; once the hold lets go (its contact ends, or the solve's foot moves `lock_radius_m`
    from the spot) the shift it had fades out over `recovery_s` (smoothstep, `holds` with it), the foot following
    the solve's as it moves. With a radius of 0 nothing is held."""
    floor_positions = np.asarray(floor_positions, dtype=float)
    shifts, holds = np.zeros_like(floor_positions), np.zeros(len(floor_positions))
    if settings.lock_radius_m <= 0.0:
        return shifts, holds
    shortest = max(1, int(round(settings.lock_time_s * fps)))
    recovery = int(round(settings.recovery_s * fps))
    fade = 1.0 - np.arange(1, recovery + 1) / (recovery + 1.0)
    fade = fade * fade * (3.0 - 2.0 * fade)
    for start, stop in contact_segments((np.asarray(weights) >= PLANTED).astype(float)):
        if stop - start < shortest:
            continue
        spot = floor_positions[start]
        away = np.linalg.norm(floor_positions[start:stop] - spot, axis=-1) > settings.lock_radius_m
        release = start + (int(np.argmax(away)) if away.any() else stop - start)
        holds[start:release] = 1.0
        shifts[start:release] = spot - floor_positions[start:release]
        after = np.arange(release, min(release + recovery, len(holds)))
        faded = fade[:len(after)]
        free = holds[after] < faded  # a later contact's hold wins
        holds[after[free]] = faded[free]
        shifts[after[free]] = faded[free, None] * shifts[release - 1]
    return shifts, holds
