"""Motion matching for VR (MMVR §5-6): databases, features, inertialization, the solver's guarantees, the CLI."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from core.math import quat
from core.files.bvh import read_bvh, write_bvh
from core.config import DatabaseConfig, SimulationConfig, MatchingConfig
from core.matching.features import FeatureScale, pose_features
from core.ik.foot_lock import FootLock, Legs
from core.rig.humanoid import find_mapping
from core.anim.inertialize import Inertializer
from core.anim.motion import Motion
from core.orientation.window_model import load_orientation_model
from core.matching.pose_database import DatabaseError, PoseDatabase, build_database
from core.devices.simulate import simulate_stream
from core.matching.solver import MotionMatchingSolver
from core.solve import solve
from core.math.spring import angle_spring_toward
from core.files.stream import ThreePointStream
from core.ik.upper_body_ik import ik_constants
from conftest import DATASET_1, DATASET_2, FIXTURE_WALK_1, FIXTURE_WALK_2, WALK_2
from conftest import core



@pytest.fixture(scope="module")
def database():
    """The fixture walk turning left, and mirrored: turning right."""
    return build_database([read_bvh(FIXTURE_WALK_1)], DatabaseConfig(mirror=True))


@pytest.fixture(scope="module")
def bandai_database():
    return build_database([read_bvh(DATASET_2 / f"dataset-2_walk_normal_00{i}.bvh") for i in (2, 3)] +
                          [read_bvh(DATASET_1 / f"dataset-1_walk-{d}_normal_001.bvh") for d in ("back", "left", "right")])


@pytest.fixture(scope="module")
def model():
    return load_orientation_model()


@pytest.fixture(scope="module")
def walk_stream():
    """Four seconds of a held-out walk with look-around, as a user's devices would report it."""
    return simulate_stream(read_bvh(FIXTURE_WALK_2)[:120], SimulationConfig(look_around_deg=30.0, seed=3)).stream


# -- databases and features -------------------------------------------------------------------------------------------


def straight_walk(skeleton, yaw: float, frames: int = 90, fps: float = 60.0) -> Motion:
    """A hand-made clip: the rest pose turned by `yaw`, gliding forward at 1 m/s."""
    forward = quat.rotate(quat.from_yaw(np.array(yaw)), np.array([0.0, 0.0, 1.0]))
    rotations = np.repeat(quat.identity(1, len(skeleton)), frames, axis=0)
    rotations[:, 0] = quat.from_yaw(np.array(yaw))
    root = np.array([0.3, 0.9, -0.2]) + np.arange(frames)[:, None] / fps * forward
    return Motion.from_root(skeleton, rotations, root, fps, "glide")


def test_features_of_a_hand_made_clip_match_hand_computed_values(fixture_walk2):
    skeleton = fixture_walk2.skeleton
    for yaw in (0.0, 1.1):
        database = build_database([straight_walk(skeleton, yaw)])
        features = pose_features(database)
        assert features.shape == (90, 27)
        # The rest pose faces +Z (its thighs lie along x), so character space is the rest pose's frame.
        mapping = find_mapping(skeleton)
        rest_positions = Motion.from_root(skeleton, quat.identity(1, len(skeleton)), [[0.0, 0.9, 0.0]],
                                          60.0).global_positions()[0]
        hips = rest_positions[mapping["hips"]]
        expected_feet = rest_positions[[mapping["l_foot"], mapping["r_foot"]]] - hips * np.array([1.0, 0.0, 1.0])
        frame = 10
        z = features[frame]
        np.testing.assert_allclose(z[0:9], np.tile([0.0, 0.0, 1.0], 3), atol=1e-6)  # feet and hips at 1 m/s forward
        np.testing.assert_allclose(z[9:15], expected_feet.ravel(), atol=1e-6)
        np.testing.assert_allclose(z[15:21], [0, 1 / 3, 0, 2 / 3, 0, 1.0], atol=1e-6)  # 20, 40, 60 frames at 60 fps
        np.testing.assert_allclose(z[21:27], [0, 1, 0, 1, 0, 1], atol=1e-6)
        # Near the end the trajectory stops at the clip's last frame: 89 - 70 = 19 frames ahead at most.
        np.testing.assert_allclose(features[70, 15:21], [0, 19 / 60, 0, 19 / 60, 0, 19 / 60], atol=1e-6)


