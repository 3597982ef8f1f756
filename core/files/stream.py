"""Three-point streams: HMD and two controller poses over time, CSV v1 (SPEC §3), resampling.

Positions are metres in one world frame (+Y up, devices look along -Z), rotations unit
quaternions (w, x, y, z). A device that is not tracked on a sample has `tracked` False there and
NaN pose values; readers never drop rows and reject what they cannot interpret, naming the line.
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import FileFormatError
from ..math import quat
from .atomic import ROWS_PER_WRITE, write_bytes, written

DEVICES = ("head", "left", "right")
POSE_FIELDS = ("px", "py", "pz", "qw", "qx", "qy", "qz")
COLUMNS = ("t",) + tuple(f"{d}_{f}" for d in DEVICES for f in POSE_FIELDS)
VALID_COLUMNS = tuple(f"{d}_valid" for d in DEVICES)
VALID_FLAGS = {"1": True, "0": False, "": False, "nan": False, "1.0": True, "0.0": False, "true": True,
               "false": False}
"""What a `*_valid` field may hold (lower case): 1 or 0 (SPEC §3), as other tools write them (a float column's 1.0, a
boolean's True); empty or nan: not tracked."""
HELD_GAP_S = 5.0
"""Resampling does not interpolate across a gap longer than this: the devices count as untracked inside it."""
MAX_GAP_S = 600.0
"""A gap longer than this (ten minutes without a sample) is refused by the solve: its output would hold one pose
for that long."""
QUATERNION_NORM_TOLERANCE = 0.1
"""A tracked sample's quaternion may be this far from unit length (writers round: two decimals leave up to 1 %);
it is normalised where read. Farther is not a rotation."""


class StreamFormatError(FileFormatError):
    """A stream file that cannot be interpreted; the message names the file and line."""

    def __init__(self, path, line: int | None, message: str):
        self.path, self.line = str(path), line
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")


@dataclass
class ThreePointStream:
    """`times` (N,), `positions` (N, 3, 3) and `rotations` (N, 3, 4) per device in DEVICES order, `tracked` (N, 3)."""

    times: np.ndarray
    positions: np.ndarray
    rotations: np.ndarray
    tracked: np.ndarray

    def __post_init__(self):
        self.times = np.asarray(self.times, dtype=float)
        self.positions = np.asarray(self.positions, dtype=float)
        self.rotations = np.asarray(self.rotations, dtype=float)
        self.tracked = np.asarray(self.tracked, dtype=bool)
        n = len(self.times)
        if self.positions.shape != (n, 3, 3) or self.rotations.shape != (n, 3, 4) or self.tracked.shape != (n, 3):
            raise ValueError("stream arrays must be shaped (N,), (N, 3, 3), (N, 3, 4) and (N, 3)")
        if n > 1 and not np.all(np.diff(self.times) > 0):
            raise ValueError("stream times must be strictly increasing")

    def __len__(self) -> int:
        return len(self.times)

    @property
    def duration(self) -> float:
        return float(self.times[-1] - self.times[0]) if len(self) else 0.0

    @property
    def rate(self) -> float:
        """Median samples per second."""
        return float(1.0 / np.median(np.diff(self.times))) if len(self) > 1 else 0.0

    def frames_at(self, fps: float) -> int:
        """Frames of this stream's timeline at `fps`: every 1/fps s from its first sample to its last (one for a
        single sample). Every solve's output has exactly these frames."""
        return int(np.floor(self.duration * fps + 1e-6)) + 1 if len(self) else 0

    def resampled(self, fps: float) -> "ThreePointStream":
        """Samples every 1/fps s from the first time (`sampled_at`): the stream on its timeline at `fps`."""
        if len(self) < 2:  # nothing to interpolate between
            return ThreePointStream(self.times.copy(), self.positions.copy(), self.rotations.copy(), self.tracked.copy())
        times = self.times[0] + np.arange(self.frames_at(fps)) / fps
        if abs(times[-1] - self.times[-1]) * fps < 1e-5:  # the timeline ends on the last sample (clocks round)
            times[-1] = self.times[-1]
        return self.sampled_at(times)

    def sampled_at(self, times: np.ndarray) -> "ThreePointStream":
        """The stream at `times` (increasing, within its first and last time): linear positions, slerped rotations.

        A device is tracked at a time only where both samples around it are tracked, and not inside a gap longer
        than HELD_GAP_S (a solver holds the pose there).
        """
        times = np.asarray(times, dtype=float)
        second = np.clip(np.searchsorted(self.times, times, side="right"), 1, len(self) - 1)
        first = second - 1
        alpha = np.clip((times - self.times[first]) / (self.times[second] - self.times[first]), 0.0, 1.0)
        a = alpha[:, None]
        # NaN (untracked) neighbours must not leak into a sample that falls exactly on a tracked one.
        before, after = np.nan_to_num(self.positions[first]), np.nan_to_num(self.positions[second])
        positions = before + a[..., None] * (after - before)
        rotations = quat.slerp(np.nan_to_num(self.rotations[first]), np.nan_to_num(self.rotations[second]), a)
        tracked = (self.tracked[first] | (a >= 1.0)) & (self.tracked[second] | (a <= 0.0))
        held = (self.times[second] - self.times[first] > HELD_GAP_S) & (alpha > 0.0) & (alpha < 1.0)
        tracked &= ~held[:, None]
        positions[~tracked] = np.nan
        rotations[~tracked] = np.nan
        return ThreePointStream(times, positions, rotations, tracked)

    def gaps(self, factor: float = 1.5) -> list[tuple[float, float]]:
        """(time, length) of each step longer than `factor` times the median step."""
        if len(self) < 2:
            return []
        steps = np.diff(self.times)
        long = np.flatnonzero(steps > factor * np.median(steps))
        return [(float(self.times[i]), float(steps[i])) for i in long]


def read_stream(path: str | Path, hmd_only: bool = False) -> ThreePointStream:
    """Read a CSV v1 stream; raise StreamFormatError naming the line of the first problem.

    `hmd_only` accepts a stream without controller columns (an HMD-only headset): they read as
    never tracked. Otherwise every column of the header is required. Lines are parsed as they are
    read into arrays that grow, so memory stays a few times the samples' numbers; a UTF-8
    byte-order mark and any line ends (LF, CRLF, CR) are accepted.
    """
    path = Path(path)
    try:
        with open(path, encoding="utf-8-sig", newline=None) as file:
            return _parse_stream(path, file, hmd_only)
    except (OSError, UnicodeDecodeError) as error:
        reason = "not UTF-8 text" if isinstance(error, UnicodeDecodeError) else error.strerror or error
        raise StreamFormatError(path, None, f"cannot read: {reason}") from None


def _parse_stream(path: Path, lines, hmd_only: bool) -> ThreePointStream:
    header, columns, valid_columns, previous, n = None, [], [], [], 0
    lines_of = np.empty(1024, dtype=np.int64)
    times = np.empty(1024)
    pose = np.full((1024, 3, 7), np.nan)
    flags = np.ones((1024, 3), dtype=bool)
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\n")
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if header is None:
            header = [_unquoted(h).lower() for h in stripped.split(",")]
            if len(header) == 1:
                separator = next((name for mark, name in (("\t", "tabs"), (";", "semicolons")) if mark in stripped),
                                 None)
                if separator:
                    raise StreamFormatError(path, number, f"the header's fields are separated by {separator}: CSV v1 "
                                                          "separates fields with commas and writes decimals with a "
                                                          "point")
            required = [c for c in COLUMNS if not hmd_only or c == "t" or c.startswith("head_")]
            missing = [c for c in required if c not in header]
            if missing:
                raise StreamFormatError(path, number, f"header lacks column(s) {', '.join(missing)}"
                                                      f"{_missing_hint(missing, header)}")
            duplicated = sorted({h for h in header if header.count(h) > 1})
            if duplicated:
                raise StreamFormatError(path, number, f"header repeats column(s) {', '.join(duplicated)}")
            index = {name: i for i, name in enumerate(header)}
            columns = [(d, f, f"{device}_{field}", index[f"{device}_{field}"]) for d, device in enumerate(DEVICES)
                       for f, field in enumerate(POSE_FIELDS) if f"{device}_{field}" in index]
            valid_columns = [(d, f"{device}_valid", index[f"{device}_valid"]) for d, device in enumerate(DEVICES)
                             if f"{device}_valid" in index]
            time_column = index["t"]
            continue
        fields = line.split(",")
        if len(fields) != len(header):
            raise StreamFormatError(path, number, f"{len(fields)} fields, the header has {len(header)}")
        if n == len(times):  # grow by half: amortised appends without a Python float per value
            grown = n + n // 2
            lines_of, times = np.resize(lines_of, grown), np.resize(times, grown)
            pose = np.concatenate([pose, np.full((grown - n, 3, 7), np.nan)])
            flags = np.concatenate([flags, np.ones((grown - n, 3), dtype=bool)])
        lines_of[n] = number
        times[n] = _number(path, number, "t", fields[time_column], allow_missing=False)
        if n and not times[n] > times[n - 1]:
            raise StreamFormatError(path, number, f"time {times[n]:g} does not increase (previous {times[n - 1]:g})"
                                                  f"{_repeat_hint(fields, previous, times[n] == times[n - 1])}")
        previous = fields
        for d, f, column, i in columns:
            pose[n, d, f] = _number(path, number, column, fields[i])
        for d, valid, i in valid_columns:
            value = VALID_FLAGS.get(_unquoted(fields[i]).lower())
            if value is None:
                raise StreamFormatError(path, number, f"{valid} must be 1 or 0, found {fields[i].strip()!r}")
            flags[n, d] = value
        n += 1
    if header is None:
        raise StreamFormatError(path, None, "no header line (expected CSV v1: " + ",".join(COLUMNS[:4]) + ",...)")
    if not n:
        raise StreamFormatError(path, None, "no samples after the header")
    times, pose, flags = times[:n].copy(), pose[:n].copy(), flags[:n].copy()
    tracked = flags & ~np.isnan(pose).any(axis=-1)
    norms = np.linalg.norm(pose[..., 3:], axis=-1)
    bad = tracked & (np.abs(norms - 1.0) > QUATERNION_NORM_TOLERANCE)
    if bad.any():
        r, d = np.argwhere(bad)[0]
        raise StreamFormatError(path, int(lines_of[r]), f"{DEVICES[d]} quaternion has norm {norms[r, d]:.4f}, not a unit quaternion")
    pose[~tracked] = np.nan
    pose[..., 3:] = quat.normalize(pose[..., 3:])
    return ThreePointStream(times, pose[..., :3], pose[..., 3:], tracked)


def _repeat_hint(fields: list[str], previous: list[str], same_time: bool) -> str:
    """What a time that does not increase suggests: a sample written twice (the whole line repeated), or a clock
    rounded too coarsely for the rate (another sample at the same time)."""
    if not same_time:
        return ""
    if [f.strip() for f in fields] == [f.strip() for f in previous]:
        return ": the line repeats the one before it (a sample written twice); remove the repeated lines"
    return ": two samples at one time (a clock rounded more coarsely than the samples come?)"


TIME_NAMES = ("time", "timestamp", "time_s", "seconds", "t_s", "sec")
"""What other tools call the time column; named in the message when `t` is missing."""


def _missing_hint(missing: list[str], header: list[str]) -> str:
    """What the missing columns suggest: a headset-only stream, or a time column under another name."""
    if all(c.startswith(("left_", "right_")) for c in missing):
        return ": a headset-only stream solves with --method n3p --hmd-only (the add-on: Neural3Points, Headset Only)"
    other = next((h for h in header if h in TIME_NAMES), None)
    if "t" in missing and other is not None:
        return f"; {other!r} is there: CSV v1 names the time column t (seconds)"
    return ""


def _number(path, line: int, column: str, text: str, allow_missing: bool = True) -> float:
    """A field's number: ASCII decimal or scientific notation (`nan` or empty for a missing one, where allowed)."""
    text = _unquoted(text)
    if text == "" or text.lower() == "nan":
        if allow_missing:
            return math.nan
        raise StreamFormatError(path, line, f"{column} is {'empty' if text == '' else text}: a time is required")
    try:
        value = float(text)
        if "_" in text or not text.isascii():  # Python's own syntax (1_0) and other scripts' digits: not CSV v1
            raise ValueError
    except ValueError:
        raise StreamFormatError(path, line, f"{column} is not a number: {text!r}") from None
    if not math.isfinite(value):
        raise StreamFormatError(path, line, f"{column} is {text}, not a finite number")
    return value


def _unquoted(field: str) -> str:
    """A field without surrounding spaces and the double quotes a writer that quotes every field puts round it."""
    field = field.strip()
    return field[1:-1].strip() if len(field) >= 2 and field[0] == field[-1] == '"' else field


def read_comments(path: str | Path) -> list[tuple[int, str]]:
    """(line number, text after '#' and a space) of each comment line before the header (SPEC §3)."""
    comments = []
    try:
        with open(path, encoding="utf-8-sig", newline=None) as file:
            for number, line in enumerate(file, start=1):
                stripped = line.strip()
                if stripped and not stripped.startswith("#"):
                    break
                if stripped:
                    comments.append((number, stripped[1:].strip()))
    except (OSError, UnicodeDecodeError) as error:
        reason = "not UTF-8 text" if isinstance(error, UnicodeDecodeError) else error.strerror or error
        raise StreamFormatError(path, None, f"cannot read: {reason}") from None
    return comments


def copy_with_comment(path: str | Path, output: str | Path, key: str, text: str) -> None:
    """Copy the stream file `path` to `output` byte for byte but for one comment line: the comment lines before the
    header that start with `key` and a space are dropped, and `# {text}` goes just before the header (in the
    file's own line ends). Written atomically."""
    try:
        data = Path(path).read_bytes()
        bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
        lines = list(io.StringIO(data[len(bom):].decode("utf-8"), newline=""))
    except (OSError, UnicodeDecodeError) as error:
        reason = "not UTF-8 text" if isinstance(error, UnicodeDecodeError) else error.strerror or error
        raise StreamFormatError(path, None, f"cannot read: {reason}") from None
    header = next((k for k, line in enumerate(lines) if line.strip() and not line.strip().startswith("#")), len(lines))
    ends = [line[len(line.rstrip("\r\n")):] for line in lines[:header + 1]]
    newline = next((end for end in ends if end), "\n")
    kept = [line for line in lines[:header] if not _is_keyed(line.strip()[1:].strip(), key)]
    copied = "".join(kept) + f"# {text}{newline}" + "".join(lines[header:])
    write_bytes(output, bom + copied.encode("utf-8"))


def _is_keyed(comment: str, key: str) -> bool:
    """Whether a comment's text is `key` and a JSON object (`# calibration {...}`), not the writer's own words."""
    return comment.startswith(key + " ") and comment[len(key):].lstrip().startswith("{")


def held_samples(tracked: np.ndarray) -> np.ndarray:
    """Per sample, the index of the last tracked sample up to it, of each device (`tracked` (N,) or (N, D)): a
    lost device holds its last pose, and before it is first tracked it takes its first (0 if never tracked)."""
    frames = np.arange(len(tracked)).reshape((-1,) + (1,) * (tracked.ndim - 1))
    return np.maximum.accumulate(np.where(tracked, frames, tracked.argmax(axis=0)), axis=0)


def write_stream(path: str | Path, stream: ThreePointStream, comments: list[str] = ()) -> None:
    """Write CSV v1 with the optional validity columns; untracked poses are written as empty fields."""
    lines = [f"# {c}" for c in comments]
    lines.append(",".join(COLUMNS + VALID_COLUMNS))
    with written(path) as file:
        file.write(("\n".join(lines) + "\n").encode("utf-8"))
        for start in range(0, len(stream), ROWS_PER_WRITE):
            file.write(_stream_rows(stream, slice(start, start + ROWS_PER_WRITE)).encode("utf-8"))


def _stream_rows(stream: ThreePointStream, samples: slice) -> str:
    """The CSV rows of the stream's `samples`, each ending with a newline."""
    tracked = stream.tracked[samples]
    values = np.concatenate([stream.positions[samples], stream.rotations[samples]], axis=-1).reshape(len(tracked), -1)
    cells = np.char.mod("%.6f", np.nan_to_num(values)).astype(object)
    cells[np.repeat(~tracked, 7, axis=1)] = ""
    times = np.char.mod("%.9f", stream.times[samples])
    valid = np.where(tracked, "1", "0")
    return "".join(",".join([t, *row, *v]) + "\n" for t, row, v in zip(times, cells.tolist(), valid.tolist()))
