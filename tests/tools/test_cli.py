"""The command line `python -m core` (SPEC §4), run as a user would: a subprocess in the repository root."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.files.bvh import read_bvh, write_bvh
from core.rig.humanoid import CANONICAL_JOINTS, find_mapping
from core.devices.attachments import implied_joint_positions
from core.anim.motion import Motion
from core.files.stream import read_stream
from conftest import DATASET_1, FIXTURE_WALK_1, FIXTURE_WALK_2, core

ROOT = Path(__file__).resolve().parents[2]
WALK = FIXTURE_WALK_1
"""The fixture walk of tests/data: the commands' contracts hold on it as on any humanoid clip."""
BANDAI_WALK = DATASET_1 / "dataset-1_walk_normal_001.bvh"
BANDAI_SHORT_WALK = DATASET_1 / "dataset-1_walk_normal_002.bvh"
WALK_PAIRS = [(FIXTURE_WALK_1, FIXTURE_WALK_2), (BANDAI_WALK, BANDAI_SHORT_WALK)]
"""A walk and a second, shorter one (or a smaller figure's): the fixture walks and two Bandai walks."""


def _header_facts(path: Path) -> tuple[int, int]:
    """(joints, frames) read straight off a BVH file's text."""
    lines = path.read_text().splitlines()
    joints = sum(1 for line in lines if line.split()[:1] in (["ROOT"], ["JOINT"]))
    frames = int(next(line for line in lines if line.startswith("Frames:")).split(":")[1])
    return joints, frames


# --- help ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("words", [[], ["bvh"], ["bvh", "info"], ["stream"], ["stream", "simulate"],
                                   ["stream", "info"], ["train"], ["train", "orientation"], ["eval"],
                                   ["eval", "orientation"], ["eval", "ik"], ["bench"], ["demo"]], ids=" ".join)
def test_help_on_every_level(words):
    done = core(*words, "--help")
    usage = " ".join(["usage: python -m core", *words])
    assert done.stdout.startswith(usage), done.stdout[:200]
    assert done.stderr == ""


def test_no_command_is_a_usage_error():
    done = core(check=False)
    assert done.returncode == 2 and "usage: python -m core" in done.stderr


# --- bvh info -----------------------------------------------------------------------------------


def test_bvh_info_json():
    done = core("bvh", "info", WALK, "--json")
    report = json.loads(done.stdout)  # exactly one JSON object on stdout
    assert list(report) == ["files"] and len(report["files"]) == 1
    info = report["files"][0]
    joints, frames = _header_facts(WALK)
    assert joints == 22 and info["joints"] == 22
    assert info["frames"] == frames
    assert info["fps"] == 30
    assert info["duration_s"] == pytest.approx((frames - 1) / 30, abs=1e-3)
    assert info["units"] == "centimetres" and info["metres_per_unit"] == pytest.approx(0.01)
    assert set(info["mapping"]) == set(CANONICAL_JOINTS) and len(CANONICAL_JOINTS) == 21
    assert info["mapping"]["hips"] == "Hips"
    assert info["mapping"]["l_hand"] == "Hand_L" and info["mapping"]["r_toes"] == "Toes_R"
    names_in_file = set(WALK.read_text().split())
    assert set(info["mapping"].values()) <= names_in_file
    assert info["file"] == str(WALK)


def test_bvh_info_text():
    done = core("bvh", "info", WALK)
    first = done.stdout.splitlines()[0]
    assert first.startswith(f"{WALK}: 22 joints, ") and "at 30 fps" in first and "centimetres" in first


@pytest.fixture
def truncated_bvh(tmp_path) -> tuple[Path, int, int]:
    """The walk clip cut after 10 frames: (path, line where frame 11 should be, declared frames)."""
    lines = WALK.read_text().splitlines()
    motion = lines.index("MOTION") + 1  # 1-based line of MOTION; frames start two lines later
    kept = lines[:motion + 2 + 10]
    path = tmp_path / "truncated.bvh"
    path.write_text("\n".join(kept) + "\n")
    return path, motion + 3 + 10, _header_facts(WALK)[1]


