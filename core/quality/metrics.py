"""Metrics of SPEC §5: orientation, joint position, root, hand, foot-skate and jitter errors.

Positions are metres in and centimetres out (`*_cm`); every per-frame function is vectorised and
its summary is a plain mean over frames (and joints) unless said otherwise.
"""
from __future__ import annotations

import numpy as np

from ..anim.character import body_yaw
from ..anim.contacts import floor_height
from ..math import quat
from ..math.angle import wrap_angle
from ..anim.motion import Motion
from ..rig.humanoid import CANONICAL_JOINTS, LOWER_BODY, UPPER_BODY, find_mapping, rest_positions

FOOT_SKATE_HEIGHT_M = 0.025
"""Toes under this height above the floor count as touching it (SPEC §5)."""


def angle_deg(predicted_yaw: np.ndarray, true_yaw: np.ndarray) -> np.ndarray:
    """Absolute yaw difference per frame, degrees in [0, 180]."""
    return np.degrees(np.abs(wrap_angle(np.asarray(predicted_yaw) - np.asarray(true_yaw))))


def mpjpe_cm(predicted: np.ndarray, truth: np.ndarray) -> float:
    """Mean per-joint position error over (T, J, 3) positions, centimetres."""
    return float(np.linalg.norm(predicted - truth, axis=-1).mean() * 100.0)


def root_cm(predicted_hips: np.ndarray, true_hips: np.ndarray) -> float:
    """Mean horizontal (XZ) distance between hips positions (T, 3), centimetres."""
    delta = predicted_hips - true_hips
    return float(np.hypot(delta[..., 0], delta[..., 2]).mean() * 100.0)


def hand_cm(hands: np.ndarray, implied_hands: np.ndarray, tracked: np.ndarray | None = None) -> float:
    """Mean distance between hand joints and the controller-implied hand positions (T, 2, 3), centimetres.

    Frames whose controller is not tracked (tracked (T, 2) False) are left out.
    """
    distance = np.linalg.norm(hands - implied_hands, axis=-1)
    if tracked is not None:
        distance = distance[np.asarray(tracked, dtype=bool)]
    return float(distance.mean() * 100.0) if distance.size else float("nan")


def hand_turn_deg(hands: np.ndarray, true_hands: np.ndarray, tracked: np.ndarray | None = None) -> float:
    """How far the hands' world rotations (T, 2, 4) turn away from the truth's, degrees: per hand, the angle of each
    frame's rotation between the two once the clip's mean of it is taken out (the solver's hand bones and the
    clip's need not lie alike, and the grip in the hand is not known: what counts is following the hand's turns).
    Frames whose controller is not tracked (tracked (T, 2) False) are left out."""
    between = quat.inverse_multiply(hands, true_hands)
    keep = np.ones(between.shape[:2], bool) if tracked is None else np.asarray(tracked, dtype=bool)
    angles = []
    for side in range(between.shape[1]):
        kept = between[keep[:, side], side]
        if len(kept):
            angles.append(quat.angle_between(quat.mean(kept)[None], kept))
    return float(np.degrees(np.concatenate(angles)).mean()) if angles else float("nan")


TORSO_REACH_M = 0.1
"""How much nearer a person's shoulder comes to a far target by turning the torso and the shoulder girdle."""


def within_reach(motion: Motion, targets: np.ndarray, allowance_m: float = TORSO_REACH_M) -> np.ndarray:
    """Where the motion's person could put each wrist on its target (T, 2, 3), left then right: within the arm's
    length (upper arm and forearm, per frame) plus `allowance_m` of the shoulder; (T, 2) bool."""
    mapping = find_mapping(motion.skeleton)
    chains = [[mapping[f"{s}_{j}"] for j in ("upper_arm", "forearm", "hand")] for s in "lr"]
    positions = motion.global_positions()[:, np.array(chains)]
    frames = min(len(positions), len(targets))
    positions, targets = positions[:frames], targets[:frames]
    arm = np.linalg.norm(np.diff(positions, axis=-2), axis=-1).sum(axis=-1)
    return np.linalg.norm(targets - positions[:, :, 0], axis=-1) <= arm + allowance_m