def test_feature_normalisation_keeps_group_shape_and_applies_weights(database):
    features = pose_features(database)
    scale = FeatureScale.fit(features)
    normalised = scale.normalise(features)
    np.testing.assert_allclose(normalised.mean(axis=0), 0.0, atol=1e-9)
    # One deviation per group: the ratio of scales inside a group is 1.
    assert np.ptp(scale.scale[15:21]) == 0.0 and np.ptp(scale.scale[0:9]) == 0.0
    heavier = FeatureScale.fit(features, replace(MatchingConfig().weights, trajectory_directions=3.0))
    np.testing.assert_allclose(scale.scale[21:27] / heavier.scale[21:27], 2.0)


def test_database_virtual_root_contacts_mirror_and_round_trip(tmp_path, fixture_walk1):
    motion = fixture_walk1
    database = build_database([motion], DatabaseConfig(mirror=True))
    single = len(motion.resampled(60.0))
    assert len(database) == 2 * single and list(database.range_stops) == [single, 2 * single]
    assert database.skeleton.names[0] == "root" and database.skeleton.parents[1] == 0
    # The virtual root is on the floor and the clip re-assembles to the same global hips.
    assert np.all(database.positions[:, 0, 1] == 0.0)
    original = motion.resampled(60.0).global_positions()
    rebuilt = database.clip_motion(0).global_positions()
    hips = database.mapping["hips"]
    np.testing.assert_allclose(rebuilt[:, hips], original[:, find_mapping(motion.skeleton)["hips"]], atol=1e-4)
    # The mirrored clip walks the mirrored path: x flips, z stays.
    mirrored = database.clip_motion(1).global_positions()[:, hips]
    np.testing.assert_allclose(mirrored[:, [0, 2]] * [-1, 1], rebuilt[:, hips][:, [0, 2]], atol=1e-4)
    # Both feet touch the ground for part of a walk, never for all of it.
    assert np.all((database.contacts.mean(axis=0) > 0.2) & (database.contacts.mean(axis=0) < 0.8))
    path = tmp_path / "walk.npz"
    database.save(path)
    loaded = PoseDatabase.load(path)
    np.testing.assert_allclose(loaded.rotations, database.rotations, atol=1e-6)
    assert loaded.clip_names == database.clip_names and loaded.skeleton == database.skeleton
    (tmp_path / "bad.npz").write_bytes(b"not a database")
    with pytest.raises(DatabaseError, match="bad.npz: not a VR Avatar database"):
        PoseDatabase.load(tmp_path / "bad.npz")


def test_database_rejects_what_it_cannot_hold(fixture_walk1):
    with pytest.raises(DatabaseError, match="shorter than 1.0 s"):
        build_database([fixture_walk1[:20]])
    other = fixture_walk1.skeleton
    renamed = type(other)(tuple(n if n != "Toes_L" else "Toe_L" for n in other.names), other.parents, other.offsets)
    with pytest.raises(DatabaseError, match="differs from the first clip"):
        build_database([fixture_walk1, Motion(renamed, fixture_walk1.rotations, fixture_walk1.positions, fixture_walk1.fps, "renamed")])


def _bone_changed(clip: Motion, joint: str, change_m: float, name: str) -> Motion:
    """The clip with the bone from `joint`'s parent to it `change_m` longer (a skeleton of another studio, or another
    actor's calibration, under the same joint names)."""
    j = clip.skeleton.index(joint)
    offsets = clip.skeleton.offsets.copy()
    offsets[j] *= 1.0 + change_m / np.linalg.norm(offsets[j])
    positions = clip.positions.copy()
    positions[:, j] = offsets[j]
    return Motion(replace(clip.skeleton, offsets=offsets), clip.rotations, positions, clip.fps, name)


@settings(max_examples=12, deadline=None)
@given(joint=st.sampled_from(["LowerLeg_R", "Foot_L", "LowerArm_L", "Hand_R", "Chest"]),
       change_cm=st.floats(-5.0, 5.0))
