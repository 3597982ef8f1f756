"""The team's motion capture (../shared/data/bandai): where it is, the train/validation split by file, the
default database's clips, and a clip read as the tools use it. Tools only: the runtime lists files
(core/files/mocap.py) and has no split."""
from __future__ import annotations

import os
import sys
import zlib
from pathlib import Path

from ..errors import InputError
from ..files.bvh import read_bvh
from ..files.mocap import MocapNotFound, find_bvh_files, locomotion_files
from ..retarget.target import clip_mapping
from ..rig.mapping_preset import mapping_override

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


def training_split(files) -> tuple[list[Path], list[Path]]:
    """`split_by_file` for training, a file on each side: where the names put every file on one side (a few files of
    one's own), the last of them is moved to the other, saying so on stderr; a single file is an InputError."""
    files = list(files)
    if len(files) < 2:
        raise InputError(f"{files[0]}: training needs two or more BVH files (one is held out for validation)")
    training, validation = split_by_file(files)
    if not validation:
        validation.append(training.pop())
        print(f"note: no file's name puts it in validation; {validation[0]} is held out for it", file=sys.stderr)
    elif not training:
        training.append(validation.pop())
        print(f"note: every file's name puts it in validation; {training[0]} is trained on", file=sys.stderr)
    return training, validation


def default_database_files(files, held_out: Path | None = None) -> list[Path]:
    """The default motion-matching database's clips: the training split's locomotion; failing that (names not
    Bandai's), the training split; failing that, any clip but `held_out`, or `held_out` itself."""
    training = [f for f in split_by_file(files)[0] if f != held_out]
    return locomotion_files(training) or training or [f for f in files if f != held_out] or [held_out]


def read_humanoid(path, scale: float | None = None, mapping=None, character: bool = False):
    """A BVH clip that maps onto the canonical humanoid (with `mapping`, a preset or file, if given) and stands +Y
    up; a skeleton that does not map, or a Z-up clip, is one HumanoidMappingError naming the file. A `character`
    may be a skeleton without motion (its rest pose, read_bvh)."""
    motion = read_bvh(path, scale=scale, rest_pose=character)
    clip_mapping(motion, mapping_override(mapping, motion.skeleton.names) if mapping else None, str(path))
    return motion
