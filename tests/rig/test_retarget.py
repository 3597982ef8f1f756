"""Retargeting onto rigs with other rest poses, bone axes, facings and proportions (core.retarget.retargeting).

Test rigs stand upright at rest, as a character's rest pose does: they are the clip's own skeleton
posed in one of its standing frames (both feet planted), arms raised into a T- or A-pose. The
source is the fixture walk (tests/data), whose rest is a T-pose, or a real Bandai clip, whose rest
lays every bone along X: nothing may depend on either. Two tests stay on the real walk: that a
foot floats without the live stances needs legs that differ from the rig's, and the head's facing
needs a source that looks ahead on average (the fixture looks around while it stands).
"""
from dataclasses import replace

import numpy as np
import pytest

from core.math import quat

from core.retarget import retargeting as retarget
from core.retarget.stances import HEEL_RISE_LIMIT_DEG, LiveStances
from core.rig.humanoid import HumanoidMappingError, find_mapping
from core.anim.motion import Motion
from core.ik.two_bone import knee_position
from core.files.bvh import read_bvh
from core.retarget.target import CANONICAL_CHILDREN, TargetSkeleton, bone_directions, bvh_target, uprightness
from core.retarget.retargeting import Retargeting, twist_angle
from core.anim.contacts import contact_weights
from core.retarget.stances import held_over_stances
from core.math.vector import unit
from core.solve import load_solver
from core.config import SimulationConfig
from core.devices.simulate import simulate_stream
from core.tools.eval.characters import clip_figures, feet, steps_without_jumps
from core.files.mocap import activity
from core.tools.mocap_split import read_humanoid, split_by_file
from conftest import DATASET_1, SHARED, shared_exists

OTHER = SHARED / "data" / "other"

ARM = ("upper_arm", "forearm", "hand")


def _standing_frame(motion, mapping) -> int:
    """The most upright frame with both feet planted, at one height."""
    _, positions = motion.global_transforms()
    planted = sum(contact_weights(positions[:, mapping[f"{s}_toes"]], motion.fps) for s in "lr")
    uneven = np.abs(positions[:, mapping["l_foot"], 1] - positions[:, mapping["r_foot"], 1]) / 0.01
    return int(np.argmin(uprightness(positions, mapping) + (2.0 - planted) + uneven))


def _rig(motion, scale=1.0, arm_drop_deg=0.0, turn_deg=0.0, random_axes=False, seed=0, frame=None):
    """A target: the clip's skeleton standing in one frame, arms out at `arm_drop_deg` below horizontal
    (0: a T-pose), turned about the vertical, scaled, with any bone axes."""
    skeleton = motion.skeleton
    mapping = find_mapping(skeleton)
    frame = _standing_frame(motion, mapping) if frame is None else frame
    rotations, positions = motion[frame:frame + 1].global_transforms()
    rotations, positions = rotations[0], positions[0]
    positions = positions - positions[mapping["hips"]] * [1.0, 0.0, 1.0]
    forward = np.cross(positions[mapping["l_thigh"]] - positions[mapping["r_thigh"]], [0.0, 1.0, 0.0])
    for side, sign in (("l", 1.0), ("r", -1.0)):
        outward = unit(sign * np.cross([0.0, 1.0, 0.0], forward))
        drop = np.radians(arm_drop_deg)
        direction = np.cos(drop) * outward - np.sin(drop) * np.array([0.0, 1.0, 0.0])
        joints = [mapping[f"{side}_{j}"] for j in ARM]
        turn = quat.between(positions[joints[1]] - positions[joints[0]], direction)
        for j in joints[1:]:
            positions[j] = positions[joints[0]] + np.linalg.norm(positions[j] - positions[joints[0]]) * direction
        descendants = [j for j in range(len(skeleton)) if skeleton.is_ancestor(joints[0], j)]
        rotations[descendants] = quat.multiply(turn, rotations[descendants])
    yaw = quat.from_yaw(np.radians(turn_deg))
    positions = quat.rotate(yaw, positions) * scale
    rotations = quat.multiply(yaw, rotations)
    if random_axes:
        rolls = quat.normalize(np.random.default_rng(seed).normal(size=rotations.shape))
        rotations = quat.multiply(rotations, rolls)
    return TargetSkeleton.build(skeleton.names, skeleton.parents, positions, rotations, floor=0.0)


def _retarget(clip, rig, **kwargs):
    return Retargeting.between(clip.skeleton, find_mapping(clip.skeleton), rig, clip).apply(clip, **kwargs)


