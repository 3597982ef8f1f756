"""Motion-capture collections: where the data lives, listing BVH files, and the train/validation split by file."""
from __future__ import annotations

import os
import re
import zlib
from pathlib import Path

from ..errors import DataNotFound

ENVIRONMENT_VARIABLE = "VR_AVATAR_MOCAP"
DEFAULT_MOCAP = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "bandai"
VALIDATION_SHARE = 5
"""One file in VALIDATION_SHARE goes to validation (20 %), chosen by a hash of its name."""


class MocapNotFound(DataNotFound):
    """A motion-capture folder or file that is not there."""


def default_mocap_dir() -> Path:
    """$VR_AVATAR_MOCAP if set, else ../shared/data/bandai beside the repository."""
    return Path(os.environ.get(ENVIRONMENT_VARIABLE) or DEFAULT_MOCAP)


def find_bvh_files(paths) -> list[Path]:
    """BVH files named directly or found (recursively) in the given folders, sorted, without duplicates."""
    found = []
    for path in map(Path, paths):
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.suffix.lower() == ".bvh" and p.is_file())
        elif path.is_file():
            found.append(path)
        else:
            hint = f" (set {ENVIRONMENT_VARIABLE} or pass --mocap)" if path == default_mocap_dir() else ""
            raise MocapNotFound(f"motion capture not found: {path}{hint}")
    unique = sorted(set(found))
    if not unique:
        raise MocapNotFound(f"no .bvh files in {', '.join(map(str, paths))}")
    return unique


def is_validation(path: Path) -> bool:
    """Whether a file belongs to the validation split: stable across machines and file orders."""
    return zlib.crc32(Path(path).name.encode()) % VALIDATION_SHARE == 0


def split_by_file(files) -> tuple[list[Path], list[Path]]:
    """(training files, validation files)."""
    files = list(files)
    return [f for f in files if not is_validation(f)], [f for f in files if is_validation(f)]


def activity(name: str) -> str:
    """The motion in a Bandai file name: dataset-2_wave-left-hand_active_005 -> wave-left-hand."""
    match = re.match(r"dataset-\d+_(.+?)_[^_]+_\d+$", name)
    return match.group(1) if match else name


LOCOMOTION = ("walk", "walk-back", "walk-left", "walk-right", "walk-turn-left", "walk-turn-right", "run", "dash")
"""Activities of the shared data that make the default motion-matching database (MMVR §5.1: locomotion)."""


def locomotion_files(files) -> list[Path]:
    """The files whose activity is locomotion."""
    return [f for f in files if activity(Path(f).stem) in LOCOMOTION]


def default_database_files(files, held_out: Path | None = None) -> list[Path]:
    """The default motion-matching database's clips: the training split's locomotion; failing that, any
    clip but `held_out`, or `held_out` itself."""
    training = [f for f in split_by_file(files)[0] if f != held_out]
    return locomotion_files(training) or [f for f in files if f != held_out] or [held_out]
