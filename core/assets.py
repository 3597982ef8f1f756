"""The shipped models and records (`assets/` beside `core/`), and the one weight format every network uses.

A model file is an .npz archive holding each of the network's parameters as `w/<name>` (float32 on disk,
whatever the network computes in), its other arrays (normalisation, layout) as they are, and an
`info` record (JSON text: how it was trained, its figures). `write_model` writes one atomically;
`read_model` opens one and turns every failure into one ModelFileError line naming the file.
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from .errors import ModelFileError
from .files.atomic import npz_path, write_npz
from .files.npz_archive import read_npz

ASSETS = Path(__file__).resolve().parents[1] / "assets"
"""`assets/` beside `core/`: in the repository and in the extension zip alike."""
PARAMETER = "w/"
PARAMETER_LIMIT = 1e3
"""A network parameter beyond ±this is a damaged file (the shipped models' stay under 5)."""
"""The key prefix of a network's parameters."""


def asset(name: str) -> Path:
    """The path of a shipped file under `assets/`."""
    return ASSETS / name


def write_model(path, parameters: dict, info: dict, **arrays) -> None:
    """A network's `parameters` (float32 on disk), other `arrays` as given and the `info` record, written
    atomically to `path` (`.npz` appended when missing)."""
    import numpy as np

    stored = {PARAMETER + name: np.asarray(value, dtype=np.float32) for name, value in parameters.items()}
    write_npz(npz_path(path), info=np.array(json.dumps(info)), **arrays, **stored)


@contextmanager
def read_model(path, kind: str, dtype):
    """(archive, parameters): the model file at `path` opened as `kind` ("a stitch model"), with its parameters
    in the `dtype` the network computes in; any failure inside the block is one ModelFileError naming the file."""
    with read_npz(path, kind, ModelFileError) as archive:
        parameters = {k[len(PARAMETER):]: archive.array(k, limit=PARAMETER_LIMIT).astype(dtype)
                      for k in sorted(archive.files) if k.startswith(PARAMETER)}
        yield archive, parameters