def test_every_bone_follows_the_source_whatever_the_rigs_rest_pose_facing_axes_and_size(fixture_walk1):
    clip = fixture_walk1[:150]
    mapping = find_mapping(clip.skeleton)
    for arm_drop_deg, turn_deg in [(0.0, 0.0), (45.0, 90.0), (30.0, -150.0)]:
        rig = _rig(clip, scale=0.8, arm_drop_deg=arm_drop_deg, turn_deg=turn_deg, random_axes=True)
        _, positions = _retarget(clip, rig)
        _, truth = clip.global_transforms()
        wanted, found = bone_directions(truth, mapping), bone_directions(positions, rig.mapping)
        for joint in CANONICAL_CHILDREN:
            np.testing.assert_allclose(found[joint], wanted[joint], atol=1e-5)
            child = next(c for c in CANONICAL_CHILDREN[joint] if c in mapping.joints)
            length = np.linalg.norm(positions[:, mapping[child]] - positions[:, mapping[joint]], axis=-1)
            rest = np.linalg.norm(rig.rest_positions[mapping[child]] - rig.rest_positions[mapping[joint]])
            np.testing.assert_allclose(length, rest, atol=1e-6)


def test_bone_rolls_change_no_bone_in_the_world(fixture_walk1):
    """The twist is read anatomically: two rigs that differ only in their bones' rolls pose alike."""
    clip = fixture_walk1[:90]
    plain, rolled = _rig(clip, arm_drop_deg=40.0), _rig(clip, arm_drop_deg=40.0, random_axes=True, seed=5)
    posed_plain, _ = _retarget(clip, plain)
    posed_rolled, _ = _retarget(clip, rolled)
    delta_plain = quat.multiply_inverse(posed_plain, plain.rest_rotations)
    delta_rolled = quat.multiply_inverse(posed_rolled, rolled.rest_rotations)
    np.testing.assert_allclose(np.abs(np.sum(delta_plain * delta_rolled, -1)), 1.0, atol=1e-9)


def test_the_same_skeleton_standing_as_its_rest_follows_the_clip_within_a_few_degrees(fixture_walk1):
    clip = fixture_walk1[:150]
    mapping = find_mapping(clip.skeleton)
    frame = _standing_frame(clip, mapping)
    truth_rotations, truth_positions = clip.global_transforms()
    rig = TargetSkeleton.build(clip.skeleton.names, clip.skeleton.parents,
                               truth_positions[frame] - truth_positions[frame, mapping["hips"]] * [1, 0, 1],
                               truth_rotations[frame], floor=0.0)
    rotations, positions = _retarget(clip, rig)
    torso = [mapping[j] for j in ("hips", "spine", "chest", "neck", "l_thigh", "r_thigh", "l_shin", "r_shin")]
    angles = np.degrees(quat.angle_between(quat.multiply_inverse(rotations[:, torso], rig.rest_rotations[torso]),
                                           quat.multiply_inverse(truth_rotations[:, torso], truth_rotations[frame, torso])))
    assert angles.mean() < 5.0


def test_the_hips_stand_at_the_avatars_height_although_the_sources_rest_lies_flat(fixture_walk1):
    """The old bug: hips from the source's BVH rest (along X) put the avatar's hips 16 times too high or sunk."""
    clip = fixture_walk1[:150]
    mapping = find_mapping(clip.skeleton)
    rig = _rig(clip, scale=0.8, arm_drop_deg=10.0, random_axes=True)
    _, positions = _retarget(clip, rig)
    ratio = positions[:, mapping["hips"], 1] / rig.rest_positions[mapping["hips"], 1]
    assert 0.85 < ratio.min() and ratio.max() < 1.15
    np.testing.assert_allclose(positions[:, mapping["hips"], [0, 2]], clip.global_positions()[:, mapping["hips"], [0, 2]],
                               atol=1e-6)


