"""BVH reading and writing on the real Bandai files and the fixture walks, synthetic channel layouts, units and
malformed files."""
import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from core.math import quat
from core.files.bvh import BVHError, guess_units, read_bvh, write_bvh
from core.anim.motion import Motion
from core.anim.skeleton import Skeleton
from conftest import FIXTURE_WALK_1, FIXTURE_WALK_2, WALK_1, WALK_2

BAD = Path(__file__).resolve().parents[1] / "data" / "bad_bvh"
EXPECTED_ERRORS = json.loads((BAD / "expected.json").read_text())


@pytest.mark.parametrize("path, root", [(WALK_1, "joint_Root"), (WALK_2, "joint_Root"), (FIXTURE_WALK_1, "Root"),
                                        (FIXTURE_WALK_2, "Root")], ids=["dataset-1", "dataset-2", "fixture-1", "fixture-2"])
def test_reads_walks_in_metres(path, root):
    """Bandai's walks, and the procedural walks of tests/data written as Bandai's (centimetres, a static root
    above the hips)."""
    motion = read_bvh(path)
    assert motion.skeleton.names[:2] == (root, "Hips")
    assert len(motion.skeleton) == 22 and motion.fps == 30.0
    raw = read_bvh(path, scale=1.0)
    assert guess_units(raw) == (0.01, "centimetres")
    positions = motion.global_positions()
    hips = positions[:, motion.skeleton.index("Hips")]
    head = positions[:, motion.skeleton.index("Head")]
    # An adult walking: hips near 0.9 m, head joint well above them, feet on the floor at y = 0.
    assert 0.8 < hips[:, 1].mean() < 1.1
    assert np.all(head[:, 1] - hips[:, 1] > 0.3)
    assert abs(positions[..., 1].min()) < 0.05
    # The clip walks: the hips travel more than a metre.
    assert np.linalg.norm(hips[-1, [0, 2]] - hips[0, [0, 2]]) > 1.0


WALKS = [FIXTURE_WALK_1, FIXTURE_WALK_2, WALK_1, WALK_2]
WALK_IDS = ["fixture-1", "fixture-2", "dataset-1", "dataset-2"]


@pytest.mark.parametrize("path", WALKS, ids=WALK_IDS)
@pytest.mark.parametrize("order,scale", [("zxy", 1.0), ("xyz", 100.0), ("yzx", 1.0)])
def test_round_trip_reproduces_global_positions(tmp_path, path, order, scale):
    motion = read_bvh(path)
    out = tmp_path / "copy.bvh"
    write_bvh(out, motion, order=order, scale=scale)
    copy = read_bvh(out, scale=1.0 / scale)
    assert copy.skeleton.names == motion.skeleton.names
    assert copy.fps == motion.fps and len(copy) == len(motion)
    assert np.abs(copy.global_positions() - motion.global_positions()).max() < 1e-5
    # Dataset 2 animates translations on every joint; auto mode keeps what moves.
    assert np.abs(copy.positions - motion.positions).max() < 1e-5


@pytest.mark.parametrize("path", [FIXTURE_WALK_1, WALK_1], ids=["fixture", "dataset-1"])
def test_root_only_translation_refuses_to_lose_animated_joints(tmp_path, path):
    # Bandai (and the fixture walks) animate the Hips below a static root: root-only channels would drop that.
    walk1 = read_bvh(path)
    with pytest.raises(ValueError, match="would lose animated joint translations"):
        write_bvh(tmp_path / "root_only.bvh", walk1, translations="root")
    assert not (tmp_path / "root_only.bvh").exists()
    # The same clip with its translation moved onto the root: nothing below it moves.
    motion = Motion.from_root(walk1.skeleton, walk1.rotations, walk1.positions[:, 1] - walk1.skeleton.offsets[1], walk1.fps)
    write_bvh(tmp_path / "root_only.bvh", motion, translations="root")
    text = (tmp_path / "root_only.bvh").read_text()
    assert text.count("CHANNELS 6") == 1 and "CHANNELS 3 Zrotation Xrotation Yrotation" in text
    copy = read_bvh(tmp_path / "root_only.bvh", scale=1.0)
    assert np.abs(copy.global_positions() - motion.global_positions()).max() < 1e-5


