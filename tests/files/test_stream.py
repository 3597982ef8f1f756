"""Three-point streams, CSV v1 (SPEC §3): round trip, rejections naming the line, untracked samples, resampling."""
from __future__ import annotations

import math
import re
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from core.math import quat
from core.files.bvh import read_bvh
from core.devices.simulate import simulate_stream
from core.config import SimulationConfig
from core.devices.plausibility import check_stream, without_unusable_samples
from core.files.stream import COLUMNS, DEVICES, StreamFormatError, ThreePointStream, copy_with_comment, read_comments, \
    read_stream, read_stream_and_comments, write_stream
from conftest import NO_SHARED, SHARED, WALK_1, WALK_2

BANDAI = Path(__file__).resolve().parents[3] / "shared" / "data" / "bandai"
WALK = BANDAI / "Bandai-Namco-Research-Motiondataset-1" / "dataset-1_walk_normal_001.bvh"

# Two comment lines and a blank line come before the header: the header is line 4, samples start at line 5.
PREAMBLE = ["# three-point stream for a test", "#   (comments and blank lines count as lines)", ""]
HEADER_LINE = len(PREAMBLE) + 1
FIRST_ROW_LINE = HEADER_LINE + 1

POSES = {  # one tracked pose per device: position, then a unit quaternion (w, x, y, z)
    "head": (0.1, 1.6, -0.2, 1.0, 0.0, 0.0, 0.0),
    "left": (-0.25, 1.1, -0.3, 0.0, 0.0, 1.0, 0.0),
    "right": (0.25, 1.1, -0.3, 0.5, 0.5, 0.5, 0.5),
}


def _cells(t, overrides: dict[str, str] | None = None, header=COLUMNS) -> list[str]:
    values = {"t": f"{t:g}" if isinstance(t, float) else str(t)}
    for device, pose in POSES.items():
        for field, value in zip(("px", "py", "pz", "qw", "qx", "qy", "qz"), pose):
            values[f"{device}_{field}"] = f"{value:g}"
    for column in header:
        values.setdefault(column, "1" if column.endswith("_valid") else "x")
    values.update(overrides or {})
    return [values[c] for c in header]


def _write(tmp_path: Path, header, rows: list[list[str]], preamble=PREAMBLE, name="s.csv") -> Path:
    lines = list(preamble) + ([",".join(header)] if header is not None else []) + [",".join(r) for r in rows]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _rejected(path: Path) -> StreamFormatError:
    with pytest.raises(StreamFormatError) as info:
        read_stream(path)
    return info.value


def _same_rotation_error(a: np.ndarray, b: np.ndarray) -> float:
    """Largest component difference between quaternions, up to the sign of each."""
    return float(np.minimum(np.abs(a - b).max(axis=-1), np.abs(a + b).max(axis=-1)).max())


# --- round trip --------------------------------------------------------------------------------


def test_round_trip_of_a_simulated_stream(tmp_path):
    stream = simulate_stream(read_bvh(WALK)).stream
    assert len(stream) > 300 and stream.tracked.all()
    path = tmp_path / "walk.csv"
    write_stream(path, stream, ["simulated from the walk clip", "second comment"])
    text = path.read_text().splitlines()
    assert text[:2] == ["# simulated from the walk clip", "# second comment"]
    back = read_stream(path)
    assert len(back) == len(stream)
    assert np.abs(back.times - stream.times).max() <= 1e-6
    assert np.abs(back.positions - stream.positions).max() <= 1e-6
    assert _same_rotation_error(back.rotations, stream.rotations) <= 1e-6
    assert back.tracked.all()


def test_round_trip_keeps_untracked_samples(tmp_path):
    stream = simulate_stream(read_bvh(WALK)).stream
    tracked = stream.tracked.copy()
    tracked[10, 1] = tracked[11, 1] = tracked[50, 0] = tracked[51, 2] = False
    positions, rotations = stream.positions.copy(), stream.rotations.copy()
    positions[~tracked] = np.nan
    rotations[~tracked] = np.nan
    path = tmp_path / "holes.csv"
    write_stream(path, ThreePointStream(stream.times, positions, rotations, tracked))
    back = read_stream(path)
    np.testing.assert_array_equal(back.tracked, tracked)
    assert np.isnan(back.positions[~tracked]).all() and np.isnan(back.rotations[~tracked]).all()
    assert np.abs(back.positions[tracked] - stream.positions[tracked]).max() <= 1e-6