def test_planted_feet_lie_flat_and_still_and_neither_heel_nor_toes_dip_under_their_standing_height(fixture_walk1):
    clip = fixture_walk1[:240]
    mapping = find_mapping(clip.skeleton)
    rig = _rig(clip, scale=1.1, random_axes=True, seed=2)
    loose_rotations, loose = _retarget(clip, rig)
    rotations, positions = _retarget(clip, rig, plant_feet=True)
    for side in "lr":
        foot, toes = mapping[f"{side}_foot"], mapping[f"{side}_toes"]
        assert positions[:, toes, 1].min() > rig.rest_positions[toes, 1] - 1e-6
        assert _heel(rig, rotations, positions, foot)[:, 1].min() > -1e-6
        planted = contact_weights(clip.global_positions()[:, mapping[f"{side}_toes"]], clip.fps) == 1.0
        assert planted.mean() > 0.2
        # Flat on the floor, or rolled where the leg cannot reach down: about the toe point (heel up) or about
        # the point under the ankle (toes up, a straight leg at heel strike).
        assert np.abs(positions[planted, foot, 1] - rig.rest_positions[foot, 1]).mean() < 0.005
        # Where even a rolled foot is out of reach, the leg stretches toward it and the foot lifts a little.
        toe_down = np.abs(positions[planted, toes, 1] - rig.rest_positions[toes, 1])
        heel_down = np.abs(_heel(rig, rotations, positions, foot)[planted, 1])
        lifted = np.minimum(toe_down, heel_down)
        assert np.mean(lifted > 1e-6) < 0.05 and lifted.max() < retarget.OVERREACH_ALLOWANCE_M
        steps = np.linalg.norm(np.diff(positions[:, toes, [0, 2]], axis=0), axis=-1)
        loose_steps = np.linalg.norm(np.diff(loose[:, toes, [0, 2]], axis=0), axis=-1)
        both = planted[1:] & planted[:-1]
        assert steps[both].mean() < 0.25 * loose_steps[both].mean() + 1e-4
        # The legs keep their lengths: the IK moved the knee, not the bones' proportions.
        for upper, lower in (("thigh", "shin"), ("shin", "foot")):
            a, b = mapping[f"{side}_{upper}"], mapping[f"{side}_{lower}"]
            np.testing.assert_allclose(np.linalg.norm(positions[:, b] - positions[:, a], axis=-1),
                                       np.linalg.norm(rig.rest_positions[b] - rig.rest_positions[a]), atol=1e-6)


def _heel(rig, rotations, positions, foot):
    """(F, 3) the point under the ankle on the floor at standing, carried by the foot's turn from standing."""
    axes, heads = rig.standing_pose()
    turn = quat.multiply_inverse(rotations[:, foot], axes[foot])
    return positions[:, foot] + quat.rotate(turn, np.array([0.0, -heads[foot, 1], 0.0]))


def test_a_stance_foot_out_of_reach_rolls_as_in_gait_and_the_head_still_meets_its_target(fixture_walk1):
    clip = fixture_walk1[:240]
    mapping = find_mapping(clip.skeleton)
    rig = _rig(clip, random_axes=True, seed=8)
    # The headset 4 cm above the source's head: legs as long as the source's cannot reach flat stance feet.
    targets = clip.global_positions()[:, mapping["head"]] + [0.0, 0.04, 0.0]
    rotations, positions = _retarget(clip, rig, head_targets=targets, plant_feet=True)
    miss = np.linalg.norm(positions[:, mapping["head"]] - targets, axis=-1)
    assert miss.mean() < 1e-4 and np.percentile(miss, 95) < 1e-3
    rolled = 0
    for side in "lr":
        thigh, shin, foot, toes = (mapping[f"{side}_{j}"] for j in ("thigh", "shin", "foot", "toes"))
        planted = contact_weights(clip.global_positions()[:, toes], clip.fps) == 1.0
        heel_up = planted & (positions[:, foot, 1] > rig.rest_positions[foot, 1] + 0.01)
        leg = sum(np.linalg.norm(rig.rest_positions[b] - rig.rest_positions[a]) for a, b in ((thigh, shin), (shin, foot)))
        within_reach = np.linalg.norm(positions[:, foot] - positions[:, thigh], axis=-1) < retarget.OVERREACH_SLACK * leg
        toe_on_floor = np.abs(positions[:, toes, 1] - rig.rest_positions[toes, 1]) < 1e-6
        heel_on_floor = np.abs(_heel(rig, rotations, positions, foot)[:, 1]) < 1e-6
        # Rolled within reach: about the toe point or the heel, which stays on the floor; else the leg stretches.
        assert (toe_on_floor | heel_on_floor)[heel_up & within_reach].all()
        assert (heel_up & within_reach).sum() > 0.5 * heel_up.sum()
        rolled += heel_up.sum()
        # No tilt beyond gait's: the foot's forward at most HEEL_RISE_LIMIT_DEG off the floor.
        toward_toe = positions[:, toes] - positions[:, foot]
        pitch = np.degrees(np.arcsin(np.abs(toward_toe[:, 1]) / np.linalg.norm(toward_toe, axis=-1)))
        standing_pitch = np.degrees(np.arcsin(abs(rig.rest_positions[toes, 1] - rig.rest_positions[foot, 1])
                                              / np.linalg.norm(rig.rest_positions[toes] - rig.rest_positions[foot])))
        assert pitch[planted].max() < HEEL_RISE_LIMIT_DEG + standing_pitch + 1e-6
    assert rolled > 10


def test_a_head_target_out_of_the_avatars_reach_lifts_the_hips_no_higher_than_the_limit(fixture_walk1):
    clip = fixture_walk1[:120]
    mapping = find_mapping(clip.skeleton)
    rig = _rig(clip, random_axes=True, seed=9)
    targets = clip.global_positions()[:, mapping["head"]] + [0.0, 0.4, 0.0]  # a person 40 cm taller
    _, positions = _retarget(clip, rig, head_targets=targets, plant_feet=True)
    ceiling = retarget.HIPS_RISE_LIMIT * rig.rest_positions[mapping["hips"], 1]
    assert positions[:, mapping["hips"], 1].max() <= ceiling + 1e-9
    assert positions[:, mapping["hips"], 1].max() > ceiling - 0.02