def test_any_channel_order_and_count(tmp_path):
    """Position channels on a child, a single rotation channel, unusual orders, an End Site."""
    text = """HIERARCHY
ROOT Root
{
  OFFSET 1 2 3
  CHANNELS 4 Yrotation Xposition Zrotation Zposition
  JOINT Child
  {
    OFFSET 0 10 0
    CHANNELS 4 Xrotation Yposition Yrotation Zrotation
    JOINT Leaf
    {
      OFFSET 5 0 0
      CHANNELS 1 Zrotation
      End Site
      {
        OFFSET 0 0 7
      }
    }
  }
}
MOTION
Frames: 2
Frame Time: 0.02
30 4 45 6 10 20 -30 60 90
0 0 0 0 0 10 0 0 0
"""
    path = tmp_path / "layout.bvh"
    path.write_text(text)
    motion = read_bvh(path, scale=1.0)
    assert motion.fps == 50.0 and motion.skeleton.end_sites == ((2, (0.0, 0.0, 7.0)),)
    d = np.radians
    root_rotation = quat.multiply(quat.from_axis_rotation("y", d(30)), quat.from_axis_rotation("z", d(45)))
    child_rotation = quat.from_euler(d(np.array([10.0, -30.0, 60.0])), "xyz")
    leaf_rotation = quat.from_axis_rotation("z", d(90))
    assert np.allclose(motion.rotations[0], [root_rotation, child_rotation, leaf_rotation])
    # Position channels replace their offset components; the others keep the OFFSET.
    assert np.allclose(motion.positions[0], [[4, 2, 6], [0, 20, 0], [5, 0, 0]])
    root = np.array([4.0, 2.0, 6.0])
    child = root + quat.rotate(root_rotation, np.array([0.0, 20.0, 0.0]))
    leaf = child + quat.rotate(quat.multiply(root_rotation, child_rotation), np.array([5.0, 0.0, 0.0]))
    assert np.allclose(motion.global_positions()[0], [root, child, leaf])
    # Second frame: identities, the child's Y channel says 10.
    assert np.allclose(motion.global_positions()[1], [[0, 2, 0], [0, 12, 0], [5, 12, 0]])
    out = tmp_path / "rewritten.bvh"
    write_bvh(out, motion)
    copy = read_bvh(out, scale=1.0)
    assert np.abs(copy.global_positions() - motion.global_positions()).max() < 1e-5
    assert copy.skeleton.end_sites == ((2, (0.0, 0.0, 7.0)),)


@pytest.mark.parametrize("metres_per_unit,name", [(1.0, "metres"), (0.001, "millimetres"),
                                                  (0.0254, "inches"), (0.056444, "CMU units (1/0.45 inch)")])
@pytest.mark.parametrize("path", [FIXTURE_WALK_2, WALK_1], ids=["fixture", "dataset-1"])
def test_guesses_units(tmp_path, path, metres_per_unit, name):
    walk1 = read_bvh(path)
    out = tmp_path / "units.bvh"
    write_bvh(out, walk1[:20], scale=1.0 / metres_per_unit)
    raw = read_bvh(out, scale=1.0)
    assert guess_units(raw) == (metres_per_unit, name)
    assert np.abs(read_bvh(out).global_positions() - walk1[:20].global_positions()).max() < 1e-4


def test_writer_orders_columns_depth_first(tmp_path):
    """A skeleton listed breadth-first is written in hierarchy order and reads back by name."""
    skeleton = Skeleton(("root", "a", "b", "a1", "b1"), np.array([-1, 0, 0, 1, 2]),
                        np.array([[0, 1, 0], [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0.0]]))
    rng = np.random.default_rng(4)
    rotations = quat.normalize(rng.normal(size=(3, 5, 4)))
    motion = Motion.from_root(skeleton, rotations, rng.normal(size=(3, 3)), 30.0)
    write_bvh(tmp_path / "bfs.bvh", motion)
    copy = read_bvh(tmp_path / "bfs.bvh", scale=1.0)
    assert copy.skeleton.names == ("root", "a", "a1", "b", "b1")
    order = [copy.skeleton.names.index(n) for n in skeleton.names]
    assert np.abs(copy.global_positions()[:, order] - motion.global_positions()).max() < 1e-5


