"""What the solvers accept from devices and streams: finite, sane samples and time steps, metres and +Y up.

A device sample that is not finite, lies farther than MAX_POSITION_M from the origin or has a
quaternion far from unit length counts as untracked (`usable_samples`), as does a controller farther than
MAX_CONTROLLER_FROM_HMD_M from the HMD; one near unit length is made unit
(`unit_rotations`); a time step that is not
finite, not positive or longer than PAUSE_STEP_S is a pause: the solvers advance by one nominal
frame (a live step no later than the last never reaches them: solution.repeats_last_frame). `check_stream` looks
at a whole stream file: times in milliseconds and positions in centimetres or millimetres or on a +Z up axis, and a
headset upside down (`upside_down_problem`: quaternions written x, y, z, w) are errors; gaps, absurd samples and a
left controller held to the right of the right one (`crossed_controllers_m`: columns swapped, or a mirrored world) are warnings.
"""
from __future__ import annotations

import numpy as np

from ..files.stream import HELD_GAP_S, MAX_GAP_S, QUATERNION_NORM_TOLERANCE, StreamFormatError, ThreePointStream
from ..math import quat
from .standing_height import measured_standing_height

MAX_POSITION_M = 1e4
"""A device farther than this from the origin (10 km) is a broken sample, not a position."""
MAX_CONTROLLER_FROM_HMD_M = 1.5
"""A controller farther than this from the HMD is in no hand: set down, dropped, or reported where its tracking was
lost (a tool that writes the last pose on). The tallest user's grip is within 1.2 m of their eyes."""
QUATERNION_NORM_RANGE = (1.0 - QUATERNION_NORM_TOLERANCE, 1.0 + QUATERNION_NORM_TOLERANCE)
"""Rotations whose quaternion length is outside this are broken samples (zero, garbage); inside it they are normalised
where read (the stream reader refuses them)."""
PAUSE_STEP_S = 1.0
"""A live time step longer than this (a stall, a clock jump) is a pause, not motion to integrate."""
STEP_RANGE_S = (0.001, 0.1)
"""Median time step of a plausible stream: 1000 Hz to 10 Hz."""
HEAD_HEIGHT_RANGE_M = (0.8, 2.5)
"""Standing HMD height of a plausible user above a floor at y = 0."""
MIN_HEAD_HEIGHT_M = 0.3
"""A standing HMD lower than this is no person's standing, kneeling or sitting on the floor: the floor is elsewhere,
and an avatar sized to it would be a doll."""
CALIBRATION_S = 0.5
"""The solvers' standing calibration window, from which the head height is judged."""
CROSSED_CONTROLLERS_M = 0.15
"""How far the left controller must sit to the right of the right one, in the headset's yaw frame (the median over
the stream), to be reported. The person's own controllers, simulated from the 743 Bandai, 100STYLE and Perfume clips
long enough to judge: at most 0.13 m crossed (a slash; hands clasped in a bow 0.06 m), 0.35 m the other way at the
median, 0.15 m or more on 93 % of them (the share of swapped streams reported). A right-hand grip tied 0.3 m ahead
of the left (a shared object) crosses up to 0.24 m, past this on 5 of the 743."""
CROSSED_MIN_SAMPLES_S = 2.0
"""The crossing is judged over at least this many seconds of all three devices tracked, the headset within 45° of
level."""