def foot_skate_per_frame(toes: np.ndarray, fps: float, floor: float | None = None) -> np.ndarray:
    """Weighted horizontal toe speed (m/s) per frame transition and toe (T - 1, K), as foot_skate_cm_s sums it."""
    if floor is None:
        floor = floor_height(toes[..., 1])
    speed = np.hypot(*np.diff(toes[..., [0, 2]], axis=0).transpose(2, 0, 1)) * fps
    height = toes[1:, :, 1] - floor
    weight = np.where(height < FOOT_SKATE_HEIGHT_M, 2.0 - 2.0 ** (np.maximum(height, 0.0) / FOOT_SKATE_HEIGHT_M), 0.0)
    return speed * weight


def foot_skate_cm_s(toes: np.ndarray, fps: float, floor: float | None = None) -> float:
    """Foot skating of toe trajectories (T, K, 3), cm/s.

    Per toe and frame transition, the horizontal speed is weighted by 2 - 2^(h / 2.5 cm) where the
    toe is lower than 2.5 cm above the floor (h measured at the later frame), else 0; the figure is
    the mean over all toes and transitions. `floor` defaults to the 1st percentile of toe height.
    """
    skate = foot_skate_per_frame(toes, fps, floor)
    return float(skate.mean() * 100.0) if skate.size else 0.0


def jitter(positions: np.ndarray, fps: float) -> float:
    """Mean norm of joint jerk (third finite difference times fps^3) over (T, J, 3) positions, m/s^3."""
    if len(positions) < 4:
        return 0.0
    jerk = np.diff(positions, n=3, axis=0) * fps ** 3
    return float(np.linalg.norm(jerk, axis=-1).mean())


def score_motion(solved: Motion, truth: Motion, implied_hands: np.ndarray | None = None,
                 hands_tracked: np.ndarray | None = None) -> dict[str, float]:
    """Every §5 metric of a solved motion against the ground-truth clip, over canonical joints.

    The two motions may use different skeletons (each is mapped onto the canonical humanoid; where their feet are
    not alike, foot skating counts each one's toes over its own floor, since a skeleton's toe joint sits at its own
    height over the sole: the solver's toes stand 3.5-4.8 cm over another studio's floor and never counted as near
    it); `solved` is resampled to the truth's rate and both are cut to the shorter length.
    `implied_hands` (T, 2, 3), left then right, adds `hand_cm` and `hand_turn_deg`.
    """
    solved = solved.resampled(truth.fps)
    frames = min(len(solved), len(truth))
    mappings = [find_mapping(m.skeleton) for m in (solved, truth)]
    ours, theirs = (_canonical_positions(m, mp)[:frames] for m, mp in zip((solved, truth), mappings))
    canonical = list(CANONICAL_JOINTS)
    upper = [canonical.index(j) for j in UPPER_BODY]
    lower = [canonical.index(j) for j in LOWER_BODY]
    toes = [canonical.index("l_toes"), canonical.index("r_toes")]
    mapping = {name: i for i, name in enumerate(canonical)}
    floor = floor_height(theirs[:, toes, 1])
    own_floor = floor if feet_alike(solved.skeleton, truth.skeleton, mappings) else floor_height(ours[:, toes, 1])
    result = {
        "mpjpe_cm": mpjpe_cm(ours, theirs),
        "mpjpe_cm_upper": mpjpe_cm(ours[:, upper], theirs[:, upper]),
        "mpjpe_cm_lower": mpjpe_cm(ours[:, lower], theirs[:, lower]),
        "root_cm": root_cm(ours[:, mapping["hips"]], theirs[:, mapping["hips"]]),
        "head_cm": mpjpe_cm(ours[:, mapping["head"]], theirs[:, mapping["head"]]),
        "angle_deg": float(angle_deg(body_yaw(ours, mapping), body_yaw(theirs, mapping)).mean()),
        "foot_skate_cm_s": foot_skate_cm_s(ours[:, toes], truth.fps, own_floor),
        "foot_skate_cm_s_truth": foot_skate_cm_s(theirs[:, toes], truth.fps, floor),
        "jitter": jitter(ours, truth.fps),
        "jitter_truth": jitter(theirs, truth.fps),
    }
    if implied_hands is not None:
        hands = [mapping["l_hand"], mapping["r_hand"]]
        tracked = None if hands_tracked is None else hands_tracked[:frames]
        result["hand_cm"] = hand_cm(ours[:, hands], implied_hands[:frames], tracked)
        turns = [_hand_rotations(m)[:frames] for m in (solved, truth)]
        result["hand_turn_deg"] = hand_turn_deg(*turns, tracked)
    return result