def test_a_hierarchy_deeper_than_python_recurses_is_written_and_reads_back(tmp_path):
    """A 1500-joint chain (a rope or hair) with an end site: deeper than Python recurses (1000)."""
    joints = 1500
    skeleton = Skeleton(tuple(f"j{k}" for k in range(joints)), np.arange(joints) - 1,
                        np.tile([0.0, 0.01, 0.0], (joints, 1)), end_sites=((joints - 1, (0.0, 0.02, 0.0)),))
    rotations = quat.normalize(np.random.default_rng(2).normal([1, 0, 0, 0], 0.01, size=(2, joints, 4)))
    motion = Motion.from_root(skeleton, rotations, np.zeros((2, 3)), 30.0)
    write_bvh(tmp_path / "deep.bvh", motion)
    copy = read_bvh(tmp_path / "deep.bvh", scale=1.0)
    assert copy.skeleton.names == skeleton.names and copy.skeleton.end_sites == skeleton.end_sites
    np.testing.assert_allclose(copy.rotations, motion.rotations * np.sign(copy.rotations[..., :1] * motion.rotations[..., :1]),
                               atol=1e-5)


def _traced_peak(write) -> int:
    """The most memory (bytes) Python allocated at once while `write()` ran."""
    tracemalloc.start()
    try:
        write()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_long_motion_is_written_a_block_of_frames_at_a_time(tmp_path, monkeypatch):
    """Eight times the frames take less than twice the memory to write (1.8 times: the checks over the whole
    motion; the whole text at once took eight times as much), and the blocks' seams do not show: the file is the one
    a single block writes."""
    skeleton = Skeleton(("root", "a", "b"), np.array([-1, 0, 1]), np.array([[0, 1, 0], [0, 0.5, 0], [0, 0.5, 0.0]]))
    rng = np.random.default_rng(7)
    motion = Motion.from_root(skeleton, quat.normalize(rng.normal(size=(8000, 3, 4))), rng.normal(size=(8000, 3)),
                              60.0)
    write_bvh(tmp_path / "one_block.bvh", motion)
    monkeypatch.setattr("core.files.bvh.ROWS_PER_WRITE", 250)
    write_bvh(tmp_path / "blocks.bvh", motion)
    assert (tmp_path / "blocks.bvh").read_bytes() == (tmp_path / "one_block.bvh").read_bytes()
    short = _traced_peak(lambda: write_bvh(tmp_path / "short.bvh", motion[:1000]))
    long = _traced_peak(lambda: write_bvh(tmp_path / "long.bvh", motion))
    assert long < 2.5 * short


LATIN_1_NAMES = st.lists(st.text(st.characters(min_codepoint=0x41, max_codepoint=0xFF, categories=("Lu", "Ll")),
                                  min_size=1, max_size=8), min_size=3, max_size=3, unique=True)


@settings(max_examples=60, deadline=None)
@given(LATIN_1_NAMES, st.sampled_from(["utf-8", "latin-1"]))
def test_joint_names_in_utf_8_or_latin_1_are_kept_exactly(tmp_path_factory, names, encoding):
    """Older exporters write Latin-1 ("Hüfte"): read as such, not turned into U+FFFD."""
    path = tmp_path_factory.mktemp("names") / "names.bvh"
    skeleton = Skeleton(tuple(names), np.array([-1, 0, 1]), np.array([[0, 1, 0], [0, 0.5, 0], [0, 0.5, 0.0]]))
    write_bvh(path, Motion.from_root(skeleton, np.tile([1.0, 0, 0, 0], (2, 3, 1)), np.zeros((2, 3)), 30.0))
    path.write_bytes(path.read_text(encoding="utf-8").encode(encoding))
    assert read_bvh(path, scale=1.0).skeleton.names == tuple(names)


