"""Writing files so that nothing the user has is lost: a temporary file in the same folder, renamed into place.

`written(path)` yields a binary file; only when the block ends without an error is it flushed to
disk and renamed over `path` (os.replace: atomic within one file system). On any failure (a full
disk, a file-size limit, an exception while producing the content, Ctrl+C) the temporary file is
removed and `path` is as it was. `check_outputs` refuses, before any work, an output that is one of
the inputs, a folder, something other than a regular file (a device, a named pipe: renaming over it would
replace it), a file the user may not write, or in a folder that is missing or cannot be written to. Inside `together()`, the
files a command writes (a solve's BVH and its report) replace their targets together at the block's end, or
none does.
"""
from __future__ import annotations

import io
import os
import signal
import stat
import tempfile
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import takewhile
from pathlib import Path

from ..errors import OutputError

ROWS_PER_WRITE = 4096
"""Rows of a long table (a motion's frames, a stream's samples) formatted and written at a time, so that writing
one never holds its whole text: a 12-minute BVH's text at once took about 430 MB, ten times the file."""

_PENDING: ContextVar[list | None] = ContextVar("pending_replacements", default=None)
"""The (temporary, target) pairs `together()` renames at its end; None outside it."""

_MADE_FOLDERS: ContextVar[list | None] = ContextVar("made_folders", default=None)
"""The folders `check_outputs` made inside `no_empty_folders_left()`, outermost first; None outside it."""


def same_file(a, b) -> bool:
    """Whether two paths name one file (links and relative spellings resolved; hard links too, where both exist)."""
    a, b = Path(a), Path(b)
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def check_outputs(outputs, inputs=(), make_folders: bool = False) -> None:
    """Refuse outputs that are inputs (or each other), folders, or in folders that are missing or read-only.

    `make_folders` creates missing folders (an OutputError says why it could not); inside `no_empty_folders_left()`
    those still empty at its end are removed. None entries are skipped.
    """
    outputs = [Path(o) for o in outputs if o is not None]
    inputs = [Path(i) for i in inputs if i is not None]
    for k, path in enumerate(outputs):
        if path.is_dir():
            raise OutputError(f"{path}: is a folder; give the name of a file to write")
        _check_replaceable(path)
        for source in inputs:
            if same_file(path, source):
                raise OutputError(f"{path}: is also an input ({source}); write the output to another file")
        for other in outputs[:k]:
            if same_file(path, other):
                raise OutputError(f"{path}: given for two outputs; give each its own file")
        folder = Path(os.path.realpath(path)).parent
        if not folder.exists() and make_folders:
            _make_folder(path, folder)
        if not folder.is_dir():
            raise OutputError(f"{path}: the folder {folder} does not exist")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise OutputError(f"{path}: the folder {folder} is not writable")


def _make_folder(path: Path, folder: Path) -> None:
    """Create `folder` and its missing parents for the output `path`, noting them for `no_empty_folders_left`."""
    missing = list(takewhile(lambda f: not f.exists(), (folder, *folder.parents)))[::-1]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"{path}: cannot create the folder {folder}: {error.strerror or error}") from None
    made = _MADE_FOLDERS.get()
    if made is not None:
        made.extend(missing)


@contextmanager
def no_empty_folders_left():
    """Folders `check_outputs` makes inside the block are removed at its end where they are still empty: a command
    refused or failing after its check leaves no empty folder behind, and one that wrote its outputs keeps them."""
    made: list = []
    token = _MADE_FOLDERS.set(made)
    try:
        yield
    finally:
        _MADE_FOLDERS.reset(token)
        for folder in reversed(made):
            try:
                folder.rmdir()
            except OSError:
                pass


def _check_replaceable(path: Path) -> None:
    """Refuse an existing `path` that is not a regular file, or that is read-only: the user may not write it, or no
    one may (no write permission bit: root may write it, but its owner meant it kept)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise OutputError(f"{path}: is not a regular file (a device, a named pipe or a socket); "
                          "give the name of a file to write")
    if not os.access(path, os.W_OK) or not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise OutputError(f"{path}: is read-only; make it writable or write to another file")


def _file_mode(path: Path) -> int:
    """The permission bits the written file gets: the replaced file's, else what the umask allows."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextmanager
def written_path(path, suffix: str = ".part"):
    """A temporary file's path in `path`'s folder, for writers that take a file name (Blender's image saving);
    the file replaces `path` when the block ends without an error (see the module doc)."""
    path = Path(path)
    target = Path(os.path.realpath(path))  # a link to a file: the file it points to is replaced
    _check_replaceable(path)
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
        os.close(handle)
    except OSError as error:
        raise OutputError(f"{path}: cannot write in {target.parent}: {error.strerror or error}") from None
    try:
        yield Path(temporary)
        os.chmod(temporary, _file_mode(target))
        pending = _PENDING.get()
        if pending is None:
            os.replace(temporary, target)
        else:
            pending.append((temporary, target))
    except BaseException as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(error, OSError):
            kept = "the previous file is unchanged" if target.exists() else "nothing was written"
            raise OutputError(f"{path}: cannot write: {error.strerror or error}; {kept}") from None
        raise


@contextmanager
def together():
    """Files written inside the block replace their targets only when it ends without an error, one after
    another with Ctrl+C held back until the last; on an error none does and their temporary files are removed."""
    pending: list = []
    token = _PENDING.set(pending)
    try:
        yield
    except BaseException:
        for temporary, _ in pending:
            try:
                os.unlink(temporary)
            except OSError:
                pass
        raise
    finally:
        _PENDING.reset(token)
    with _interrupts_deferred():
        done = 0
        try:
            for temporary, target in pending:
                os.replace(temporary, target)
                done += 1
        except BaseException as error:
            for temporary, _ in pending[done:]:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass
            if isinstance(error, OSError):
                raise OutputError(f"{pending[done][1]}: cannot replace: {error.strerror or error}; "
                                  f"{done} of {len(pending)} outputs were replaced before it") from None
            raise


@contextmanager
def _interrupts_deferred():
    """Ctrl+C (SIGINT) held back until the block ends, then acted on; in the main thread only, where Python runs
    signal handlers (elsewhere the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread() or not callable(signal.getsignal(signal.SIGINT)):
        yield
        return
    received = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: received.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            previous(signal.SIGINT, received[0])


@contextmanager
def written(path):
    """A binary file whose content replaces `path` when the block ends without an error (see the module doc)."""
    with written_path(path) as temporary, open(temporary, "wb") as file:
        yield file
        file.flush()
        os.fsync(file.fileno())


def write_bytes(path, data: bytes) -> None:
    """`data` as the whole content of `path`, atomically."""
    with written(path) as file:
        file.write(data)


def write_text(path, text: str) -> None:
    """`text` (UTF-8) as the whole content of `path`, atomically."""
    write_bytes(path, text.encode("utf-8"))


def save_figure(path, figure, **options) -> None:
    """A matplotlib figure saved to `path` atomically, in the format its extension names."""
    path = Path(path)
    with written(path) as file:
        figure.savefig(file, format=path.suffix.lstrip(".") or None, **options)


def write_npz(path, compressed: bool = True, **arrays) -> None:
    """Arrays as a .npz archive at exactly `path`, atomically. The archive is made in memory first: numpy's zip
    writer cannot be closed cleanly once its file has failed."""
    import numpy as np

    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    write_bytes(path, buffer.getvalue())


def npz_path(path) -> Path:
    """Where numpy's savez puts a file given `path`: `.npz` appended when missing."""
    path = Path(path)
    return path if path.name.endswith(".npz") else path.with_name(path.name + ".npz")