def test_a_clip_whose_bones_are_not_the_first_clips_is_refused_naming_the_bone_and_both_files(fixture_walk1, joint,
                                                                                              change_cm):
    """Two studios' skeletons with the same 23 joint names (the thigh 43.7 cm against 37.2 cm) were built into one
    database, the solve's bones changing length as matching switched clips. A bone within 1 cm of the first clip's is
    one skeleton's (Bandai's files agree to 0.0001 mm); farther, the clip is refused, naming its file, the bone, both
    lengths and the first file, whose skeleton the database takes (the clip's stem before)."""
    assume(abs(abs(change_cm) - 1.0) > 1e-3)
    changed = _bone_changed(fixture_walk1, joint, change_cm / 100.0, "changed")
    files = ["mine/first.bvh", "theirs/changed.bvh"]
    if abs(change_cm) < 1.0:
        assert build_database([fixture_walk1, changed], sources=files).clip_names == (fixture_walk1.name, "changed")
        return
    with pytest.raises(DatabaseError) as raised:
        build_database([fixture_walk1, changed], sources=files)
    parent = fixture_walk1.skeleton.names[fixture_walk1.skeleton.parents[fixture_walk1.skeleton.index(joint)]]
    length, changed_length = (100 * np.linalg.norm(m.skeleton.offsets[m.skeleton.index(joint)])
                              for m in (fixture_walk1, changed))
    assert abs(changed_length - (length + change_cm)) < 1e-9
    assert str(raised.value) == (f"theirs/changed.bvh: its bone from {parent} to {joint} is {changed_length:.1f} "
                                 f"cm long against {length:.1f} cm in the first file mine/first.bvh, whose skeleton "
                                 "the database takes; one database holds one skeleton")


def test_a_skeleton_whose_sides_differ_is_built_with_its_mirrored_copies(fixture_walk1):
    """A capture's left thigh 2 cm longer than its right: its mirrored copies have the right one longer, and are the
    same skeleton's, not compared with the first clip's bones."""
    uneven = _bone_changed(fixture_walk1, "LowerLeg_L", 0.02, "uneven")
    database = build_database([uneven, uneven], DatabaseConfig(mirror=True))
    assert len(database.clip_names) == 4


# -- inertialization and foot lock --------------------------------------------------------------------------------------


def inertialized_switch(dt: float, halflife: float = 0.1, frames: int = 20):
    """Play a source for `frames` frames, switch to a destination 6 cm and 0.3 rad away with another velocity.

    Returns output positions (2 frames, 3), rotations (2 frames, 4) around the switch and the positions
    a second later with the destination's own."""
    src_v, dst_v = np.array([[1.0, 0.0, 0.5]]), np.array([[-0.5, 0.2, 0.0]])
    src_w, dst_w = np.array([[0.0, 2.0, 0.0]]), np.array([[1.0, 0.0, 0.0]])
    start_p, start_q = np.array([[0.05, 0.02, -0.03]]), quat.from_yaw(np.array([0.3]))

    def source(t):
        return quat.from_rotation_vector(src_w * t), src_w, src_v * t, src_v

    def destination(t):
        return quat.multiply(quat.from_rotation_vector(dst_w * t), start_q), dst_w, start_p + dst_v * t, dst_v

    inertializer = Inertializer.at_rest(1)
    last = source((frames - 1) * dt)
    # The solver's order: at the last played frame the search switches, then the next frame plays.
    inertializer.transition(last, destination(-dt))
    first = inertializer.update(destination(0.0), halflife, dt)
    for k in range(1, int(round(1.0 / dt))):
        late = inertializer.update(destination(k * dt), halflife, dt)
    return (np.stack([last[2][0], first[2][0]]), np.stack([last[0][0], first[0][0]]),
            late[2][0] - destination((int(round(1.0 / dt)) - 1) * dt)[2][0])


def test_inertialization_is_continuous_in_position_and_velocity_at_a_switch():
    src_v, src_w = np.array([1.0, 0.0, 0.5]), 2.0
    jumps, velocity_changes = [], []
    for dt in (1.0 / 60.0, 1.0 / 600.0):
        positions, rotations, leftover = inertialized_switch(dt)
        expected = positions[0] + src_v * dt  # where the source would have gone
        jumps.append(np.linalg.norm(positions[1] - expected))
        velocity_changes.append(np.linalg.norm((positions[1] - positions[0]) / dt - src_v))
        turned = np.degrees(quat.angle_between(rotations[0], rotations[1]))
        assert turned < np.degrees(src_w * dt) * 1.5 + 0.2  # no visible rotation pop
        assert np.linalg.norm(leftover) < 1e-3  # a second later the destination plays as it is
    # A 6 cm jump (and a 1.6 m/s change of velocity) leaves about a centimetre at 60 fps, and it vanishes as dt^2
    # (C1 continuity):
    # ten times smaller steps make the position error ~100 times and the velocity change ~10 times smaller.
    assert jumps[0] < 0.02
    assert jumps[1] < jumps[0] / 50.0 and velocity_changes[1] < velocity_changes[0] / 5.0