@pytest.mark.parametrize("text", ["1_0", "\u0661\u0662"])
def test_python_number_syntax_in_the_motion_is_named_at_its_line(tmp_path, text):
    path = tmp_path / "odd.bvh"
    write_bvh(path, read_bvh(FIXTURE_WALK_1)[:5])
    lines = path.read_text().splitlines()
    row = lines.index("MOTION") + 4  # the second frame
    lines[row] = " ".join([text] + lines[row].split()[1:])
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(BVHError) as raised:
        read_bvh(path)
    assert str(raised.value) == f"{path}:{row + 1}: value 1 is not a number: {text!r}"


@pytest.mark.parametrize("name", sorted(EXPECTED_ERRORS))
def test_malformed_files_raise_one_error_type_with_file_and_line(name):
    line, message = EXPECTED_ERRORS[name]
    path = BAD / name
    with pytest.raises(BVHError) as caught:
        read_bvh(path)
    error = caught.value
    assert error.path == str(path) and error.line == line
    assert str(error) == (f"{path}:{line}: {message}" if line else f"{path}: {message}")


def test_every_malformed_file_in_the_corpus_is_listed():
    assert sorted(p.name for p in BAD.glob("*.bvh")) == sorted(EXPECTED_ERRORS)


def test_missing_file(tmp_path):
    with pytest.raises(BVHError, match="cannot read"):
        read_bvh(tmp_path / "absent.bvh")


HEADER = """HIERARCHY
ROOT Hips
{
\tOFFSET 0 90 0
\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
\tEnd Site
\t{
\t\tOFFSET 0 10 0
\t}
}
MOTION
Frames: %d
Frame Time: 0.0333333
"""


def test_a_channel_listed_twice_is_refused_at_its_line(tmp_path):
    path = tmp_path / "twice.bvh"
    path.write_text((HEADER % 1).replace("Zrotation Xrotation Yrotation", "Zrotation Xrotation Xrotation")
                    + "0 0 0 0 0 0\n")
    with pytest.raises(BVHError, match=r"twice\.bvh:5: channel 'Xrotation' is listed twice"):
        read_bvh(path)


def test_binary_data_claiming_a_hundred_million_frames_is_refused_unread(tmp_path):
    """A sparse 1 GB file of zeros under a header that claims 1e8 frames: refused from its first bytes."""
    path = tmp_path / "sparse.bvh"
    with open(path, "wb") as file:
        file.write((HEADER % 100_000_000).encode())
        file.truncate(1 << 30)
    with pytest.raises(BVHError, match=r"sparse\.bvh:14: the motion section holds binary data"):
        read_bvh(path)


def test_blank_lines_are_not_frames(tmp_path):
    path = tmp_path / "blank.bvh"
    path.write_text(HEADER % 3000 + "\n" * 5000)
    with pytest.raises(BVHError, match=r"blank\.bvh:\d+: more than 1000 blank lines"):
        read_bvh(path)


def test_tabs_for_spaces_everywhere_read_the_same(tmp_path):
    """Some exporters separate every word with tabs, "Frame\tTime:" too (refused as a missing Frame Time before)."""
    path = tmp_path / "tabs.bvh"
    path.write_text(FIXTURE_WALK_1.read_text().replace(" ", "\t"))
    expected, motion = read_bvh(FIXTURE_WALK_1), read_bvh(path)
    assert motion.skeleton == expected.skeleton and motion.fps == expected.fps
    np.testing.assert_array_equal(motion.rotations, expected.rotations)


KEYWORDS = ("HIERARCHY", "ROOT", "JOINT", "End Site", "OFFSET", "CHANNELS", "Xposition", "Yposition", "Zposition",
            "Xrotation", "Yrotation", "Zrotation", "MOTION", "Frames", "Frame Time")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([str.upper, str.lower, str.title, str.swapcase]), min_size=len(KEYWORDS),
                max_size=len(KEYWORDS)), st.booleans())
