"""Locomotion stitching (Kim et al.): pose vectors, training pairs, the network and its losses, the window runtime."""
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from core.math import quat
from core.tools.cli import main
from core.tools.eval.stitch import toe_positions
from core.rig.humanoid import find_mapping
from core.config import StitchConfig
from core.anim.inertialize import blend_seam, quintic_offsets
from core.quality.metrics import foot_slide_m, npss
from core.anim.motion import Motion
from core.anim.character import rooted_motion
from core.stitch.stitching import WindowRefiner, align_clips, inertialized, on_skeleton, refine, stitch
from core.stitch.data import (ReferenceDatabase, generate_pairs, load_clip, reference_databases, segment_features,
                              segment_splits)
from core.stitch.model import SHIPPED_MODEL, StitchModel, StitchModelError
from core.stitch.pose import (PoseLayout, contact_levels, lower_body_velocities, motion_from_vectors, pose_vectors,
                               repaired_rotations,
                              root_yaw)
from core.stitch.data import StitchPairs
from core.tools.train.stitch import begin_weights, export, losses, network, normalisation, train
from conftest import DATASET_1, DATASET_2, FIXTURE_WALK_1, FIXTURE_WALK_2

CLIPS = [DATASET_1 / "dataset-1_walk_normal_001.bvh", DATASET_1 / "dataset-1_run_normal_001.bvh",
         DATASET_1 / "dataset-1_walk-left_normal_001.bvh", DATASET_2 / "dataset-2_walk_normal_001.bvh",
         DATASET_2 / "dataset-2_run_normal_001.bvh", DATASET_2 / "dataset-2_walk-turn-left_normal_001.bvh"]


@pytest.fixture(scope="module")
def clips():
    """The two procedural walks of tests/data (stand, walk, turn, stop), as stitching reads clips."""
    return [load_clip(path) for path in (FIXTURE_WALK_1, FIXTURE_WALK_2)]


@pytest.fixture(scope="module")
def layout(clips):
    return PoseLayout.of(clips[0].motion.skeleton)


@pytest.fixture(scope="module")
def pairs(clips):
    databases = reference_databases(clips)
    return generate_pairs(clips, databases, clips, seed=4)


@pytest.fixture(scope="module")
def bandai_clips():
    return [load_clip(path) for path in CLIPS]


@pytest.fixture(scope="module")
def small_model(pairs, layout):
    torch.manual_seed(0)
    mean, std = normalisation(pairs, layout)
    module = network(layout.size)
    return module, export(module, mean, std, layout, {})


def test_pose_vectors_describe_the_motion_they_came_from(clips, layout):
    clip = clips[1]
    x = clip.vectors
    assert x.shape == (len(clip.motion), 3 + 27 + 4 * 21 + 27 + 4) == (len(clip.motion), layout.size)
    rebuilt = motion_from_vectors(x, layout, clip.motion.skeleton, 60.0, clip.motion.positions[0, 0], clip.yaw[0])
    assert np.abs(rebuilt.global_positions() - clip.motion.global_positions()).max() < 1e-6
    # The contacts see both feet down in a walk and each one lifted at times.
    contacts = x[:, layout.c]
    assert 0.2 < contacts.mean() < 0.9 and np.all(contacts.min(axis=0) == 0) and np.all(contacts.max(axis=0) == 1)


def test_pose_vectors_do_not_depend_on_where_the_clip_is_or_faces(clips, layout):
    motion = clips[0].motion
    turn = quat.from_yaw(np.array(1.3))
    rotations, positions = motion.rotations.copy(), motion.positions.copy()
    rotations[:, 0] = quat.multiply(turn, rotations[:, 0])
    positions[:, 0] = quat.rotate(turn, positions[:, 0]) + np.array([3.0, 0.0, -1.0])
    moved = Motion(motion.skeleton, rotations, positions, motion.fps)
    assert np.abs(pose_vectors(moved, layout, clips[0].levels) - clips[0].vectors).max() < 1e-9