def test_a_long_stream_is_written_a_block_of_samples_at_a_time(tmp_path, monkeypatch):
    """Eight times the samples take the same memory to write (the whole text at once took eight times as
    much), and the blocks' seams do not show, untracked samples among them."""
    rng = np.random.default_rng(3)
    count = 8000
    tracked = rng.random((count, 3)) > 0.1
    stream = ThreePointStream(np.arange(count) / 72.0, rng.normal(size=(count, 3, 3)),
                              quat.normalize(rng.normal(size=(count, 3, 4))), tracked)
    write_stream(tmp_path / "one_block.csv", stream, ["a comment"])
    monkeypatch.setattr("core.files.stream.ROWS_PER_WRITE", 250)
    write_stream(tmp_path / "blocks.csv", stream, ["a comment"])
    assert (tmp_path / "blocks.csv").read_bytes() == (tmp_path / "one_block.csv").read_bytes()
    np.testing.assert_array_equal(read_stream(tmp_path / "blocks.csv").tracked, tracked)
    peaks = []
    for samples in (1000, count):
        tracemalloc.start()
        write_stream(tmp_path / "peak.csv", ThreePointStream(stream.times[:samples], stream.positions[:samples],
                                                            stream.rotations[:samples], tracked[:samples]))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 1.3 * peaks[0]


# --- rejections: each names its line -----------------------------------------------------------


def test_missing_column_in_header(tmp_path):
    header = [c for c in COLUMNS if c != "left_qz"]
    error = _rejected(_write(tmp_path, header, [_cells(0.0, header=header)]))
    assert error.line == HEADER_LINE
    assert "header lacks column(s) left_qz" in str(error)
    assert str(error).startswith(f"{tmp_path / 's.csv'}:{HEADER_LINE}:")


@pytest.mark.parametrize("header, words", [
    ([c for c in COLUMNS if not c.startswith(("left_", "right_"))], "--method n3p --hmd-only"),
    (["time"] + [c for c in COLUMNS if c != "t"], "'time' is there: CSV v1 names the time column t"),
    (["timestamp"] + [c for c in COLUMNS if c != "t"], "'timestamp' is there"),
], ids=["headset only", "time", "timestamp"])
def test_a_missing_column_says_what_the_header_suggests(tmp_path, header, words):
    """A headset-only recording is pointed at the mode that reads it; a time column under another name is named."""
    error = _rejected(_write(tmp_path, header, [_cells(0.0, header=header)]))
    assert error.line == HEADER_LINE and "header lacks column(s)" in str(error) and words in str(error), str(error)


def test_duplicated_column_in_header(tmp_path):
    header = list(COLUMNS) + ["head_px"]
    error = _rejected(_write(tmp_path, header, [_cells(0.0, header=header)]))
    assert error.line == HEADER_LINE
    assert "header repeats column(s) head_px" in str(error)


@pytest.mark.parametrize("third", [0.05, 0.1], ids=["decreasing", "equal"])
def test_time_must_increase_strictly(tmp_path, third):
    rows = [_cells(0.0), _cells(0.1), _cells(third), _cells(0.2)]
    error = _rejected(_write(tmp_path, COLUMNS, rows))
    assert error.line == FIRST_ROW_LINE + 2
    assert f"time {third:g} does not increase (previous 0.1)" in str(error)


@pytest.mark.parametrize("same, words", [(True, "the line repeats the one before it"), (False, "two samples at one time")],
                         ids=["written twice", "coarse clock"])
def test_a_time_that_repeats_says_whether_the_line_repeats(tmp_path, same, words):
    second = _cells(0.1) if same else _cells(0.1, {"head_px": "0.3"})
    error = _rejected(_write(tmp_path, COLUMNS, [_cells(0.0), _cells(0.1), second, _cells(0.2)]))
    assert error.line == FIRST_ROW_LINE + 2 and words in str(error), str(error)


def test_non_numeric_field(tmp_path):
    rows = [_cells(0.0), _cells(0.1, {"head_py": "1.6m"})]
    error = _rejected(_write(tmp_path, COLUMNS, rows))
    assert error.line == FIRST_ROW_LINE + 1
    assert "head_py is not a number: '1.6m'" in str(error)


STRICT_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
"""SPEC §3's numbers: ASCII decimal or scientific notation."""
NAN_WORD = re.compile(r"[+-]?nan(?:\([0-9a-z_]*\))?", re.ASCII | re.IGNORECASE)
"""NaN as C, MSVC and numpy write it: `nan`, `-nan`, `-nan(ind)`."""
INFINITY_WORD = re.compile(r"[+-]?inf(?:inity)?", re.ASCII | re.IGNORECASE)