def test_the_facing_spring_follows_the_closed_form_and_turns_the_short_way():
    halflife = 0.2
    # From rest, a critically damped spring has e^(-y t)(1 + y t) of its error left; one half-life is y t = 2 ln 2.
    angle, rate = angle_spring_toward(0.0, 0.0, 1.0, halflife, halflife)
    assert 1.0 - angle == pytest.approx((1.0 + 2.0 * np.log(2.0)) / 4.0, abs=1e-6) and rate > 0.0
    # From 170 deg to -170 deg is 20 deg through 180, not 340 deg back through 0.
    start, goal = np.radians(170.0), np.radians(-170.0)
    angles, _ = angle_spring_toward(start, 0.0, goal, halflife, np.array([0.05, 0.1, halflife, 10.0]))
    assert np.all(np.diff(angles) > 0.0)  # from -190 deg (170) up to -170: on through 180
    assert angles[2] == pytest.approx(goal - np.radians(20.0) * (1.0 + 2.0 * np.log(2.0)) / 4.0, abs=1e-6)
    assert np.cos(angles[-1] - goal) == pytest.approx(1.0, abs=1e-9)


def test_a_locked_foot_stays_put_until_released():
    lock = FootLock(unlock_distance_m=0.2)
    dt = 1.0 / 60.0
    feet = np.array([[0.1, 0.0, 0.0], [-0.1, 0.0, 0.3]])
    first = lock.targets(feet, np.array([True, False]), dt)
    np.testing.assert_allclose(first[0], feet[0])
    for k in range(1, 10):  # the pose drags both feet 1 cm a frame: the lock holds the left, the right follows
        dragged = feet + [0.01 * k, 0, 0]
        targets = lock.targets(dragged, np.array([True, False]), dt)
        np.testing.assert_allclose(targets[0], feet[0])
        np.testing.assert_allclose(targets[1], dragged[1])
    moved = feet + [0.25, 0, 0]  # past the unlock distance: released, and it does not jump
    released = lock.targets(moved, np.array([True, False]), dt)
    assert not lock.locked[0] and np.linalg.norm(released[0] - feet[0]) < 0.25 * 0.2


def test_a_new_step_locks_at_once_and_a_foot_left_behind_waits_for_its_gap_to_close():
    dt, both = 1.0 / 60.0, np.array([True, True])
    feet = np.array([[0.0, 0.0, 0.0], [0.3, 0.0, 0.0]])
    lock = FootLock(unlock_distance_m=0.2)
    lock.targets(feet, both, dt)
    lifted = feet + [0.0, 0.0, 0.1]  # both contacts end with the pose 10 cm ahead: released, gaps of 10 cm
    lock.targets(lifted, np.array([False, False]), dt)
    gaps = np.linalg.norm(lock.release_offsets, axis=-1)
    assert not lock.locked.any() and np.all(gaps > 0.05)
    # The next step begins while the gaps are still closing: it locks where the output is, with no jump.
    free = lock.targets(lifted, np.array([True, False]), dt)
    assert lock.locked.tolist() == [True, False]
    held = lock.targets(lifted + [0.0, 0.0, 0.02], np.array([True, False]), dt)
    np.testing.assert_allclose(held[0], free[0])

    # A foot the pose leaves behind mid-contact is released, and stays free while its gap closes.
    lock = FootLock(unlock_distance_m=0.2)
    lock.targets(feet, both, dt)
    away = feet + [0.0, 0.0, 0.25]
    lock.targets(away, both, dt)
    assert not lock.locked.any()
    for _ in range(3):  # about a half-life: the gap is still centimetres
        lock.targets(away, both, dt)
        assert not lock.locked.any()
    for _ in range(120):  # two seconds of the same contact: the gap closes below 1 cm and the foot locks again
        lock.targets(away, both, dt)
    assert lock.locked.all()


# -- the solver ------------------------------------------------------------------------------------------------------