def test_live_stances_plant_the_feet_one_frame_at_a_time(walk1):
    clip = walk1[:240]
    mapping = find_mapping(clip.skeleton)
    rig = _rig(clip, random_axes=True, seed=10)
    retargeting = Retargeting.between(clip.skeleton, mapping, rig, clip)
    targets = clip.global_positions()[:, mapping["head"]]
    stances = LiveStances.of(clip)
    frames = [retargeting.apply(clip[i:i + 1], head_targets=targets[i:i + 1], stances=stances) for i in range(len(clip))]
    rotations, positions = (np.concatenate(parts) for parts in zip(*frames))
    _, loose = retargeting.apply(clip, head_targets=targets)
    np.testing.assert_allclose(positions[:, mapping["head"]], targets, atol=1e-9)
    floats = []
    for side in "lr":
        foot, toes = mapping[f"{side}_foot"], mapping[f"{side}_toes"]
        assert positions[:, toes, 1].min() > rig.rest_positions[toes, 1] - 1e-6
        assert _heel(rig, rotations, positions, foot)[:, 1].min() > -1e-6
        planted = contact_weights(clip.global_positions()[:, toes], clip.fps) == 1.0
        both = planted[1:] & planted[:-1]
        steps = np.linalg.norm(np.diff(positions[:, toes, [0, 2]], axis=0), axis=-1)
        loose_steps = np.linalg.norm(np.diff(loose[:, toes, [0, 2]], axis=0), axis=-1)
        assert steps[both].mean() < 0.25 * loose_steps[both].mean()
        assert np.abs(positions[planted, toes, 1] - rig.rest_positions[toes, 1]).mean() < 0.001
        floats.append(np.abs(loose[planted, toes, 1] - rig.rest_positions[toes, 1]).mean())
    assert max(floats) > 0.03  # without the stances, a foot floats: this rig's legs differ from the source's


def test_the_head_meets_its_target_and_the_body_moves_with_it(fixture_walk1):
    clip = fixture_walk1[:120]
    mapping = find_mapping(clip.skeleton)
    rig = _rig(clip, scale=0.9, random_axes=True, seed=4)
    _, free = _retarget(clip, rig)
    targets = clip.global_positions()[:, mapping["head"]] + [0.02, -0.05, 0.01]
    _, positions = _retarget(clip, rig, head_targets=targets)
    np.testing.assert_allclose(positions[:, mapping["head"]], targets, atol=1e-9)
    shift = positions[:, mapping["hips"]] - free[:, mapping["hips"]]
    np.testing.assert_allclose(shift, targets - free[:, mapping["head"]], atol=1e-9)


def test_arms_reach_the_wrist_targets_and_the_forearm_takes_half_the_hands_twist(fixture_walk1, monkeypatch):
    clip = fixture_walk1[:120]
    mapping = find_mapping(clip.skeleton)
    rig = _rig(clip, scale=0.9, arm_drop_deg=45.0, random_axes=True, seed=3)
    _, truth = clip.global_transforms()
    wrists = truth[:, [mapping["l_hand"], mapping["r_hand"]]] + np.array([0.0, -0.05, 0.0])
    retargeting = Retargeting.between(clip.skeleton, mapping, rig, clip)
    rotations, positions = retargeting.apply(clip, wrists)
    reached = positions[:, [mapping["l_hand"], mapping["r_hand"]]]
    shoulder = positions[:, [mapping["l_upper_arm"], mapping["r_upper_arm"]]]
    reachable = np.linalg.norm(wrists - shoulder, axis=-1) < retargeting.arm_lengths - 1e-3
    assert reachable.mean(axis=0).min() > 0.05
    np.testing.assert_array_less(np.linalg.norm(reached - wrists, axis=-1)[reachable], 1e-6)
    monkeypatch.setattr(retarget, "TWIST_SHARE", 0.0)
    whole, _ = retargeting.apply(clip, wrists)

    def hand_twist(rotations, side, i):
        fore, hand = mapping[f"{side}_forearm"], mapping[f"{side}_hand"]
        rigid = quat.multiply(rotations[:, fore], quat.inverse_multiply(rig.rest_rotations[fore],
                                                                        rig.rest_rotations[hand]))
        axis = quat.rotate(rotations[:, fore], retargeting.forearm_axes[i])
        return twist_angle(quat.multiply_inverse(rotations[:, hand], rigid), axis)

    for i, side in enumerate("lr"):
        np.testing.assert_allclose(rotations[:, mapping[f"{side}_hand"]], whole[:, mapping[f"{side}_hand"]], atol=1e-9)
        spread, kept = hand_twist(rotations, side, i), hand_twist(whole, side, i)
        assert np.abs(kept).max() > np.radians(1.0)
        np.testing.assert_allclose(spread, 0.5 * kept, atol=1e-6)