def usable_samples(positions, rotations, tracked) -> np.ndarray:
    """(..., D) bool: tracked devices whose pose is finite, within MAX_POSITION_M and has a near-unit quaternion; where
    the D devices are the three (HMD, left, right), controllers also within MAX_CONTROLLER_FROM_HMD_M of a usable HMD.

    NaN and infinity fail the comparisons, so no separate finiteness test is needed.
    """
    positions, rotations = np.asarray(positions, dtype=float), np.asarray(rotations, dtype=float)
    low, high = QUATERNION_NORM_RANGE
    with np.errstate(over="ignore", invalid="ignore"):
        squared = np.einsum("...i,...i->...", rotations, rotations)
        usable = (np.asarray(tracked, dtype=bool) & (np.abs(positions) <= MAX_POSITION_M).all(axis=-1)
                  & (squared >= low * low) & (squared <= high * high))
        if positions.ndim >= 2 and positions.shape[-2] == 3:
            apart = positions[..., 1:, :] - positions[..., :1, :]
            far = np.einsum("...i,...i->...", apart, apart) > MAX_CONTROLLER_FROM_HMD_M ** 2
            usable[..., 1:] &= ~(far & usable[..., :1])
        return usable


def unit_rotations(rotations, usable) -> np.ndarray:
    """Rotations (..., 4) with those of usable samples (`usable` (...,), usable_samples) scaled to unit length, the
    others as they are: a quaternion up to QUATERNION_NORM_TOLERANCE off unit length is the rotation it points at."""
    rotations, usable = np.asarray(rotations, dtype=float), np.asarray(usable, dtype=bool)[..., None]
    return np.where(usable, quat.normalize(np.where(usable, rotations, 1.0)), rotations)


