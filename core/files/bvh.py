"""BVH files: reading any channel layout into a Motion in metres, writing a Motion back, guessing units.

Position channels replace the matching components of a joint's OFFSET (the common reading: the
root's channels are its translation). Rotation channels compose in the order listed, so
`Zrotation Xrotation Yrotation` is R = Rz Rx Ry. A file either loads whole or raises BVHError
naming the file and line; nothing half-loads. The motion is parsed from the file as it is read, so
memory stays a few times the numbers it holds, and a file far longer than its declared frames need
is refused before it is parsed. A few complete motion lines past the declared frames (an exporter's Frames line
one short) are read as frames, as Blender's importer reads every line; more are a wrong file, refused. UTF-8
byte-order marks and CR-only line ends are accepted; keywords and channel names are read in any case (`hierarchy`,
`End site`, `XROTATION`), as Blender's own importer reads them, and a decimal comma in `Frame Time` (a locale's
`0,0333333`). `Frames: 0` (a skeleton without motion) reads, where a character is asked for, as one frame of the rest
pose, as Blender imports it.
"""
from __future__ import annotations

import io
import math
import os
import re
from pathlib import Path

import numpy as np

from ..anim.motion import Motion
from ..anim.skeleton import Skeleton
from ..errors import FileFormatError
from ..math import quat
from .atomic import ROWS_PER_WRITE, written

CHANNEL_NAMES = ("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")
_CHANNEL_BY_FOLDED = {name.casefold(): name for name in CHANNEL_NAMES}

# Length units a BVH file may use, in metres per unit, with the name `bvh info` prints.
UNITS = (
    (1.0, "metres"),
    (0.01, "centimetres"),
    (0.001, "millimetres"),
    (0.0254, "inches"),
    (0.056444, "CMU units (1/0.45 inch)"),
)
# Frame times a BVH file may declare, seconds: 2000 fps down to one frame every 10 s.
FRAME_TIME_RANGE_S = (0.0005, 10.0)
# The most bytes one motion value may take (digits and the spaces around them), to refuse oversized files.
MAX_BYTES_PER_VALUE = 64
MIN_BYTES_PER_VALUE = 2
"""A value takes at least a digit and a separator: a motion section shorter than its Frames need is scanned line by
line for where it ends (the message says which frame), not handed to numpy's parser first."""
EXTRA_FRAMES_SHARE = 0.1
"""Complete motion lines past the declared Frames read as frames: up to this share of them (a Frames line one short
of a 10-frame clip or longer); more are refused, as is a second line under `Frames: 1`."""
MAX_BLANK_LINES = 1000
"""Frames are not separated by blank lines; this many in a row is not motion."""
# The most bytes read looking for the MOTION line (skeleton headers are a few kilobytes).
MAX_HEADER_BYTES = 16 << 20
# Height of the joints' bounding box in a typical pose: toes to head joint, about 1.55 m for an adult.
TYPICAL_BODY_SIZE_M = 1.55


class BVHError(FileFormatError):
    """A BVH file that cannot be interpreted; the message names the file and line."""

    def __init__(self, path, line: int | None, message: str):
        self.path, self.line = str(path), line
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")


def read_bvh(path: str | Path, scale: float | None = None, name: str | None = None,
             rest_pose: bool = False) -> Motion:
    """Read a BVH file into a Motion in metres.

    `scale` is metres per file unit; None guesses it from the body's size (see guess_units). A file without motion
    (`Frames: 0`) is refused, unless a `rest_pose` is what is asked for (a character): then it is one frame of it.
    """
    path = Path(path)
    try:
        with open(path, "rb") as file:
            file = _with_newlines(file)
            skeleton, channels, motion_line, frames, frame_time, _ = _parse_header(path, _header_bytes(file))
            if frames == 0:
                _no_motion_lines(path, file, motion_line)
                if not rest_pose:
                    raise BVHError(path, motion_line + 1, "no motion (Frames: 0): a skeleton alone, which serves as "
                                                          "a character (solve --avatar), not as motion")
                values = None
            else:
                values = _parse_motion_block(path, file, motion_line, frames, sum(len(c) for c in channels))
    except OSError as error:
        raise BVHError(path, None, f"cannot read: {error.strerror or error}") from None
    if values is None:
        motion = rest_pose_motion(skeleton, _frame_rate(frame_time), name or path.stem)
    else:
        motion = _motion_from_channels(skeleton, channels, values, _frame_rate(frame_time), name or path.stem)
    if scale is None:
        scale = guess_units(motion)[0]
    return motion.scaled(scale)