def test_an_ik_rigs_foot_outside_the_leg_chain_is_placed_at_the_shins_end(fixture_walk1):
    """Quaternius's Male Casual hangs each foot from the root bone, listed before the legs: the foot still
    goes where the shin ends."""
    clip = fixture_walk1[:60]
    rig = _rig(clip)
    mapping = rig.mapping
    tails = rig.rest_positions + [0.0, 0.05, 0.0]  # Blender's bone tails: each bone ends where its child starts
    for j, parent in enumerate(rig.parents):
        if parent >= 0:
            tails[parent] = rig.rest_positions[j]
    feet = [mapping[f"{s}_{j}"] for s in "lr" for j in ("foot", "toes")]
    order = [0] + feet + [j for j in range(1, len(rig.names)) if j not in feet]  # feet right after the root
    parents = rig.parents.copy()
    for side in "lr":
        parents[mapping[f"{side}_foot"]] = 0  # joint_Root, above the hips
    new_index = {old: new for new, old in enumerate(order)}
    loose = TargetSkeleton.build([rig.names[j] for j in order], [new_index[parents[j]] if parents[j] >= 0 else -1
                                                                 for j in order],
                                 rig.rest_positions[order], rig.rest_rotations[order], tails=tails[order], floor=0.0)
    _, expected = _retarget(clip, rig)
    _, positions = _retarget(clip, loose)
    np.testing.assert_allclose(positions, expected[:, order], atol=1e-9)


def test_unmapped_bones_keep_their_rest_relation_and_a_rig_without_legs_is_refused(fixture_walk1):
    clip = fixture_walk1[:30]
    rig = _rig(clip)
    names = rig.names + ("prop",)
    parents = np.append(rig.parents, -1)  # a second root: a control bone outside the body
    extra = TargetSkeleton.build(names, parents, np.vstack([rig.rest_positions, [[1.0, 0.0, 0.0]]]),
                                 np.vstack([rig.rest_rotations, [[1.0, 0.0, 0.0, 0.0]]]), floor=0.0)
    _, positions = _retarget(clip, extra)
    np.testing.assert_allclose(positions[:, -1], [[1.0, 0.0, 0.0]] * 30)
    legless = [j for j, n in enumerate(rig.names) if "Leg" not in n and "Foot" not in n and "Toe" not in n]
    with pytest.raises(ValueError, match="Foot|foot|LowerLeg|shin|thigh"):
        TargetSkeleton.build([rig.names[j] for j in legless], [legless.index(rig.parents[j]) if rig.parents[j] >= 0
                                                                else -1 for j in legless],
                             rig.rest_positions[legless], rig.rest_rotations[legless])


def test_fit_scales_the_avatar_to_the_persons_head_height(fixture_walk1):
    from core.retarget.target import avatar_scale
    rig = _rig(fixture_walk1[:60], scale=1.3)
    assert avatar_scale(rig, 1.5, "fit") == pytest.approx(1.5 / rig.head_height())
    assert avatar_scale(rig, 1.5, "keep") == 1.0
    with pytest.raises(ValueError, match="size mode"):
        avatar_scale(rig, 1.5, "stretch")
    scaled = Retargeting.between(fixture_walk1.skeleton, find_mapping(fixture_walk1.skeleton), rig, fixture_walk1[:60], scale=0.5)
    plain = Retargeting.between(fixture_walk1.skeleton, find_mapping(fixture_walk1.skeleton), rig, fixture_walk1[:60])
    assert scaled.hips_scale == pytest.approx(0.5 * plain.hips_scale)


