"""The project's .npz reader (core/files/npz_archive.py): arrays whose headers declare more than the file holds are
refused before they are read."""
from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from core.files.npz_archive import read_npz


class ArchiveError(ValueError):
    pass


def _npz_with_header(path, shape, body: bytes = b"\0" * 64, compress: bool = False):
    """A .npz whose one array's header says `shape` (float64) over `body`."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED) as archive:
        archive.writestr("values.npy", header.getvalue() + body)


@pytest.mark.parametrize("shape", [(10 ** 12,), (100_000, 100_000), (2 ** 40, 3)])
def test_a_header_declaring_terabytes_is_refused_unread(tmp_path, shape):
    path = tmp_path / "forged.npz"
    _npz_with_header(path, shape)
    with pytest.raises(ArchiveError, match=rf"^{path}: array 'values' declares \d+ bytes"):
        with read_npz(path, "a test", ArchiveError) as archive:
            archive.array("values")


def test_a_zip_bomb_is_refused_before_it_is_inflated(tmp_path):
    """200 MB of zeros deflated to a few hundred kilobytes: more than MAX_EXPANSION times the file."""
    path = tmp_path / "bomb.npz"
    _npz_with_header(path, (25_000_000,), bytes(200_000_000), compress=True)
    assert path.stat().st_size < 1_000_000
    with pytest.raises(ArchiveError, match=r"declares 200000000 bytes"):
        with read_npz(path, "a test", ArchiveError) as archive:
            archive.array("values")


def test_an_honest_array_reads(tmp_path):
    path = tmp_path / "honest.npz"
    np.savez_compressed(path, values=np.arange(1000.0))
    with read_npz(path, "a test", ArchiveError) as archive:
        np.testing.assert_array_equal(archive.array("values"), np.arange(1000.0))