def test_bvh_info_on_a_malformed_file(truncated_bvh):
    path, line, frames = truncated_bvh
    done = core("bvh", "info", path, check=False)
    assert done.returncode == 1
    assert f"{path}:{line}: truncated motion: 10 frames of the {frames} declared" in done.stderr
    assert "Traceback" not in done.stderr


def test_bvh_info_reports_good_files_beside_a_malformed_one(truncated_bvh):
    path, line, _ = truncated_bvh
    done = core("bvh", "info", WALK, path, "--json", check=False)
    assert done.returncode == 1
    files = json.loads(done.stdout)["files"]
    by_file = {f["file"]: f for f in files}
    assert by_file[str(WALK)]["joints"] == 22
    assert f"{path}:{line}:" in by_file[str(path)]["error"]
    assert f"{path}:{line}:" in done.stderr


def test_bvh_info_on_a_missing_file(tmp_path):
    missing = tmp_path / "absent.bvh"
    done = core("bvh", "info", missing, check=False)
    assert done.returncode == 1 and str(missing) in done.stderr and "Traceback" not in done.stderr


def test_bvh_info_into_a_closed_pipe_exits_quietly():
    """`bvh info DIR | head`: the reader leaves before the output ends."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sys.executable, "-m", "core", "bvh", "info", str(WALK)], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(write_end)
    assert done.returncode == 0 and done.stderr == ""


# --- stream simulate / stream info ------------------------------------------------------------


def test_stream_simulate_then_info(tmp_path):
    csv, truth = tmp_path / "walk.csv", tmp_path / "walk.truth.bvh"
    done = core("stream", "simulate", WALK, "-o", csv, "--look-around", 30, "--truth", truth)
    assert done.stdout == ""  # progress goes to stderr
    assert csv.is_file() and truth.is_file()
    assert csv.read_text().startswith(f"# simulated from {WALK.name}")

    _, frames = _header_facts(WALK)
    clip_s = (frames - 1) / 30
    info = json.loads(core("stream", "info", csv, "--json").stdout)
    assert info["rate_hz"] == pytest.approx(60.0, abs=0.01)
    assert info["untracked"] == {"head": 0, "left": 0, "right": 0}
    assert info["gaps"] == []
    assert info["samples"] == int(np.floor(clip_s * 60 + 1e-6)) + 1
    assert info["duration_s"] == pytest.approx(clip_s, abs=1 / 60)

    # The truth written beside the stream is what the stream was simulated from: its wrists sit
    # where the controllers imply (CSV and BVH both carry six decimals).
    stream = read_stream(csv)
    motion = read_bvh(truth, scale=1.0)
    assert motion.fps == 60 and len(motion) == len(stream)
    mapping = find_mapping(motion.skeleton)
    wrists = motion.global_positions()[:, [mapping["l_hand"], mapping["r_hand"]]]
    assert np.abs(wrists - implied_joint_positions(stream)[:, 1:]).max() < 1e-4


def test_stream_info_rejects_a_bad_file_naming_the_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("# comment\nt,head_px\n0,1\n")
    done = core("stream", "info", bad, check=False)
    assert done.returncode == 1
    assert f"{bad}:2: header lacks column(s)" in done.stderr and "Traceback" not in done.stderr


def test_stream_info_reads_a_headset_only_stream_with_hmd_only(tmp_path):
    head_only = tmp_path / "head.csv"
    head_only.write_text("t,head_px,head_py,head_pz,head_qw,head_qx,head_qy,head_qz\n"
                         + "".join(f"{i / 72:.6f},0,1.6,0,1,0,0,0\n" for i in range(144)))
    refused = core("stream", "info", head_only, check=False)
    assert refused.returncode == 1 and "stream info --hmd-only" in refused.stderr
    info = json.loads(core("stream", "info", head_only, "--hmd-only", "--json").stdout)
    assert info["untracked"] == {"head": 0}
    assert info["samples"] == 144 and info["rate_hz"] == pytest.approx(72.0, abs=0.01)


# --- demo ---------------------------------------------------------------------------------------


def test_demo_names_a_missing_mocap_folder(tmp_path):
    missing = tmp_path / "nonexistent"
    done = core("demo", "--mocap", missing, "--out", tmp_path / "out", check=False)
    assert done.returncode == 1
    assert f"motion capture not found: {missing}" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_the_demo_and_the_extension_build_from_a_clone_alone(tmp_path):
    """A copy of the repository's files with nothing beside it, as a user's clone: the demo runs on the procedural
    walks it carries, solves with the default (no database needed) and the scene is baked and rendered; the extension builds with no `.venv`."""
    clone = tmp_path / "clone"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, clone / name)
    env = {k: v for k, v in os.environ.items() if k != "VR_AVATAR_MOCAP"} | {"PYTHONPATH": str(clone)}
    done = subprocess.run([sys.executable, "-m", "core", "demo", "--out", "out"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "running on the repository's own procedural walks" in done.stderr
    summary = json.loads(done.stdout)
    assert summary["clip"].startswith("dataset-0_") and summary["solved"]["figures"]["hand_cm"] < 0.1
    scene = subprocess.run([sys.executable, "-m", "addon_tools.demo_scene", "--out", "out", "--stream",
                            summary["stream"], "--db", summary["solved"]["database"], "--avatar", summary["bvh_copy"]],
                           cwd=clone, env=env, capture_output=True, text=True, timeout=300)
    assert scene.returncode == 0, scene.stderr
    assert (clone / "out" / "demo.blend").stat().st_size > 100_000 and (clone / "out" / "demo.png").stat().st_size > 10_000
    built = subprocess.run([sys.executable, "build.py", "extension", "--no-wheels"], cwd=clone, env=env,
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    assert Path(built.stdout.strip()).parent == clone / "dist" and not (clone / ".venv").exists()


@pytest.mark.parametrize("walks", WALK_PAIRS, ids=["fixture", "bandai"])
def test_demo_on_a_small_folder(tmp_path, walks):
    WALK, SHORT_WALK = walks
    mocap = tmp_path / "mocap"
    mocap.mkdir()
    for clip in (WALK, SHORT_WALK):
        shutil.copyfile(clip, mocap / clip.name)
    out = tmp_path / "out"
    done = core("demo", "--mocap", mocap, "--out", out)
    summary = json.loads(done.stdout)
    clip = summary["clip"]
    assert clip in (WALK.name, SHORT_WALK.name)
    stem = Path(clip).stem
    written = {p.name for p in out.iterdir()}
    assert written == {f"{stem}.stream.csv", f"{stem}.bvh", f"{stem}.truth.bvh", "default.db.npz",
                       f"{stem}.solved.bvh", f"{stem}.solved.report.json", f"{stem}.solved.report.png"}
    solved = summary["solved"]
    assert len(read_bvh(out / f"{stem}.solved.bvh", scale=1.0)) == summary["stream_samples"]
    assert solved["database_clips"] == 1 and solved["figures"]["root_cm"] < 30.0
    assert 0.0 <= solved["figures"]["hand_cm"] < 0.1  # the default's arms (and torso) reach the controllers
    stream = read_stream(out / f"{stem}.stream.csv")
    assert len(stream) == summary["stream_samples"] and stream.tracked.all()
    assert summary["stream_rate_hz"] == pytest.approx(60.0, abs=0.01)
    assert summary["bvh_roundtrip_max_error_m"] < 1e-4
    copy = read_bvh(out / f"{stem}.bvh", scale=1.0)
    assert len(copy) == _header_facts(mocap / clip)[1]
    reference = summary["truth_reference"]
    # The written stream (6 decimals) implies the truth's wrists to within a micrometre-scale error.
    assert reference["hand_cm_from_written_stream"] < 1e-3
    assert reference["foot_skate_cm_s"] >= 0.0 and reference["jitter"] > 0.0


@pytest.mark.parametrize("walks", WALK_PAIRS, ids=["fixture", "bandai"])
def test_solve_onto_a_bvh_character_fits_it_to_the_person_or_keeps_its_size(tmp_path, walks):
    """`solve --avatar`: a character 0.8 times the actor's size, standing in none of its BVH rest pose (the
    Bandai rest lies along X, the fixture's is a T-pose), fitted so its head meets the headset, or kept at its size
    with the solve scaled."""
    WALK, SHORT_WALK = walks
    avatar = read_bvh(SHORT_WALK)
    small = tmp_path / "small.bvh"
    write_bvh(small, Motion(avatar.skeleton.scaled(0.8), avatar.rotations, avatar.positions * 0.8, avatar.fps))
    clip = tmp_path / "walk.bvh"
    shutil.copy(WALK, clip)
    stream, db = tmp_path / "walk.csv", tmp_path / "walk.npz"
    core("stream", "simulate", clip, "-o", stream)
    core("db", "build", WALK, "-o", db)  # the fixture's second walk is a smaller figure's: another skeleton
    heads = {}
    for size in ("fit", "keep"):
        out = tmp_path / f"{size}.bvh"
        core("solve", stream, "--db", db, "-o", out, "--avatar", small, "--avatar-size", size)
        motion = read_bvh(out, scale=1.0)
        mapping = find_mapping(motion.skeleton)
        positions = motion.global_positions()
        implied = implied_joint_positions(read_stream(stream).resampled(motion.fps))[:len(motion), 0]
        heads[size] = (positions[:, mapping["head"]], implied, motion.skeleton.offsets)
        hips = positions[:, mapping["hips"], 1]
        assert 0.6 < hips.min() / hips.max() and positions[:, mapping["l_toes"], 1].min() > -1e-4
    fitted, implied, offsets = heads["fit"]
    assert np.linalg.norm(fitted - implied, axis=-1).mean() < 0.02
    assert offsets[1:].max() > avatar.skeleton.offsets[1:].max() * 0.8 * 1.1  # scaled up toward the person
    kept, _, kept_offsets = heads["keep"]
    np.testing.assert_allclose(kept_offsets, avatar.skeleton.offsets * 0.8, atol=1e-4)
    assert kept[:, 1].mean() < 0.9 * implied[:, 1].mean()  # its head stays at its own height


@pytest.mark.parametrize("walks", WALK_PAIRS[:1], ids=["fixture"])
def test_solve_onto_a_small_character_in_centimetres_takes_its_scale_when_given(tmp_path, walks):
    """A figure 0.45 times the actor's size written in centimetres reads as inches by its size (0.7 m in
    centimetres is 1.8 m in inches); `--avatar-scale 0.01` says what its units are, and `keep` keeps it that small."""
    WALK, SHORT_WALK = walks
    avatar = read_bvh(SHORT_WALK)
    small = tmp_path / "child.bvh"
    write_bvh(small, Motion(avatar.skeleton.scaled(0.45), avatar.rotations, avatar.positions * 0.45, avatar.fps),
              scale=100.0)
    stream = tmp_path / "walk.csv"
    core("stream", "simulate", WALK, "-o", stream)
    offsets = {}
    for scale in ((), ("--avatar-scale", "0.01")):
        out = tmp_path / f"kept{len(scale)}.bvh"
        core("solve", stream, "-o", out, "--avatar", small, "--avatar-size", "keep", *scale)
        offsets[bool(scale)] = read_bvh(out, scale=1.0).skeleton.offsets
    assert not np.allclose(offsets[False], avatar.skeleton.offsets * 0.45, atol=1e-3)
    np.testing.assert_allclose(offsets[True], avatar.skeleton.offsets * 0.45, atol=1e-4)