def usable_poses(positions, rotations, tracked) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(positions (..., 3), rotations (..., 4), usable (...,)) of device samples: the usable ones (`usable_samples`)
    with unit rotations (`unit_rotations`), every other one NaN, whatever a device wrote there (garbage would
    overflow the arithmetic that skips it)."""
    positions, rotations = np.asarray(positions, dtype=float), np.asarray(rotations, dtype=float)
    usable = usable_samples(positions, rotations, tracked)
    blank = ~usable[..., None]
    return np.where(blank, np.nan, positions), np.where(blank, np.nan, unit_rotations(rotations, usable)), usable


def step_seconds(dt, nominal: float) -> tuple[float, bool]:
    """(seconds to advance, whether `dt` was a pause): a non-finite, non-positive or too long dt advances `nominal`."""
    if 0.0 < dt <= PAUSE_STEP_S:
        return float(dt), False
    return nominal, True


def without_unusable_samples(stream: ThreePointStream) -> tuple[ThreePointStream, int]:
    """The stream with unusable samples marked untracked (NaN), and how many tracked ones there were; untracked
    samples made NaN too, whatever a device wrote there (garbage would overflow the arithmetic that skips it).
    Controllers before the HMD's first usable sample are untracked as well (not counted): the avatar waits where
    the headset is first seen, as a live step waits for it, and no hand reaches from there for them."""
    usable = usable_samples(stream.positions, stream.rotations, stream.tracked)
    rejected = int(np.count_nonzero(stream.tracked & ~usable))
    usable[:, 1:] &= np.logical_or.accumulate(usable[:, :1], axis=0)
    if not rejected and np.isnan(stream.positions[~usable]).all() and np.isnan(stream.rotations[~usable]).all():
        return stream, 0
    positions, rotations = stream.positions.copy(), stream.rotations.copy()
    positions[~usable], rotations[~usable] = np.nan, np.nan
    return ThreePointStream(stream.times, positions, rotations, usable), rejected


def check_stream(stream: ThreePointStream, path) -> list[str]:
    """Warnings about a stream read from `path`, each naming the file; StreamFormatError for units a solve cannot use."""
    warnings = []
    if len(stream) > 1:
        step = float(np.median(np.diff(stream.times)))
        low, high = STEP_RANGE_S
        if not low <= step <= high:
            hint = _time_unit_hint(stream.times, step)
            raise StreamFormatError(path, None, f"the median time step is {step:g} s, outside "
                                                f"{low * 1000:g}-{high * 1000:g} ms: {hint}")
        steps = np.diff(stream.times)
        longest = int(np.argmax(steps))
        if steps[longest] > MAX_GAP_S:
            raise StreamFormatError(path, None, f"no sample for {steps[longest]:.0f} s after t = "
                                                f"{stream.times[longest]:.3f} s (more than {MAX_GAP_S / 60:g} "
                                                "minutes): cut the stream there and solve the parts")
        gaps = np.flatnonzero(steps > HELD_GAP_S)
        if len(gaps):
            longest = gaps[np.argmax(steps[gaps])]
            warnings.append(f"{path}: {len(gaps)} gap(s) longer than {HELD_GAP_S:g} s (the longest {steps[longest]:.1f} s "
                            f"after t = {stream.times[longest]:.3f} s): the devices count as untracked over them, so "
                            "the avatar stays where they were last seen")
    usable = usable_samples(stream.positions, stream.rotations, stream.tracked)
    broken = stream.tracked & ~usable
    if broken.any():
        first = int(np.flatnonzero(broken.any(axis=1))[0])
        warnings.append(f"{path}: {int(broken.sum())} device sample(s) with absurd values (farther than "
                        f"{MAX_POSITION_M:g} m, a broken quaternion or a controller more than "
                        f"{MAX_CONTROLLER_FROM_HMD_M:g} m from the headset; the first at t = "
                        f"{stream.times[first]:.3f} s) count as untracked")
    head = usable[:, 0]
    if head.any():
        window = head & (stream.times - stream.times[0] <= CALIBRATION_S)
        heights = stream.positions[window if window.any() else head, 0]
        height = float(np.median(heights[:, 1]))
        low, high = HEAD_HEIGHT_RANGE_M
        problem = head_height_problem(height, float(np.median(heights[:, 2])), not low <= height <= high and
                                      z_looks_up(stream.positions[head, 0], stream.rotations[head, 0]))
        if problem is not None and height < low and low <= measured_standing_height(
                stream.times, stream.positions[:, 0, 1], head, CALIBRATION_S) <= high:
            problem = None  # a headset on a table or the floor at first, then worn: the solve stands it up there
        if problem is not None:
            message, fatal = problem
            if fatal:
                raise StreamFormatError(path, None, message)
            warnings.append(f"{path}: {message}")
        problem = upside_down_problem(stream.rotations[head, 0])
        if problem is not None:
            raise StreamFormatError(path, None, problem)
    crossed = crossed_controllers_m(stream, usable)
    if crossed is not None and crossed > CROSSED_CONTROLLERS_M:
        warnings.append(f"{path}: the left controller is held {crossed:.2f} m to the right of the right one (the median "
                        "across the headset's view): if the avatar's arms cross, the left_ and right_ columns are "
                        "swapped (rename them) or the world is mirrored (a left-handed engine's axes)")
    return warnings


def crossed_controllers_m(stream: ThreePointStream, usable: np.ndarray) -> float | None:
    """How far the left controller is to the right of the right one across the headset's view, the median over the
    samples where all three devices are usable (`usable` (N, 3)) and the headset is within 45° of level; None over
    less than CROSSED_MIN_SAMPLES_S of them."""
    together = usable.all(axis=1)
    forward = quat.rotate(stream.rotations[together, 0], np.array([0.0, 0.0, -1.0]))
    level = np.abs(forward[:, 1]) < np.sqrt(0.5)
    if len(stream) < 2 or np.count_nonzero(level) < CROSSED_MIN_SAMPLES_S * stream.rate:
        return None
    right = np.stack([-forward[level, 2], np.zeros(np.count_nonzero(level)), forward[level, 0]], axis=1)
    apart = stream.positions[together][level, 1] - stream.positions[together][level, 2]
    return float(np.median(np.einsum("ni,ni->n", apart, right) / np.linalg.norm(right, axis=1)))


def upside_down_problem(rotations: np.ndarray) -> str | None:
    """What is wrong with an HMD whose usable rotations (N, 4) turn its +Y below the horizon at the median (no one
    wears a headset upside down; a bow's is 57° from upright): quaternions written x, y, z, w (the order of OpenXR's,
    Unity's and scipy's structures), where read so they stand upright (a device frame turned half a turn about its
    view axis reads so too while the head is level), else a device frame other than +Y up. None for an upright one."""
    up = np.array([0.0, 1.0, 0.0])
    height = float(np.median(quat.rotate(rotations, up)[:, 1]))
    if height >= 0.0:
        return None
    tilt = np.degrees(np.arccos(max(height, -1.0)))
    reordered = quat.normalize(rotations[:, [3, 0, 1, 2]])
    if np.median(quat.rotate(reordered, up)[:, 1]) > 0.5:
        return (f"the headset is upside down ({tilt:.0f}° from upright at the median): the quaternions look written "
                "x, y, z, w (the order of OpenXR's and Unity's structures); CSV v1 writes them w, x, y, z "
                "(head_qw, head_qx, head_qy, head_qz), its device frames +Y up and looking along -Z")
    return (f"the headset is upside down ({tilt:.0f}° from upright at the median): CSV v1 device frames are +Y up, "
            "looking along -Z")


TIME_UNITS = ((1e3, "milliseconds", "1000"), (1e6, "microseconds", "1e6"), (1e9, "nanoseconds (OpenXR's XrTime)", "1e9"))
"""Clock units a stream's times may be written in by mistake, in units per second."""