def test_live_stepping_and_offline_solving_give_identical_output(database, model, walk_stream):
    stream = ThreePointStream(walk_stream.times[:90], walk_stream.positions[:90], walk_stream.rotations[:90],
                              walk_stream.tracked[:90])
    solver = MotionMatchingSolver([database], MatchingConfig(), model, standing_hmd_height_m=1.55)
    solution = solve(stream, solver)
    offline, stream = solution.motion, solution.stream  # the live driver gets the samples the offline one solved
    solver.reset()
    steps = np.diff(stream.times, prepend=stream.times[0] - 1.0 / 60.0)
    live = [solver.step(stream.positions[t], stream.rotations[t], stream.tracked[t], steps[t]) for t in range(90)]
    # The same rotations, up to the summation order of the IK's batched products (1e-8 at most); a half turn (w
    # within rounding of 0, as a shoulder's here) may come out as either of its two quaternions.
    live_rotations = np.concatenate([m.rotations for m in live])
    np.testing.assert_allclose(quat.nearest_sign(live_rotations, offline.rotations), offline.rotations, atol=1e-7)
    np.testing.assert_allclose(np.concatenate([m.positions for m in live]), offline.positions, atol=1e-7)
    # The foot lock's state advances frame by frame on both paths and its leg IK differs only in batch
    # size: equal to rounding (numpy's SIMD kernels may round the last bit differently, so not bit for bit).
    legs = [database.mapping[f"{s}_{j}"] for s in "lr" for j in ("thigh", "shin", "foot")]
    np.testing.assert_allclose(live_rotations[:, legs], offline.rotations[:, legs], rtol=0, atol=1e-12)


def test_a_small_database_is_scanned_and_solves_as_with_the_box_layers(fixture_walk1, model, walk_stream):
    """The live latency benchmark's database (one walk, fewer frames than FeatureIndex.brute_force_rows) is searched
    by a scan, not the box layers: the same matches, so the same solve."""
    solver = MotionMatchingSolver([build_database([fixture_walk1])], MatchingConfig(), model, standing_hmd_height_m=1.55)
    index = solver.databases[0].index
    assert len(index.rows) < index.brute_force_rows
    scanned = solve(walk_stream, solver)
    index.brute_force_rows = 0
    boxed = solve(walk_stream, solver)
    assert scanned.searches.sum() > 10 and len(set(scanned.frames[scanned.searches])) > 3
    np.testing.assert_array_equal(scanned.frames, boxed.frames)
    np.testing.assert_array_equal(scanned.searches, boxed.searches)
    np.testing.assert_allclose(scanned.motion.rotations, boxed.motion.rotations, rtol=0, atol=1e-12)
    np.testing.assert_allclose(scanned.motion.positions, boxed.motion.positions, rtol=0, atol=1e-12)


def test_the_arm_ik_takes_its_constants_from_the_solver_config(bandai_database, model):
    """MatchingConfig.upper_body reaches the IK: other elbow constants move the elbows, never the hands. On a real
    walk (on the fixture walk both sets of constants put the elbows alike)."""
    database = bandai_database
    walk_stream = simulate_stream(read_bvh(WALK_2)[:120], SimulationConfig(look_around_deg=30.0, seed=3)).stream
    stream = ThreePointStream(walk_stream.times[:60], walk_stream.positions[:60], walk_stream.rotations[:60],
                              walk_stream.tracked[:60])
    paper_solver = MotionMatchingSolver([database], MatchingConfig(upper_body=ik_constants("paper")), model)
    paper = solve(stream, paper_solver).motion.global_positions()
    fitted = solve(stream, MotionMatchingSolver([database], MatchingConfig(), model))
    positions = fitted.motion.global_positions()
    elbows = [database.mapping[f"{s}_forearm"] for s in "lr"]
    hands = [database.mapping[f"{s}_hand"] for s in "lr"]
    assert np.linalg.norm(positions[:, elbows] - paper[:, elbows], axis=-1).mean() > 0.01
    np.testing.assert_allclose(positions[:, hands], paper[:, hands], atol=1e-6)


