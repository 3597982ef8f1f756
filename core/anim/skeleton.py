"""Skeleton: joint names, the parent hierarchy and rest offsets, independent of any file format."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Skeleton:
    """A joint hierarchy whose parents precede their children.

    `offsets[j]` is joint j's rest translation in its parent's frame (metres inside `core`),
    `parents[j]` is -1 for the root. `end_sites` keeps leaf markers as (joint index, offset)
    pairs so that a written file keeps the bone lengths of its leaves.
    """

    names: tuple[str, ...]
    parents: np.ndarray
    offsets: np.ndarray
    end_sites: tuple[tuple[int, tuple[float, float, float]], ...] = field(default=())

    def __post_init__(self):
        parents = np.asarray(self.parents, dtype=np.int64)
        offsets = np.asarray(self.offsets, dtype=float).reshape(len(self.names), 3)
        object.__setattr__(self, "names", tuple(self.names))
        object.__setattr__(self, "parents", parents)
        object.__setattr__(self, "offsets", offsets)
        if len(parents) != len(self.names):
            raise ValueError(f"{len(self.names)} names but {len(parents)} parents")
        if len(set(self.names)) != len(self.names):
            raise ValueError("joint names must be unique")
        for j, p in enumerate(parents):
            if p >= j or (p < 0 and j != 0):
                raise ValueError(f"joint {self.names[j]!r}: parent index {p} must precede it (root first)")
        if not all(isinstance(n, str) for n in self.names):
            raise ValueError("joint names must be text")
        for site in self.end_sites:
            joint, offset = site
            if not isinstance(joint, (int, np.integer)) or not 0 <= joint < len(self.names):
                raise ValueError(f"end site at joint {joint!r}: no such joint among {len(self.names)}")
            if len(offset) != 3 or not np.isfinite(np.asarray(offset, dtype=float)).all():
                raise ValueError(f"end site at joint {self.names[joint]!r}: offset {offset!r} is not three numbers")

    def __len__(self) -> int:
        return len(self.names)

    def __eq__(self, other) -> bool:
        return (isinstance(other, Skeleton) and self.names == other.names
                and np.array_equal(self.parents, other.parents)
                and np.allclose(self.offsets, other.offsets, atol=1e-9))

    __hash__ = None

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no joint named {name!r}; joints are {', '.join(self.names)}") from None

    def children(self, joint: int) -> list[int]:
        return [j for j, p in enumerate(self.parents) if p == joint]

    def is_ancestor(self, ancestor: int, joint: int) -> bool:
        while joint >= 0:
            if joint == ancestor:
                return True
            joint = int(self.parents[joint])
        return False

    def scaled(self, factor: float) -> "Skeleton":
        return Skeleton(self.names, self.parents, self.offsets * factor,
                        tuple((j, tuple(float(c) * factor for c in o)) for j, o in self.end_sites))
