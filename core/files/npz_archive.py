"""Reading the project's .npz files (databases, models): every failure is one line naming the file and the array.

`read_npz(path, kind, error)` opens an archive (never unpickling) and hands out its arrays through
`Archive.array`, which checks each one's shape against named dimensions shared across arrays, its
numbers and their finiteness. Whatever goes wrong inside the block (a truncated or empty file, a
single .npy array, a folder, a damaged entry, a missing key, a shape that does not fit) becomes
`error` with a message that starts with the file's path.
"""
from __future__ import annotations

import json
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np

READ_ERRORS = (OSError, EOFError, ValueError, KeyError, TypeError, IndexError, zipfile.BadZipFile, zlib.error)
FREE_BYTES = 64 << 20
"""Arrays up to this size are read whatever the file's size."""
MAX_EXPANSION = 100
"""A larger array may declare at most this many times its file's bytes (float data compresses a few times)."""
UNIT_TOLERANCE = 0.1
"""A stored quaternion's norm may be this far from 1 (rounding); further, the array is damaged."""


class Archive:
    """An open .npz archive whose arrays are checked as they are read."""

    def __init__(self, path: Path, data, kind: str, error):
        self.path, self.data, self.kind, self.error = path, data, kind, error
        self.dims: dict[str, int] = {}
        self.files = set(data.files)

    def fail(self, message: str):
        return self.error(f"{self.path}: {message}")

    def array(self, key: str, shape: tuple | None = None, kind: str = "f", finite: bool = True,
              limit: float | None = None, unit: bool = False) -> np.ndarray:
        """Array `key`; `shape` lists sizes or dimension names (a name's size must agree across arrays);
        `kind` the dtype kinds accepted ('f' takes integers too, 'i' integers, 'b' booleans or 0/1 integers,
        'U' text); `finite` refuses NaN and infinity, `limit` values beyond ±limit, `unit` rows of the last
        axis (quaternions) whose norm is more than UNIT_TOLERANCE from 1."""
        if key not in self.files:
            raise self.fail(f"no array {key!r}: not {self.kind} file, or a damaged one")
        self.check_size(key)
        try:
            value = self.data[key]
        except READ_ERRORS as error:
            raise self.fail(f"array {key!r} cannot be read ({type(error).__name__}: {error})") from None
        accepted = {"f": "fiub", "i": "iu", "b": "biu", "U": "U"}[kind]
        if value.dtype.kind not in accepted:
            raise self.fail(f"array {key!r} holds {value.dtype} values, not the kind expected")
        if shape is not None:
            self.check_shape(key, value.shape, shape)
        if finite and value.dtype.kind == "f" and not np.isfinite(value).all():
            first = tuple(int(i) for i in np.argwhere(~np.isfinite(value))[0])
            raise self.fail(f"array {key!r} holds a non-finite value (at index {first})")
        if limit is not None and value.size and np.abs(value).max() > limit:
            first = tuple(int(i) for i in np.argwhere(np.abs(value) > limit)[0])
            raise self.fail(f"array {key!r} holds {value[first]:g} at index {first}, beyond the plausible ±{limit:g}")
        if unit and value.size:
            with np.errstate(over="ignore"):
                off = np.abs(np.linalg.norm(value.astype(np.float64), axis=-1) - 1) > UNIT_TOLERANCE
            if off.any():
                first = tuple(int(i) for i in np.argwhere(off)[0])
                norm = np.linalg.norm(value[first].astype(np.float64))
                raise self.fail(f"array {key!r} holds a quaternion of norm {norm:g} at "
                                f"index {first}, not a rotation")
        return value

    def deviations(self, key: str, shape: tuple | None = None, limit: float = 1e3) -> np.ndarray:
        """A normalisation's standard deviations: positive and at most `limit`."""
        value = self.array(key, shape, limit=limit)
        if value.size and value.min() <= 0:
            first = tuple(int(i) for i in np.argwhere(value <= 0)[0])
            raise self.fail(f"array {key!r} holds a deviation of {value[first]:g} at index {first}; it must be positive")
        return value

    def check_size(self, key: str) -> None:
        """Refuse an array whose header declares more bytes than the file could hold (a zip bomb, a forged shape)
        before it is read: over MAX_EXPANSION times the file's size, once past FREE_BYTES."""
        try:
            with self.data.zip.open(key + ".npy") as member:
                version = np.lib.format.read_magic(member)
                read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                               else np.lib.format.read_array_header_2_0)
                shape, _, dtype = read_header(member)
        except READ_ERRORS as error:
            raise self.fail(f"array {key!r} cannot be read ({type(error).__name__}: {error})") from None
        declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
        allowed = max(FREE_BYTES, MAX_EXPANSION * self.path.stat().st_size)
        if declared > allowed:
            raise self.fail(f"array {key!r} declares {declared} bytes ({tuple(shape)} of {dtype}), more than a "
                            f"{self.path.stat().st_size}-byte file holds")

    def check_shape(self, key: str, actual: tuple, wanted: tuple) -> None:
        expected = "(" + ", ".join(str(self.dims.get(d, d)) if isinstance(d, str) else str(d) for d in wanted) + ")"
        ok = len(actual) == len(wanted)
        for size, want in zip(actual, wanted) if ok else ():
            if isinstance(want, str):
                ok = ok and self.dims.setdefault(want, size) == size
            else:
                ok = ok and size == want
        if not ok:
            raise self.fail(f"array {key!r} is shaped {tuple(actual)}, expected {expected}")

    def json(self, key: str) -> dict:
        """A JSON object stored as a text array."""
        try:
            value = json.loads(str(self.array(key, (), kind="U")))
        except json.JSONDecodeError as error:
            raise self.fail(f"array {key!r} is not JSON ({error})") from None
        if not isinstance(value, dict):
            raise self.fail(f"array {key!r} is JSON {type(value).__name__}, expected an object")
        return value


@contextmanager
def read_npz(path, kind: str, error=ValueError):
    """The archive at `path` as an Archive; any failure inside the block raises `error` naming the file.

    `kind` says what the file should be, with its article ("a stitch model"). `error` should be a class
    of its own (not ValueError itself), so that it passes through unwrapped.
    """
    path = Path(path)
    if path.is_dir():
        raise error(f"{path}: is a folder, not {kind} file")
    if not path.exists():
        raise error(f"{path}: no such file (expected {kind} file)")
    try:
        data = np.load(path, allow_pickle=False)
    except READ_ERRORS as cause:
        reason = ("the file is empty" if isinstance(cause, EOFError) else "not a .npz archive"
                  if isinstance(cause, ValueError) else f"{type(cause).__name__}: {cause}")
        raise error(f"{path}: not {kind} file ({reason})") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise error(f"{path}: holds a single array (.npy), not {kind} file (.npz)")
    try:
        with data:
            yield Archive(path, data, kind, error)
    except error:
        raise
    except READ_ERRORS as cause:
        raise error(f"{path}: not {kind} file, or a damaged one ({type(cause).__name__}: {cause})") from None