@pytest.mark.parametrize("alpha", [0.3, 0.1])
def test_the_root_stays_within_alpha_of_the_target_every_frame(database, model, walk_stream, alpha):
    solution = solve(walk_stream, MotionMatchingSolver([database], MatchingConfig(alpha_m=alpha), model))
    root = solution.motion.positions[:, 0]
    gap = np.hypot(*(root - solution.targets)[:, [0, 2]].T)
    assert gap.max() <= alpha + 1e-9
    assert solution.searches.sum() >= len(root) // 10  # every 10 frames at least


def test_planting_a_whole_clip_at_once_equals_planting_it_frame_by_frame(database):
    """The offline driver's foot lock: one call over all frames, resets included, as the live one per frame."""
    legs = Legs.of(database.skeleton, database.mapping)
    rotations, positions = database.rotations[:120].astype(float), database.positions[:120].astype(float)
    positions[:, 0, 2] += np.linspace(0.0, 1.5, 120)  # the root dragged forward: locked feet must hold against it
    contacts = database.contacts[:120]
    restarts = np.zeros(120, bool)
    restarts[[0, 70]] = True
    batched_rotations = rotations.copy()
    legs.plant(batched_rotations, positions, FootLock(), contacts, 1.0 / 60.0, restarts)
    lock, single_rotations = FootLock(), rotations.copy()
    for t in range(120):
        if restarts[t]:
            lock.reset()
        legs.plant(single_rotations[t], positions[t], lock, contacts[t], 1.0 / 60.0)
    np.testing.assert_allclose(batched_rotations, single_rotations, rtol=0, atol=1e-12)
    assert np.abs(batched_rotations - rotations).max() > 0.01  # the lock did turn the legs
    # Without the reset at frame 70 the lock would carry on from frame 69: a different result.
    carried = rotations.copy()
    legs.plant(carried, positions, FootLock(), contacts, 1.0 / 60.0, np.arange(120) == 0)
    assert np.abs(carried[70:] - batched_rotations[70:]).max() > 1e-3


def test_locked_feet_do_not_move_while_locked(database, model, walk_stream):
    solver = MotionMatchingSolver([database], MatchingConfig(), model, standing_hmd_height_m=1.55)
    toes, locked, stretched = [], [], []
    for t in range(len(walk_stream)):
        pose = solver.step(walk_stream.positions[t], walk_stream.rotations[t], walk_stream.tracked[t], 1.0 / 60.0)
        legs = solver.legs.transforms(pose.rotations[0], pose.positions[0])[1]
        toes.append(legs[:, 4])
        locked.append(solver.foot_lock.locked.copy())
        reach = np.linalg.norm(legs[:, 3] - legs[:, 1], axis=-1)
        stretched.append(reach > np.linalg.norm(np.diff(legs[:, 1:4], axis=1), axis=-1).sum(axis=-1) - 1e-4)
    toes, locked, stretched = np.array(toes), np.array(locked), np.array(stretched)
    held = locked[1:] & locked[:-1]
    moved = np.linalg.norm(np.diff(toes, axis=0), axis=-1) > 1e-9
    assert held.sum() > 30
    # A locked toe moves only where the dragged hips leave the leg too short to reach it (stretched straight),
    # or as it returns from there.
    assert np.all((stretched[1:] | stretched[:-1])[held & moved])
    assert (held & moved).sum() < held.sum() / 4


def test_tracking_loss_time_gaps_and_a_teleport_neither_crash_nor_produce_nan(database, model, walk_stream):
    keep = np.ones(len(walk_stream), bool)
    keep[100:160] = False  # a one-second gap in time
    positions, rotations = walk_stream.positions[keep].copy(), walk_stream.rotations[keep].copy()
    tracked = walk_stream.tracked[keep].copy()
    tracked[20:50, 1] = False  # left controller lost for half a second
    tracked[60:70, 0] = False  # HMD lost
    tracked[:, 2][tracked.shape[0] - 30:] = False  # right controller lost to the end
    positions[150:, :, 0] += 5.0  # teleport 5 m along x
    for i in range(3):
        positions[~tracked[:, i], i] = np.nan
        rotations[~tracked[:, i], i] = np.nan
    stream = ThreePointStream(walk_stream.times[keep], positions, rotations, tracked)
    solver = MotionMatchingSolver([database], MatchingConfig(), model)
    solution = solve(stream, solver)
    assert np.isfinite(solution.motion.rotations).all() and np.isfinite(solution.motion.positions).all()
    assert len(solution.motion) == len(stream.resampled(60.0))
    # After the teleport the avatar is where the user is.
    root = solution.motion.positions[-1, 0]
    assert np.hypot(*(root - solution.targets[-1])[[0, 2]]) <= 0.3 + 1e-9
    # Live stepping with NaN for the lost devices works too.
    solver.reset()
    for t in range(len(stream)):
        pose = solver.step(stream.positions[t], stream.rotations[t], stream.tracked[t], 1.0 / 60.0)
        assert np.isfinite(pose.positions).all()