def test_a_forearm_twist_bone_takes_the_share_of_the_hands_twist_the_forearm_would(fixture_walk1, monkeypatch):
    clip = fixture_walk1[:90]
    mapping = find_mapping(clip.skeleton)
    rig = _rig(clip, arm_drop_deg=30.0, random_axes=True, seed=6)
    fore, hand = mapping["l_forearm"], mapping["l_hand"]
    names = rig.names + ("LowerArm_L_twist",)
    twisted = TargetSkeleton.build(names, np.append(rig.parents, fore),
                                   np.vstack([rig.rest_positions, (rig.rest_positions[fore] + rig.rest_positions[hand])
                                              / 2.0]), np.vstack([rig.rest_rotations, rig.rest_rotations[fore]]),
                                   floor=0.0)
    retargeting = Retargeting.between(clip.skeleton, mapping, twisted, clip)
    assert retargeting.twist_bones[0] == len(rig.names) and retargeting.twist_bones[1] == -1
    wrists = clip.global_positions()[:, [mapping["l_hand"], mapping["r_hand"]]] - [0.0, 0.05, 0.0]
    rotations, _ = retargeting.apply(clip, wrists)
    monkeypatch.setattr(retarget, "TWIST_SHARE", 0.0)
    kept, _ = retargeting.apply(clip, wrists)
    np.testing.assert_allclose(rotations[:, fore], kept[:, fore], atol=1e-12)  # the forearm keeps its twist ...
    np.testing.assert_allclose(rotations[:, hand], kept[:, hand], atol=1e-12)  # ... and the hand its orientation
    axis = quat.rotate(rotations[:, fore], retargeting.forearm_axes[0])
    bone = len(rig.names)
    spread = twist_angle(quat.multiply_inverse(rotations[:, bone], kept[:, bone]), axis)
    rigid = quat.multiply(kept[:, fore], quat.inverse_multiply(twisted.rest_rotations[fore], twisted.rest_rotations[hand]))
    whole = twist_angle(quat.multiply_inverse(kept[:, hand], rigid), axis)
    assert np.abs(whole).max() > np.radians(1.0)
    np.testing.assert_allclose(spread, 0.5 * whole, atol=1e-9)


def test_the_head_faces_where_the_source_looks_although_it_looks_around(walk1):
    """The head's standing reference averages the source's look-around out: read from the few most upright
    frames, it kept whatever yaw the head had there (18 degrees on the rig evaluation's walk). Here the head is
    turned 25 degrees in exactly those frames and the other way, a little, elsewhere (zero on average)."""
    from core.anim.character import body_yaw
    from core.devices.simulate import with_head_yaw
    from core.retarget.target import standing_frames
    clip = walk1[:240]
    mapping = find_mapping(clip.skeleton)
    yaw = np.full(len(clip), 0.0)
    upright = standing_frames(clip.global_positions(), mapping)
    yaw[upright] = np.radians(25.0)
    yaw[np.setdiff1d(np.arange(len(clip)), upright)] = -np.radians(25.0) * len(upright) / (len(clip) - len(upright))
    source = with_head_yaw(clip, mapping["neck"], yaw)
    rig = _rig(walk1, random_axes=True, seed=8)
    rotations, positions = Retargeting.between(source.skeleton, mapping, rig, source).apply(source)
    head = mapping["head"]
    rest_facing = np.cross(rig.rest_positions[mapping["l_thigh"]] - rig.rest_positions[mapping["r_thigh"]],
                           [0.0, 1.0, 0.0])
    facing = quat.rotate(quat.multiply_inverse(rotations[:, head], rig.rest_rotations[head]), rest_facing)
    looking = body_yaw(positions, mapping) + yaw
    error = np.degrees(np.abs(np.angle(np.exp(1j * (quat.yaw_of_direction(facing) - looking)))))
    assert error.mean() < 6.0


def test_a_held_stance_stays_still_and_the_swing_eases_between_holds():
    """A foot gliding at 2 cm a frame through two 30-frame stances 30 frames apart: each stance holds still at its
    mean place, and the swing between carries the holds' offsets with no jump (a step at most the glide plus the
    eased offset's, where holding without easing jumped 30 cm at the lift-off)."""
    frames, step = 100, 0.02
    ankle = np.zeros((frames, 3))
    ankle[:, 2] = step * np.arange(frames)
    planted = np.zeros(frames)
    planted[10:40] = planted[70:100] = 1.0
    held, _ = held_over_stances(planted, ankle, quat.identity(frames))
    assert np.ptp(held[10:40, 2]) < 1e-12 and abs(held[10, 2] - ankle[10:40, 2].mean()) < 1e-12
    assert np.ptp(held[70:100, 2]) < 1e-12
    steps = np.abs(np.diff(held[:, 2]))
    assert steps.max() <= step + 1.5 * step * 30 / 31 + 1e-9
    assert np.allclose(held[:10, 2] - ankle[:10, 2], held[10, 2] - ankle[10, 2])


@pytest.mark.skipif(not shared_exists(OTHER), reason="../shared/data/other is not beside the repository")
@pytest.mark.parametrize("name", ["angry", "rushed"])
def test_feet_on_a_character_of_another_studio_lift_and_plant_as_the_persons(name):
    """100STYLE's Xsens walks (toe joints at the tips of long feet) solved and written onto their own skeleton
    (`eval characters`): the toes lift as high as the person's (measured 1.05 and 0.94 of the person's over the
    first 12 s; 0.6-0.7 before the swing clearance) and the planted feet slide no more than the person's
    (measured 0.85 and 0.73; 3-5x before the toe point was held)."""
    figures = clip_figures(read_bvh(OTHER / "100style" / f"{name}_reference.bvh"), load_solver(), 12.0)
    assert figures["toe_lift_ratio"] > 0.85
    assert figures["foot_slide_ratio"] < 1.0
    assert figures["hand_cm"] < 0.1


