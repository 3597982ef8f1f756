"""Calibration from the stream's first minute: the person's height and arm span, and how each controller is held.

The gesture: stand upright in a T-pose (arms straight out to the sides, palms down) or an A-pose (the
same, arms about 45 degrees down) and circle the wrists for a second or two. From it, per controller:
- the grip-to-wrist offset: the wrist is the point about which the controller turns while the
  forearm holds still, so the offset o (the grip's origin from the wrist, in the grip's frame) solves
  x_t = R_t o + w_0 + t w_1 in least squares over the pose (a pivot calibration; w_0 + t w_1 lets the
  held arm drift slowly);
- the tilt: the grip's rotation against the grip as DeviceOffsets assumes it for a hand in line
  with the arm (level in a T-pose; in an A-pose from the shoulders, which are estimated from the HMD's
  height), palm down, thumb forward (`t_pose_grips`), averaged over the pose;
and, from the pose, the standing HMD height and the arm span (wrist to wrist with the arms level; from an
A-pose, the estimated shoulders' width and each arm's length from its shoulder).
`StreamCalibration.apply` turns a stream into the one the same hands would give holding the
controllers as DeviceOffsets assumes, so every solver works unchanged. What the stream cannot tell:
how level the arms really were (the tilt's error is the pose's; an A-pose adds the shoulders' estimate), and
nothing at all without the gesture.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config import CalibrationConfig, DeviceOffsets
from ..errors import FileFormatError
from ..files.json_value import json_value
from ..files.stream import ThreePointStream, read_comments
from ..math import quat
from ..math.vector import reject, unit
from .attachments import grip_offset

COMMENT_KEY = "calibration"
"""A stream file stores its calibration as one comment line `# calibration {JSON}` (SPEC §3 comments)."""
UP = np.array([0.0, 1.0, 0.0])
ARMS_APART_OF_HEIGHT = 0.6
"""In a T-pose the controllers are at least this share of the HMD's height apart (wrist span ~0.85)."""
LEVEL_SHARE = 0.25
"""... level with each other within this share of their distance (arms held up to 12 degrees off level, as people
hold them; 0.15 broke such a pose on 100STYLE's actor) ..."""
MAX_OFFSET_M = 0.2
"""A grip farther than this from the wrist is not a hand's: the pivot fit went astray (or a stored one is wrong)."""
STORED_ROUNDING_M = 1e-3
"""A stored grip offset may lie this much past MAX_OFFSET_M: `describe` rounds each axis to 0.1 mm."""
STORED_LIMITS = {"standing_hmd_height_m": (0.5, 3.0), "arm_span_m": (0.3, 3.5), "quaternion_norm": (0.95, 1.05)}
"""What a stored calibration's figures may be: a person's standing HMD height and arm span (metres), and how far a
grip tilt's quaternion may be from unit length (rounded by hand) before it is taken for a mistake."""
BELOW_HMD_M = (-0.05, 0.5)
"""... and between these distances below the HMD (shoulder height; a hunched start brings the head down to it)."""
POSE_BREAK_S = 0.5
"""A pose interrupted this long at most (a controller's tracking lost, one arm dipping) is one pose (a device's
dropouts last 0.1-0.5 s) ..."""
POSE_BREAK_MOVE_M = 0.2
"""... where neither controller moved more than this against the HMD across the break (arms swinging through the
pose in plain motion do)."""
A_POSE_DEG = (20.0, 65.0)
"""An A-pose's arms are this far below level, seen from the shoulders (a T-pose's less than the first)."""
A_POSE_APART_OF_HEIGHT = 0.45
"""In an A-pose the controllers are at least this share of the HMD's height apart (0.72 with the arms 45 degrees down)."""
SHOULDER_OF_HMD = 0.88
"""The shoulder joints' height as a share of the standing HMD's (Bandai 0.88-0.89, 100STYLE 0.87)."""
SHOULDER_HALF_WIDTH_OF_HMD = 0.09
"""Half the distance between the shoulder joints as a share of the HMD's height (Bandai 0.07, 100STYLE 0.11)."""