def test_a_recentring_in_place_places_the_avatar_facing_the_new_way(database, model, walk_stream):
    """The devices turned -90 degrees about the HMD in one frame ("reset view"): the avatar is placed anew (the
    orientation model restarted), facing within 10 degrees of the unturned walk's, turned, from the next frame on,
    live and offline (measured: within 8; before, it turned there over a second and a half)."""
    jump = 120
    after = np.arange(len(walk_stream)) >= jump
    turn = quat.from_yaw(np.where(after, -np.pi / 2, 0.0))[:, None]
    pivot = walk_stream.positions[jump, 0] * [1.0, 0.0, 1.0]
    turned = ThreePointStream(walk_stream.times, quat.rotate(turn, walk_stream.positions - pivot) + pivot,
                              quat.multiply(turn, walk_stream.rotations), walk_stream.tracked)
    facings = {}
    for name, stream in (("plain", walk_stream), ("turned", turned)):
        solver = MotionMatchingSolver([database], MatchingConfig(), model)
        offline = solve(stream, solver).motion.global_positions()
        solver.reset()
        live = np.array([solver.step(stream.positions[t], stream.rotations[t], stream.tracked[t], 1.0 / 60.0)
                         .global_positions()[0] for t in range(len(stream))])
        for path, poses in (("offline", offline), ("live", live)):
            across = poses[:, solver.mapping["l_thigh"]] - poses[:, solver.mapping["r_thigh"]]
            facings[name, path] = np.degrees(np.unwrap(np.arctan2(across[:, 0], across[:, 2])))
    for path in ("offline", "live"):
        change = facings["turned", path] - facings["plain", path]
        assert np.abs(change[jump + 1:] + 90.0).max() < 10.0 and np.abs(change[:jump - 1]).max() < 1e-6, path


def test_a_lost_controller_is_held_where_it_was_relative_to_the_hmds_frame(database, model, walk_stream):
    solver = MotionMatchingSolver([database], MatchingConfig(), model)
    positions, rotations = walk_stream.positions[10], walk_stream.rotations[10]
    for t in range(5):  # all tracked: passed through unchanged
        seen = solver.held.hold(walk_stream.positions[t + 6], walk_stream.rotations[t + 6], np.ones(3, bool))
        assert np.array_equal(seen[0], walk_stream.positions[t + 6])
    # The user turns 90 degrees and walks 2 m while the left controller is lost (its sample is NaN).
    turn = quat.from_yaw(np.array(np.pi / 2))
    moved_p, moved_r = quat.rotate(turn, positions) + np.array([1.0, 0.0, 2.0]), quat.multiply(turn, rotations)
    lost_p, lost_r = moved_p.copy(), moved_r.copy()
    lost_p[1], lost_r[1] = np.nan, np.nan
    held_p, held_r = solver.held.hold(lost_p, lost_r, np.array([True, False, True]))
    assert np.abs(held_p - moved_p).max() < 1e-9
    assert np.abs(np.abs(np.sum(held_r * moved_r, axis=-1)) - 1.0).max() < 1e-9
    # Still lost a frame later, after a further turn: it keeps following the HMD frame.
    held_again, _ = solver.held.hold(quat.rotate(turn, lost_p), quat.multiply(turn, lost_r),
                                          np.array([True, False, True]))
    assert np.abs(held_again - quat.rotate(turn, moved_p)).max() < 1e-9