WALKS = ("walk", "walk-back", "walk-left", "walk-right")


@pytest.mark.skipif(not (shared_exists(OTHER) and shared_exists(DATASET_1)), reason="../shared/data is not beside the repository")
def test_another_studios_walks_land_within_one_and_a_half_times_the_training_studios_unseen_walks():
    """MPJPE on the person's own skeleton (`eval characters`): 100STYLE's angry and rushed walks (first 12 s; measured
    9.48 and 9.71 cm) against the training studio's walks the predictor never saw, dataset-1's validation walks (each a
    style walked in a direction it was not trained on; 10 clips, frame-weighted, measured 7.98 cm): 1.19 and 1.22
    times, issue 37's target 1.5."""
    solver = load_solver()
    unseen = [f for f in split_by_file(sorted(DATASET_1.glob("*.bvh")))[1]
              if activity(f.stem) in WALKS]
    rows = [clip_figures(read_humanoid(f), solver) for f in unseen]
    training_studio = np.average([r["mpjpe_cm"] for r in rows], weights=[r["frames"] for r in rows])
    for name in ("angry", "rushed"):
        other = clip_figures(read_bvh(OTHER / "100style" / f"{name}_reference.bvh"), solver, 12.0)["mpjpe_cm"]
        assert other < 10.2
        assert other / training_studio < 1.3, (name, other, training_studio)


@pytest.mark.skipif(not shared_exists(OTHER), reason="../shared/data/other is not beside the repository")
def test_physics_before_retargeting_onto_a_character_of_another_studio_keeps_its_feet_planted():
    """`eval characters --physics` (solve --physics --avatar) on 100STYLE's angry walk, first 12 s: on the person's
    own skeleton the planted feet slide less than the person's (measured 0.66 of it), on the solver's skeleton too
    (0.68), the toes lift as the person's (0.96) and the hands stay on the controllers."""
    pytest.importorskip("mujoco")
    pytest.importorskip("daqp")
    figures = clip_figures(read_bvh(OTHER / "100style" / "angry_reference.bvh"), load_solver(), 12.0, physics=True)
    assert figures["foot_slide_ratio"] < 0.8
    assert figures["solver_foot_slide_ratio"] < 0.8
    assert 0.85 < figures["toe_lift_ratio"] < 1.1
    assert figures["hand_cm"] < 0.1


def test_live_retargeting_sizes_the_avatar_to_the_user_once_they_stand(fixture_walk1):
    """Live Preview with Fit to User: a take whose first second is 30 cm low (the user crouched to pick up the
    controllers) sizes the avatar to that head at first, then, once the solver has measured the user standing
    (devices/standing_height.py), to the standing head, as a take that starts standing is sized from its first
    frame on (and only once)."""
    from core.config import SimulationConfig
    from core.devices.simulate import simulate_stream
    from core.retarget.live import LiveRetargeting
    from core.retarget.target import bvh_target

    stream = simulate_stream(fixture_walk1, SimulationConfig(look_around_deg=30.0)).stream
    target = bvh_target(fixture_walk1)
    sizes = []
    for drop in (0.0, 0.3):
        positions = stream.positions.copy()
        positions[stream.times - stream.times[0] < 1.0, :, 1] -= drop
        live = LiveRetargeting(load_solver(), target, "fit")
        made = []
        for t in range(len(stream)):
            live.step(positions[t], stream.rotations[t], stream.tracked[t], 1 / 60)
            made.append(live.sized_for_m)
        sizes.append(np.array(made))
    standing, crouched = sizes
    assert np.unique(standing).size == 1
    assert abs(crouched[0] - (standing[0] - 0.3)) < 0.01 and abs(crouched[-1] - standing[0]) < 0.025
    assert np.unique(crouched).size == 2


@pytest.mark.parametrize("size", ["fit", "keep"])
def test_live_retargeting_waits_for_the_headset_and_makes_its_standing_reference_once(size, fixture_walk1,
                                                                                      monkeypatch):
    """The headset untracked for the first frames: the avatar stands finite at its own size until then (it stayed
    NaN for good before), is sized once the headset is seen ('fit') and again when the user is measured taller; the
    solver's standing motion is made once for them whatever the refits (made at each it cost a 65-280 ms step)."""
    from core.config import SimulationConfig
    from core.devices.simulate import simulate_stream
    from core.n3p.solver import N3PSolver
    from core.retarget.live import LiveRetargeting
    from core.retarget.target import bvh_target

    stream = simulate_stream(fixture_walk1, SimulationConfig(look_around_deg=30.0)).stream
    positions, tracked = stream.positions.copy(), stream.tracked.copy()
    tracked[:5, 0] = False
    positions[stream.times - stream.times[0] < 1.0, :, 1] -= 0.3
    solver = load_solver()
    made, solve = [], N3PSolver.solve  # live, the predictor solves offline only to make its standing motion
    monkeypatch.setattr(N3PSolver, "solve", lambda self, stream: made.append(1) or solve(self, stream))
    live = LiveRetargeting(solver, bvh_target(fixture_walk1), size)
    retargetings, finite = set(), []
    for t in range(len(stream)):
        finite.append(np.isfinite(live.step(positions[t], stream.rotations[t], tracked[t], 1 / 60)[1]).all())
        retargetings.add(id(live.retargeting))
    assert all(finite) and len(made) == 1  # for the solver's waiting pose and the retargeting alike
    assert len(retargetings) == (3 if size == "fit" else 1)