@pytest.mark.parametrize("text", ["1_0", "1_000.5", "\u0661.5", "\uff11", "1.5\u0660"])
def test_python_number_syntax_and_other_digits_are_not_numbers(tmp_path, text):
    rows = [_cells(0.0), _cells(0.1, {"head_py": text})]
    error = _rejected(_write(tmp_path, COLUMNS, rows))
    assert error.line == FIRST_ROW_LINE + 1 and f"head_py is not a number: {text!r}" in str(error)


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("0123456789._eE+-naif \u0661\uff11()d"), max_size=9))
def test_a_field_reads_as_a_number_only_in_decimal_or_scientific_notation(tmp_path_factory, text):
    """A NaN however written is a missing value; a number, infinite or overflowing included, is read as it is (the
    solve drops a broken sample with a warning); anything else is refused, naming its line."""
    rows = [_cells(0.0), _cells(0.1, {"head_px": text})]
    path = _write(tmp_path_factory.mktemp("field"), COLUMNS, rows)
    stripped = text.strip()
    if stripped == "" or NAN_WORD.fullmatch(stripped):
        assert not read_stream(path).tracked[1, 0]
    elif STRICT_NUMBER.fullmatch(stripped) or INFINITY_WORD.fullmatch(stripped):
        stream = read_stream(path)
        assert stream.tracked[1, 0] and stream.positions[1, 0, 0] == float(stripped)
    else:
        assert _rejected(path).line == FIRST_ROW_LINE + 1


def test_empty_time(tmp_path):
    rows = [_cells(0.0), _cells(0.1), _cells("  ")]
    error = _rejected(_write(tmp_path, COLUMNS, rows))
    assert error.line == FIRST_ROW_LINE + 2
    assert "t is empty" in str(error)


@pytest.mark.parametrize("change", [+1, -1], ids=["extra-field", "missing-field"])
def test_wrong_field_count(tmp_path, change):
    short_or_long = _cells(0.1) + ["0.5"] if change > 0 else _cells(0.1)[:-1]
    error = _rejected(_write(tmp_path, COLUMNS, [_cells(0.0), short_or_long, _cells(0.2)]))
    assert error.line == FIRST_ROW_LINE + 1
    assert f"{len(COLUMNS) + change} fields, the header has {len(COLUMNS)}" in str(error)


@pytest.mark.parametrize("value", ["2", "yes", "0.5", "-1"])
def test_bad_valid_value(tmp_path, value):
    header = list(COLUMNS) + ["head_valid", "left_valid", "right_valid"]
    rows = [_cells(0.0, header=header), _cells(0.1, {"left_valid": value}, header=header)]
    error = _rejected(_write(tmp_path, header, rows))
    assert error.line == FIRST_ROW_LINE + 1
    assert f"left_valid must be 1 or 0, found {value!r}" in str(error)


@pytest.mark.parametrize("value, tracked", [("1.0", True), ("0.0", False), ("True", True), ("false", False),
                                            ("nan", False), ("", False), ("1.000000", True),
                                            ("1.000000000000000000e+00", True), ("0.000000", False),
                                            ("0.000000000000000000e+00", False), ("-nan", False)])
def test_valid_values_as_other_tools_write_them(tmp_path, value, tracked):
    """A float column's 1.0 (C's %f 1.000000, numpy's savetxt 1.000000000000000000e+00) and a boolean column's True
    are SPEC §3's 1."""
    header = list(COLUMNS) + ["head_valid", "left_valid", "right_valid"]
    rows = [_cells(0.0, header=header), _cells(0.1, {"left_valid": value}, header=header)]
    assert read_stream(_write(tmp_path, header, rows)).tracked[:, 1].tolist() == [True, tracked]


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.sampled_from([0.0, 1.0]), st.floats(-2.0, 2.0), st.integers(-3, 3)),
       st.sampled_from(["%r", "%g", "%.1f", "%.6f", "%.18e", "%E", "%d"]))
def test_a_valid_flag_is_any_number_that_is_exactly_one_or_zero(tmp_path_factory, value, form):
    """However a number is written, it flags a sample tracked when it is exactly 1 and untracked when exactly 0;
    any other number is refused, naming the line."""
    text = form % value
    header = list(COLUMNS) + ["head_valid", "left_valid", "right_valid"]
    rows = [_cells(0.0, header=header), _cells(0.1, {"right_valid": text}, header=header)]
    path = _write(tmp_path_factory.mktemp("flag"), header, rows)
    if float(text) in (0.0, 1.0):
        assert read_stream(path).tracked[:, 2].tolist() == [True, float(text) == 1.0]
    else:
        error = _rejected(path)
        assert error.line == FIRST_ROW_LINE + 1 and f"right_valid must be 1 or 0, found {text!r}" in str(error)


def test_every_field_quoted_and_the_header_in_capitals(tmp_path):
    """As a writer that quotes every field, or names the columns in capitals, writes them."""
    header = [f'"{c.upper()}"' for c in COLUMNS]
    rows = [[f'"{cell}"' for cell in _cells(t)] for t in (0.0, 0.1)]
    stream = read_stream(_write(tmp_path, header, rows))
    assert stream.tracked.all()
    np.testing.assert_allclose(stream.times, [0.0, 0.1])
    np.testing.assert_allclose(stream.positions[:, 0], [POSES["head"][:3]] * 2)


