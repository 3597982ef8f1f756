"""Bad input at the command line: a corpus of damaged, implausible and clashing inputs made here, each refused
with one line naming the file (exit 1, no traceback), nothing written and the earlier output intact; or, where
the input is usable (a byte-order mark, CR line ends, a gap, an absurd sample), solved with a warning."""
from __future__ import annotations

import dataclasses
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURE_WALK_1, TRUNCATED_BVH

from core.anim.motion import Motion
from core.files.bvh import read_bvh, write_bvh
from core.math import quat
from core.rig.humanoid import find_mapping
from core.tools.arguments import option_problem
from core.tools.cli import build_parser, main
from core.config import MatchingConfig
from core.devices.attachments import head_on_floor
from core.matching.pose_database import build_database
from core.devices.simulate import simulate_stream
from core.files.stream import read_stream, write_stream

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "assets"


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """Good inputs, made once: a short clip, its stream and a database (never modified by the tests)."""
    folder = tmp_path_factory.mktemp("good")
    clip = read_bvh(FIXTURE_WALK_1)[:90]
    write_bvh(folder / "clip.bvh", clip)
    write_stream(folder / "walk.csv", simulate_stream(clip).stream, ["a short walk"])
    build_database([read_bvh(FIXTURE_WALK_1)]).save(folder / "db.npz")
    return folder


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None) for p in folder.rglob("*")}


def _copy(good: Path, folder: Path, *names) -> list[Path]:
    return [Path(shutil.copy(good / name, folder / name)) for name in names]


def refused(capsys, folder: Path, args, named, words=()):
    """Run the command line in-process: exit 1, one line `error: ...` naming `named`, folder unchanged."""
    before = _snapshot(folder)
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert str(named) in lines[0], err
    for word in words:
        assert word in lines[0], err
    assert "Traceback" not in err
    assert _snapshot(folder) == before  # nothing made, nothing changed, no temporary file left
    return lines[0]


# --- an output that is an input, or cannot be written ----------------------------------------


@pytest.mark.parametrize("case", ["solve onto the stream", "solve onto the database", "simulate onto the clip",
                                  "truth onto the clip", "truth onto the output", "database onto a clip",
                                  "stitch onto a clip", "truth into a missing folder", "output is a folder",
                                  "solve onto its mapping", "database onto its mapping", "solve onto a named pipe",
                                  "calibrate onto a named pipe", "report onto a named pipe"])
def test_outputs_that_would_destroy_an_input_are_refused_before_any_work(good, tmp_path, capsys, case):
    clip, csv, db = _copy(good, tmp_path, "clip.bvh", "walk.csv", "db.npz")
    other = Path(shutil.copy(clip, tmp_path / "other.bvh"))
    (tmp_path / "folder.bvh").mkdir()
    mapping = tmp_path / "mapping.json"
    mapping.write_text("{}")
    pipe = tmp_path / "pipe.bvh"
    os.mkfifo(pipe)
    args, named = {
        "solve onto the stream": (["solve", csv, "--db", db, "-o", csv], csv),
        "solve onto the database": (["solve", csv, "--db", db, "-o", db], db),
        "simulate onto the clip": (["stream", "simulate", clip, "-o", clip], clip),
        "truth onto the clip": (["stream", "simulate", clip, "-o", tmp_path / "new.csv", "--truth", clip], clip),
        "truth onto the output": (["stream", "simulate", clip, "-o", tmp_path / "n.csv", "--truth", tmp_path / "n.csv"],
                                  tmp_path / "n.csv"),
        "database onto a clip": (["db", "build", clip, other, "-o", other], other),
        "stitch onto a clip": (["stitch", clip, other, "-o", clip, "--method", "concat"], clip),
        "truth into a missing folder": (["stream", "simulate", clip, "-o", tmp_path / "new.csv", "--truth",
                                         tmp_path / "missing" / "t.bvh"], tmp_path / "missing"),
        "output is a folder": (["solve", csv, "--db", db, "-o", tmp_path / "folder.bvh"], tmp_path / "folder.bvh"),
        "solve onto its mapping": (["solve", csv, "--avatar", clip, "--mapping", mapping, "-o", mapping], mapping),
        "database onto its mapping": (["db", "build", clip, "--mapping", mapping, "-o", mapping], mapping),
        "solve onto a named pipe": (["solve", csv, "-o", pipe], pipe),
        "calibrate onto a named pipe": (["stream", "calibrate", csv, "-o", pipe], pipe),
        "report onto a named pipe": (["solve", csv, "-o", tmp_path / "take.bvh"], tmp_path / "take.report.png"),
    }[case]
    if case == "report onto a named pipe":
        os.mkfifo(tmp_path / "take.report.png")
    refused(capsys, tmp_path, args, named)


# --- damaged databases, models and JSON files --------------------------------------------------


