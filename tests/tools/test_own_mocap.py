"""A user's own motion capture through the commands that read mocap (train, db build, stitch, eval): a folder of a
few files with names of their own, no Bandai split, clips that are Z-up or short; each refused with one line naming
the file (exit 1, no traceback, nothing written) or used as it is."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import FIXTURE_WALK_1

from core.anim.motion import Motion
from core.errors import InputError
from core.files.bvh import read_bvh, write_bvh
from core.math import quat
from core.matching.pose_database import build_database
from core.tools.cli import main
from core.tools.mocap_split import default_database_files, is_validation, split_by_file, training_split

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _named(stem: str, validation: bool, start: int = 0) -> str:
    """The first file name `stem`N.bvh (N from `start`) that the split by file puts in validation, or in training."""
    return next(f"{stem}{n}.bvh" for n in range(start, start + 1000) if is_validation(Path(f"{stem}{n}.bvh")) == validation)


def _z_up(motion: Motion) -> Motion:
    """The clip as a Z-up exporter writes it: turned 90 degrees about +X."""
    turn = quat.from_axis_rotation("x", np.pi / 2)
    rotations, positions = motion.rotations.copy(), motion.positions.copy()
    rotations[:, 0] = quat.multiply(turn[None], rotations[:, 0])
    positions[:, 0] = quat.rotate(turn[None], positions[:, 0])
    return Motion(motion.skeleton, rotations, positions, motion.fps, motion.name)


def _folder(tmp_path: Path, names, source=FIXTURE_WALK_1, change=lambda clip: clip) -> Path:
    """A folder of the procedural walk (`change`d) under the given file names."""
    folder = tmp_path / "mine"
    folder.mkdir()
    clip = change(read_bvh(source))
    for name in names:
        write_bvh(folder / name, clip, scale=100.0)
    return folder


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None) for p in folder.rglob("*")}


def refused(capsys, folder: Path, args, named) -> str:
    """Run the command line in-process: exit 1, the last line `error: ...` naming `named` and no other error or traceback
    (what the command said it is doing may come before), the folder unchanged."""
    before = _snapshot(folder)
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 1 and lines[-1].startswith("error: "), err
    assert [line for line in lines if "error" in line.lower()] == lines[-1:], err  # progress lines before it only
    assert str(named) in lines[-1], err
    assert _snapshot(folder) == before
    return lines[-1]


# --- the split by file on a few files of one's own --------------------------------------------------------------


@SETTINGS
@given(names=st.lists(st.text("abcdefghijklmnopqrstuvwxyz_-0123456789", min_size=1, max_size=12), min_size=2,
                      max_size=6, unique=True))
def test_training_split_holds_a_file_out_on_each_side_whatever_the_names(names):
    files = [Path(f"{name}.bvh") for name in names]
    training, validation = training_split(files)
    assert training and validation
    assert sorted(training + validation) == sorted(files)
    hashed = split_by_file(files)
    if hashed[0] and hashed[1]:
        assert (training, validation) == hashed


def test_training_split_of_one_file_names_it():
    with pytest.raises(InputError, match="take.bvh"):
        training_split([Path("take.bvh")])


@pytest.mark.parametrize("command", [["train", "ik", "--evaluations", "5"], ["train", "stitch", "--epochs", "1"],
                                     ["train", "n3p", "--minutes", "0.01"],
                                     ["train", "orientation", "--architecture", "mmvr", "--epochs", "1"],
                                     ["train", "orientation", "--epochs", "1"]],
                         ids=lambda c: "-".join(c[1:3]))
def test_training_on_one_file_is_refused_naming_it(tmp_path, capsys, command):
    """Written into folders that do not exist yet: the refusal leaves none of them behind (they were left empty)."""
    folder = _folder(tmp_path, [_named("take", validation=False)])
    refused(capsys, tmp_path, [*command, "--data", folder, "-o", tmp_path / "models" / "v2" / "model.npz"],
            next(folder.iterdir()))


def test_training_on_files_the_split_puts_on_one_side_holds_one_out(tmp_path, capsys):
    """Two files whose names both go to training: the last is validated on, and the record says so."""
    folder = _folder(tmp_path, [_named("take", validation=False), _named("take", validation=False, start=50)])
    output = tmp_path / "ik.json"
    assert main(["train", "ik", "--data", str(folder), "-o", str(output), "--evaluations", "5", "--frame-step", "8"]) == 0
    assert "note: " in capsys.readouterr().err
    record = json.loads(output.read_text())
    assert record["record"]["training_files"] == 1 and record["record"]["validation_files"] == 1
    assert np.isfinite(record["record"]["validation_elbow_cm"]["fitted"])


# --- a Z-up export ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["eval", "full", "--split", "all", "--methods", "hybrid", "--plot", ""],
    ["eval", "characters", "--split", "all"], ["eval", "orientation", "--split", "all", "--plot", "OUT.png"],
    ["eval", "matching", "--split", "all", "--methods", "mm", "--db", "DB"], ["eval", "ik", "--split", "all"],
    ["eval", "calibration", "--split", "all"], ["train", "n3p", "--minutes", "0.01", "-o", "OUT.npz"],
    ["train", "ik", "--evaluations", "5", "-o", "OUT.json"], ["train", "stitch", "--epochs", "1", "-o", "OUT.npz"],
    ["train", "orientation", "--epochs", "1", "-o", "OUT.npz"]], ids=lambda c: "-".join(c[:2]))
def test_a_z_up_folder_is_refused_naming_its_file(tmp_path, capsys, command):
    """Eval scored a Z-up folder as a person lying down (MPJPE 137 cm), training trained on it."""
    folder = _folder(tmp_path, ["take_a.bvh", "take_b.bvh"], change=_z_up)
    database = tmp_path / "db.npz"
    build_database([read_bvh(FIXTURE_WALK_1)]).save(database)
    args = [{"DB": database, "OUT.npz": tmp_path / "out.npz", "OUT.json": tmp_path / "out.json",
             "OUT.png": tmp_path / "out.png"}.get(a, a)
            for a in command]
    line = refused(capsys, tmp_path, [*args, "--data", folder], folder / "take_a.bvh")
    assert "+Y up" in line


# --- evaluating a folder without Bandai's split ------------------------------------------------------------------


@pytest.mark.parametrize("command", [["eval", "orientation", "--plot", "OUT.png"],
                                     ["eval", "full", "--methods", "hybrid", "--plot", ""], ["eval", "characters"]],
                         ids=lambda c: "-".join(c[:2]))
def test_a_folder_the_split_leaves_no_validation_file_says_to_evaluate_all(tmp_path, capsys, command):
    """eval orientation said 'need at least one array to concatenate'."""
    folder = _folder(tmp_path, [_named("take", validation=False)])
    args = [tmp_path / "plots" / "out.png" if a == "OUT.png" else a for a in command]
    line = refused(capsys, tmp_path, [*args, "--data", folder], folder)
    assert "--split all" in line


@SETTINGS
@given(names=st.lists(st.text("abcdefghijklmnopqrstuvwxyz_-0123456789", min_size=1, max_size=12), min_size=1,
                      max_size=8, unique=True))
def test_the_default_database_of_files_named_ones_own_way_leaves_the_validation_files_out(names):
    """eval full's default database took every file, the evaluated validation clips too, where no name was Bandai's
    locomotion."""
    files = [Path(f"{name}.bvh") for name in names]
    training, validation = split_by_file(files)
    chosen = default_database_files(files)
    assert chosen == (training or files)


# --- clips shorter than what a trainer reads at once ----------------------------------------------------------


@pytest.mark.parametrize("command", [["train", "stitch", "--epochs", "1"],
                                     ["train", "orientation", "--architecture", "mmvr", "--epochs", "1",
                                      "--windows-per-epoch", "64"]], ids=lambda c: "-".join(c[:2]))
def test_training_on_clips_shorter_than_its_window_is_refused(tmp_path, capsys, command):
    """Half-second clips: train stitch said 'need at least one array to concatenate'; the paper's orientation network
    trained on no window (loss NaN) and was written."""
    names = [_named("take", validation=False), _named("take", validation=True)]
    folder = _folder(tmp_path, names, change=lambda clip: clip[:15])
    line = refused(capsys, tmp_path, [*command, "--data", folder, "-o", tmp_path / "model.npz"],
                   folder / names[0] if command[1] == "stitch" else "training clip")
    assert "frames" in line


# --- eval characters on a clip that stands still ------------------------------------------------------------------


@SETTINGS
@given(clips=st.lists(st.tuples(st.integers(1, 2000), st.floats(0.0, 10.0), st.floats(0.0, 10.0)), min_size=1,
                      max_size=6))
def test_eval_characters_pools_each_ratio_as_eval_full_pools_foot_skating(clips):
    """Per-clip ratios were averaged, so a clip whose truth barely moved (1,432,024 times) ruined the folder's: each
    ratio is the frame-weighted mean of the solve's figure over the truth's, and a clip's, or the pool's, is not
    defined (None) where the truth's figure is under its floor."""
    from core.tools.eval.characters import AVERAGED, RATIOS, pooled, with_ratios

    rows = [with_ratios({**dict.fromkeys(AVERAGED, 1.0), "toe_lift_cm": ours, "toe_lift_cm_truth": truth,
                         "foot_slide_cm_s": ours, "foot_slide_cm_s_truth": truth, "solver_foot_slide_cm_s": ours / 2,
                         "frames": frames}) for frames, ours, truth in clips]
    frames = np.array([f for f, _, _ in clips], dtype=float)
    ours, truth = (np.array([c[k] for c in clips]) @ frames / frames.sum() for k in (1, 2))
    together = pooled(rows)
    for name, (_, _, floor) in RATIOS.items():
        share = 0.5 if name.startswith("solver") else 1.0
        for row, (_, clip_ours, clip_truth) in zip(rows, clips):
            assert row[name] == (None if clip_truth < floor else pytest.approx(share * clip_ours / clip_truth))
        assert together[name] == (None if truth < floor else pytest.approx(share * ours / truth))
        defined = [row[name] for row in rows]
        if None not in defined:
            assert min(defined) - 1e-9 <= together[name] <= max(defined) + 1e-9