@pytest.mark.parametrize("separator, name", [("\t", "tabs"), (";", "semicolons")])
def test_fields_separated_otherwise_than_by_commas_are_named(tmp_path, separator, name):
    path = tmp_path / "s.csv"
    path.write_text("\n".join(separator.join(cells) for cells in (COLUMNS, _cells(0.0))) + "\n")
    error = _rejected(path)
    assert error.line == 1 and f"separated by {name}" in str(error)


def _broken_sample_dropped(path: Path, device: int) -> None:
    """The stream at `path` reads, with its third sample's `device` tracked as written but broken: the solve's
    plausibility check warns of it and drops it, and no other."""
    stream = read_stream(path)
    assert stream.tracked.all()
    warnings = check_stream(stream, path)
    assert len(warnings) == 1 and "1 device sample(s) with absurd values" in warnings[0], warnings
    expected = np.ones((3, 3), dtype=bool)
    expected[2, device] = False
    np.testing.assert_array_equal(without_unusable_samples(stream)[0].tracked, expected)


@pytest.mark.parametrize("quaternion", [("1", "1", "0", "0"), ("0", "0", "0", "0"), ("0.5", "0", "0", "0")],
                         ids=["norm 1.41", "zero", "norm 0.5"])
def test_a_far_from_unit_quaternion_is_a_broken_sample_dropped_with_a_warning(tmp_path, quaternion):
    """As a logger writes a lost controller (all zeros) or garbage: read, then dropped as untracked by the solve."""
    broken = dict(zip(("right_qw", "right_qx", "right_qy", "right_qz"), quaternion))
    rows = [_cells(0.0), _cells(0.1), _cells(0.2, broken)]
    _broken_sample_dropped(_write(tmp_path, COLUMNS, rows), 2)


def test_an_all_zero_pose_is_a_broken_sample_dropped_with_a_warning(tmp_path):
    zero = {f"left_{field}": "0" for field in ("px", "py", "pz", "qw", "qx", "qy", "qz")}
    _broken_sample_dropped(_write(tmp_path, COLUMNS, [_cells(0.0), _cells(0.1), _cells(0.2, zero)]), 1)


def test_a_quaternion_rounded_near_unit_length_is_normalised(tmp_path):
    rounded = {"right_qw": "0.52", "right_qx": "0.52", "right_qy": "0.52", "right_qz": "0.52"}
    stream = read_stream(_write(tmp_path, COLUMNS, [_cells(0.0), _cells(0.1, rounded)]))
    np.testing.assert_allclose(stream.rotations[1, 2], [0.5, 0.5, 0.5, 0.5])


def test_untracked_quaternion_is_not_checked(tmp_path):
    """A zero quaternion on an untracked device is no error: nothing is read from it."""
    header = list(COLUMNS) + ["right_valid"]
    zero = {"right_qw": "0", "right_qx": "0", "right_qy": "0", "right_qz": "0", "right_valid": "0"}
    stream = read_stream(_write(tmp_path, header, [_cells(0.0, header=header), _cells(0.1, zero, header=header)]))
    assert stream.tracked[:, 2].tolist() == [True, False]


@pytest.mark.parametrize("value", ["inf", "-inf", "Infinity", "1e309", "-INF", '"inf"'])
def test_infinite_value(tmp_path, value):
    """An infinite (or overflowing) value is a broken sample: read, then dropped by the solve with a warning."""
    rows = [_cells(0.0), _cells(0.1), _cells(0.2, {"left_px": value})]
    _broken_sample_dropped(_write(tmp_path, COLUMNS, rows), 1)


@pytest.mark.parametrize("value", ["-nan", "+nan", "NaN", "-nan(ind)", "nan(ind)", "NAN(snan)"])
def test_nan_as_c_and_msvc_write_it_is_untracked(tmp_path, value):
    """C's printf writes -nan, MSVC's -nan(ind): the device is not tracked there, as with SPEC §3's nan."""
    stream = read_stream(_write(tmp_path, COLUMNS, [_cells(0.0), _cells(0.1, {"left_qw": value})]))
    assert stream.tracked.tolist() == [[True] * 3, [True, False, True]]
    assert check_stream(stream, "s.csv") == []


@pytest.mark.parametrize("value", ["inf", "-nan", "1e309"])
def test_a_time_must_be_a_finite_number(tmp_path, value):
    error = _rejected(_write(tmp_path, COLUMNS, [_cells(0.0), _cells(value)]))
    assert error.line == FIRST_ROW_LINE + 1 and "t is " in str(error), str(error)


@pytest.mark.parametrize("value", ["abc", "nan(", "infin", "1.#INF"])
def test_a_word_that_is_no_number_is_refused_naming_line_and_column(tmp_path, value):
    error = _rejected(_write(tmp_path, COLUMNS, [_cells(0.0), _cells(0.1, {"right_pz": value})]))
    assert error.line == FIRST_ROW_LINE + 1 and f"right_pz is not a number: {value!r}" in str(error)