def guess_units(motion: Motion) -> tuple[float, str]:
    """(metres per unit, unit name) that make the body's size closest to an adult's, in log scale."""
    frames = motion[:: max(1, len(motion) // 50)]
    positions = frames.global_positions()
    if positions.shape[1] > 1:
        positions = positions[:, 1:]  # a static root (Bandai's joint_Root) stays behind at the origin
    size = float(np.median((positions.max(axis=1) - positions.min(axis=1)).max(axis=-1)))
    if not size > 0:
        return 1.0, "metres (no extent to guess from)"
    return min(UNITS, key=lambda unit: abs(math.log(size * unit[0] / TYPICAL_BODY_SIZE_M)))


def write_bvh(path: str | Path, motion: Motion, order: str = "zxy", scale: float = 1.0,
              translations: str = "auto") -> None:
    """Write a Motion (metres) as BVH; file units are metres times `scale` (100 for centimetres).

    Every joint gets three rotation channels in `order`. `translations` picks which joints get
    position channels: "root", "all", or "auto" (the root and any joint whose translation moves).
    A motion with a non-finite value is refused (ValueError naming its first such frame); nothing is written.
    """
    bad = ~(np.isfinite(motion.rotations).all(axis=(1, 2)) & np.isfinite(motion.positions).all(axis=(1, 2)))
    if bad.any():
        raise ValueError(f"{path}: not written: frame {int(np.argmax(bad))} of the motion has non-finite values")
    skeleton = motion.skeleton
    if translations == "all":
        moving = np.ones(len(skeleton), bool)
    else:
        moving = np.zeros(len(skeleton), bool)
        if translations == "auto":
            moving = np.abs(motion.positions - skeleton.offsets).max(axis=0).max(axis=-1) > 1e-9
        elif translations != "root":
            raise ValueError(f"translations must be 'root', 'all' or 'auto', not {translations!r}")
        else:
            drift = np.abs(motion.positions[:, 1:] - skeleton.offsets[1:]).max(initial=0.0)
            if drift > 1e-6:
                raise ValueError(f"translations='root' would lose animated joint translations (up to {drift:.3g} m); "
                                 "use 'auto'")
    moving[0] = True
    rotation_channels = " ".join(f"{axis.upper()}rotation" for axis in order)
    end_sites = dict(skeleton.end_sites)
    lines = ["HIERARCHY"]

    def number(v):
        return f"{v * scale:.6f}"

    children = [[] for _ in skeleton.names]
    for j, parent in enumerate(skeleton.parents):
        if parent >= 0:
            children[parent].append(j)
    stack = [(0, 0, True)]  # (joint, depth, opening): a loop, not recursion, for hierarchies thousands deep
    while stack:
        j, depth, opening = stack.pop()
        pad = "\t" * depth
        if not opening:
            if j in end_sites:
                lines.extend([f"{pad}\tEnd Site", pad + "\t{",
                              f"{pad}\t\tOFFSET {' '.join(number(v) for v in end_sites[j])}", pad + "\t}"])
            lines.append(pad + "}")
            continue
        lines.append(f"{pad}{'ROOT' if j == 0 else 'JOINT'} {skeleton.names[j]}")
        lines.append(pad + "{")
        lines.append(f"{pad}\tOFFSET {' '.join(number(v) for v in skeleton.offsets[j])}")
        position = "Xposition Yposition Zposition " if moving[j] else ""
        lines.append(f"{pad}\tCHANNELS {6 if moving[j] else 3} {position}{rotation_channels}")
        stack.append((j, depth, False))
        stack.extend((child, depth + 1, True) for child in reversed(children[j]))
    lines += ["MOTION", f"Frames: {len(motion)}", f"Frame Time: {1.0 / motion.fps:.8f}"]
    joints = _depth_first(skeleton)
    with written(path) as file:
        file.write(("\n".join(lines) + "\n").encode("utf-8"))
        for start in range(0, len(motion), ROWS_PER_WRITE):
            frames = slice(start, start + ROWS_PER_WRITE)
            degrees = np.degrees(quat.to_euler(motion.rotations[frames], order))
            columns = []
            for j in joints:
                if moving[j]:
                    columns.append(motion.positions[frames, j] * scale)
                columns.append(degrees[:, j])
            rows = np.char.mod("%.6f", np.concatenate(columns, axis=1)).tolist()
            file.write(("\n".join(" ".join(row) for row in rows) + "\n").encode("utf-8"))


def _depth_first(skeleton: Skeleton) -> list[int]:
    """Joint indices in the order a BVH hierarchy lists them."""
    order, stack = [], [0]
    while stack:
        j = stack.pop()
        order.append(j)
        stack.extend(reversed(skeleton.children(j)))
    return order


def _frame_rate(frame_time: float) -> float:
    """1 / frame time, snapped to a whole number when files round it (0.0333333 s is 30 fps)."""
    fps = 1.0 / frame_time
    return float(round(fps)) if abs(fps - round(fps)) < 1e-3 * fps else fps


def _with_newlines(file):
    """The file positioned after any UTF-8 byte-order mark; a CR-only file (classic Mac) comes back translated."""
    start = file.read(1 << 16)
    if b"\r" in start and b"\n" not in start:
        return io.BytesIO((start + file.read()).replace(b"\r", b"\n").removeprefix(b"\xef\xbb\xbf"))
    file.seek(3 if start.startswith(b"\xef\xbb\xbf") else 0)
    return file


def _header_bytes(file) -> bytes:
    """The file's lines up to MOTION and the two after it (or all it holds, up to MAX_HEADER_BYTES, without one)."""
    lines, size, after = [], 0, None
    while size <= MAX_HEADER_BYTES and after != 0:
        line = file.readline(MAX_HEADER_BYTES + 1)
        if not line:
            break
        lines.append(line)
        size += len(line)
        if after is None and re.fullmatch(rb"[ \t]*MOTION[ \t]*\r?\n?", line, re.IGNORECASE):
            after = 2
        elif after is not None:
            after -= 1
    return b"".join(lines)


def _parse_header(path: Path, text: bytes):
    """Skeleton, per-joint channel names, MOTION line number, frame count, frame time, body offset."""
    motion_at = re.search(rb"^[ \t]*MOTION[ \t]*\r?$", text, re.MULTILINE | re.IGNORECASE)
    if motion_at is None:
        raise BVHError(path, None, "no MOTION section")
    header = _header_text(text[:motion_at.start()]).splitlines()
    motion_line = len(header) + 1
    hierarchy = _HierarchyReader(path)
    hierarchy.read(header, motion_line)
    frames, frame_time, body_start = _motion_timing(path, text, motion_at.end(), motion_line)
    skeleton = Skeleton(tuple(hierarchy.names), np.array(hierarchy.parents), np.array(hierarchy.offsets),
                        tuple((j, o) for j, o, _ in hierarchy.end_sites))
    return skeleton, hierarchy.channels, motion_line + 3, frames, frame_time, body_start


def _header_text(data: bytes) -> str:
    """The hierarchy's text: UTF-8, else Latin-1 (older exporters' joint names such as "Hüfte", kept exactly)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


class _HierarchyReader:
    """The HIERARCHY section, line by line: joint names, parents, offsets and channels, and End Sites."""

    def __init__(self, path: Path):
        self.path = path
        self.names, self.parents, self.offsets, self.channels, self.end_sites = [], [], [], [], []
        self.stack: list[int | None] = []  # joint index, or None for an End Site block
        self.pending = None  # ("joint", name, parent, line) or ("end", parent, line) awaiting "{"
        self.first_seen = {}  # joint name -> line

    def read(self, header: list[str], motion_line: int) -> None:
        """Read the header's lines (the file's first lines up to MOTION, at line `motion_line`)."""
        path = self.path
        handlers = {"ROOT": self._joint, "JOINT": self._joint, "END": self._end_site, "{": self._open,
                    "}": self._close, "OFFSET": self._offset, "CHANNELS": self._channels}
        seen_hierarchy = False
        for number, raw in enumerate(header, start=1):
            words = raw.split()
            if not words:
                continue
            keyword = words[0].upper()
            if not seen_hierarchy:
                if keyword != "HIERARCHY":
                    raise BVHError(path, number, f"expected HIERARCHY, found {words[0]!r}")
                seen_hierarchy = True
                continue
            if keyword in handlers:
                handlers[keyword](words, number)
            elif keyword != "SITE":
                raise BVHError(path, number, f"unexpected {words[0]!r} in HIERARCHY")
        if self.stack:
            raise BVHError(path, motion_line, f"unbalanced braces: {len(self.stack)} block(s) still open at MOTION")
        if self.pending is not None:
            raise BVHError(path, self.pending[-1], "block opened without '{'")
        if not self.names:
            raise BVHError(path, motion_line, "no ROOT joint before MOTION")

    def _joint(self, words: list[str], number: int) -> None:
        path, keyword, names, stack = self.path, words[0].upper(), self.names, self.stack
        if (keyword == "ROOT") != (not names and not stack):
            raise BVHError(path, number, f"{keyword} here is out of place" if names else "the hierarchy must start with ROOT")
        if stack and stack[-1] is None:
            raise BVHError(path, number, "a JOINT cannot be inside an End Site")
        if len(words) < 2:
            raise BVHError(path, number, f"{keyword} without a name")
        self.pending = ("joint", " ".join(words[1:]), stack[-1] if stack else -1, number)
        if self.pending[1] in self.first_seen:
            raise BVHError(path, number, f"joint name {self.pending[1]!r} repeats (first at line "
                                         f"{self.first_seen[self.pending[1]]}): joint names must be unique")
        self.first_seen[self.pending[1]] = number

    def _end_site(self, words: list[str], number: int) -> None:
        if not self.stack or self.stack[-1] is None:
            raise BVHError(self.path, number, "End Site outside a joint")
        self.pending = ("end", self.stack[-1], number)
        if len(words) < 2 or words[1].upper() != "SITE":
            raise BVHError(self.path, number, "expected 'End Site'")

    def _open(self, words: list[str], number: int) -> None:
        pending = self.pending
        if pending is None:
            raise BVHError(self.path, number, "'{' without a ROOT, JOINT or End Site before it")
        if pending[0] == "joint":
            self.names.append(pending[1])
            self.parents.append(pending[2])
            self.offsets.append(None)
            self.channels.append(None)
            self.stack.append(len(self.names) - 1)
        else:
            self.end_sites.append([pending[1], None, number])
            self.stack.append(None)
        self.pending = None

    def _close(self, words: list[str], number: int) -> None:
        if not self.stack:
            raise BVHError(self.path, number, "unbalanced '}': no block is open")
        closing = self.stack.pop()
        if closing is None:
            if self.end_sites[-1][1] is None:
                raise BVHError(self.path, number, "End Site without OFFSET")
        else:
            if self.offsets[closing] is None:
                raise BVHError(self.path, number, f"joint {self.names[closing]!r} has no OFFSET")
            if self.channels[closing] is None:
                raise BVHError(self.path, number, f"joint {self.names[closing]!r} has no CHANNELS")

    def _offset(self, words: list[str], number: int) -> None:
        if not self.stack:
            raise BVHError(self.path, number, "OFFSET outside a block")
        try:
            offset = [float(v) for v in words[1:]]
        except ValueError:
            raise BVHError(self.path, number, f"OFFSET values are not numbers: {' '.join(words[1:])}") from None
        if len(offset) != 3 or not all(math.isfinite(v) for v in offset):
            raise BVHError(self.path, number, "OFFSET needs three finite numbers")
        if self.stack[-1] is None:
            self.end_sites[-1][1] = tuple(offset)
        else:
            self.offsets[self.stack[-1]] = offset

    def _channels(self, words: list[str], number: int) -> None:
        path = self.path
        if not self.stack or self.stack[-1] is None:
            raise BVHError(path, number, "CHANNELS outside a joint")
        try:
            count = int(words[1])
        except (IndexError, ValueError):
            raise BVHError(path, number, "CHANNELS needs a count") from None
        if len(words) - 2 != count:
            raise BVHError(path, number, f"CHANNELS says {count} but lists {len(words) - 2}")
        unknown = [c for c in words[2:] if c.casefold() not in _CHANNEL_BY_FOLDED]
        if unknown:
            raise BVHError(path, number, f"unknown channel {unknown[0]!r}")
        names_here = [_CHANNEL_BY_FOLDED[c.casefold()] for c in words[2:]]
        repeated = [c for k, c in enumerate(names_here) if c in names_here[:k]]
        if repeated:
            raise BVHError(path, number, f"channel {repeated[0]!r} is listed twice")
        self.channels[self.stack[-1]] = tuple(names_here)


def _motion_timing(path: Path, text: bytes, motion_end: int, motion_line: int) -> tuple[int, float, int]:
    """The frame count and frame time on the two lines after MOTION (at line `motion_line`, ending at byte
    `motion_end`), and the byte offset of the motion's first frame."""
    after = text[motion_end:].split(b"\n", 3)
    frames = _header_number(path, after, 1, motion_line + 1, "Frames", int)
    frame_time = _header_number(path, after, 2, motion_line + 2, "Frame Time", float)
    if frames < 0:
        raise BVHError(path, motion_line + 1, f"Frames must be 0 (the rest pose alone) or more, got {frames}")
    if not (frame_time > 0 and math.isfinite(frame_time)):
        raise BVHError(path, motion_line + 2, f"Frame Time must be positive, got {frame_time}")
    low, high = FRAME_TIME_RANGE_S
    if not low <= frame_time <= high:
        raise BVHError(path, motion_line + 2, f"Frame Time {frame_time:g} s is not a plausible frame time "
                                              f"({low:g} to {high:g} s, {1 / high:g} to {1 / low:g} fps)")
    return frames, frame_time, motion_end + sum(len(part) + 1 for part in after[:3])


def _header_number(path: Path, parts: list[bytes], index: int, number: int, key: str, kind):
    line = parts[index].decode("utf-8", errors="replace").strip() if index < len(parts) else ""
    found_key, _, value = line.partition(":")
    try:
        if " ".join(found_key.split()).casefold() != key.casefold():  # "Frame\tTime", "FRAME TIME"
            raise ValueError
        if kind is float and value.count(",") == 1 and "." not in value:  # a locale's decimal comma
            value = value.replace(",", ".")
        return kind(value)
    except ValueError:
        raise BVHError(path, number, f"expected '{key}: <number>', found {line!r}" if line else f"missing '{key}:' line") from None


def _parse_motion_block(path: Path, file, first_line: int, frames: int, width: int) -> np.ndarray:
    """(frames, width) floats from the rest of the file, or a few frames more (extra_frames_read); numpy's C parser
    first, a line-by-line scan only to word an error. A motion section far longer than the declared frames need is
    refused unparsed."""
    start = file.tell()
    size = file.seek(0, os.SEEK_END) - start
    file.seek(start)
    if size > frames * width * MAX_BYTES_PER_VALUE + 4096:
        raise BVHError(path, first_line, f"the motion section holds {size} bytes, far more than {frames} frames of "
                                         f"{width} values need: the file or its Frames line is wrong")
    if b"\0" in file.read(1 << 16):
        raise BVHError(path, first_line, "the motion section holds binary data, not numbers")
    file.seek(start)
    values = None
    if size >= frames * width * MIN_BYTES_PER_VALUE:  # else it is short: the scan below says where it ends
        try:
            values = np.loadtxt(file, dtype=np.float64, ndmin=2, comments=None)
        except ValueError:
            values = None
    extra = extra_frames_read(frames)
    if (values is not None and values.shape[1] == width and frames <= len(values) <= frames + extra
            and np.isfinite(values).all()):
        return values
    # Something is wrong: find the first offending line and say what it is.
    del values
    file.seek(start)
    rows, newlines, blank = 0, 0, 0
    for index, raw in enumerate(file):
        newlines += raw.endswith(b"\n")
        words = raw.split()
        if not words:
            blank += 1
            if blank > MAX_BLANK_LINES:
                raise BVHError(path, first_line + index, f"more than {MAX_BLANK_LINES} blank lines in the motion "
                                                         "section")
            continue
        blank = 0
        number = first_line + index
        if rows == frames + extra:
            raise BVHError(path, number, f"more motion lines than the {frames} frames declared"
                                         + (f" and the {extra} past them that are read" if extra else ""))
        if len(words) != width:
            raise BVHError(path, number, f"frame {rows + 1} has {len(words)} values, the channels need {width}")
        for column, word in enumerate(words):
            try:
                value = float(word)
                if b"_" in word or not word.isascii():  # Python's own syntax (1_0), which numpy refuses
                    raise ValueError
            except ValueError:
                raise BVHError(path, number, f"value {column + 1} is not a number: {word.decode(errors='replace')!r}") from None
            if not math.isfinite(value):
                raise BVHError(path, number, f"value {column + 1} is {word.decode(errors='replace')}: not a finite number")
        rows += 1
    raise BVHError(path, first_line + newlines, f"truncated motion: {rows} frames of the {frames} declared")


def _no_motion_lines(path: Path, file, first_line: int) -> None:
    """Refuse motion lines under `Frames: 0`."""
    for index, raw in enumerate(file):
        if raw.strip():
            raise BVHError(path, first_line + index, "a motion line under 'Frames: 0'")


def rest_pose_motion(skeleton: Skeleton, fps: float, name: str) -> Motion:
    """One frame of `skeleton`'s rest pose (its offsets, no rotation): what a file of `Frames: 0` holds, as Blender
    imports it."""
    return Motion(skeleton, quat.identity(1, len(skeleton)), skeleton.offsets[None].copy(), fps, name)


def extra_frames_read(frames: int) -> int:
    """How many complete motion lines past `frames` declared frames are read as frames (EXTRA_FRAMES_SHARE)."""
    return int(frames * EXTRA_FRAMES_SHARE)


def _motion_from_channels(skeleton: Skeleton, channels, values: np.ndarray, fps: float, name: str) -> Motion:
    frames = len(values)
    rotations = quat.identity(frames, len(skeleton))
    positions = np.repeat(skeleton.offsets[None], frames, axis=0)
    column = 0
    for j, joint_channels in enumerate(channels):
        for channel in joint_channels:
            axis = channel[0].lower()
            if channel.endswith("position"):
                positions[:, j, quat.AXES[axis]] = values[:, column]
            else:
                rotations[:, j] = quat.multiply(rotations[:, j],
                                                quat.from_axis_rotation(axis, np.radians(values[:, column])))
            column += 1
    return Motion(skeleton, rotations, positions, fps, name)