def test_eval_characters_of_a_clip_standing_still_beside_a_walk(tmp_path, capsys):
    """The standing clip's ratios are not defined (null, '-' in the text); the folder's are the walk's figures pooled
    with its frames, not millions."""
    walk = read_bvh(FIXTURE_WALK_1)[:120]
    folder = _folder(tmp_path, ["walk.bvh"], change=lambda clip: clip[:120])
    still = np.zeros(90, int)
    write_bvh(folder / "still.bvh", Motion(walk.skeleton, walk.rotations[still], walk.positions[still], walk.fps),
              scale=100.0)
    assert main(["eval", "characters", "--data", str(folder), "--split", "all", "--json"]) == 0
    out = capsys.readouterr()
    result = json.loads(out.out)
    ratios = ("toe_lift_ratio", "foot_slide_ratio", "solver_foot_slide_ratio")
    assert all(result["clips"]["still"][k] is None for k in ratios)
    assert "foot_slide_ratio=-" in next(line for line in out.err.splitlines() if line.startswith("still "))
    mean = result["mean"]
    assert mean["foot_slide_ratio"] == pytest.approx(mean["foot_slide_cm_s"] / mean["foot_slide_cm_s_truth"], rel=0.02)
    assert mean["toe_lift_ratio"] == pytest.approx(mean["toe_lift_cm"] / mean["toe_lift_cm_truth"], rel=0.02)
    assert all(0.0 < mean[k] < 10.0 for k in ratios)
    assert result["activities"]["walk"]["foot_slide_ratio"] == result["clips"]["walk"]["foot_slide_ratio"]