def test_no_header(tmp_path):
    error = _rejected(_write(tmp_path, None, [], preamble=["# only a comment", ""]))
    assert error.line is None
    assert "no header line" in str(error)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert "no header line" in str(_rejected(empty))


def test_numbers_where_the_header_should_be(tmp_path):
    """A headerless file: its first sample is read as a header that lacks every column."""
    error = _rejected(_write(tmp_path, None, [_cells(0.0), _cells(0.1)]))
    assert error.line == HEADER_LINE
    assert "header lacks column(s) t, head_px" in str(error)


def test_header_but_no_rows(tmp_path):
    error = _rejected(_write(tmp_path, COLUMNS, [], preamble=PREAMBLE + ["# trailing comment"]))
    assert error.line is None
    assert "no samples after the header" in str(error)


def test_missing_file(tmp_path):
    error = _rejected(tmp_path / "absent.csv")
    assert error.line is None and "cannot read" in str(error)


# --- encodings ---------------------------------------------------------------------------------


def _latin1_stream(tmp_path: Path, comment: str = "# operator: J\u00fcrgen") -> Path:
    path = tmp_path / "latin1.csv"
    lines = ["# recorded by a test", comment, ",".join(COLUMNS), ",".join(_cells(0.0)), ",".join(_cells(0.1))]
    path.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    return path


def test_a_comment_that_is_not_utf8_is_skipped(tmp_path):
    """Comments are not data: an operator's name in Latin-1 changes nothing read, so it refuses nothing."""
    path = _latin1_stream(tmp_path)
    stream, comments = read_stream_and_comments(path)
    assert len(stream) == 2 and stream.tracked.all()
    assert comments == read_comments(path) == [(1, "recorded by a test")]


def test_a_copy_with_a_comment_keeps_a_latin1_comment_byte_for_byte(tmp_path):
    path = _latin1_stream(tmp_path)
    copy_with_comment(path, tmp_path / "out.csv", "calibration", 'calibration {"found": false}')
    lines = (tmp_path / "out.csv").read_bytes().split(b"\n")
    assert lines[:3] == [b"# recorded by a test", "# operator: J\u00fcrgen".encode("latin-1"),
                         b'# calibration {"found": false}']


def test_data_that_is_not_utf8_is_refused_naming_its_line(tmp_path):
    path = _latin1_stream(tmp_path, "# a comment")
    path.write_bytes(path.read_bytes().replace(b"\n0.1,", "\n0.1\u00b5,".encode("latin-1")))
    error = _rejected(path)
    assert error.line == 5 and "not UTF-8" in str(error), str(error)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"])
def test_a_utf16_file_is_named_as_such(tmp_path, encoding):
    """Windows PowerShell writes UTF-16 (with or without its byte-order mark)."""
    path = _write(tmp_path, COLUMNS, [_cells(0.0), _cells(0.1)])
    path.write_bytes(path.read_text().encode(encoding))
    error = _rejected(path)
    assert error.line == 1 and "UTF-16" in str(error), str(error)


def test_the_comments_read_with_the_stream_are_those_before_its_header(tmp_path):
    path = _write(tmp_path, COLUMNS, [_cells(0.0), _cells(0.1)], preamble=PREAMBLE + ["#   calibration {}"])
    path.write_text(path.read_text() + "# after the samples\n")
    assert read_stream_and_comments(path)[1] == read_comments(path) == [
        (1, "three-point stream for a test"), (2, "(comments and blank lines count as lines)"), (4, "calibration {}")]


# --- untracked samples and extra columns ------------------------------------------------------


def test_empty_nan_and_invalid_fields_mark_one_device_untracked(tmp_path):
    header = list(COLUMNS) + ["head_valid", "left_valid", "right_valid"]
    rows = [
        _cells(0.0, header=header),
        _cells(0.1, {"left_px": ""}, header=header),            # empty field
        _cells(0.2, {"right_qw": "nan"}, header=header),        # nan field
        _cells(0.3, {"head_valid": "0"}, header=header),        # flagged invalid, values present
        _cells(0.4, {"left_valid": ""}, header=header),         # empty validity field
        _cells(0.5, {"right_valid": "NaN"}, header=header),     # nan validity field
        _cells(0.6, header=header),
    ]
    stream = read_stream(_write(tmp_path, header, rows))
    expected = np.ones((7, 3), dtype=bool)
    expected[1, 1] = expected[2, 2] = expected[3, 0] = expected[4, 1] = expected[5, 2] = False
    np.testing.assert_array_equal(stream.tracked, expected)
    assert np.isnan(stream.positions[~expected]).all() and np.isnan(stream.rotations[~expected]).all()
    for d, device in enumerate(DEVICES):
        pose = np.array(POSES[device])
        np.testing.assert_allclose(stream.positions[expected[:, d], d], np.broadcast_to(pose[:3], (expected[:, d].sum(), 3)))
        np.testing.assert_allclose(stream.rotations[expected[:, d], d], np.broadcast_to(pose[3:], (expected[:, d].sum(), 4)))
    np.testing.assert_allclose(stream.times, np.arange(7) / 10)