def test_keywords_in_any_case_and_a_decimal_comma_read_the_same(tmp_path_factory, cases, comma):
    """Blender's importer reads `hierarchy`, `End site`, `XROTATION`; a locale writes `Frame Time: 0,0333333`.
    Each keyword is written in a case drawn for it; joint names are kept as they are."""
    import re

    text = FIXTURE_WALK_1.read_text()
    for keyword, case in zip(KEYWORDS, cases):
        text = re.sub(rf"(?<![A-Za-z_]){keyword}(?![A-Za-z_])", case(keyword), text)
    if comma:
        text = re.sub(r"(?i)(frame time:\s*\d+)\.", r"\1,", text)
    path = tmp_path_factory.mktemp("case") / "case.bvh"
    path.write_text(text)
    expected, motion = read_bvh(FIXTURE_WALK_1), read_bvh(path)
    assert motion.skeleton == expected.skeleton and motion.fps == expected.fps
    np.testing.assert_array_equal(motion.rotations, expected.rotations)
    np.testing.assert_array_equal(motion.positions, expected.positions)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 300), st.data())
def test_a_few_complete_lines_past_frames_are_read_as_blender_reads_them(tmp_path_factory, frames, data):
    """An exporter's Frames line a few short: the lines past it, up to a tenth of the frames, are read as frames (one
    past 199 was refused before); one more is refused at its line, as is a second line under `Frames: 1`."""
    allowed = frames // 10
    extra = data.draw(st.integers(0, allowed + 1), label="extra lines")
    rows = np.random.default_rng(frames).uniform(-90, 90, size=(frames + extra, 6)).round(4)
    path = tmp_path_factory.mktemp("extra") / "extra.bvh"
    path.write_text(HEADER % frames + "\n".join(" ".join(map(str, row)) for row in rows) + "\n")
    if extra <= allowed:
        motion = read_bvh(path, scale=1.0)
        assert len(motion) == frames + extra
        np.testing.assert_allclose(motion.positions[:, 0], rows[:, :3])
    else:
        with pytest.raises(BVHError) as raised:
            read_bvh(path)
        assert str(raised.value).startswith(f"{path}:{14 + frames + allowed}: more motion lines than the {frames} "
                                            "frames declared")


def test_a_file_far_longer_than_its_frames_need_is_still_refused_unparsed(tmp_path):
    path = tmp_path / "long.bvh"
    path.write_text(HEADER % 2 + "0 90 0 0 0 0\n" * 2000)
    with pytest.raises(BVHError, match=r"long\.bvh:14: the motion section holds \d+ bytes, far more than 2 frames"):
        read_bvh(path)


def test_frames_0_reads_as_the_rest_pose_as_blender_imports_it(tmp_path):
    """A skeleton without motion (`Frames: 0`) is a character: one frame, every joint at its offset; as motion it is
    refused in one line (stitch, db build and eval took its rest pose for a clip lying down)."""
    text = FIXTURE_WALK_1.read_text()
    header = text[:text.index("MOTION")] + "MOTION\nFrames: 0\nFrame Time: 0.033333\n"
    rest = tmp_path / "rest.bvh"
    rest.write_text(header + "\n")
    with pytest.raises(BVHError, match=r":\d+: no motion \(Frames: 0\): a skeleton alone, which serves as a character"):
        read_bvh(rest, scale=0.01)  # as motion: refused
    motion = read_bvh(rest, scale=0.01, rest_pose=True)
    walk = read_bvh(FIXTURE_WALK_1, scale=0.01)
    assert len(motion) == 1 and motion.fps == pytest.approx(30.0, abs=1e-3)
    assert np.allclose(motion.positions[0], walk.skeleton.offsets)
    assert np.allclose(motion.rotations, quat.identity(1, len(walk.skeleton)))
    moving = tmp_path / "moving.bvh"
    moving.write_text(header + text.split("\n")[text[:text.index("MOTION")].count("\n") + 3] + "\n")
    with pytest.raises(BVHError, match="a motion line under 'Frames: 0'"):
        read_bvh(moving, rest_pose=True)
    negative = tmp_path / "negative.bvh"
    negative.write_text(header.replace("Frames: 0", "Frames: -2"))
    with pytest.raises(BVHError, match="Frames must be 0"):
        read_bvh(negative)