def t_pose_grips(left: np.ndarray, forward: np.ndarray) -> np.ndarray:
    """Grip rotations (..., 2, 4) of hands in line with arms pointing `left` and -`left` (..., 3), palms down:
    fingers (-Y) along the arm, thumbs (-Z) toward `forward` made perpendicular to the arm."""
    grips = []
    for arm in (left, -left):
        y = -unit(arm)
        z = -unit(reject(forward, arm))
        grips.append(quat.from_matrix(np.stack([np.cross(y, z), y, z], axis=-1)))
    return np.stack(grips, axis=-2)


@dataclass(frozen=True)
class StreamCalibration:
    """What the gesture told; `found` False (no gesture in the first minute) leaves the stream as it is."""

    found: bool
    standing_hmd_height_m: float | None = None
    arm_span_m: float | None = None
    """Wrist to wrist with the arms level (from an A-pose: the estimated shoulders' width and the arms' lengths)."""
    grip_offsets_m: tuple = ()
    """Per controller (left, right): the grip's origin from the wrist in the grip's own frame (DeviceOffsets
    assumes (0, -0.08, 0)); None where the wrists did not turn enough to tell."""
    grip_tilts: tuple = ()
    """Per controller: the grip's rotation (w, x, y, z) in the frame DeviceOffsets assumes."""
    pose_s: tuple = ()
    """(start, end) of the pose in stream time."""
    wrist_turn_deg: tuple = ()
    """RMS turn of each controller about its mean over the pose: how well the offsets are determined."""
    pivot_residual_mm: tuple = ()
    """RMS of the pivot fit per controller."""
    pose: str = "T"
    """The pose found: "T" (arms level) or "A" (arms down, A_POSE_DEG)."""

    def offsets(self, devices: DeviceOffsets) -> np.ndarray:
        """(2, 3) grip offsets, the assumed one (turned by the tilt) where none was measured."""
        assumed = grip_offset(devices)
        return np.array([quat.inverse_rotate(np.array(t), assumed) if o is None else o
                         for o, t in zip(self.grip_offsets_m, self.grip_tilts)])

    def apply(self, stream: ThreePointStream, devices: DeviceOffsets = DeviceOffsets()) -> ThreePointStream:
        """The stream as the controllers would report it held as `devices` assumes: same wrists, assumed grip."""
        if not self.found:
            return stream
        return ThreePointStream(stream.times, *self.applied(stream.positions, stream.rotations, devices), stream.tracked)

    def applied(self, positions: np.ndarray, rotations: np.ndarray, devices: DeviceOffsets = DeviceOffsets(),
                share: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """Device poses (T, 3, 3) and (T, 3, 4) with the controllers as `apply` gives them, `share` of the way there
        (the grip moved and turned by that share: live, the calibration eased in). A quaternion written rounded is
        read as the rotation it stands for (made unit length)."""
        positions, rotations = positions.copy(), rotations.copy()
        held = self.offsets(devices)
        for c in (1, 2):
            rotations[:, c] = quat.normalize(rotations[:, c])
            assumed = quat.multiply_inverse(rotations[:, c], np.array(self.grip_tilts[c - 1]))
            wrists = positions[:, c] - quat.rotate(rotations[:, c], held[c - 1])
            moved = wrists + quat.rotate(assumed, grip_offset(devices))
            positions[:, c] += share * (moved - positions[:, c])
            rotations[:, c] = assumed if share >= 1.0 else quat.slerp(rotations[:, c], assumed, share)
        return positions, rotations

    def describe(self) -> dict:
        """JSON-ready figures: metres, quaternions, and each tilt's angle in degrees."""
        if not self.found:
            return {"found": False}
        def rounded(values, digits):
            return None if values is None else [round(float(v), digits) for v in values]
        return {"found": True, "standing_hmd_height_m": round(self.standing_hmd_height_m, 4),
                "arm_span_m": round(self.arm_span_m, 4),
                "grip_offsets_m": [rounded(o, 4) for o in self.grip_offsets_m],
                "grip_tilts": [rounded(t, 6) for t in self.grip_tilts],
                "grip_tilt_deg": [round(float(np.degrees(2 * np.arccos(min(1.0, abs(t[0]))))), 2)
                                  for t in self.grip_tilts],
                "pose": self.pose, "pose_s": rounded(self.pose_s, 3),
                "wrist_turn_deg": rounded(self.wrist_turn_deg, 1),
                "pivot_residual_mm": rounded(self.pivot_residual_mm, 2)}

    @classmethod
    def from_description(cls, data, where: str = "calibration") -> "StreamCalibration":
        """The inverse of `describe` (the derived figures are recomputed); a FileFormatError naming `where` for a
        description that is malformed or implausible (STORED_LIMITS)."""
        try:
            if not isinstance(data, dict) or not isinstance(data.get("found"), bool):
                raise ValueError('expected a JSON object with "found": true or false')
            if not data["found"]:
                return cls(False)
            height = _numbers(data, "standing_hmd_height_m", 1)[0]
            span = _numbers(data, "arm_span_m", 1)[0]
            _within(height, STORED_LIMITS["standing_hmd_height_m"], "standing_hmd_height_m", " m")
            _within(span, STORED_LIMITS["arm_span_m"], "arm_span_m", " m")
            pose_s = _numbers(data, "pose_s", 2)
            if not 0.0 <= pose_s[0] <= pose_s[1]:
                raise ValueError(f"pose_s {pose_s} is not a start and an end in stream seconds")
            pose = data.get("pose", "T")
            if pose not in ("T", "A"):
                raise ValueError(f'pose {pose!r} is neither "T" nor "A"')
            offsets, tilts = _pair(data, "grip_offsets_m"), _pair(data, "grip_tilts")
            for k, side in enumerate(("left", "right")):
                if offsets[k] is not None:
                    offsets[k] = np.array(_numbers(offsets, k, 3, f"grip_offsets_m ({side})"))
                    _within(float(np.linalg.norm(offsets[k])), (0.0, MAX_OFFSET_M + STORED_ROUNDING_M),
                            f"the {side} grip's distance from the wrist", " m")
                tilt = np.array(_numbers(tilts, k, 4, f"grip_tilts ({side})"))
                _within(float(np.linalg.norm(tilt)), STORED_LIMITS["quaternion_norm"],
                        f"the {side} grip tilt's length (a rotation's is 1)", "")
                tilts[k] = quat.normalize(tilt)
            extras = [tuple(_numbers(data, key, 2)) if key in data else () for key in ("wrist_turn_deg", "pivot_residual_mm")]
            return cls(True, height, span, tuple(offsets), tuple(tilts), tuple(pose_s), *extras, pose)
        except ValueError as error:
            raise FileFormatError(f"{where}: not a calibration: {error}") from None

    def comment(self) -> str:
        """The stream file's comment line for it (without the '# ')."""
        return f"{COMMENT_KEY} {json.dumps(self.describe())}"


def _numbers(container, key, count: int, name: str | None = None) -> list[float]:
    """`container[key]`: `count` finite numbers (one: a number, more: a list); ValueError saying what is wrong."""
    name = name or str(key)
    try:
        value = container[key]
    except (KeyError, IndexError):
        raise ValueError(f"{name} is missing") from None
    values = [value] if count == 1 else value
    if (not isinstance(values, list) or len(values) != count
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)):
        raise ValueError(f"{name} is not " + ("a number" if count == 1 else f"a list of {count} numbers"))
    if not all(np.isfinite(values)):
        raise ValueError(f"{name} is not finite ({value})")
    return [float(v) for v in values]