def test_evaluated_feet_come_from_p_when_placed_and_from_the_rotations_alone_by_forward_kinematics(clips, layout):
    clip = clips[1]
    x, skeleton = clip.vectors[:60].copy(), clip.motion.skeleton
    # A clip's own vectors are consistent: p is what forward kinematics of q gives, so both readings agree.
    assert np.abs(toe_positions(x, layout, skeleton, "placed") - toe_positions(x, layout, skeleton, "fk")).max() < 1e-4
    mapping = find_mapping(skeleton)
    lower = list(layout.lower)
    for joint in ("l_foot", "l_toes"):  # p's left foot moved 5 cm sideways in the root's frame, q untouched
        x[:, layout.p.start + 3 * lower.index(mapping[joint])] += 0.05
    placed, fk = toe_positions(x, layout, skeleton, "placed"), toe_positions(x, layout, skeleton, "fk")
    assert np.abs(fk - toe_positions(clip.vectors[:60], layout, skeleton, "fk")).max() < 1e-9
    shift = placed - toe_positions(clip.vectors[:60], layout, skeleton, "placed")
    assert np.allclose(np.hypot(shift[:, 0, 0], shift[:, 0, 2]), 0.05, atol=2e-3)
    assert np.abs(shift[:, 0, 1]).max() < 1e-6 and np.abs(shift[:, 1]).max() < 1e-6


def test_placed_feet_read_v_as_well_as_p_so_jitter_in_p_alone_slides_them_less(clips, layout):
    clip = clips[1]
    x, skeleton = clip.vectors[:120].copy(), clip.motion.skeleton
    truth = toe_positions(x, layout, skeleton, "placed")
    feet = layout.p.start + 3 * np.asarray(layout.feet)[:, None] + np.array([0, 2])  # x and z of ankles and toes
    x[:, feet.ravel()] += np.random.default_rng(3).normal(scale=0.01, size=(len(x), feet.size))
    from_p, placed = toe_positions(x, layout, skeleton, "p"), toe_positions(x, layout, skeleton, "placed")
    p_error = np.linalg.norm(from_p - truth, axis=-1).mean()
    assert p_error > 0.008
    assert np.linalg.norm(placed - truth, axis=-1).mean() < 0.5 * p_error
    assert foot_slide_m(placed) < 0.5 * foot_slide_m(from_p)


def test_segment_splits_are_multiples_of_ten_adding_up_to_the_window():
    splits = segment_splits(60)
    assert len(splits) == 15 and len(set(splits)) == 15
    for a, b, c in splits:
        assert a + b + c == 60 and a >= 10 and c >= 10 and b >= 0
        assert a % 10 == b % 10 == c % 10 == 0


