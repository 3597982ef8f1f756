"""The default solve (`hybrid`): Neural3Points' pose with held feet and motion matching's facing.

Neural3Points (`n3p`) places the body well and, trained long enough, steps in the person's phase, but its hips
face 7-11 degrees off and its feet slide; motion matching (`mm`) steps cleanly but places the body worse (14
cm) over a locomotion database. Both solve the same devices; on the predictor's skeleton the result keeps the
predictor's pose (root, spine, neck, head, arms: its hands on the controllers through its own IK), then:
1. facing: the hips and legs turn about the vertical through the spine's base so the hips face where motion
   matching's orientation model says (averaged over `facing_window_s`: centred offline, trailing live); the
   spine turns back, so the upper body (head, arms, hands on the devices) keeps its world pose;
2. legs (`HybridConfig.legs`): the predictor's own, or ("matched") each leg joint turned in the world toward
   motion matching's by the travel weight of the predicted hips' floor speed (blend.travel_weights);
3. feet: the foot lock (MMVR §6.2) holds the feet on the predicted contacts (or the matched poses') while
   travelling and both feet while standing; a released foot catches up in a low arc.
`step` is the live driver (one frame); `solve` the offline one, which runs the predictor's own offline
driver (30 Hz, resampled to motion matching's rate) and motion matching's steps 1-5, then puts every frame
together with the same `combine`. Measured against its parents in docs/default_method.md.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..anim.character import body_yaw
from ..anim.motion import Motion, forward_kinematics, local_from_global
from ..config import HybridConfig
from ..ik.foot_lock import FootLock, Legs
from ..matching.solver import MotionMatchingSolver, Solution, load_solver, lower_body_frames, require_finite
from ..math import quat
from ..math.angle import wrap_angle
from ..n3p.model import N3PModel
from ..n3p.solver import N3PSolver
from ..n3p.state import J_LO
from ..rig.humanoid import find_mapping
from .query import PARTS, LiveGuide, query_guides
from .blend import LegTransfer, TrailingMean, centred_mean, floor_speeds, travel_weights, turn_lower_body, \
    unwrapped_after


LEGS = ("predicted", "matched")
"""HybridConfig.legs: whose legs step while the body travels."""


class HybridSolver:
    """The predictor's pose with motion matching's facing and the foot lock (module docstring); motion matching's
    interface (`step`, `solve`, `reset`, `standing_motion`)."""

    method = "hybrid"

    def __init__(self, predictor: N3PSolver, matching: MotionMatchingSolver, config: HybridConfig = HybridConfig()):
        """The two solvers become the hybrid's parts: the predictor's foot lock and motion matching's foot lock and
        arm IK are switched off in them (the hybrid locks the feet itself; the arms are the predictor's)."""
        if config.legs not in LEGS:
            raise ValueError(f"HybridConfig.legs: {config.legs!r}; legs are {', '.join(LEGS)}")
        unknown = set(config.query_guide) - set(PARTS)
        if unknown:
            raise ValueError(f"HybridConfig.query_guide: unknown parts {sorted(unknown)}; parts are {', '.join(PARTS)}")
        self.predictor, self.matching, self.config = predictor, matching, config
        predictor.config = replace(predictor.config, foot_lock=False)
        matching.config = replace(matching.config, foot_lock=False, arm_ik=False)
        self.devices, self.offsets = predictor.devices, predictor.offsets
        self.fps = matching.fps
        self.skeleton = predictor.skeleton
        self.mapping = find_mapping(self.skeleton)
        self.legs = Legs.of(self.skeleton, self.mapping)
        self.transfer = LegTransfer.between(predictor, matching)
        self.hips = self.mapping["hips"]
        self.lower = [self.hips, *self.transfer.own]
        self.matched_toes = [matching.mapping[f"{s}_toes"] for s in "lr"]
        self.toes = [self.mapping[f"{s}_toes"] for s in "lr"]
        self.standing_toe_heights = predictor.model.initial_lo[[3 * J_LO.index(f"{s}_toes") + 1 for s in "lr"]]
        """The predictor's toes' heights over the floor in its standing state."""
        self.feet = [self.mapping[f"{s}_foot"] for s in "lr"]
        self.faces_with_model = config.face_with_model and matching.model is not None \
            and matching.config.orientation == "network"
        self.reset()

    def standing_motion(self) -> Motion:
        """The predictor's standing reference: the body is the predictor's."""
        return self.predictor.standing_motion()

    def reset(self, standing_hmd_height_m: float | None = None) -> None:
        """Forget the user: the next step starts a new avatar where the devices are."""
        self.predictor.reset(standing_hmd_height_m)
        self.matching.reset(standing_hmd_height_m)
        self.foot_lock = FootLock(self.matching.config.foot_unlock_distance_m,
                                  self.matching.config.foot_unlock_halflife_s, self.config.lift_off_m,
                                  self.config.step_height)
        self.speed = TrailingMean(self.config.speed_window_s * self.fps)
        self.facing = TrailingMean(self.config.live_facing_window_s * self.fps)
        self.previous_hips: np.ndarray | None = None
        self.previous_yaw: float | None = None
        self.guide = LiveGuide(self.config.query_guide)

    def step(self, positions: np.ndarray, rotations: np.ndarray, tracked: np.ndarray, dt: float) -> Motion:
        """One live frame from device poses (3, 3), (3, 4) and tracking flags (3,): a one-frame Motion."""
        body = self.predictor.step(positions, rotations, tracked, dt)
        pose = forward_kinematics(self.skeleton.parents, body.rotations, body.positions)
        hips = pose[1][0, self.hips]
        guide = self.guide.add(hips, pose[1][0, self.feet], dt) if self.config.query_guide else None
        lower = self.matching.step_lower_body(positions, rotations, tracked, dt, guide)
        speed = 0.0 if self.previous_hips is None or lower.placed else \
            float(np.hypot(*(hips - self.previous_hips)[[0, 2]])) / lower.dt
        self.previous_hips = hips
        weight = travel_weights(self.speed.add(speed), self.config.standing_m_s, self.config.travelling_m_s)
        facing = None
        if self.faces_with_model:
            yaw = lower.body_yaw if self.previous_yaw is None else unwrapped_after(self.previous_yaw, lower.body_yaw)
            self.previous_yaw = yaw
            facing = np.array([self.facing.add(yaw)])
        if self.config.legs == "matched":
            matched, contacts = self.matched_legs(lower.rotations[None], lower.positions[None]), lower.contacts
        else:
            matched, contacts = None, self.predictor.contacts
        rotations_out, positions_out = self.combine(body, pose, matched, facing, np.array([weight]), contacts[None],
                                                    lower.dt, np.array([lower.placed]))
        return Motion(self.skeleton, rotations_out, positions_out, self.fps)

    def solve(self, stream) -> Solution:
        """The offline driver: the predictor's solve of the stream (30 Hz, resampled) and motion matching's steps
        1-5, put together frame by frame with centred averages (the stream comes calibrated:
        `matching.solver.solve` does it)."""
        predicted = self.predictor.solve(stream)
        body = predicted.motion.resampled(self.fps)
        pose = forward_kinematics(self.skeleton.parents, body.rotations, body.positions)
        config = self.config
        guides = query_guides(pose[1][:, self.hips], pose[1][:, self.feet], self.fps, config.query_guide) \
            if config.query_guide else None
        stepped, height, frames, first = lower_body_frames(stream, self.matching, guides)
        frames = [frames[0]] * first + frames  # before the HMD is first seen the avatar waits in its first pose
        count = min(len(body), len(frames))
        body, frames = body[:count], frames[:count]
        pose = pose[0][:count], pose[1][:count]
        speed = centred_mean(floor_speeds(pose[1][:, self.hips], self.fps), config.speed_window_s * self.fps)
        facing = None
        if self.faces_with_model:
            facing = centred_mean(np.unwrap([f.body_yaw for f in frames]), config.facing_window_s * self.fps)
        if config.legs == "matched":
            matched = self.matched_legs(np.array([f.rotations for f in frames]),
                                        np.array([f.positions for f in frames]))
            contacts = np.array([f.contacts for f in frames])
        else:  # the predictor's 30 Hz contacts held between its ticks, as live
            matched = None
            ticks = np.minimum((np.arange(count) * self.predictor.fps / self.fps + 1e-6).astype(int),
                               len(predicted.contacts) - 1)
            contacts = predicted.contacts[ticks]
        self.foot_lock.reset()
        rotations, positions = self.combine(
            body, pose, matched, facing, travel_weights(speed, config.standing_m_s, config.travelling_m_s),
            contacts, np.array([f.dt for f in frames]), np.array([f.placed for f in frames]))
        motion = Motion(self.skeleton, rotations, positions, self.fps, self.method)
        require_finite(motion, stepped)
        return Solution(motion, stepped, np.array([f.database for f in frames]), np.array([f.frame for f in frames]),
                        np.array([f.target for f in frames]), np.array([f.searched for f in frames]), height,
                        self.method)

    def matched_legs(self, rotations: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The matched poses' (T, J, ...) leg joints as world rotations (T, 8, 4) of this skeleton's legs, and their
        toes' heights (T, 2) above the floor."""
        world, world_positions = forward_kinematics(self.matching.skeleton.parents, rotations, positions,
                                                    self.matched_toes)
        return self.transfer.carry(world), world_positions[:, self.matched_toes, 1]

    def combine(self, body: Motion, pose, matched_legs, facing: np.ndarray | None, weights: np.ndarray,
                contacts: np.ndarray, dt, restarts: np.ndarray):
        """The result's local rotations and positions (T, J, ...) from the predictor's `body` and its global `pose`
        (rotations, positions), the matched legs (world rotations (T, 8, 4), toe heights (T, 2); None: the
        predictor's legs stay), the body's facing (T,) or None (the predictor's), travel weights (T,), the contacts
        the feet lock on while travelling (T, 2; HybridConfig.legs says whose), time steps and foot-lock restarts
        (T,)."""
        parents = self.skeleton.parents
        rotations, positions = pose[0].copy(), pose[1].copy()
        parent = parents[self.hips]
        if facing is not None:
            turns = wrap_angle(facing - body_yaw(positions, self.mapping))
            turn_lower_body(rotations, positions, self.lower, self.mapping["spine"],
                            np.where(np.isfinite(turns), turns, 0.0))  # unknown: the predictor's facing
        toe_heights = None
        if matched_legs is not None:
            legs, matched_toe_heights = matched_legs
            own = self.transfer.own
            rotations[:, own] = quat.slerp(rotations[:, own], legs, weights[:, None])
            if self.config.matched_toe_heights:
                predicted = pose[1][:, self.toes, 1]
                toe_heights = predicted + weights[:, None] * (matched_toe_heights - predicted)
        else:  # toes at or under their standing height are in contact too
            contacts = contacts | (pose[1][:, self.toes, 1] < self.standing_toe_heights + self.config.toe_contact_m)
        local = local_from_global(parents, rotations)
        local[:, 0] = body.rotations[:, 0]
        out_positions = body.positions.copy()
        hips = positions[:, self.hips]
        if parent >= 0:  # the hips where the turn put them, in their parent's frame
            hips = quat.inverse_rotate(pose[0][:, parent], hips - pose[1][:, parent])
        out_positions[:, self.hips] = hips
        if self.config.foot_lock or toe_heights is not None:
            travelling = weights > 0.5
            locked = np.where(travelling[:, None], contacts, True) & self.config.foot_lock
            unlock = np.where(travelling, self.foot_lock.unlock_distance_m, self.config.standing_unlock_distance_m)
            self.legs.plant(local, out_positions, self.foot_lock, locked, dt, restarts, None, toe_heights, unlock)
        return local, out_positions


def load_hybrid_solver(database_paths, config: HybridConfig = HybridConfig(), orientation: str | None = None,
                       model_path=None, standing_hmd_height_m: float | None = None) -> HybridSolver:
    """The default solver over database files (motion matching's facing and steps) and a predictor model file (None: the
    shipped one); `orientation` as `matching.solver.load_solver` takes it."""
    predictor = N3PSolver(N3PModel.load(model_path) if model_path else N3PModel.load(), config.n3p,
                          standing_hmd_height_m)
    matching = load_solver(database_paths, config.matching, orientation, standing_hmd_height_m)
    return HybridSolver(predictor, matching, config)