def _time_unit_hint(times: np.ndarray, step: float) -> str:
    """What a median time step outside STEP_RANGE_S suggests: frame numbers (whole numbers one apart), or a clock in
    milliseconds, microseconds or nanoseconds."""
    if step == 1.0 and np.array_equal(times, np.round(times)):
        return "the times look like frame numbers: CSV v1 times are seconds (divide t by the frame rate)"
    low, high = STEP_RANGE_S
    for per_second, unit, divisor in TIME_UNITS:
        if low <= step / per_second <= high:
            return f"the times look like {unit}: CSV v1 times are seconds (divide t by {divisor})"
    return "CSV v1 times are seconds"


def z_looks_up(positions: np.ndarray, rotations: np.ndarray) -> bool:
    """Whether an HMD's usable samples (N, 3), (N, 4) say the stream's up is its z axis: the HMD's own up turned
    nearer ±Z than +Y (a Z-up exporter turns rotations too), or the head travelling farther along y than along z (one
    that turned positions only)."""
    up = np.median(quat.rotate(rotations, np.array([0.0, 1.0, 0.0])), axis=0)
    if abs(up[2]) > max(up[1], 0.0):
        return True
    spread = np.percentile(positions, 95, axis=0) - np.percentile(positions, 5, axis=0)
    return bool(spread[1] > spread[2])


def head_height_problem(height: float, z: float, z_up: bool = True) -> tuple[str, bool] | None:
    """What is wrong with a standing HMD at `height` (its y) and `z` (`z_up`: the HMD's samples look Z-up,
    `z_looks_up`), and whether a solve must refuse it."""
    low, high = HEAD_HEIGHT_RANGE_M
    if low <= height <= high:
        return None
    where = f"the standing head height (y) is {height:.3g} m, outside {low:g}-{high:g} m"
    if z_up and (low <= z <= high or low <= -z <= high):
        return f"{where} while z is {z:.3g} m: the stream looks +Z up; CSV v1 is +Y up (y = 0 the floor)", True
    for factor, unit in ((100.0, "centimetres"), (1000.0, "millimetres")):
        if low <= height / factor <= high:
            return f"{where}: the positions look like {unit}; CSV v1 positions are metres", True
    local = "is y = 0 the floor? (a LOCAL reference space puts y = 0 at the first head position)"
    if height < MIN_HEAD_HEIGHT_M:
        return f"{where}: {local}; CSV v1 is a STAGE space, y = 0 the floor", True
    return f"{where}: {local}", False
