"""Motion-capture files: BVH files listed from files and folders, and the activity a file's name gives (the Bandai
data's naming, dataset-N_activity_style_NNN), so that a library can keep its locomotion."""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import DataNotFound


class MocapNotFound(DataNotFound):
    """A motion-capture folder or file that is not there."""


def find_bvh_files(paths) -> list[Path]:
    """BVH files named directly or found (recursively) in the given folders, sorted, without duplicates."""
    found = []
    for path in map(Path, paths):
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.suffix.lower() == ".bvh" and p.is_file())
        elif path.is_file():
            found.append(path)
        else:
            raise MocapNotFound(f"motion capture not found: {path}")
    unique = sorted(set(found))
    if not unique:
        raise MocapNotFound(f"no .bvh files in {', '.join(map(str, paths))}")
    return unique


def activity(name: str) -> str:
    """The motion in a Bandai file name: dataset-2_wave-left-hand_active_005 -> wave-left-hand."""
    match = re.match(r"dataset-\d+_(.+?)_[^_]+_\d+$", name)
    return match.group(1) if match else name


LOCOMOTION = ("walk", "walk-back", "walk-left", "walk-right", "walk-turn-left", "walk-turn-right", "run", "dash")
"""Activities of the shared data that make the default motion-matching database (MMVR §5.1: locomotion)."""


def locomotion_files(files) -> list[Path]:
    """The files whose activity is locomotion."""
    return [f for f in files if activity(Path(f).stem) in LOCOMOTION]
