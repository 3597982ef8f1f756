"""Three-point streams: HMD and two controller poses over time, CSV v1 (SPEC §3), resampling.

Positions are metres in one world frame (+Y up, devices look along -Z), rotations unit
quaternions (w, x, y, z). A device that is not tracked on a sample has `tracked` False there and
NaN pose values; readers never drop rows and reject what they cannot interpret, naming the line. A tracked
sample may still be broken (infinite, a zero or far-from-unit quaternion): the solvers drop those with a warning
(`core.devices.plausibility`).
"""
from __future__ import annotations

import io
import math
import re
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
VALID_FLAGS = {"": False, "true": True, "false": False}
"""What a `*_valid` field may hold besides a number that is exactly 1 or 0 (SPEC §3; a float column's 1.0 or
1.000000e+00 too) or a NaN: a boolean's True or False (lower case), empty (not tracked)."""
FRAME_TOLERANCE = 2e-3
"""How far, in frames, a stream's last sample may fall short of a frame of its timeline and still be that frame:
a clock rounded to the microsecond is up to 1e-3 frames off at 1000 Hz."""
NAN_WITH_PAYLOAD = re.compile(r"[+-]?nan\([0-9A-Za-z_]*\)", re.ASCII | re.IGNORECASE)
"""NaN as MSVC's printf writes it (`-nan(ind)`); plain `nan` and `-nan` Python reads itself."""
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
        return int(np.floor(self.duration * fps + FRAME_TOLERANCE)) + 1 if len(self) else 0

    def resampled(self, fps: float) -> "ThreePointStream":
        """Samples every 1/fps s from the first time (`sampled_at`): the stream on its timeline at `fps`."""
        if len(self) < 2:  # nothing to interpolate between
            return ThreePointStream(self.times.copy(), self.positions.copy(), self.rotations.copy(), self.tracked.copy())
        count = self.frames_at(fps)
        times = self.times[0] + np.arange(count) / fps
        if self.duration * fps - (count - 1) <= FRAME_TOLERANCE:  # frames_at: never farther past it; clocks round
            times[-1] = self.times[-1]  # the timeline ends on the last sample
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
    return read_stream_and_comments(path, hmd_only)[0]


def read_stream_and_comments(path: str | Path, hmd_only: bool = False,
                              data: bytes | None = None) -> tuple[ThreePointStream, list[tuple[int, str]]]:
    """The stream (`read_stream`) and its comments before the header (`read_comments`), from one reading of the file
    (or of `data`, its bytes as already read): a named pipe or standard input has no second reading."""
    path = Path(path)
    try:
        with _opened(path, data) as file:
            return _parse_stream(path, _lines(path, file), hmd_only)
    except OSError as error:
        raise StreamFormatError(path, None, f"cannot read: {error.strerror or error}") from None


def read_bytes(path: str | Path) -> bytes:
    """A stream file's bytes, read once (for `read_stream_and_comments` and `copy_with_comment` both)."""
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise StreamFormatError(path, None, f"cannot read: {error.strerror or error}") from None


def _opened(path: Path, data: bytes | None = None):
    """The stream file (or its bytes `data`) as text; bytes that are not UTF-8 become lone surrogates for `_lines` to
    judge."""
    if data is not None:
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", errors="surrogateescape", newline=None)
    return open(path, encoding="utf-8-sig", errors="surrogateescape", newline=None)


def _lines(path: Path, file):
    """(number, text) of each line of `file`; a comment line that is not UTF-8 (an operator's name in Latin-1) is
    skipped, as comments are not data; any other line that is not UTF-8 is an error naming it."""
    for number, line in enumerate(file, start=1):
        if number == 1 and _looks_utf16(line):
            raise StreamFormatError(path, 1, "the file is UTF-16 text (as Windows PowerShell writes it): CSV v1 is "
                                             "UTF-8; save it as UTF-8")
        if line.isascii() or _is_utf8(line):
            yield number, line
        elif not line.lstrip().startswith("#"):
            raise StreamFormatError(path, number, "not UTF-8 text: CSV v1 data is UTF-8 (ASCII numbers)")


def _is_utf8(line: str) -> bool:
    """Whether a line read by `_opened` was UTF-8 in the file (no byte became a lone surrogate)."""
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _looks_utf16(first_line: str) -> bool:
    """Whether a file's first line read by `_opened` is UTF-16: its byte-order mark, or the NUL bytes of ASCII."""
    return first_line.startswith(("\udcff\udcfe", "\udcfe\udcff")) or "\x00" in first_line


def _parse_stream(path: Path, lines, hmd_only: bool) -> tuple[ThreePointStream, list[tuple[int, str]]]:
    header, columns, valid_columns, previous, n, comments = None, [], [], [], 0, []
    times = np.empty(1024)
    pose = np.full((1024, 3, 7), np.nan)
    flags = np.ones((1024, 3), dtype=bool)
    for number, line in lines:
        line = line.rstrip("\n")
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            if stripped and header is None:
                comments.append((number, stripped[1:].strip()))
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
            times = np.resize(times, grown)
            pose = np.concatenate([pose, np.full((grown - n, 3, 7), np.nan)])
            flags = np.concatenate([flags, np.ones((grown - n, 3), dtype=bool)])
        times[n] = _number(path, number, "t", fields[time_column], allow_missing=False)
        if n and not times[n] > times[n - 1]:
            raise StreamFormatError(path, number, f"time {times[n]:g} does not increase (previous {times[n - 1]:g})"
                                                  f"{_repeat_hint(fields, previous, times[n] == times[n - 1])}")
        previous = fields
        for d, f, column, i in columns:
            pose[n, d, f] = _number(path, number, column, fields[i])
        for d, valid, i in valid_columns:
            flags[n, d] = _flag(path, number, valid, fields[i])
        n += 1
    if header is None:
        raise StreamFormatError(path, None, "no header line (expected CSV v1: " + ",".join(COLUMNS[:4]) + ",...)")
    if not n:
        raise StreamFormatError(path, None, "no samples after the header")
    times, pose, flags = times[:n].copy(), pose[:n].copy(), flags[:n].copy()
    tracked = flags & ~np.isnan(pose).any(axis=-1)
    pose[~tracked] = np.nan
    pose[..., 3:] = _near_unit_normalised(pose[..., 3:])
    return ThreePointStream(times, pose[..., :3], pose[..., 3:], tracked), comments