def _pair(data: dict, key: str) -> list:
    """`data[key]` as a list of two entries, one per controller; ValueError if it is not."""
    value = data.get(key)
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError(f"{key} is not a list of two controllers' values")
    return list(value)


def _within(value: float, limits: tuple, name: str, unit: str) -> None:
    """ValueError unless `limits[0] <= value <= limits[1]`."""
    if not limits[0] <= value <= limits[1]:
        raise ValueError(f"{name} is {value:g}{unit}, outside {limits[0]:g}-{limits[1]:g}{unit}")


def stored_calibration(path: str | Path, comments: list[tuple[int, str]] | None = None) -> StreamCalibration | None:
    """The calibration a stream file carries in its comments (the last `# calibration {...}`; other comments, "#
    calibration done by hand" among them, are the writer's own), or None; a FileFormatError naming the file and line
    for a calibration comment that is not a plausible calibration. `comments`: (line, text) as read with the stream
    (`read_stream_and_comments`; a named pipe or standard input is read once), else read from `path`."""
    found = None
    for number, text in read_comments(path) if comments is None else comments:
        if text.startswith(COMMENT_KEY + " ") and text[len(COMMENT_KEY):].lstrip().startswith("{"):
            try:
                data = json_value(text[len(COMMENT_KEY) + 1:])
            except ValueError as error:
                raise FileFormatError(f"{path}:{number}: calibration comment is not JSON ({error})") from None
            found = StreamCalibration.from_description(data, f"{path}:{number}")
    return found