def test_generated_pairs_satisfy_their_construction(bandai_clips):
    """On the real clips: there A is the truth bit for bit (on the fixture walks, A's root rotation, rebuilt
    from its yaw, differs from the truth's in the last bit on a few frames)."""
    clips = bandai_clips
    layout = PoseLayout.of(clips[0].motion.skeleton)
    pairs = generate_pairs(clips, reference_databases(clips), clips, seed=4)
    assert pairs.inputs.shape == pairs.truths.shape and pairs.inputs.shape[1:] == (60, layout.size)
    assert len(pairs.inputs) == sum((len(c.vectors) - 60) // 30 + 1 for c in clips)
    upper = np.concatenate([np.arange(4 * (j - 1), 4 * j) for j in layout.upper]) + layout.q.start
    two = three = 0
    for x, y, (a, b, c), (name, start, neighbours) in zip(pairs.inputs, pairs.truths, pairs.splits, pairs.sources):
        assert a + b + c == 60 and a % 10 == b % 10 == c % 10 == 0 and a >= 10 and c >= 10
        # A is the ground truth, copied.
        np.testing.assert_array_equal(x[:a], y[:a])
        # The trajectory is the ground truth's, each segment's first root put on the previous one's last.
        seams = [a, a + b] if b else [a]
        others = np.setdiff1d(np.arange(1, 60), seams)
        assert np.abs(x[others][:, layout.r] - y[others][:, layout.r]).max() < 1e-5
        assert np.abs(x[seams][:, layout.r]).max() < 1e-6
        # The upper body comes from the ground truth; B and C from other clips or other places.
        np.testing.assert_allclose(x[:, upper], y[:, upper], atol=1e-6)
        assert len(neighbours) == (2 if b else 1)
        segment_starts = [start + a, start + a + b] if b else [start + a]
        for (clip, first, k), own_start in zip(neighbours, segment_starts):
            assert 5 <= k <= 10 and (clip != name or abs(first - own_start) >= 60)
        two += b == 0
        three += b > 0
    assert two > 0 and three > 0


def test_knn_returns_the_kth_nearest_and_skips_the_query_itself(clips):
    database = ReferenceDatabase.build(clips, 20)
    query = segment_features(clips[1], np.array([150]), 20)[0]
    order = np.argsort(np.sum((database.features - query) ** 2, axis=1))
    own = (database.clips == 1) & (np.abs(database.starts - 150) < 60)
    allowed = order[~own[order]]
    assert database.kth_nearest(query, 1) == order[0]
    assert database.clips[order[0]] == 1 and database.starts[order[0]] == 150
    assert database.kth_nearest(query, 7, exclude_clip=1, exclude_start=150) == allowed[6]


def test_numpy_network_matches_torch(small_model, pairs, layout):
    module, model = small_model
    module.eval()
    x = pairs.inputs[:3]
    with torch.no_grad():
        expected = module((torch.from_numpy(x) - torch.from_numpy(model.mean)) / torch.from_numpy(model.std)).numpy()
    expected = expected * model.std + model.mean
    expected[..., layout.c] = 1.0 / (1.0 + np.exp(-expected[..., layout.c]))
    out = model.forward(x)
    assert out.shape == x.shape and model.forward(x[0]).shape == x[0].shape
    assert np.abs(out - expected).max() < 1e-4


def test_training_resumes_where_a_saved_model_stopped(pairs, layout, tmp_path):
    few = StitchPairs(pairs.inputs[:8], pairs.truths[:8], pairs.splits[:8])
    first, _ = train(few, few, layout, epochs=1, log=lambda line: None)
    first.save(tmp_path / "one.npz")
    saved = StitchModel.load(tmp_path / "one.npz")
    unchanged, _ = train(few, few, layout, epochs=0, log=lambda line: None, resume=saved)
    assert all(np.array_equal(unchanged.weights[k], first.weights[k]) for k in first.weights)
    assert np.array_equal(unchanged.mean, first.mean)
    more, curve = train(few, few, layout, epochs=1, log=lambda line: None, resume=saved)
    assert [row["epoch"] for row in curve] == [1, 2] and more.info["epochs_trained"] == 2
    assert more.info["resumed_at_epochs"] == [1]
    assert any(not np.array_equal(more.weights[k], first.weights[k]) for k in first.weights)


def test_loss_terms_on_hand_made_tensors(layout):
    mean = torch.zeros(layout.size)
    std = torch.ones(layout.size)
    truths = torch.zeros(2, 60, layout.size)
    truths[..., layout.c] = 1.0
    inputs = truths.clone()
    output = truths.clone()
    output[..., layout.c] = 0.0                         # logits 0: probability 0.5 against contacts 1
    output[..., layout.q.start] += 1.0                  # one rotation number off by 1 on every frame
    terms = losses(output, inputs, truths, mean, std, layout)
    assert abs(terms["pose"].item() - 1.0) < 1e-6
    assert abs(terms["foot"].item() - 4 * 0.5) < 1e-6
    assert abs(terms["begin"].item() - begin_weights().sum() / 5) < 1e-6
    assert terms["trj"].item() == 0.0
    # sig(t / 5) = 1 - 1 / (1 + exp(5 - 10 t / 5)) falls from about 1 toward 0 (largest on the first frame).
    np.testing.assert_allclose(begin_weights(), [0.95257, 0.73106, 0.26894, 0.04743, 0.00669], atol=1e-5)
    # A constant forward step of 1 cm per frame in the output only: after 59 steps, 59 cm along z.
    output = truths.clone()
    output[..., layout.c] = 100.0
    output[:, :, layout.r.start + 2] = 0.01
    terms = losses(output, inputs, truths, mean, std, layout)
    assert abs(terms["trj"].item() - 0.01 * np.arange(60).mean()) < 1e-5
    assert terms["foot"].item() < 1e-6


def test_window_runs_in_pieces_equal_the_run_in_one_go(small_model, clips, layout):
    _, model = small_model
    x = clips[1].vectors[:400]
    config = StitchConfig(window=60, shift=30)
    whole = refine(x, model, layout, config)
    pieces = WindowRefiner(model, layout, 60, 30)
    final = 0
    for chunk in np.array_split(x, [7, 61, 62, 150, 333]):
        now = pieces.push(chunk)
        assert now >= final
        final = now
    np.testing.assert_array_equal(pieces.finish(), whole)
    # A sequence of exactly w frames is one window: the network's output as it is.
    as_written = StitchConfig(window=60, shift=30, keep_trajectory=False)
    np.testing.assert_allclose(refine(x[:60], model, layout, as_written), model.forward(x[:60]), atol=1e-6)


def test_seam_blend_is_continuous_and_fades_out():
    t = np.arange(40, dtype=float)[:, None]
    values = np.where(t < 20, 0.1 * t, 5.0 + 0.1 * t)      # a jump of 5 at frame 20, same slope either side
    blended = blend_seam(values, 20, 10)
    steps = np.diff(blended[:, 0])
    assert abs(steps[19] - 0.1) < 1e-9                     # across the seam the value goes on at its slope
    assert np.abs(steps - 0.1).max() < 1.1                 # the jump of 5 spread over 10 frames (quintic peak 15/8 of 0.5)
    assert np.abs(np.diff(steps)).max() < 0.55             # bounded acceleration: a0 = 20 x0 / t1^2 = 1
    np.testing.assert_array_equal(blended[30:], values[30:])
    np.testing.assert_array_equal(blended[:20], values[:20])
    curve = quintic_offsets(np.array([1.0, -2.0]), np.zeros(2), 10)
    assert np.allclose(curve[0], [1.0, -2.0]) and np.all(np.abs(curve[-1]) < 0.01)
    assert np.all(np.diff(curve[:, 0]) <= 0) and np.all(np.diff(curve[:, 1]) >= 0)


def test_align_puts_each_clip_on_the_last_root_of_the_previous(clips):
    a, b = clips[0].motion[:100], clips[1].motion[50:150]
    aligned = align_clips([a, b])
    roots = aligned.motion.positions[:, 0]
    yaw = root_yaw(aligned.motion.rotations[:, 0])
    assert list(aligned.starts) == [0, 100] and len(aligned.motion) == 200
    assert np.linalg.norm(roots[100] - roots[99]) < 1e-9 and abs(yaw[100] - yaw[99]) < 1e-9
    # Within each clip the motion itself is unchanged (relative steps and local poses).
    layout = aligned.layout
    rotations_and_velocities = slice(layout.q.start, layout.v.stop)
    np.testing.assert_allclose(aligned.vectors[101:, rotations_and_velocities],
                               load_vectors(b)[1:, rotations_and_velocities], atol=1e-6)
    np.testing.assert_allclose(aligned.vectors[101:, layout.r], load_vectors(b)[1:, layout.r], atol=1e-9)


def load_vectors(rooted):
    layout = PoseLayout.of(rooted.skeleton)
    return pose_vectors(rooted, layout, contact_levels(rooted, layout))


def test_on_skeleton_keeps_every_joint_where_the_stitched_motion_has_it(fixture_walk2):
    rooted = rooted_motion(fixture_walk2.resampled(60.0), find_mapping(fixture_walk2.skeleton))
    full = on_skeleton(rooted, fixture_walk2.skeleton)
    names = rooted.skeleton.names[1:]
    ours = rooted.global_positions()[:, 1:]
    theirs = full.global_positions()[:, [fixture_walk2.skeleton.index(n) for n in names]]
    assert np.abs(ours - theirs).max() < 1e-9


def test_foot_slide_and_npss():
    toes = np.zeros((11, 2, 3))
    toes[:, 0, 0] = np.arange(11) * 0.01                    # left toe slides 1 cm per frame on the floor
    toes[:, 1, 1] = 0.5                                     # right toe in the air
    assert abs(foot_slide_m(toes) - 0.01) < 1e-12
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 60, 5))
    assert npss(a, a) == 0.0
    smooth = np.cumsum(rng.normal(size=(4, 60, 5)), axis=1)
    assert npss(smooth, a) > npss(smooth, smooth + 0.01 * a) > 0.0


