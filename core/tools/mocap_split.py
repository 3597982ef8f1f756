"""The team's motion capture (../shared/data/bandai): where it is, the train/validation split by file, and the
default database's clips. Tools only: the runtime lists files (core/files/mocap.py) and has no split."""
from __future__ import annotations

import os
import zlib
from pathlib import Path

from ..files.mocap import MocapNotFound, find_bvh_files, locomotion_files

ENVIRONMENT_VARIABLE = "VR_AVATAR_MOCAP"
DEFAULT_MOCAP = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "bandai"
VALIDATION_SHARE = 5
"""One file in VALIDATION_SHARE goes to validation (20 %), chosen by a hash of its name."""


def default_mocap_dir() -> Path:
    """$VR_AVATAR_MOCAP if set, else ../shared/data/bandai beside the repository."""
    return Path(os.environ.get(ENVIRONMENT_VARIABLE) or DEFAULT_MOCAP)


def find_mocap_files(paths) -> list[Path]:
    """`find_bvh_files`, saying how to point at the data where the default folder is missing."""
    try:
        return find_bvh_files(paths)
    except MocapNotFound as error:
        if any(Path(p) == default_mocap_dir() and not Path(p).exists() for p in paths):
            raise MocapNotFound(f"{error} (set {ENVIRONMENT_VARIABLE} or pass --mocap)") from None
        raise


def is_validation(path: Path) -> bool:
    """Whether a file belongs to the validation split: stable across machines and file orders."""
    return zlib.crc32(Path(path).name.encode()) % VALIDATION_SHARE == 0


def split_by_file(files) -> tuple[list[Path], list[Path]]:
    """(training files, validation files)."""
    files = list(files)
    return [f for f in files if not is_validation(f)], [f for f in files if is_validation(f)]


def default_database_files(files, held_out: Path | None = None) -> list[Path]:
    """The default motion-matching database's clips: the training split's locomotion; failing that, any
    clip but `held_out`, or `held_out` itself."""
    training = [f for f in split_by_file(files)[0] if f != held_out]
    return locomotion_files(training) or [f for f in files if f != held_out] or [held_out]