def _hand_rotations(motion: Motion) -> np.ndarray:
    """World rotations (T, 2, 4) of the left and right hand."""
    mapping = find_mapping(motion.skeleton)
    return motion.global_transforms()[0][:, [mapping["l_hand"], mapping["r_hand"]]]


def foot_shape(skeleton, mapping=None) -> np.ndarray:
    """(3,) the left toe joint's rest place from the foot joint, over the shin's length (rest pose, +Y up); `mapping`:
    the skeleton's, where it is at hand."""
    mapping, rest = mapping or find_mapping(skeleton), rest_positions(skeleton)
    foot = rest[mapping["l_foot"]]
    return (rest[mapping["l_toes"]] - foot) / max(float(np.linalg.norm(foot - rest[mapping["l_shin"]])), 1e-9)


def feet_alike(a, b, mappings=(None, None), tolerance: float = 0.05) -> bool:
    """Whether two skeletons' feet are shaped alike (the same studio's, however sized): their `foot_shape`s within
    `tolerance` of a shin's length (`mappings`: theirs, where they are at hand)."""
    return a is b or float(np.linalg.norm(foot_shape(a, mappings[0]) - foot_shape(b, mappings[1]))) < tolerance


def _canonical_positions(motion: Motion, mapping) -> np.ndarray:
    """Global positions (T, 21, 3) of the canonical joints in CANONICAL_JOINTS order (`mapping`: the skeleton's)."""
    return motion.global_positions()[:, mapping.indices()]


FOOT_SLIDE_HEIGHT_M = 0.02
"""RMR §7.5: feet closer than 2 cm to the floor count for foot sliding."""


def foot_slide_m(toes: np.ndarray, floor: float = 0.0) -> float:
    """RMR §7.5's foot sliding: mean horizontal toe displacement per frame (m) where the toe is under 2 cm.

    toes (..., T, K, 3); a transition counts when the toe is below the threshold at its later frame.
    """
    step = np.hypot(*np.moveaxis(np.diff(toes[..., [0, 2]], axis=-3), -1, 0))
    low = toes[..., 1:, :, 1] - floor < FOOT_SLIDE_HEIGHT_M
    return float(step[low].mean()) if low.any() else 0.0


def npss(truth: np.ndarray, predicted: np.ndarray) -> float:
    """Normalized Power Spectrum Similarity (Gopalakrishnan et al. 2019) of sequences (N, T, D).

    Per sequence and dimension, the power spectra over time are normalised to sum to 1; the earth
    mover's distance between them is the L1 distance of their cumulative sums; the result is the
    mean of those distances weighted by the ground truth's total power. One-sided spectra (rfft).
    """
    truth_power = np.abs(np.fft.rfft(truth, axis=1)) ** 2
    predicted_power = np.abs(np.fft.rfft(predicted, axis=1)) ** 2
    truth_total = truth_power.sum(axis=1)
    truth_cdf = np.cumsum(truth_power / np.maximum(truth_total[:, None], 1e-12), axis=1)
    predicted_cdf = np.cumsum(predicted_power / np.maximum(predicted_power.sum(axis=1)[:, None], 1e-12), axis=1)
    distance = np.abs(truth_cdf - predicted_cdf).sum(axis=1)
    return float(np.sum(distance * truth_total) / max(np.sum(truth_total), 1e-12))