def _near_unit_normalised(rotations: np.ndarray) -> np.ndarray:
    """Quaternions (..., 4) within QUATERNION_NORM_TOLERANCE of unit length made unit (writers round); the others
    (zero, infinite, garbage: broken samples the solvers drop with a warning) as they are."""
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.sqrt(np.einsum("...i,...i->...", rotations, rotations))[..., None]
        near = np.abs(norms - 1.0) <= QUATERNION_NORM_TOLERANCE
        return np.where(near, rotations / np.where(near, norms, 1.0), rotations)


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
        return (": a headset-only stream solves with --method n3p --hmd-only (the add-on: Neural3Points, Headset Only) "
                "and `stream info --hmd-only` reads it")
    other = next((h for h in header if h in TIME_NAMES), None)
    if "t" in missing and other is not None:
        return f"; {other!r} is there: CSV v1 names the time column t (seconds)"
    return ""


def _number(path, line: int, column: str, text: str, allow_missing: bool = True) -> float:
    """A field's number (`_float`): infinity is read as it is (a broken sample the solvers drop with a warning), a NaN
    or an empty field is a missing one. Where nothing may be missing (a time), a value that is not finite is an
    error."""
    text = _unquoted(text)
    value = math.nan if text == "" else _float(text)
    if value is None:
        raise StreamFormatError(path, line, f"{column} is not a number: {text!r}")
    if allow_missing or math.isfinite(value):
        return value
    if math.isnan(value):
        raise StreamFormatError(path, line, f"{column} is {'empty' if text == '' else text}: a time is required")
    raise StreamFormatError(path, line, f"{column} is {text}, not a finite number")


def _float(text: str) -> float | None:
    """The number a field holds in ASCII decimal or scientific notation, infinity or NaN as C, MSVC and Python write
    them (`inf`, `Infinity`, `-nan`, `-nan(ind)`); None for anything else (Python's `1_0`, other scripts' digits)."""
    try:
        value = float(text)
    except ValueError:
        return math.nan if NAN_WITH_PAYLOAD.fullmatch(text) else None
    return value if text.isascii() and "_" not in text else None


def _flag(path, line: int, column: str, text: str) -> bool:
    """A `*_valid` field: True for a number that is exactly 1, False for exactly 0, a NaN, empty or false (VALID_FLAGS);
    anything else is an error naming the line."""
    value = _unquoted(text)
    known = VALID_FLAGS.get(value.lower())
    if known is not None:
        return known
    number = _float(value)
    if number is not None and (math.isnan(number) or number in (0.0, 1.0)):
        return number == 1.0
    raise StreamFormatError(path, line, f"{column} must be 1 or 0, found {text.strip()!r}")


def _unquoted(field: str) -> str:
    """A field without surrounding spaces and the double quotes a writer that quotes every field puts round it."""
    field = field.strip()
    return field[1:-1].strip() if len(field) >= 2 and field[0] == field[-1] == '"' else field


def read_comments(path: str | Path) -> list[tuple[int, str]]:
    """(line number, text after '#' and a space) of each comment line before the header (SPEC §3)."""
    comments = []
    try:
        with _opened(Path(path)) as file:
            for number, line in _lines(Path(path), file):
                stripped = line.strip()
                if stripped and not stripped.startswith("#"):
                    break
                if stripped:
                    comments.append((number, stripped[1:].strip()))
    except OSError as error:
        raise StreamFormatError(path, None, f"cannot read: {error.strerror or error}") from None
    return comments


def copy_with_comment(path: str | Path, output: str | Path, key: str, text: str, data: bytes | None = None) -> None:
    """Copy the stream file `path` (its bytes `data` if already read) to `output` byte for byte but for one comment
    line: the comment lines before the header that start with `key` and a space are dropped, and `# {text}` goes just
    before the header (in the file's own line ends; a comment in another encoding than UTF-8 kept byte for byte too).
    Written atomically."""
    if data is None:
        data = read_bytes(path)
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    lines = list(io.StringIO(data[len(bom):].decode("utf-8", "surrogateescape"), newline=""))
    header = next((k for k, line in enumerate(lines) if line.strip() and not line.strip().startswith("#")), len(lines))
    ends = [line[len(line.rstrip("\r\n")):] for line in lines[:header + 1]]
    newline = next((end for end in ends if end), "\n")
    kept = [line for line in lines[:header] if not _is_keyed(line.strip()[1:].strip(), key)]
    copied = "".join(kept) + f"# {text}{newline}" + "".join(lines[header:])
    write_bytes(output, bom + copied.encode("utf-8", "surrogateescape"))


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