def arm_elevations(positions: np.ndarray) -> np.ndarray:
    """(T, 2) how far each controller is below its shoulder's level, in degrees as seen from the shoulder, from the
    devices' positions (T, 3, 3): the shoulders are estimated from the HMD's height (SHOULDER_OF_HMD) and half their
    width (SHOULDER_HALF_WIDTH_OF_HMD) either side of the controllers' midpoint."""
    hmd = positions[:, 0, 1]
    middle = 0.5 * (positions[:, 1] + positions[:, 2])
    lateral = np.linalg.norm(reject(positions[:, 1:] - middle[:, None], UP), axis=-1)
    drop = SHOULDER_OF_HMD * hmd[:, None] - positions[:, 1:, 1]
    return np.degrees(np.arctan2(drop, lateral - SHOULDER_HALF_WIDTH_OF_HMD * hmd[:, None]))


def calibration_poses(stream: ThreePointStream, config: CalibrationConfig = CalibrationConfig()
                      ) -> list[tuple[np.ndarray, str]]:
    """(indices, "T" or "A") of each run of one calibration pose in the first `search_s` seconds held at least
    `min_pose_s`, in time order, across breaks (POSE_BREAK_S, POSE_BREAK_MOVE_M) whose frames are left out: all
    devices tracked, controllers level with each other, the HMD looking ahead; a T-pose's
    controllers far apart at shoulder height, an A-pose's A_POSE_DEG below the shoulders."""
    first = stream.times - stream.times[0] <= config.search_s
    p, r = np.nan_to_num(stream.positions), np.nan_to_num(stream.rotations)
    across = p[:, 1] - p[:, 2]
    span = np.linalg.norm(across, axis=-1)
    hmd = p[:, 0, 1]
    below = hmd[:, None] - p[:, 1:, 1]
    forward = np.cross(across, UP)
    looking = -quat.to_matrix(r[:, 0])[:, :, 2]
    either = (first & stream.tracked.all(axis=1) & (np.abs(across[:, 1]) < LEVEL_SHARE * span)
              & (np.sum(forward * looking, axis=-1) > 0))
    elevation = arm_elevations(p)
    t_pose = (either & (span > ARMS_APART_OF_HEIGHT * hmd) & (below > BELOW_HMD_M[0]).all(axis=1)
              & (below < BELOW_HMD_M[1]).all(axis=1) & (elevation < A_POSE_DEG[0]).all(axis=1))
    a_pose = (either & (span > A_POSE_APART_OF_HEIGHT * hmd) & (elevation >= A_POSE_DEG[0]).all(axis=1)
              & (elevation <= A_POSE_DEG[1]).all(axis=1))
    label = np.where(t_pose, 1, np.where(a_pose, 2, 0))
    held = p[:, 1:] - p[:, :1]
    runs = []  # [label, first, last] of each run of one pose, across breaks up to POSE_BREAK_S
    for i in np.flatnonzero(label):
        if runs and runs[-1][0] == label[i] and stream.times[i] - stream.times[runs[-1][2]] <= POSE_BREAK_S \
                and not np.any(label[runs[-1][2] + 1:i]) \
                and np.linalg.norm(held[i] - held[runs[-1][2]], axis=-1).max() <= POSE_BREAK_MOVE_M:
            runs[-1][2] = i
        else:
            runs.append([label[i], i, i])
    poses = []
    for pose, start, last in runs:
        frames = start + np.flatnonzero(label[start:last + 1] == pose)
        if len(frames) >= 2 and stream.times[last] - stream.times[start] >= config.min_pose_s:
            poses.append((frames, "T" if pose == 1 else "A"))
    return poses


