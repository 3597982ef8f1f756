"""Neural3Points' root and upper body with motion matching's legs while the body travels (issue 28, an experiment).

Offline only: both solvers solve the stream (`solve` of each); on the predictor's skeleton the result
keeps the predictor's pose, and turns each leg joint (thigh, shin, foot, toes) in the world toward motion
matching's by a weight that follows the predicted hips' floor speed (smoothed over a quarter second; 0
under `STANDING_M_S`, 1 over `TRAVELLING_M_S`, smoothstep between). The foot lock (MMVR §6.2) then holds
the feet on the matched poses' contacts while travelling, and both feet while standing. The idea: the
predictor places the body and the upper body well but its legs barely step; motion matching steps but
places the body worse. Measured in docs/default_method.md; not a default, not in the add-on, no live step.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...anim.motion import Motion, local_from_global
from ...ik.foot_lock import FootLock, Legs
from ...matching.solver import Solution, Solver, solve
from ...math import quat
from ...n3p.solver import N3PSolver
from ...rig.humanoid import find_mapping

LEG_JOINTS = ("thigh", "shin", "foot", "toes")
STANDING_M_S = 0.15
TRAVELLING_M_S = 0.45
SPEED_WINDOW_S = 0.25


def travel_weights(hips: np.ndarray, fps: float) -> np.ndarray:
    """Per frame, how much the body travels (0 to 1) from the hips' positions (T, 3): smoothed floor speed,
    smoothstep between STANDING_M_S and TRAVELLING_M_S."""
    speed = np.r_[0.0, np.linalg.norm(np.diff(hips[:, [0, 2]], axis=0), axis=-1) * fps]
    width = max(1, int(round(SPEED_WINDOW_S * fps)))
    speed = np.convolve(np.pad(speed, (width // 2, width - 1 - width // 2), mode="edge"), np.ones(width) / width, "valid")
    w = np.clip((speed - STANDING_M_S) / (TRAVELLING_M_S - STANDING_M_S), 0.0, 1.0)
    return w * w * (3.0 - 2.0 * w)


class MatchedLegsSolver:
    """`n3p_mm_legs`: the predictor's body with motion matching's legs while travelling (module docstring)."""

    method = "n3p_mm_legs"

    def __init__(self, predictor: N3PSolver, matching: Solver):
        self.predictor, self.matching = predictor, matching
        self.devices = predictor.devices
        self.fps = matching.fps
        self.skeleton = predictor.skeleton
        self.mapping = find_mapping(self.skeleton)
        self.legs = Legs.of(self.skeleton, self.mapping)
        self.matched_legs = [matching.mapping[f"{s}_{j}"] for s in "lr" for j in LEG_JOINTS]
        self.own_legs = [self.mapping[f"{s}_{j}"] for s in "lr" for j in LEG_JOINTS]

    def standing_motion(self) -> Motion:
        """The predictor's standing reference: the body is the predictor's."""
        return self.predictor.standing_motion()

    def solve(self, stream) -> Solution:
        predicted = self.predictor.solve(stream)
        matched = solve(stream, self.matching, None)  # the stream comes calibrated
        body = predicted.motion.resampled(self.fps)
        frames = min(len(body), len(matched.motion))
        body, legs = body[:frames], matched.motion[:frames]
        rotations, positions = body.global_transforms()
        matched_rotations, _ = legs.global_transforms()
        weight = travel_weights(positions[:, self.mapping["hips"]], self.fps)[:, None]
        rotations[:, self.own_legs] = quat.slerp(rotations[:, self.own_legs],
                                                 matched_rotations[:, self.matched_legs], weight)
        local = local_from_global(self.skeleton.parents, rotations)
        local[:, 0] = body.rotations[:, 0]
        positions = body.positions.copy()
        contacts = np.array([self.matching.databases[d].poses.contacts[f]
                             for d, f in zip(matched.databases[:frames], matched.frames[:frames])])
        contacts = np.where(weight > 0.5, contacts, True)
        self.legs.plant(local, positions, FootLock(self.matching.config.foot_unlock_distance_m,
                                                   self.matching.config.foot_unlock_halflife_s), contacts, 1.0 / self.fps)
        motion = Motion(self.skeleton, local, positions, self.fps, self.method)
        return replace(matched, motion=motion, stream=matched.stream, method=self.method,
                       databases=matched.databases[:frames], frames=matched.frames[:frames],
                       targets=matched.targets[:frames], searches=matched.searches[:frames])