def _with_bone_shrunk(motion, joint: int, factor: float):
    """`motion` with the bone ending at `joint` (its offset from its parent) scaled by `factor`."""
    offsets = motion.skeleton.offsets.copy()
    offsets[joint] *= factor
    positions = motion.positions.copy()
    positions[:, joint] *= factor
    return Motion(replace(motion.skeleton, offsets=offsets), motion.rotations, positions, motion.fps)


@pytest.mark.parametrize("bone, tail", [("left upper arm", "l_forearm"), ("right forearm", "r_hand"),
                                        ("left thigh", "l_shin"), ("right shin", "r_foot")])
def test_a_limb_bone_too_short_to_bend_is_refused_naming_it(fixture_walk1, bone, tail):
    clip = fixture_walk1[:30]
    mapping = find_mapping(clip.skeleton)
    names = clip.skeleton.names
    head = names[clip.skeleton.parents[mapping[tail]]]
    with pytest.raises(HumanoidMappingError, match=f"the {bone} \\({head} to {names[mapping[tail]]}\\) is 0.00 cm long"):
        bvh_target(_with_bone_shrunk(clip, mapping[tail], 0.0))
    assert bvh_target(_with_bone_shrunk(clip, mapping[tail], 0.5)).mapping.joints == mapping.joints


def test_a_character_lying_down_is_refused_before_any_retargeting(fixture_walk1):
    clip = fixture_walk1[:30]
    rotations = clip.rotations.copy()
    rotations[:, 0] = quat.multiply(quat.from_axis_rotation("x", np.radians(90.0)), rotations[:, 0])
    with pytest.raises(HumanoidMappingError, match="standing pose is not upright"):
        bvh_target(Motion(clip.skeleton, rotations, clip.positions, clip.fps))


def test_a_zero_length_thigh_gives_the_ik_no_warning_and_a_finite_knee():
    hip, knee = np.zeros((1, 3)), np.zeros((1, 3))
    with np.errstate(all="raise"):
        placed = knee_position(hip, knee, np.array([[0.0, -0.5, 0.0]]), np.zeros(1), np.full(1, 0.4))
    assert np.isfinite(placed).all()


@pytest.mark.skipif(not shared_exists(OTHER), reason="../shared/data/other is not beside the repository")
def test_a_captures_first_frame_jump_is_not_counted_as_sliding():
    """Perfume's dance B begins with the actor's rest pose 0.9 m from where the dance starts; the stream jumps there
    and the solve follows it as a teleport. That step is left out of the feet's sliding, for the person and the solve
    alike: with the physics pass the solver's feet slide 0.79 of the person's (measured; 1.14 with the step counted)."""
    pytest.importorskip("mujoco")
    pytest.importorskip("daqp")
    dance = read_bvh(OTHER / "perfume" / "B_test.bvh")
    figures = clip_figures(dance, load_solver(), physics=True)
    assert figures["solver_foot_slide_ratio"] < 0.9
    assert figures["foot_slide_ratio"] < 0.65


def test_the_steps_across_a_jump_of_the_stream_are_left_out_of_the_sliding(fixture_walk1):
    """A walk put 1 m aside in an extra first frame: the stream jumps there, the one step across it is left out, and
    the feet's sliding is the walk's own, where counting the step adds the metre moved in one frame."""
    walk = fixture_walk1
    first = walk.positions[:1].copy()
    first[:, 0, 0] += 1.0
    moved = Motion(walk.skeleton, np.concatenate([walk.rotations[:1], walk.rotations]),
                   np.concatenate([first, walk.positions]), walk.fps)
    stream = simulate_stream(moved, SimulationConfig(look_around_deg=30.0)).stream
    steps = steps_without_jumps(stream, moved.fps, len(moved))
    assert np.flatnonzero(~steps).tolist() == [0]
    own = feet(walk)[1]
    assert feet(moved, steps)[1] == pytest.approx(own, rel=0.02)
    assert feet(moved)[1] > 2 * own