def pivot(positions: np.ndarray, rotations: np.ndarray, times: np.ndarray, rounds: int = 3
          ) -> tuple[np.ndarray, float, float]:
    """The offset o (3,) in the device's frame with positions = R_t o + w_0 + t w_1 + t^2 w_2 in least squares,
    the fit's RMS residual (m), and the offset's standard error (m, its least determined axis): the point about
    which the device turns while that point drifts slowly, and how well the turns pin it down (`offset_error`).
    Samples far off the fit (over 3 times the median residual and 1 cm: the arms leaving the pose) are
    dropped and the fit repeated, `rounds` times at most."""
    t = ((times - times.mean()) / max(float(np.ptp(times)), 1e-9))[:, None, None]
    eye = np.broadcast_to(np.eye(3), (len(positions), 3, 3))
    system = np.concatenate([quat.to_matrix(rotations), eye, t * eye, t * t * eye], axis=-1)
    kept = np.ones(len(positions), dtype=bool)
    for _ in range(rounds):
        solution, *_ = np.linalg.lstsq(system[kept].reshape(-1, 12), positions[kept].reshape(-1), rcond=None)
        residual = np.linalg.norm(positions - system @ solution, axis=-1)
        close = residual <= max(3.0 * float(np.median(residual[kept])), 0.01)
        if (close == kept).all() or close.sum() < 12:
            break
        kept = close
    return solution[:3], float(np.sqrt(np.mean(residual[kept] ** 2))), offset_error(system[kept], residual[kept])


def offset_error(system: np.ndarray, residual: np.ndarray) -> float:
    """The standard error (m) of the pivot's offset along its least determined axis, from the fit's design (K, 3, 12)
    and residuals (K,): turns about one axis only (an arm raised or lowered about the shoulder) leave the offset
    along that axis to the drift terms, and its error grows without bound; infinite where nothing determines it."""
    rows = system.reshape(-1, system.shape[-1])
    variance = float(np.sum(residual ** 2)) / max(len(rows) - rows.shape[1], 1)
    normal = rows.T @ rows
    if not np.isfinite(normal).all() or np.linalg.cond(normal) > 1e12:
        return float("inf")
    return float(np.sqrt(variance * np.max(np.diag(np.linalg.inv(normal))[:3])))