def test_without_valid_columns_an_empty_field_still_means_untracked(tmp_path):
    stream = read_stream(_write(tmp_path, COLUMNS, [_cells(0.0), _cells(0.1, {"head_qz": ""}), _cells(0.2)]))
    assert stream.tracked.tolist() == [[True] * 3, [False, True, True], [True] * 3]


def test_unknown_columns_are_ignored_and_order_is_free(tmp_path):
    header = ["frame", "right_qz"] + [c for c in reversed(COLUMNS) if c != "right_qz"] + ["battery"]
    rows = [_cells(0.0, {"frame": "0", "battery": "full"}, header=header),
            _cells(0.1, {"frame": "1", "battery": "87%", "left_py": "1.25"}, header=header)]
    stream = read_stream(_write(tmp_path, header, rows))
    assert stream.tracked.all()
    np.testing.assert_allclose(stream.times, [0.0, 0.1])
    np.testing.assert_allclose(stream.positions[:, 1, 1], [1.1, 1.25])
    np.testing.assert_allclose(stream.rotations[:, 2], [POSES["right"][3:]] * 2)
    np.testing.assert_allclose(stream.positions[:, 0], [POSES["head"][:3]] * 2)


def test_windows_line_endings_and_spaces(tmp_path):
    header = ", ".join(COLUMNS)
    rows = [", ".join(_cells(t)) for t in (0.0, 0.1)]
    path = tmp_path / "crlf.csv"
    path.write_bytes(("# comment\r\n" + "\r\n".join([header] + rows) + "\r\n").encode())
    stream = read_stream(path)
    assert len(stream) == 2 and stream.tracked.all()


# --- a comment added to a copy -----------------------------------------------------------------


PREAMBLE_LINES = st.sampled_from(["# made by a recorder", "# calibration {\"found\": false}", "  # calibration old",
                                  "#calibration {}", "# calibrated by hand", "", "# Hüfte",
                                  "# calibration done by hand [v2]", "# calibration  {\"found\": true}"])


@settings(max_examples=100, deadline=None)
@given(st.lists(PREAMBLE_LINES, max_size=5), st.sampled_from(["\n", "\r\n", "\r"]), st.booleans(),
       st.lists(st.sampled_from(["1.5e0", "0001.25", "  2 ", ""]), min_size=2, max_size=2))
def test_a_copy_with_a_comment_changes_only_that_comment(tmp_path_factory, preamble, newline, bom, extra):
    """Extra columns, their order, numbers as written, later comments and line ends are kept byte for byte; an
    earlier calibration comment ("# calibration {...}") is replaced, the writer's own words after "calibration" kept."""
    folder = tmp_path_factory.mktemp("copy")
    header = ["frame"] + list(reversed(COLUMNS))
    rows = [",".join(_cells(t, {"frame": value}, header=header)) for t, value in zip((0.0, 0.1), extra)]
    body = newline.join([",".join(header), rows[0], "# a comment between rows", rows[1]]) + newline
    source = folder / "in.csv"
    source.write_bytes((b"\xef\xbb\xbf" if bom else b"") + (newline.join(preamble + [""]) + body).encode())
    copy_with_comment(source, folder / "out.csv", "calibration", 'calibration {"found": false}')
    kept = [line for line in preamble if not (line.strip()[1:].strip().startswith("calibration ")
                                              and line.split("calibration", 1)[1].lstrip().startswith("{"))]
    expected = newline.join(kept + ['# calibration {"found": false}', ""]) + body
    assert (folder / "out.csv").read_bytes() == (b"\xef\xbb\xbf" if bom else b"") + expected.encode()
    assert [text for _, text in read_comments(folder / "out.csv")].count('calibration {"found": false}') == 1


# --- resampling --------------------------------------------------------------------------------


def _stream(times, positions, rotations, tracked=None) -> ThreePointStream:
    times = np.asarray(times, dtype=float)
    tracked = np.ones((len(times), 3), dtype=bool) if tracked is None else tracked
    return ThreePointStream(times, positions, rotations, tracked)