def _damaged_database(good: Path, folder: Path, case: str) -> Path:
    path = folder / "damaged.npz"
    data = dict(np.load(good / "db.npz"))
    if case == "truncated":
        raw = (good / "db.npz").read_bytes()
        path.write_bytes(raw[: len(raw) // 2])
    elif case == "empty":
        path.write_bytes(b"")
    elif case == "npy":
        path = folder / "rotations.npy"
        np.save(path, data["rotations"])
    elif case == "folder":
        path.mkdir()
    elif case == "missing":
        pass
    else:
        if case == "misshaped":
            data["rotations"] = data["rotations"][..., :3]
        elif case == "nan rotation":
            data["rotations"][40, 3, 0] = np.nan
        elif case == "ranges":
            data["range_stops"] = data["range_stops"] + 5
        elif case == "meta list":
            data["meta"] = np.array(json.dumps([1, 2]))
        elif case == "end site out of range":
            meta = json.loads(str(data["meta"]))
            data["meta"] = np.array(json.dumps(meta | {"end_sites": [[99, [0, 0, 0]]]}))
        elif case == "zero quaternion":
            data["rotations"][7, 2] = 0
        elif case == "huge quaternion":
            data["rotations"] = data["rotations"] * np.float32(1e30)
        elif case == "huge position":
            data["positions"][3, 1, 1] = 1e30
        elif case == "slow rate":
            data["fps"] = np.array(0.001)
        np.savez(path, **data)
    return path


@pytest.mark.parametrize("case, words", [
    ("truncated", ["not a VR Avatar database"]), ("empty", ["empty"]), ("npy", [".npy"]), ("folder", ["folder"]),
    ("missing", ["no such file"]), ("misshaped", ["'rotations'", "expected (N, 22, 4)"]), ("nan rotation", ["non-finite"]),
    ("ranges", ["clip ranges"]), ("meta list", ["'meta'", "object"]),
    ("end site out of range", ["end site at joint 99"]), ("zero quaternion", ["'rotations'", "norm 0", "(7, 2)"]),
    ("huge quaternion", ["'rotations'", "norm 1e+30"]), ("huge position", ["'positions'", "1e+30", "(3, 1, 1)"]),
    ("slow rate", ["fps 0.001"])])
def test_damaged_databases_are_named_with_what_is_wrong(good, tmp_path, capsys, case, words):
    csv, = _copy(good, tmp_path, "walk.csv")
    db = _damaged_database(good, tmp_path, case)
    refused(capsys, tmp_path, ["solve", csv, "--db", db, "--method", "mm", "-o", tmp_path / "out.bvh", "--orientation",
                               "hmd"], db, words)


def test_eval_matching_says_its_database_is_missing(good, tmp_path, capsys):
    refused(capsys, tmp_path, ["eval", "matching", "--db", tmp_path / "absent.npz", "--data", good],
            tmp_path / "absent.npz", ["no such file"])


@pytest.mark.parametrize("model", ["n3p", "orientation", "stitch"])
@pytest.mark.parametrize("damage", ["truncated", "empty"])
def test_damaged_models_are_named(good, tmp_path, capsys, model, damage):
    clip, csv, db = _copy(good, tmp_path, "clip.bvh", "walk.csv", "db.npz")
    raw = (ASSETS / f"{model}.npz").read_bytes()
    path = tmp_path / f"{model}.npz"
    path.write_bytes(raw[: len(raw) // 3] if damage == "truncated" else b"")
    args = {"n3p": ["solve", csv, "--method", "n3p", "--model", path, "-o", tmp_path / "out.bvh"],
            "orientation": ["solve", csv, "--orientation", path, "-o", tmp_path / "out.bvh"],
            "stitch": ["stitch", clip, clip, "--model", path, "-o", tmp_path / "out.bvh"]}[model]
    refused(capsys, tmp_path, args, path, ["not a" if damage == "truncated" else "empty"])


def _n3p_variant(folder: Path, case: str) -> Path:
    data = dict(np.load(ASSETS / "n3p.npz"))
    if case == "huge weights":
        data["w/sig.decoder.weight"] = data["w/sig.decoder.weight"] * np.float32(1e20)
    elif case == "negative head height":
        data["standing_head_m"] = np.array(-1.5)
    elif case == "zero deviation":
        data["std/o"] = data["std/o"] * 0
    path = folder / "model.npz"
    np.savez(path, **data)
    return path


@pytest.mark.parametrize("case, words", [("huge weights", ["'w/sig.decoder.weight'", "beyond the plausible"]),
                                         ("negative head height", ["standing head height -1.5 m"]),
                                         ("zero deviation", ["'std/o'", "must be positive"])])
def test_implausible_predictors_are_named(good, tmp_path, capsys, case, words):
    csv, = _copy(good, tmp_path, "walk.csv")
    model = _n3p_variant(tmp_path, case)
    refused(capsys, tmp_path, ["solve", csv, "--method", "n3p", "--model", model, "-o", tmp_path / "out.bvh"],
            model, words)


@pytest.mark.parametrize("content, words", [(None, ["folder"]), (b"[1, 2]", ["JSON list"]),
                                            (b"\xff\xfe\x00garbage", ["not an IK constants file"]),
                                            (b'{"constants": [1]}', ["expected an object"])],
                         ids=["folder", "list", "binary", "constants list"])
def test_bad_ik_constants_files_are_named(good, tmp_path, capsys, content, words):
    csv, db = _copy(good, tmp_path, "walk.csv", "db.npz")
    path = tmp_path / "constants.json"
    path.mkdir() if content is None else path.write_bytes(content)
    refused(capsys, tmp_path, ["solve", csv, "--db", db, "--method", "mm", "--ik-constants", path, "-o", tmp_path / "out.bvh"],
            path, words)


@pytest.mark.parametrize("content", [b'["Hips"]', b"\xff\xfe\x00", b'{"hips": "Hips", "flurb": "Spine"}'],
                         ids=["list", "binary", "unknown joint"])
def test_bad_mapping_files_are_named(good, tmp_path, capsys, content):
    clip, = _copy(good, tmp_path, "clip.bvh")
    path = tmp_path / "mapping.json"
    path.write_bytes(content)
    refused(capsys, tmp_path, ["stream", "simulate", clip, "--mapping", path, "-o", tmp_path / "s.csv"], path)


# --- option values -----------------------------------------------------------------------------


@pytest.mark.parametrize("command, option", [
    ("simulate", ["--fps", "0"]), ("simulate", ["--fps", "nan"]), ("simulate", ["--look-around", "-5"]),
    ("build", ["--fps", "-60"]), ("build", ["--height-range", "2", "1"]), ("build", ["--height-range", "nan", "1"]),
    ("solve", ["--alpha", "-1"]), ("solve", ["--height", "0"]), ("solve", ["--arm-span", "inf"]),
    ("simulate", ["--fps", "1e7"]), ("simulate", ["--calibration-pose", "1e7"]), ("build", ["--fps", "1e9"]),
    ("simulate", ["--body-scale", "1e6"]), ("calibration", ["--device-noise", "0"]),
    ("calibration", ["--device-noise", "72", "nan"]), ("calibration", ["--device-noise", "5000"])], ids=" ".join)
def test_option_values_that_make_no_sense_are_refused(good, tmp_path, capsys, command, option):
    clip, csv, db = _copy(good, tmp_path, "clip.bvh", "walk.csv", "db.npz")
    args = {"simulate": ["stream", "simulate", clip, "-o", tmp_path / "s.csv"],
            "build": ["db", "build", clip, "-o", tmp_path / "new.npz"],
            "solve": ["solve", csv, "--db", db, "-o", tmp_path / "out.bvh"],
            "calibration": ["eval", "calibration", "--data", clip, "--split", "all"]}[command]
    refused(capsys, tmp_path, args + option, option[0])


@pytest.mark.parametrize("option, value, words", [
    ("--height", "170", ["standing HMD height", "not the body's height", "0.8-2.5 m", "centimetres", "--height 1.7"]),
    ("--height", "1700", ["millimetres", "--height 1.7"]), ("--height", "1e-09", ["0.8-2.5 m", "not 1e-09"]),
    ("--height", "3", ["0.8-2.5 m"]), ("--arm-span", "180", ["wrist-to-wrist", "centimetres", "--arm-span 1.8"]),
    ("--arm-span", "0.01", ["0.3-3.5 m"])])
def test_a_body_size_outside_a_persons_is_refused_saying_the_unit_it_looks_like(good, tmp_path, capsys, option, value,
                                                                                words):
    """`--height 170` (centimetres) would make an 80 m avatar: refused outside the range a stream's own measured
    standing height is accepted in (a stored calibration's arm span, for --arm-span)."""
    csv, = _copy(good, tmp_path, "walk.csv")
    refused(capsys, tmp_path, ["solve", csv, "-o", tmp_path / "out.bvh", option, value], option, words)


@pytest.mark.parametrize("options", [["--height", "0.8"], ["--height", "1.62"], ["--height", "2.5"],
                                     ["--arm-span", "1.7", "--height", "1.6"]], ids=" ".join)
def test_a_persons_body_size_in_metres_is_taken(options):
    assert option_problem(build_parser().parse_args(["solve", "s.csv", "-o", "o.bvh", *options])) is None


# --- streams: units, axes, gaps, absurd samples, encodings ---------------------------------------


def _stream_variant(good: Path, folder: Path, change) -> Path:
    stream = read_stream(good / "walk.csv")
    change(stream)
    path = folder / "variant.csv"
    write_stream(path, stream)
    return path


def _milliseconds(s):
    s.times = s.times * 1000.0


def _xr_time(s):
    """OpenXR's XrTime written as it is: nanoseconds, from a runtime's epoch."""
    s.times = 1.7e18 + np.round(s.times * 1e9)


def _frame_numbers(s):
    s.times = np.arange(len(s.times), dtype=float)


def _centimetres(s):
    s.positions = s.positions * 100.0


def _z_up(s):
    s.positions = s.positions[..., [0, 2, 1]] * [1.0, -1.0, 1.0]


def _z_up_turned(s):
    """Z-up as an exporter that turns the rotations too writes it."""
    turn = quat.from_axis_rotation("x", np.radians(90.0))
    s.positions = quat.rotate(turn, s.positions)
    s.rotations = quat.multiply(turn, s.rotations)


def _quaternions_x_y_z_w(s):
    """Quaternions written in OpenXR's and Unity's structure order under the w, x, y, z columns."""
    s.rotations = s.rotations[..., [1, 2, 3, 0]]


def _camera_frames(s):
    """Device frames turned half a turn about their view axis (a camera convention, +Y down)."""
    s.rotations = quat.multiply(s.rotations, quat.from_axis_rotation("z", np.radians(180.0)))


def _head_at(s, height: float, z: float = 1.5):
    """The stream moved so that its first head sample is at `height` and `z` (the floor elsewhere than y = 0)."""
    s.positions = s.positions + (np.array([0.0, height, z]) - s.positions[0, 0]) * [0.0, 1.0, 1.0]


def _local_space(s):
    """As a LOCAL reference space writes it: y = 0 at the first head position."""
    _head_at(s, 0.0)


@pytest.mark.parametrize("change, words", [(_milliseconds, ["milliseconds"]), (_centimetres, ["centimetres"]),
                                           (_xr_time, ["nanoseconds", "XrTime", "divide t by 1e9"]),
                                           (_frame_numbers, ["frame numbers"]),
                                           (_z_up, ["+Z up"]), (_z_up_turned, ["+Z up"]),
                                           (_local_space, ["LOCAL", "y = 0 the floor"]),
                                           (_quaternions_x_y_z_w, ["upside down", "written x, y, z, w"]),
                                           (_camera_frames, ["upside down", "+Y up and looking along -Z"])],
                         ids=["ms", "cm", "ns", "frames", "z-up", "z-up turned", "local space", "xyzw", "y down"])
def test_streams_off_by_a_unit_or_an_axis_are_refused(good, tmp_path, capsys, change, words):
    db, = _copy(good, tmp_path, "db.npz")
    csv = _stream_variant(good, tmp_path, change)
    refused(capsys, tmp_path, ["solve", csv, "--db", db, "-o", tmp_path / "out.bvh", "--orientation", "hmd"], csv, words)


def _solve_with_warning(good, folder, csv, capsys, words, method="hybrid"):
    db, = _copy(good, folder, "db.npz")
    out = folder / "out.bvh"
    databases = ["--db", db] if method == "mm" else []
    assert main([str(a) for a in ["solve", csv, *databases, "-o", out, "--orientation", "hmd", "--method", method]]) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and str(csv) in warnings[0] and all(w in warnings[0] for w in words), err
    return read_bvh(out)  # the project's reader refuses non-finite values


def test_a_user_seated_on_the_floor_is_solved_with_a_warning_not_taken_for_a_z_up_stream(good, tmp_path, capsys):
    """A head at 0.7 m while z happens to lie where a head would stand: the HMD is upright and the head travels
    along z, so the stream is +Y up; the solve warns that the floor may be elsewhere and goes on."""
    csv = _stream_variant(good, tmp_path, lambda s: _head_at(s, 0.7))
    _solve_with_warning(good, tmp_path, csv, capsys, ["0.7 m", "is y = 0 the floor?"])


def test_a_headset_on_a_table_before_it_is_worn_draws_no_height_warning(tmp_path, capsys):
    """The first 1.5 s of an 8 s walk the headset lies on a 0.75 m table (the controllers beside it): the solve
    measures the user standing once it is worn, so nothing is wrong with the floor."""
    stream = simulate_stream(read_bvh(FIXTURE_WALK_1)).stream
    first = stream.times - stream.times[0] < 1.5
    stream.positions[first] = np.array([[0.0, 0.75, 0.0], [-0.2, 0.75, 0.0], [0.2, 0.75, 0.0]])
    stream.rotations[first] = quat.identity()
    csv, out = tmp_path / "table.csv", tmp_path / "out.bvh"
    write_stream(csv, stream)
    assert main([str(a) for a in ["solve", csv, "-o", out, "--orientation", "hmd"]]) == 0
    err = capsys.readouterr().err
    assert "standing head height" not in err, err
    motion = read_bvh(out)
    head = motion.global_positions()[-1, find_mapping(motion.skeleton)["head"], 1]
    assert abs(head - stream.positions[-1, 0, 1]) < 0.15


def test_a_long_gap_is_held_with_a_warning(good, tmp_path, capsys):
    def gap(s):
        s.times = s.times + np.where(np.arange(len(s.times)) >= 100, 8.0, 0.0)
    csv = _stream_variant(good, tmp_path, gap)
    motion = _solve_with_warning(good, tmp_path, csv, capsys, ["gap", "8.0 s", "stays where"], "mm")  # α: mm's
    stream = read_stream(csv)
    assert len(motion) == int(stream.duration * 60 + 1e-6) + 1
    held = motion.positions[int(stream.times[99] * 60) + 1: int(stream.times[100] * 60), 0]
    last_seen = head_on_floor(stream.positions[99, 0], stream.rotations[99, 0], MatchingConfig.head_centre_from_hmd)
    assert np.hypot(*(held - last_seen)[:, [0, 2]].T).max() <= MatchingConfig.alpha_m + 1e-5


@pytest.mark.parametrize("value", ["1e308", "inf", "nan"])
def test_an_absurd_sample_is_untracked_with_a_warning_and_the_output_stays_finite(good, tmp_path, capsys, value):
    lines = (good / "walk.csv").read_text().splitlines()
    header = lines[1].split(",")
    row = lines[80].split(",")
    row[header.index("head_px")] = value
    row[header.index("left_py")] = value
    lines[80] = ",".join(row)
    csv = tmp_path / "absurd.csv"
    csv.write_text("\n".join(lines) + "\n")
    if value == "nan":  # an empty or nan field is untracked by the format: no warning, no error
        assert main([str(a) for a in ["solve", csv, "-o", tmp_path / "o.bvh", "--orientation", "hmd"]]) == 0
        assert "warning" not in capsys.readouterr().err
        return
    _solve_with_warning(good, tmp_path, csv, capsys, ["2 device sample(s)", "untracked"])


def _broken_left_controller(good: Path, folder: Path, value: str) -> Path:
    """The walk with its left controller written as `value` in every field on samples 50-59 (a lost controller)."""
    lines = (good / "walk.csv").read_text().splitlines()
    header = lines[1].split(",")
    for number in range(52, 62):
        row = lines[number].split(",")
        for field in ("px", "py", "pz", "qw", "qx", "qy", "qz"):
            row[header.index(f"left_{field}")] = value
        lines[number] = ",".join(row)
    path = folder / "broken.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("value", ["inf", "0", "-nan", "-nan(ind)"])
def test_a_lost_controller_written_as_zeros_or_c_infinity_solves_headset_only(good, tmp_path, capsys, value):
    csv = _broken_left_controller(good, tmp_path, value)
    out = tmp_path / "out.bvh"
    assert main([str(a) for a in ["solve", csv, "-o", out, "--method", "n3p", "--hmd-only"]]) == 0
    assert np.isfinite(read_bvh(out).positions).all()


@pytest.mark.parametrize("value, absurd", [("1e300", True), ("inf", True), ("0", True), ("-nan", False)])
def test_stream_info_counts_as_untracked_what_the_solve_drops(good, tmp_path, capsys, value, absurd):
    """Absurd samples (farther than 10 km, infinite, a zero quaternion) are untracked in `stream info` as in the
    solve, with the solve's warning."""
    csv = _broken_left_controller(good, tmp_path, value)
    assert main(["stream", "info", str(csv), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["untracked"] == {"head": 0, "left": 10, "right": 0}
    assert ("10 device sample(s) with absurd values" in captured.err) == absurd, captured.err


def test_six_decimal_times_solve_to_a_frame_for_every_sample(good, tmp_path, capsys):
    """t = 0.000000, 0.016667, 0.033333 (a %.6f clock at 60 Hz): three output frames, not two."""
    lines = (good / "walk.csv").read_text().splitlines()
    rows = [f"{i / 60:.6f}," + line.split(",", 1)[1] for i, line in enumerate(lines[2:5])]
    csv = tmp_path / "three.csv"
    csv.write_text("\n".join(lines[:2] + rows) + "\n")
    assert main(["solve", str(csv), "-o", str(tmp_path / "out.bvh"), "--orientation", "hmd"]) == 0
    assert len(read_bvh(tmp_path / "out.bvh")) == 3


STORED_CALIBRATION = {"found": True, "standing_hmd_height_m": 1.45, "arm_span_m": 1.14, "pose": "T",
                      "pose_s": [0.0, 3.2], "grip_offsets_m": [None, None],
                      "grip_tilts": [[1, 0, 0, 0], [1, 0, 0, 0]]}
"""A calibration as `stream calibrate -o` stores it; its T-pose at 0.00-3.20 s is named when the solve uses it."""


def _calibrated_stream(good: Path) -> bytes:
    lines = (good / "walk.csv").read_bytes().split(b"\n")
    return b"\n".join([lines[0], b"# calibration " + json.dumps(STORED_CALIBRATION).encode()] + lines[1:])


def test_a_solve_reads_a_named_pipe_once_and_keeps_its_calibration(good, tmp_path):
    """The stream is read once: a named pipe (or `<(...)`) gives its text once, calibration comment included."""
    pipe = tmp_path / "stream.csv"
    os.mkfifo(pipe)
    writer = threading.Thread(target=pipe.write_bytes, args=(_calibrated_stream(good),), daemon=True)
    writer.start()
    try:
        done = _core(["solve", pipe, "-o", tmp_path / "out.bvh", "--orientation", "hmd"])
    finally:
        _release(pipe)
    assert done.returncode == 0, done.stderr
    assert "calibrated from the T-pose at 0.00-3.20 s" in done.stderr, done.stderr


def test_stream_calibrate_reads_a_named_pipe_once_and_copies_it(good, tmp_path):
    """`stream calibrate -o` read the stream, then the file again to copy it: a named pipe hung at the copy."""
    pipe, out = tmp_path / "stream.csv", tmp_path / "calibrated.csv"
    os.mkfifo(pipe)
    text = (good / "walk.csv").read_bytes()
    writer = threading.Thread(target=pipe.write_bytes, args=(text,), daemon=True)
    writer.start()
    try:
        done = _core(["stream", "calibrate", pipe, "-o", out])
    finally:
        _release(pipe)
    assert done.returncode == 0, done.stderr
    copied = out.read_bytes().split(b"\n")
    added = [line for line in copied if line.startswith(b"# calibration ")]
    assert len(added) == 1 and [line for line in copied if line not in added] == text.split(b"\n")


def _release(pipe: Path) -> None:
    """Let a reader still waiting on `pipe` see it end (a hung test leaves no process or thread blocked)."""
    try:
        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # no reader left
        pass


def test_a_solve_of_piped_standard_input_keeps_its_calibration(good, tmp_path):
    """`... | python -m core solve /dev/stdin`: a pipe has no second reading to find the calibration in."""
    done = _core(["solve", "/dev/stdin", "-o", tmp_path / "out.bvh", "--orientation", "hmd"],
                 input=_calibrated_stream(good).decode())
    assert done.returncode == 0, done.stderr
    assert "calibrated from the T-pose at 0.00-3.20 s" in done.stderr, done.stderr


INTERRUPTED_IMPORT = """
import runpy, sys, types
class Interrupted(types.ModuleType):
    def __getattr__(self, name):
        raise KeyboardInterrupt
sys.modules["core.tools.cli"] = Interrupted("core.tools.cli")
runpy.run_module("core", run_name="__main__")
"""
"""`python -m core` with Ctrl+C arriving while it imports the command line (the first second of every command)."""


def test_ctrl_c_while_importing_is_one_line_and_exit_130():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_IMPORT], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 130 and done.stdout == ""
    assert done.stderr == "error: interrupted; each output is either complete or as it was\n", done.stderr


@pytest.mark.parametrize("encoding", ["bom", "cr", "crlf"])
def test_streams_with_a_byte_order_mark_or_other_line_ends_read_the_same(good, tmp_path, capsys, encoding):
    text = (good / "walk.csv").read_bytes()
    path = tmp_path / "variant.csv"
    path.write_bytes({"bom": b"\xef\xbb\xbf" + text, "cr": text.replace(b"\n", b"\r"),
                      "crlf": text.replace(b"\n", b"\r\n")}[encoding])
    expected, stream = read_stream(good / "walk.csv"), read_stream(path)
    for name in ("times", "positions", "rotations", "tracked"):
        np.testing.assert_array_equal(getattr(stream, name), getattr(expected, name))
    assert main(["stream", "info", str(path)]) == 0 and capsys.readouterr().err == ""


# --- BVH files -----------------------------------------------------------------------------------


def _bvh_variant(good: Path, folder: Path, change) -> Path:
    path = folder / "variant.bvh"
    path.write_bytes(change((good / "clip.bvh").read_bytes()))
    return path


def _line_of(data: bytes, prefix: bytes) -> int:
    return next(i for i, line in enumerate(data.split(b"\n"), 1) if line.strip().startswith(prefix))


@pytest.mark.parametrize("case", ["frame time 1e-300", "frame time 1e6", "repeated joint", "far too long"])
def test_bad_bvh_files_are_named_with_their_line(good, tmp_path, capsys, case):
    raw = (good / "clip.bvh").read_bytes()
    frame_time = _line_of(raw, b"Frame Time")
    if case.startswith("frame time"):
        value = case.split()[-1].encode()
        path, line = _bvh_variant(good, tmp_path, lambda d: d.replace(b"Frame Time: 0.03333333", b"Frame Time: " + value)), \
            frame_time
    elif case == "repeated joint":
        path = _bvh_variant(good, tmp_path, lambda d: d.replace(b"JOINT UpperLeg_R", b"JOINT UpperLeg_L"))
        line = [i for i, text in enumerate(path.read_bytes().split(b"\n"), 1) if text.strip() == b"JOINT UpperLeg_L"][1]
    else:  # declares its frames, then holds a hundred times as many bytes
        path = _bvh_variant(good, tmp_path, lambda d: d + d[d.index(b"Frame Time"):].split(b"\n", 1)[1] * 100)
        line = frame_time + 1
    refused(capsys, tmp_path, ["stream", "simulate", path, "-o", tmp_path / "s.csv"], f"{path}:{line}:")


@pytest.mark.parametrize("encoding", ["bom", "cr", "crlf"])
def test_bvh_files_with_a_byte_order_mark_or_other_line_ends_read_the_same(good, tmp_path, encoding):
    path = _bvh_variant(good, tmp_path, {"bom": lambda d: b"\xef\xbb\xbf" + d, "cr": lambda d: d.replace(b"\n", b"\r"),
                                         "crlf": lambda d: d.replace(b"\n", b"\r\n")}[encoding])
    expected, motion = read_bvh(good / "clip.bvh"), read_bvh(path)
    assert motion.skeleton == expected.skeleton and motion.fps == expected.fps
    np.testing.assert_array_equal(motion.rotations, expected.rotations)


# --- the real entry point: no traceback, a file-size limit, a read-only folder ---------------------


def _core(args, cwd=ROOT, **options) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "core", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, **options)


def test_a_database_rebuilt_under_a_file_size_limit_leaves_the_previous_one_intact(good, tmp_path):
    db, clip = _copy(good, tmp_path, "db.npz", "clip.bvh")
    before = db.read_bytes()

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (16384, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    done = _core(["db", "build", clip, "--mirror", "-o", db], preexec_fn=limited)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {db}: cannot write: File too large; the previous file is unchanged"), line
    assert db.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["clip.bvh", "db.npz"]
    solved = _core(["solve", good / "walk.csv", "--db", db, "--method", "mm", "-o", tmp_path / "out.bvh", "--orientation",
                    "hmd"])
    assert solved.returncode == 0, solved.stderr


def test_a_read_only_folder_is_one_line(good):
    """Run as an unprivileged user where the tests run as root (root writes anywhere)."""
    folder = Path(tempfile.mkdtemp(prefix="vr_avatar_read_only_"))
    try:
        folder.chmod(0o755)
        csv, db = (Path(shutil.copy(good / n, folder / n)) for n in ("walk.csv", "db.npz"))
        locked = folder / "locked"
        locked.mkdir()
        locked.chmod(0o555)
        options = {}
        if os.geteuid() == 0:
            options["user"] = 65534
        done = _core(["solve", csv, "-o", locked / "out.bvh", "--orientation", "hmd"], **options)
        if "Permission denied" in done.stderr and "core" not in done.stderr:
            pytest.skip("the unprivileged user cannot run the project's Python here")
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.strip() == f"error: {locked / 'out.bvh'}: the folder {locked} is not writable"
        assert list(locked.iterdir()) == []
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_read_only_output_file_is_refused_and_kept(good):
    """Run as an unprivileged user where the tests run as root (root may write any file)."""
    folder = Path(tempfile.mkdtemp(prefix="vr_avatar_read_only_file_"))
    try:
        csv = Path(shutil.copy(good / "walk.csv", folder / "walk.csv"))
        take = folder / "take.bvh"
        take.write_text("final take")
        take.chmod(0o444)
        options = {}
        if os.geteuid() == 0:
            os.chown(folder, 65534, -1)
            options["user"] = 65534
        done = _core(["solve", csv, "-o", take, "--orientation", "hmd"], **options)
        if "Permission denied" in done.stderr and "core" not in done.stderr:
            pytest.skip("the unprivileged user cannot run the project's Python here")
        assert done.stderr.strip() == f"error: {take}: is read-only; make it writable or write to another file"
        assert done.returncode == 1 and take.read_text() == "final take"
        assert sorted(p.name for p in folder.iterdir()) == ["take.bvh", "walk.csv"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_ctrl_c_is_one_line_and_exit_130_with_no_output_left(good, tmp_path, capsys, monkeypatch):
    def interrupted(*args, **options):
        raise KeyboardInterrupt

    monkeypatch.setattr("core.tools.cli.write_solution_report", interrupted)
    code = main(["solve", str(good / "walk.csv"), "-o", str(tmp_path / "out.bvh"), "--orientation", "hmd"])
    err = capsys.readouterr().err
    assert code == 130 and err == "error: interrupted; each output is either complete or as it was\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("case, words", [("zero upper arm", ["left upper arm", "0.00 cm long"]),
                                         ("lying down", ["not upright"])])
def test_an_avatar_the_solve_cannot_pose_is_named_before_the_solve(good, tmp_path, capsys, monkeypatch, case, words):
    clip = read_bvh(good / "clip.bvh")
    skeleton, rotations, positions = clip.skeleton, clip.rotations.copy(), clip.positions.copy()
    if case == "zero upper arm":
        elbow = find_mapping(skeleton)["l_forearm"]
        offsets = skeleton.offsets.copy()
        offsets[elbow] = positions[:, elbow] = 0.0
        skeleton = dataclasses.replace(skeleton, offsets=offsets)
    else:
        rotations[:, 0] = quat.multiply(quat.from_axis_rotation("x", np.radians(90.0)), rotations[:, 0])
    avatar = tmp_path / "avatar.bvh"
    write_bvh(avatar, Motion(skeleton, rotations, positions, clip.fps))
    monkeypatch.setattr("core.tools.cli.solve", None)  # never reached
    refused(capsys, tmp_path, ["solve", good / "walk.csv", "--avatar", avatar, "-o", tmp_path / "out.bvh"], avatar, words)


def test_a_damaged_database_through_the_real_entry_point(good, tmp_path):
    db = _damaged_database(good, tmp_path, "truncated")
    done = _core(["solve", good / "walk.csv", "--db", db, "--method", "mm", "-o", tmp_path / "out.bvh"])
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error: {db}: not a VR Avatar database") and done.stderr.count("\n") == 1
    assert not (tmp_path / "out.bvh").exists()


def _never_tracked(s):
    s.tracked = s.tracked.copy()
    s.tracked[:, 0] = False


def _an_hour_gap(s):
    s.times = s.times + np.where(np.arange(len(s.times)) >= 50, 3600.0, 0.0)


@pytest.mark.parametrize("change, words", [(_never_tracked, ["HMD is never tracked"]),
                                           (_an_hour_gap, ["no sample for 3600 s", "cut the stream there"])],
                         ids=["untracked", "hour-gap"])
def test_a_stream_the_solve_cannot_follow_is_named_in_its_one_line(good, tmp_path, capsys, change, words):
    csv = _stream_variant(good, tmp_path, change)
    refused(capsys, tmp_path, ["solve", csv, "-o", tmp_path / "out.bvh"], csv, words)


CHAIN_BVH = TRUNCATED_BVH.replace("Frames: 3", "Frames: 1")
"""Two joints, one frame: a readable BVH that no mapping makes a humanoid."""


@pytest.mark.parametrize("command", ["simulate", "build", "avatar", "stitch"])
def test_a_skeleton_that_is_not_a_humanoid_is_named(good, tmp_path, capsys, command):
    """Among several inputs, the one that does not map onto the humanoid is the one the line names."""
    clip, csv = _copy(good, tmp_path, "clip.bvh", "walk.csv")
    chain = tmp_path / "chain.bvh"
    chain.write_text(CHAIN_BVH)
    args = {"simulate": ["stream", "simulate", chain, "-o", tmp_path / "s.csv"],
            "build": ["db", "build", clip, chain, "-o", tmp_path / "db.npz"],
            "avatar": ["solve", csv, "--avatar", chain, "-o", tmp_path / "out.bvh"],
            "stitch": ["stitch", clip, chain, "-o", tmp_path / "out.bvh"]}[command]
    refused(capsys, tmp_path, args, f"{chain}: skeleton lacks required humanoid joints")


def _z_up(clip: Motion) -> Motion:
    """The clip as a Z-up exporter writes it: the whole body turned +90 degrees about x."""
    rotations = clip.rotations.copy()
    rotations[:, 0] = quat.multiply(quat.from_axis_rotation("x", np.radians(90.0)), rotations[:, 0])
    positions = clip.positions.copy()
    positions[:, 0] = quat.rotate(quat.from_axis_rotation("x", np.radians(90.0)), positions[:, 0])
    return Motion(clip.skeleton, rotations, positions, clip.fps, clip.name)


def _without_toes(clip: Motion) -> Motion:
    """The clip with its toe joints (leaves) left out, as rigs without toes have it."""
    mapping = find_mapping(clip.skeleton)
    kept = [j for j in range(len(clip.skeleton)) if j not in (mapping["l_toes"], mapping["r_toes"])]
    new_index = np.full(len(clip.skeleton), -1)
    new_index[kept] = np.arange(len(kept))
    skeleton = clip.skeleton
    parents = np.where(skeleton.parents[kept] >= 0, new_index[skeleton.parents[kept]], -1)
    skeleton = dataclasses.replace(skeleton, names=tuple(skeleton.names[j] for j in kept), parents=parents,
                                   offsets=skeleton.offsets[kept],
                                   end_sites=tuple((int(new_index[j]), o) for j, o in skeleton.end_sites if j in kept))
    return Motion(skeleton, clip.rotations[:, kept], clip.positions[:, kept], clip.fps, clip.name)


@pytest.mark.parametrize("command", ["simulate", "build", "stitch"])
@pytest.mark.parametrize("change, words", [(_z_up, ["not upright in any frame", "Z-up"]),
                                           (_without_toes, ["no toe joints"])], ids=["z-up", "no-toes"])
def test_a_z_up_clip_or_one_without_toes_is_named_where_it_cannot_be_used(good, tmp_path, capsys, command, change,
                                                                          words):
    """A Z-up export is refused, not built into a database, stitched or simulated lying down; a skeleton without
    toes, usable as an avatar, is refused by the database and stitching, which need them (a KeyError before)."""
    clip = _copy(good, tmp_path, "clip.bvh")[0]
    odd = tmp_path / "odd.bvh"
    write_bvh(odd, change(read_bvh(clip)))
    if change is _without_toes and command == "simulate":
        assert main(["stream", "simulate", str(odd), "-o", str(tmp_path / "s.csv")]) == 0
        return
    args = {"simulate": ["stream", "simulate", odd, "-o", tmp_path / "s.csv"],
            "build": ["db", "build", clip, odd, "-o", tmp_path / "db.npz"],
            "stitch": ["stitch", clip, odd, "-o", tmp_path / "out.bvh"]}[command]
    refused(capsys, tmp_path, args, odd if change is _z_up or command == "build" else "clip odd", words)


@pytest.mark.parametrize("command", [["eval", "characters"], ["eval", "full", "--methods", "hybrid", "--plot", ""],
                                     ["eval", "matching", "--methods", "mm", "--db"]], ids=lambda c: "-".join(c[:2]))
def test_an_evaluation_of_a_folder_with_a_clip_without_toes_names_it_before_any_solve(good, tmp_path, capsys, command):
    """`eval characters` and `eval full` solved the clips before it and ended in a KeyError ('l_toes'): the feet are
    scored by the toes, so the clip is named up front, as `db build` names it, and nothing is solved."""
    clip = _copy(good, tmp_path, "clip.bvh")[0]
    odd = tmp_path / "odd.bvh"
    write_bvh(odd, _without_toes(read_bvh(clip)))
    args = [*command, *([good / "db.npz"] if command[-1] == "--db" else []), "--data", tmp_path, "--split", "all"]
    refused(capsys, tmp_path, args, odd, ["its skeleton has no toe joints"])
