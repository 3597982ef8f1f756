"""Neural3Points' root and upper body with motion matching's legs while the body travels (issue 28, an experiment).

Offline only: both solvers solve the stream (`solve` of each); on the predictor's skeleton the result
keeps the predictor's pose, with three changes:
1. facing: the hips and legs turn about the vertical through the spine's base so that the hips face where
   the orientation model says (motion matching's window model over the whole stream, averaged over
   `FACING_WINDOW_S` centred); the spine is turned back, so the upper body (head, arms, hands on the
   devices) keeps its world pose;
2. legs: each leg joint (thigh, shin, foot, toes) turns in the world toward motion matching's by a weight that
   follows the predicted hips' floor speed (smoothed over a quarter second; 0 under `STANDING_M_S`, 1 over
   `TRAVELLING_M_S`, smoothstep between);
3. feet: the foot lock (MMVR §6.2) holds the feet on the matched poses' contacts while travelling, and both
   feet while standing.
The idea: the predictor places the body and the upper body well but its legs barely step and its hips face
14° off; motion matching steps but places the body worse. Measured in docs/default_method.md; not a default,
not in the add-on, no live step (the facing average is centred: a live one would be one-sided).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...anim.character import body_yaw
from ...anim.motion import Motion, local_from_global
from ...files.stream import held_samples
from ...ik.foot_lock import FootLock, Legs
from ...matching.solver import MotionMatchingSolver, Solution, solve
from ...math import quat
from ...math.angle import wrap_angle
from ...n3p.solver import N3PSolver
from ...orientation.mmvr import facing_yaw
from ...rig.humanoid import find_mapping

LEG_JOINTS = ("thigh", "shin", "foot", "toes")
STANDING_M_S = 0.15
TRAVELLING_M_S = 0.45
SPEED_WINDOW_S = 0.25
FACING_WINDOW_S = 0.25


def centred_mean(values: np.ndarray, frames: float) -> np.ndarray:
    """Each of `values` (T,) averaged over a window of about `frames` centred on it, the ends held."""
    width = max(1, int(round(frames)))
    return np.convolve(np.pad(values, (width // 2, width - 1 - width // 2), mode="edge"), np.ones(width) / width, "valid")


def travel_weights(hips: np.ndarray, fps: float) -> np.ndarray:
    """Per frame, how much the body travels (0 to 1) from the hips' positions (T, 3): smoothed floor speed,
    smoothstep between STANDING_M_S and TRAVELLING_M_S."""
    speed = np.r_[0.0, np.linalg.norm(np.diff(hips[:, [0, 2]], axis=0), axis=-1) * fps]
    speed = centred_mean(speed, SPEED_WINDOW_S * fps)
    w = np.clip((speed - STANDING_M_S) / (TRAVELLING_M_S - STANDING_M_S), 0.0, 1.0)
    return w * w * (3.0 - 2.0 * w)


def facing_of_stream(model, stream, fps: float) -> np.ndarray:
    """The body's yaw per frame (radians) that the orientation model predicts over a whole stream sampled at `fps`
    (its offline driver), each device held at its last tracked pose where it is not tracked (its first before
    it is first tracked); NaN where the model sees a device that was never tracked."""
    held = held_samples(stream.tracked)
    positions = np.take_along_axis(stream.positions, held[:, :, None], 0)
    rotations = np.take_along_axis(stream.rotations, held[:, :, None], 0)
    yaw = facing_yaw(model.predict(positions, rotations, fps))
    known = np.isfinite(yaw)  # a device never tracked leaves its frames unknown
    yaw[known] = np.unwrap(yaw[known])
    return centred_mean(yaw, FACING_WINDOW_S * fps)


def turn_lower_body(rotations: np.ndarray, positions: np.ndarray, lower, pivot: int, turns: np.ndarray) -> None:
    """Turn the joints `lower` (the hips and legs) of global rotations (T, J, 4) and positions (T, J, 3), in place,
    by `turns` (T,) radians about the vertical through joint `pivot`; the other joints keep their world pose."""
    turn = quat.from_yaw(turns)[:, None]
    centre = positions[:, pivot:pivot + 1]
    rotations[:, lower] = quat.multiply(turn, rotations[:, lower])
    positions[:, lower] = centre + quat.rotate(turn, positions[:, lower] - centre)


class MatchedLegsSolver:
    """`n3p_mm_legs`: the predictor's body with motion matching's legs while travelling (module docstring)."""

    method = "n3p_mm_legs"

    def __init__(self, predictor: N3PSolver, matching: MotionMatchingSolver, orientation_model=None):
        """`orientation_model` gives the hips' facing (default: motion matching's; None there too: the predictor's)."""
        self.predictor, self.matching = predictor, matching
        self.orientation_model = orientation_model or matching.model
        self.devices = predictor.devices
        self.fps = matching.fps
        self.skeleton = predictor.skeleton
        self.mapping = find_mapping(self.skeleton)
        self.legs = Legs.of(self.skeleton, self.mapping)
        self.matched_legs = [matching.mapping[f"{s}_{j}"] for s in "lr" for j in LEG_JOINTS]
        self.own_legs = [self.mapping[f"{s}_{j}"] for s in "lr" for j in LEG_JOINTS]
        self.lower = [self.mapping["hips"], *self.own_legs]

    def standing_motion(self) -> Motion:
        """The predictor's standing reference: the body is the predictor's."""
        return self.predictor.standing_motion()

    def solve(self, stream) -> Solution:
        predicted = self.predictor.solve(stream)
        matched = solve(stream, self.matching, None)  # the stream comes calibrated
        return self.combine(predicted, matched)

    def combine(self, predicted: Solution, matched: Solution) -> Solution:
        """The result from the predictor's solution and motion matching's of the same stream."""
        body = predicted.motion.resampled(self.fps)
        frames = min(len(body), len(matched.motion))
        body, legs = body[:frames], matched.motion[:frames]
        rotations, positions = body.global_transforms()
        matched_rotations, _ = legs.global_transforms()
        hips = self.mapping["hips"]
        weight = travel_weights(positions[:, hips], self.fps)[:, None]
        parent = self.skeleton.parents[hips]
        parent_position, parent_rotation = positions[:, parent].copy(), rotations[:, parent].copy()
        if self.orientation_model is not None:
            facing = facing_of_stream(self.orientation_model, matched.stream, self.fps)[:frames]
            turns = wrap_angle(facing - body_yaw(positions, self.mapping))
            turn_lower_body(rotations, positions, self.lower, self.mapping["spine"],
                            np.where(np.isfinite(turns), turns, 0.0))  # unknown: the predictor's facing
        rotations[:, self.own_legs] = quat.slerp(rotations[:, self.own_legs],
                                                 matched_rotations[:, self.matched_legs], weight)
        local = local_from_global(self.skeleton.parents, rotations)
        local[:, 0] = body.rotations[:, 0]
        hips_position = positions[:, hips]
        positions = body.positions.copy()
        if parent >= 0:  # the hips where the turn put them, in their parent's frame
            hips_position = quat.inverse_rotate(parent_rotation, hips_position - parent_position)
        positions[:, hips] = hips_position
        contacts = np.array([self.matching.databases[d].poses.contacts[f]
                             for d, f in zip(matched.databases[:frames], matched.frames[:frames])])
        contacts = np.where(weight > 0.5, contacts, True)
        self.legs.plant(local, positions, FootLock(self.matching.config.foot_unlock_distance_m,
                                                   self.matching.config.foot_unlock_halflife_s), contacts, 1.0 / self.fps)
        motion = Motion(self.skeleton, local, positions, self.fps, self.method)
        return replace(matched, motion=motion, stream=matched.stream, method=self.method,
                       databases=matched.databases[:frames], frames=matched.frames[:frames],
                       targets=matched.targets[:frames], searches=matched.searches[:frames])