def test_resampling_a_jittered_stream_to_60_hz():
    """Linear positions and a steady turn are reproduced exactly at any time by lerp and slerp."""
    rng = np.random.default_rng(7)
    times = 0.37 + np.arange(80) / 50 + rng.uniform(-0.004, 0.004, 80)
    velocity = np.array([[0.3, -0.1, 0.2], [1.0, 0.5, -0.25], [-0.7, 0.0, 0.4]])
    start = np.array([[0.0, 1.6, 0.0], [-0.2, 1.0, -0.3], [0.2, 1.0, -0.3]])

    def positions(t):
        return start + velocity * (t - 0.37)[:, None, None]

    def rotations(t):  # 1.5 rad/s about Y for the head, 0.8 rad/s about X for the left, fixed right
        head = quat.from_yaw(1.5 * t)
        left = quat.from_axis_rotation("x", 0.8 * t)
        right = np.broadcast_to(np.array(POSES["right"][3:]), head.shape)
        return np.stack([head, left, right], axis=1)

    resampled = _stream(times, positions(times), rotations(times)).resampled(60.0)
    expected_count = math.floor((times[-1] - times[0]) * 60 + 1e-6) + 1
    assert len(resampled) == expected_count
    assert resampled.times[0] == times[0]
    np.testing.assert_allclose(np.diff(resampled.times), 1 / 60, rtol=0, atol=1e-12)
    assert resampled.times[-1] <= times[-1] + 1e-12
    assert resampled.tracked.all()
    np.testing.assert_allclose(resampled.positions, positions(resampled.times), atol=1e-12)
    assert _same_rotation_error(resampled.rotations, rotations(resampled.times)) < 1e-9
    assert resampled.rate == pytest.approx(60.0)


def test_resampled_positions_by_hand():
    times = [0.0, 0.05, 0.07, 0.1]
    x = np.array([0.0, 1.0, 3.0, 3.0])
    positions = np.zeros((4, 3, 3))
    positions[:, 1, 0] = x
    rotations = quat.identity(4, 3)
    resampled = _stream(times, positions, rotations).resampled(60.0)
    np.testing.assert_allclose(resampled.times, np.arange(7) / 60, atol=1e-12)
    # 1/60 s is a third of the way from 0 to 0.05; 4/60 s is 5/6 of the way from 0.05 to 0.07.
    assert resampled.positions[1, 1, 0] == pytest.approx(1 / 3)
    assert resampled.positions[4, 1, 0] == pytest.approx(1 + 2 * 5 / 6)
    assert resampled.positions[5, 1, 0] == pytest.approx(3.0)  # 5/60 lies between two samples at 3
    assert resampled.positions[6, 1, 0] == pytest.approx(3.0)
    assert np.abs(resampled.positions[:, [0, 2]]).max() == 0.0


def test_resampled_rotation_midpoint_is_the_slerp():
    rotations = quat.identity(2, 3)
    rotations[1, 0] = [math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0]   # 90 degrees about +Y
    rotations[1, 2] = [0.0, 0.0, 0.0, 1.0]                                      # 180 degrees about +Z
    resampled = _stream([2.0, 2.0 + 1 / 30], np.zeros((2, 3, 3)), rotations).resampled(60.0)
    assert len(resampled) == 3
    half = math.pi / 8  # 45 degrees about +Y halves to 22.5 degrees in the quaternion
    assert _same_rotation_error(resampled.rotations[1, 0], np.array([math.cos(half), 0.0, math.sin(half), 0.0])) < 1e-9
    assert _same_rotation_error(resampled.rotations[1, 2], np.array([math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)])) < 1e-9
    assert _same_rotation_error(resampled.rotations[1, 1], np.array([1.0, 0.0, 0.0, 0.0])) == 0.0
    assert _same_rotation_error(resampled.rotations[[0, 2]], rotations) < 1e-12


def test_untracked_sample_makes_only_its_neighbourhood_untracked():
    rng = np.random.default_rng(3)
    times = np.arange(40) / 45 + rng.uniform(-0.003, 0.003, 40)
    positions = np.broadcast_to(np.array([POSES[d][:3] for d in DEVICES]), (40, 3, 3)).copy()
    rotations = quat.identity(40, 3)
    tracked = np.ones((40, 3), dtype=bool)
    tracked[20, 1] = False
    positions[20, 1] = np.nan
    rotations[20, 1] = np.nan
    resampled = _stream(times, positions, rotations, tracked).resampled(60.0)
    inside = (resampled.times > times[19]) & (resampled.times < times[21])
    assert 2 <= inside.sum() <= 4
    np.testing.assert_array_equal(resampled.tracked[:, 1], ~inside)
    assert resampled.tracked[:, [0, 2]].all()
    assert np.isnan(resampled.positions[inside, 1]).all() and np.isnan(resampled.rotations[inside, 1]).all()
    assert np.isfinite(resampled.positions[~inside]).all() and np.isfinite(resampled.rotations[~inside]).all()
    np.testing.assert_allclose(resampled.positions[~inside, 1], np.broadcast_to(POSES["left"][:3], ((~inside).sum(), 3)))