def test_shipped_model_loads_and_fits_the_bandai_skeleton():
    model = StitchModel.load(SHIPPED_MODEL)
    model.check_layout(PoseLayout.of(load_clip(CLIPS[0]).motion.skeleton))
    info = json.loads(Path(SHIPPED_MODEL).with_suffix(".json").read_text())
    assert info["epochs_trained"] == len(info["curve"]) >= 1
    assert info["curve"][-1]["validation_total"] < info["curve"][0]["validation_total"]


def test_a_file_that_is_not_a_model_is_refused(tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, something=np.zeros(3))
    with pytest.raises(StitchModelError, match="not a stitch model"):
        StitchModel.load(bad)


def test_stitch_command_writes_one_clip_on_the_first_clips_skeleton(tmp_path, capsys):
    out = tmp_path / "stitched.bvh"
    assert main(["stitch", str(FIXTURE_WALK_1), str(FIXTURE_WALK_2), "-o", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    from core.files.bvh import read_bvh

    written, first, second = read_bvh(out), read_bvh(FIXTURE_WALK_1), read_bvh(FIXTURE_WALK_2)
    assert written.skeleton.names == first.skeleton.names and written.fps == 60.0
    assert len(written) == len(first.resampled(60.0)) + len(second.resampled(60.0)) == result["frames"]
    assert result["clip_starts"] == [0, len(first.resampled(60.0))]


def test_stitch_refuses_clips_of_different_skeletons(fixture_walk1, tmp_path):
    walk = fixture_walk1
    other = Motion(walk.skeleton, walk.rotations, walk.positions, walk.fps, "walk")
    names = tuple(n if n != "Toes_L" else "ToeBase_L" for n in walk.skeleton.names)
    renamed = Motion(type(walk.skeleton)(names, walk.skeleton.parents, walk.skeleton.offsets),
                     walk.rotations, walk.positions, walk.fps, "renamed")
    with pytest.raises(ValueError, match="renamed: its skeleton differs"):
        stitch([other, renamed], StitchConfig(method="concat"))


def test_refiner_output_keeps_the_stitch_near_the_input(walk1):
    model = StitchModel.load(SHIPPED_MODEL)
    run = Motion.from_root(walk1.skeleton, walk1.rotations, walk1.positions[:, 0], walk1.fps, "walk")
    result = stitch([run[:100], run[120:]], StitchConfig(), model)
    assert len(result.motion) == len(result.aligned.motion)
    assert result.root_deviation().max() < 0.5


def test_match_root_path_ends_where_the_reference_ends():
    from core.stitch.pose import accumulate_root, match_root_path

    rng = np.random.default_rng(2)
    reference = np.column_stack([rng.normal(0, 0.01, 90), rng.normal(0.01, 0.02, 90), rng.normal(0.03, 0.01, 90)])
    drifted = reference + np.array([0.002, 0.004, -0.003]) + rng.normal(0, 0.002, (90, 3))
    matched = match_root_path(drifted, reference)
    # accumulate_root skips r_0 (it is the step into frame 0): compare the paths from frame 0 on.
    ends = [accumulate_root(r, np.zeros(3), 0.0) for r in (reference, drifted, matched)]
    assert np.linalg.norm(ends[1][0][-1] - ends[0][0][-1]) > 0.1
    assert np.linalg.norm(ends[2][0][-1] - ends[0][0][-1]) < 0.01
    assert abs(ends[2][1][-1] - ends[0][1][-1]) < 0.005
    assert np.abs(matched - drifted).max() < 0.01            # an even shift, not a replacement


def test_foot_lock_holds_each_toe_while_its_toe_contact_lasts(fixture_walk1):
    from core.rig.humanoid import find_mapping

    parts = [fixture_walk1[30:120], fixture_walk1[135:225]]
    free, locked = (stitch(parts, StitchConfig("concat", foot_lock=lock)) for lock in (False, True))
    mapping = find_mapping(locked.motion.skeleton)
    toes = [m.motion.global_positions()[:, [mapping["l_toes"], mapping["r_toes"]]] for m in (free, locked)]
    steps = [np.hypot(*np.moveaxis(np.diff(t[..., [0, 2]], axis=0), -1, 0)) for t in toes]
    held = locked.contacts[1:] & locked.contacts[:-1]
    seam = locked.aligned.starts[1]
    assert 0.3 < held.mean() < 0.9
    # Within the first clip every held toe stays put (to the leg IK's reach); free ones slide. After the
    # seam the pose jumps, and a toe released past the unlock distance moves until its next contact.
    assert np.all(steps[1][:seam - 1][held[:seam - 1]] < 1e-3)
    assert np.mean(steps[0][:seam - 1][held[:seam - 1]]) > 1e-3
    assert np.mean(steps[1][held] < 1e-6) > 0.9
    assert foot_slide_m(toes[1]) < foot_slide_m(toes[0])


def test_eval_stitch_reports_the_three_methods_on_cases_from_the_validation_clips(capsys):
    validation = DATASET_2 / "dataset-2_run_active_002.bvh"
    assert main(["eval", "stitch", "--data", *map(str, CLIPS), str(validation), "--seeds", "1", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    cases = result["cases"]
    assert cases["evaluation_clips"] == 2 and cases["reference_clips"] == len(CLIPS) - 1 and cases["seeds"] == [1, 2]
    assert cases["total"] == cases["two_segments"] + cases["three_segments"] > 0
    for method in ("concat", "inertialization", "rmr"):
        assert {"foot_slide_m", "mse", "npss"} <= set(result[method])
        assert 0.0 < result[method]["foot_slide_m"] < 0.05 and result[method]["mse"] > 0.0
    assert result["ground_truth"]["mse"] == 0.0 and result["ground_truth"]["npss"] == 0.0
    assert result["inertialization"]["mse"] < result["concat"]["mse"]
    assert result["rmr_fk"]["foot_slide_m"] > result["rmr"]["foot_slide_m"]


def test_the_inertialization_baseline_moves_its_feet_as_fast_as_its_blended_positions_say(clips, layout):
    # A clip's v, as r and p imply it, is its joints' motion between frames in the previous root frame.
    motion = clips[1].motion
    joints = motion.global_positions()[:, layout.lower]
    moved = quat.inverse_rotate(motion.rotations[:-1, 0, None], np.diff(joints, axis=0)) * motion.fps
    v = clips[1].vectors[:, layout.v].reshape(len(motion), -1, 3)
    assert np.abs(v[1:] - moved).max() < 1e-9 and np.array_equal(v[0], v[1])
    k = align_clips([clips[0].motion, clips[1].motion])
    blended = inertialized(k.vectors, k.starts, layout)
    seam = int(k.starts[1])
    assert np.abs(blended[:, layout.v] - lower_body_velocities(blended, layout, 60.0)).max() < 1e-9
    assert np.abs(blended[seam:seam + 30, layout.p] - k.vectors[seam:seam + 30, layout.p]).max() > 0.01
    assert np.array_equal(blended[:, layout.r], k.vectors[:, layout.r])


def test_stitch_command_reads_the_feet_from_p_alone_with_weight_zero_and_refuses_a_negative_weight(tmp_path, capsys):
    from core.files.bvh import read_bvh

    outputs = {}
    for weight in ("0", "32"):
        outputs[weight] = tmp_path / f"stitched_{weight}.bvh"
        assert main(["stitch", str(FIXTURE_WALK_2), str(FIXTURE_WALK_1), "-o", str(outputs[weight]), "--no-foot-lock",
                     "--feet-velocity-weight", weight]) == 0
    difference = np.abs(read_bvh(outputs["0"]).rotations - read_bvh(outputs["32"]).rotations).max()
    assert difference > 1e-4
    capsys.readouterr()
    assert main(["stitch", str(FIXTURE_WALK_2), str(FIXTURE_WALK_1), "-o", str(tmp_path / "no.bvh"),
                 "--feet-velocity-weight", "-1"]) == 1
    assert "feet velocity weight must be 0 or more, not -1.0" in capsys.readouterr().err
    assert not (tmp_path / "no.bvh").exists()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 16), collapsed=st.integers(1, 4))
def test_a_collapsed_network_rotation_is_taken_along_its_neighbours(seed, collapsed):
    """A thigh turning through w = 0, written w >= 0 as the network was trained: its sign flips there, and the
    network may answer near zero (norm 0.08 in a stitched walk, the knee thrown 36 cm for one frame). Such a sample is
    taken along the joint's sound frames; the sound ones are only normalised."""
    rng = np.random.default_rng(seed)
    frames = 40
    truth = quat.from_rotation_vector(np.array([0.0, 0.0, np.pi]) + np.cumsum(rng.normal(0.0, 0.03, (frames, 3)),
                                                                              axis=0))[:, None]
    q = quat.positive_hemisphere(truth) * rng.uniform(0.9, 1.1, (frames, 1, 1))
    bad = rng.choice(np.arange(1, frames - 1), collapsed, replace=False)
    q[bad] = rng.normal(0.0, 0.03, (collapsed, 1, 4))
    repaired = repaired_rotations(q)
    sound = np.setdiff1d(np.arange(frames), bad)
    np.testing.assert_allclose(repaired[sound], quat.normalize(q[sound]))
    assert np.degrees(quat.angle_between(repaired[bad], truth[bad])).max() < 8.0


@pytest.mark.parametrize("window, shift, words", [(2, 1, "the window (2 frames) must be at least 20 frames"),
                                                  (180, 10, "the window shift (10) must be between a quarter")])
def test_stitch_refuses_a_window_too_small_or_moved_too_little(tmp_path, capsys, window, shift, words):
    """A window of 2 frames moved by 1 let the root stray 6.5 m from the clips, one of 180 moved by 10 1 m: refused
    in one line, nothing written."""
    out = tmp_path / "no.bvh"
    assert main(["stitch", str(FIXTURE_WALK_2), str(FIXTURE_WALK_1), "-o", str(out), "--window", str(window),
                 "--shift", str(shift)]) == 1
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1 and not out.exists()