def test_the_hmd_height_ratio_picks_the_database_and_a_switch_searches(model, walk_stream):
    upright = build_database([read_bvh(FIXTURE_WALK_1)], DatabaseConfig(height_range=(0.9, 10.0)))
    low = build_database([read_bvh(FIXTURE_WALK_1)], DatabaseConfig(height_range=(0.0, 0.9), mirror=True))
    positions = walk_stream.positions.copy()
    positions[120:, :, 1] *= 0.8  # the user crouches two seconds in
    stream = ThreePointStream(walk_stream.times, positions, walk_stream.rotations, walk_stream.tracked)
    solution = solve(stream, MotionMatchingSolver([upright, low], MatchingConfig(), model))
    assert set(solution.databases[:115]) == {0} and set(solution.databases[125:]) == {1}
    switch = np.flatnonzero(np.diff(solution.databases))[0] + 1
    assert solution.searches[switch]
    with pytest.raises(DatabaseError, match="share one skeleton"):
        MotionMatchingSolver([upright, build_database([read_bvh(FIXTURE_WALK_1)], DatabaseConfig(fps=30.0))], MatchingConfig(),
                             model)


# -- command line ------------------------------------------------------------------------------------------------------


def test_db_build_solve_and_eval_matching_from_the_command_line(tmp_path):
    db = tmp_path / "walk.npz"
    walk_2 = tmp_path / FIXTURE_WALK_2.name  # the second walk's smaller figure at the first's size: one skeleton
    write_bvh(walk_2, read_bvh(FIXTURE_WALK_2).scaled(1.0 / 0.92), scale=100.0)
    built = json.loads(core("db", "build", FIXTURE_WALK_1, walk_2, "-o", db, "--mirror", "--json").stdout)
    assert built["poses"] == len(PoseDatabase.load(db)) and built["clips"] == 4
    stream = tmp_path / "walk.csv"
    core("stream", "simulate", FIXTURE_WALK_2, "-o", stream, "--look-around", "20")
    out = tmp_path / "walk.bvh"
    core("solve", stream, "--db", db, "-o", out, "--method", "mm", "--alpha", "0.1", "--orientation", "hmd")
    solved = read_bvh(out, scale=1.0)
    assert solved.skeleton.names[0] == "root" and len(solved) > 100
    report = json.loads((tmp_path / "walk.report.json").read_text())
    assert report["summary"]["root_cm"]["max"] <= 10.0 + 1e-6
    assert (tmp_path / "walk.report.png").stat().st_size > 10_000
    figures = json.loads(core("eval", "matching", "--data", FIXTURE_WALK_2, "--split", "all", "--db", db,
                              "--methods", "mm", "alpha_0.1", "--json").stdout)
    for method in ("mm", "alpha_0.1"):
        for key in ("root_cm", "angle_deg", "mpjpe_cm", "mpjpe_cm_upper", "mpjpe_cm_lower", "hand_cm",
                    "foot_skate_cm_s", "foot_skate_gt_cm_s", "jitter", "poses_used", "ms_per_frame"):
            assert np.isfinite(figures[method][key]), (method, key)
    assert figures["alpha_0.1"]["root_cm"] < figures["mm"]["root_cm"] + 1.0
    failed = core("solve", stream, "--db", tmp_path / "missing.npz", "--method", "mm", "-o", tmp_path / "x.bvh",
                  check=False)
    assert "missing.npz" in failed.stderr and not (tmp_path / "x.bvh").exists()
    failed = core("solve", stream, "--db", db, "-o", tmp_path / "x.bvh", "--method", "mm", "--ik-constants",
                  tmp_path / "ik.json", check=False)
    assert failed.returncode == 1 and "ik.json: no such IK constants file" in failed.stderr
    assert not (tmp_path / "x.bvh").exists()


@settings(max_examples=40, deadline=None)
@given(rate=st.floats(30.0, 144.0), jitter=st.floats(0.0, 0.3), seed=st.integers(0, 2 ** 16))
def test_live_the_database_plays_at_its_own_rate_whatever_the_devices(database, rate, jitter, seed):
    """A live step played one database frame whatever its length: a 60 fps database ran 2.4 times too fast at
    144 Hz (131 frames a second), the legs cycling under a body carried at the head's pace (foot skating 4.5 -> 62.6
    cm/s). Over a second of steps at any rate and jitter the frames due are the database's 60, to one."""
    solver = MotionMatchingSolver([database], MatchingConfig(orientation="hmd"))
    steps = np.random.default_rng(seed).uniform(1.0 - jitter, 1.0 + jitter, int(rate * 3)) / rate
    steps = steps[np.cumsum(steps) <= 2.0]
    played = sum(solver.frames_due(float(dt)) for dt in steps)
    assert abs(played - database.fps * steps.sum()) <= 1.0