def test_resampling_at_the_same_rate_keeps_the_neighbours_of_a_dropout():
    """Resampled times that fall exactly on tracked samples keep them, even beside an untracked one."""
    count = 12
    times = np.arange(count) / 60
    positions = np.arange(count * 9, dtype=float).reshape(count, 3, 3)
    rotations = quat.identity(count, 3)
    tracked = np.ones((count, 3), dtype=bool)
    tracked[5, 1] = False
    positions[5, 1] = rotations[5, 1] = np.nan
    resampled = _stream(times, positions, rotations, tracked).resampled(60.0)
    np.testing.assert_array_equal(resampled.tracked, tracked)
    keep = tracked
    np.testing.assert_allclose(resampled.positions[keep], positions[keep], atol=1e-9)
    assert np.isfinite(resampled.positions[keep]).all()


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.sampled_from([30.0, 60.0, 72.0, 90.0, 120.0, 144.0]), st.floats(30.0, 144.0)),
       st.integers(3, 9), st.integers(2, 400), st.floats(0.0, 2e5))
def test_a_clock_rounded_to_some_decimals_keeps_every_sample_on_the_timeline(rate, decimals, count, start):
    """Samples every 1/rate s on a clock rounded to 3-9 decimals, resampled at their own rate: to the microsecond or
    finer, every sample has its frame and the last frame is the last sample; coarser, the timeline still ends
    within the stream. `frames_at` and `resampled` agree."""
    times = np.round(start + np.arange(count) / rate, decimals)
    stream = _stream(times, np.zeros((count, 3, 3)), quat.identity(count, 3))
    resampled = stream.resampled(rate)
    assert len(resampled) == stream.frames_at(rate)
    assert resampled.times[-1] <= times[-1] and resampled.tracked.all()
    if decimals >= 6:
        assert len(resampled) == count and resampled.times[-1] == times[-1]


def test_six_decimal_times_at_60_hz_give_every_sample_a_frame():
    """t = 0.000000, 0.016667, 0.033333 (a %.6f clock): three frames, the last on the last sample."""
    stream = _stream([0.0, 0.016667, 0.033333], np.zeros((3, 3, 3)), quat.identity(3, 3))
    assert stream.frames_at(60.0) == 3
    assert stream.resampled(60.0).times.tolist() == [0.0, 1 / 60, 0.033333]


def test_resampling_a_single_sample():
    stream = _stream([1.5], np.ones((1, 3, 3)), quat.identity(1, 3))
    resampled = stream.resampled(60.0)
    assert len(resampled) == 1 and resampled.times[0] == 1.5 and resampled.tracked.all()
    np.testing.assert_array_equal(resampled.positions, stream.positions)


def test_gaps_finds_an_inserted_gap():
    before = np.arange(30) / 60
    after = before[-1] + 0.2 + np.arange(30) / 60
    times = np.concatenate([before, after])
    stream = _stream(times, np.zeros((60, 3, 3)), quat.identity(60, 3))
    gaps = stream.gaps()
    assert len(gaps) == 1
    assert gaps[0][0] == pytest.approx(29 / 60)
    assert gaps[0][1] == pytest.approx(0.2)
    assert stream.rate == pytest.approx(60.0)
    assert _stream(before, np.zeros((30, 3, 3)), quat.identity(30, 3)).gaps() == []


OTHER_STUDIOS = sorted((SHARED / "data" / "other").rglob("*.bvh")) if not NO_SHARED else []


def _swapped(stream: ThreePointStream) -> ThreePointStream:
    """The stream with its left_ and right_ columns exchanged, as a tool that names the hands the other way writes it."""
    order = [0, 2, 1]
    return ThreePointStream(stream.times, stream.positions[:, order], stream.rotations[:, order], stream.tracked[:, order])


@pytest.mark.skipif(not WALK_1.exists() or not OTHER_STUDIOS, reason="needs ../shared/data")
@settings(max_examples=12, deadline=None)
@given(st.sampled_from([WALK_1, WALK_2] + OTHER_STUDIOS), st.sampled_from([30.0, 72.0, 90.0, 144.0]),
       st.floats(0.0, 60.0), st.integers(0, 2 ** 16))
def test_controllers_named_the_other_way_are_reported_and_the_persons_own_are_not(clip, fps, look_around, seed):
    """Walks from two studios and dances, at any rate and look-around: the person's own stream gives no warning; a
    walk's with its left_ and right_ columns exchanged, one that says the left controller is to the right of the
    right (a dance's arms cross too often for its median to tell)."""
    motion = read_bvh(clip)
    motion = motion[:int(20 * motion.fps)]
    stream = simulate_stream(motion, SimulationConfig(fps=fps, look_around_deg=look_around, seed=seed)).stream
    assert check_stream(stream, clip) == []
    if "perfume" not in clip.parts:
        warnings = check_stream(_swapped(stream), clip)
        assert len(warnings) == 1 and "left controller is held" in warnings[0] and "swapped" in warnings[0], warnings