SEGMENT_S = 0.5
"""The pose is cut into pieces this long, each fitted alone, to find where the wrists held still."""
PIECE_AGREEMENT_M = 0.01
"""Pieces whose own offset is this far from the pieces' median are left out of the fit ..."""
PIECE_AGREEMENT_ERRORS = 3.0
"""... or, where the pieces' own fits are loose (a device's noise on half a wrist circle), this many of the piece's
standard errors, for a piece whose fit is not PIECE_LOOSER times looser than the median piece's (an arm leaving
the pose, which the turns no longer pin down)."""
PIECE_LOOSER = 3.0


def steady(positions: np.ndarray, rotations: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Which samples to fit: those of the pieces (SEGMENT_S) whose own pivot offset is as near the median piece's
    as the piece's fit can tell (PIECE_AGREEMENT_M, PIECE_AGREEMENT_ERRORS), and those of pieces too short to fit
    (a pose broken by a dropout). While the arms move into or out of the
    pose the drift terms absorb the motion in a piece's own fit, but its offset goes astray."""
    pieces = np.minimum(((times - times[0]) / SEGMENT_S).astype(int), max(int(np.ptp(times) / SEGMENT_S) - 1, 0))
    counts = np.bincount(pieces)
    usable = np.flatnonzero(counts >= 12)
    if len(usable) < 2:
        return np.ones(len(times), dtype=bool)
    fits = [pivot(positions[pieces == k], rotations[pieces == k], times[pieces == k], rounds=1) for k in usable]
    offsets, errors = np.array([f[0] for f in fits]), np.array([f[2] for f in fits])
    distance = np.linalg.norm(offsets - np.median(offsets, axis=0), axis=-1)
    loose = (distance <= PIECE_AGREEMENT_ERRORS * errors) & (errors <= PIECE_LOOSER * np.median(errors))
    agree = (distance <= PIECE_AGREEMENT_M) | loose | (distance == distance.min())
    return np.isin(pieces, usable[agree]) | ~np.isin(pieces, usable)


ALL_FRAMES_RESIDUAL = 1.5
"""The pivot of all the pose's frames is kept over the steady pieces' where it is better determined and its residual
is at most this many times theirs."""


def pose_pivot(positions: np.ndarray, rotations: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, float, float]:
    """`pivot` over the pose's `steady` pieces, or over all its frames where that fit pins the offset down better
    without fitting them worse (ALL_FRAMES_RESIDUAL): under a device's noise the pieces' own fits are loose and a few
    pieces of a short pose can agree on a wrong offset."""
    kept = steady(positions, rotations, times)
    fit = pivot(positions[kept], rotations[kept], times[kept])
    if kept.all():
        return fit
    whole = pivot(positions, rotations, times)
    return whole if whole[2] < fit[2] and whole[1] <= ALL_FRAMES_RESIDUAL * fit[1] else fit


def calibrate_stream(stream: ThreePointStream, config: CalibrationConfig = CalibrationConfig(),
                     devices: DeviceOffsets = DeviceOffsets(), ended_by: float = np.inf) -> StreamCalibration:
    """Estimates from the first T- or A-pose with circling wrists in the stream's first minute (module docstring):
    the first of `calibration_poses` (of those whose last frame is at `ended_by` or before) that is the gesture; a
    pose held still (the devices on a table, arms spread without circling the wrists) is passed over."""
    for frames, pose in calibration_poses(stream, config):
        if stream.times[frames[-1]] <= ended_by:
            calibration = pose_calibration(stream, frames, pose, config, devices)
            if calibration.found:
                return calibration
    return StreamCalibration(False)


def wrist_turn_deg(rotations: np.ndarray) -> float:
    """RMS turn (degrees) of a device's rotations (T, 4) about their mean."""
    return float(np.degrees(np.sqrt(np.mean(quat.angle_between(rotations, quat.mean(rotations)) ** 2))))


def pose_calibration(stream: ThreePointStream, frames: np.ndarray, pose: str, config: CalibrationConfig,
                     devices: DeviceOffsets) -> StreamCalibration:
    """The estimates from one pose's `frames`; not found where they are not the gesture's (at once where neither
    controller turned `min_wrist_turn_deg`: a pose held still)."""
    times = stream.times[frames]
    positions, rotations = stream.positions[frames], quat.unroll(stream.rotations[frames])
    turns = [wrist_turn_deg(rotations[:, c]) for c in (1, 2)]
    if max(turns) < config.min_wrist_turn_deg:
        return StreamCalibration(False)
    offsets, residuals, wrists = [], [], []
    for c, turn in zip((1, 2), turns):
        offset, residual, error = pose_pivot(positions[:, c], rotations[:, c], times)
        measured = (turn >= config.min_wrist_turn_deg and residual <= config.max_pivot_residual_m
                    and error <= config.max_offset_error_m and float(np.linalg.norm(offset)) <= MAX_OFFSET_M)
        offsets.append(offset if measured else None)
        residuals.append(residual * 1000.0)
        wrists.append(positions[:, c] - quat.rotate(rotations[:, c], offset if measured else grip_offset(devices)))
    left = reject(np.mean(wrists[0] - wrists[1], axis=0), UP)
    arms = held_arms(wrists, positions[:, 0, 1].mean(), pose)
    grips = [t_pose_grips(arms[0], np.cross(left, UP))[0], t_pose_grips(-arms[1], np.cross(left, UP))[1]]
    tilts = tuple(quat.mean(quat.inverse_multiply(grips[c], rotations[:, 1 + c])) for c in (0, 1))
    if max(quat.angle_between(t, quat.identity()) for t in tilts) > np.radians(config.max_tilt_deg):
        return StreamCalibration(False)
    if all(o is None for o in offsets):  # a pose held without circling the wrists: not the gesture
        return StreamCalibration(False)
    tilts = tuple(quat.identity() if o is None else t for o, t in zip(offsets, tilts))  # the assumed grip
    span = float(np.linalg.norm(wrists[0] - wrists[1], axis=-1).mean())
    if pose == "A":  # the span the arms would have level: shoulder to shoulder, and each arm's length
        hmd = float(positions[:, 0, 1].mean())
        shoulders = shoulder_estimates(np.mean(wrists[0], axis=0), np.mean(wrists[1], axis=0), hmd)
        span = 2.0 * SHOULDER_HALF_WIDTH_OF_HMD * hmd + sum(
            float(np.linalg.norm(wrists[c] - shoulders[c], axis=-1).mean()) for c in (0, 1))
    return StreamCalibration(True, float(positions[:, 0, 1].mean()), span, tuple(offsets), tilts,
                             (float(times[0]), float(times[-1])), tuple(turns), tuple(residuals), pose)


def shoulder_estimates(left_wrist: np.ndarray, right_wrist: np.ndarray, hmd_height: float) -> np.ndarray:
    """(2, 3) where the shoulders are, for wrists held symmetrically out to the sides: SHOULDER_OF_HMD of the HMD's
    height, SHOULDER_HALF_WIDTH_OF_HMD either side of the wrists' midpoint, along the line between them."""
    middle = 0.5 * (left_wrist + right_wrist)
    middle[1] = SHOULDER_OF_HMD * hmd_height
    side = unit(reject(left_wrist - right_wrist, UP)) * SHOULDER_HALF_WIDTH_OF_HMD * hmd_height
    return np.stack([middle + side, middle - side])


def held_arms(wrists: list[np.ndarray], hmd_height: float, pose: str) -> np.ndarray:
    """(2, 3) the directions of the left and right arm in the pose: level and apart in a T-pose; in an A-pose from
    the estimated shoulders to the mean wrists."""
    left_wrist, right_wrist = (np.mean(w, axis=0) for w in wrists)
    if pose == "T":
        left = unit(reject(left_wrist - right_wrist, UP))
        return np.stack([left, -left])
    shoulders = shoulder_estimates(left_wrist, right_wrist, hmd_height)
    return unit(np.stack([left_wrist, right_wrist]) - shoulders)
