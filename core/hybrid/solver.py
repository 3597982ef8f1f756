"""The hybrid, the default method: Neural3Points' pose with MMVR's body facing and held feet; a stream is all it needs.

Neural3Points (`n3p`) places the body well and steps in the person's phase, but its hips face 7-11 degrees off
and its feet slide; MMVR's orientation model (§4) faces the body better. On the predictor's skeleton the
result keeps the predictor's pose (root, spine, neck, head, arms), then:
1. facing: the hips and legs turn about the vertical through the spine's base so the hips face where the
   orientation model says (averaged over `facing_window_s`: centred offline, trailing live); the spine turns
   back, so the upper body (head, arms, hands on the devices) keeps its world pose;
2. legs (`HybridConfig.legs`): the predictor's own, or ("matched", over a motion database) each leg joint
   turned in the world toward motion matching's by the travel weight of the predicted hips' floor speed
   (blend.travel_weights);
3. feet and hands: the foot lock (MMVR §6.2) holds the feet on the predicted contacts (or the matched poses')
   while travelling and both feet while standing, a released foot catching up in a low arc; the hands go to
   the wrists the controllers imply (Neural3Points §7's arm IK), both in one two-bone IK, and turn as the
   controllers do (ik/controller_hands.py), an elbow turning where its wrist would break (ik/wrist_swivel.py).
`step` is the live driver (one frame); `solve` the offline one, which runs the predictor's own offline
driver (30 Hz, interpolated onto the output's timeline) and the devices' frames (or motion matching's steps
1-5), then puts every frame together with the same `combine`. Measured in docs/default_method.md.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..anim.character import body_yaw
from ..anim.motion import Motion, forward_kinematics, joints_with_ancestors
from ..config import HybridConfig, MatchingConfig
from ..devices.attachments import joints_from_devices
from ..devices.held import HeldDevices
from ..devices.jumps import held_up_to_jumps
from ..devices.plausibility import without_unusable_samples
from ..files.stream import ThreePointStream
from ..ik.controller_hands import ControllerHands
from ..ik.crouch import Crouch, headset_filter
from ..ik.foot_lock import FootLock, Legs
from ..ik.torso_reach import TorsoReach
from ..ik.two_bone import Arms, two_bone_ik
from ..ik.wrist_swivel import elbows_turned
from ..matching.solver import MotionMatchingSolver, lower_body_frames
from ..math import quat
from ..math.angle import wrap_angle
from ..math.vector import unit
from ..n3p.solver import N3PSolver
from ..n3p.state import J_LO
from ..orientation.facing import BodyFacing
from ..rig.humanoid import find_mapping
from ..solution import Progress, Solution, progress_between, require_finite, standing_height, waits_for_hmd, with_progress
from .blend import LEG_JOINTS, LegTransfer, TrailingMean, centred_mean, floor_speeds, travel_weights, \
    turn_lower_body, unwrapped_after

LEGS = ("predicted", "matched")
"""HybridConfig.legs: whose legs step while the body travels."""
ARMS_SWUNG = np.array([False, False, True, True])
"""Of the legs' and arms' chains the IK solves together, those whose bend plane swings onto the target (two_bone.py)."""
PREDICTOR_SHARE, DEVICES_SHARE = 0.65, 0.9
"""The share of an offline solve done after the predictor's solve, and after the devices' frames (a 72 Hz walk's
profile: 66 % and 25 % of the time, the combination the rest)."""


class HybridSolver:
    """The predictor's pose with the orientation model's facing and the foot lock (module docstring); the solver
    interface of core/solution.py."""

    method = "hybrid"

    def __init__(self, predictor: N3PSolver, orientation_model=None, config: HybridConfig = HybridConfig(),
                 matching: MotionMatchingSolver | None = None):
        """The predictor's foot lock and arm IK are switched off in it (the hybrid plants the feet and puts the hands on
        the devices itself, in one two-bone IK). `orientation_model` (a window or MMVR model; None: the
        predictor's own facing) turns the body. `matching`, needed by matched legs only, steps the legs and faces
        the body with its own model (its foot lock and arm IK are switched off)."""
        if config.legs not in LEGS:
            raise ValueError(f"HybridConfig.legs: {config.legs!r}; legs are {', '.join(LEGS)}")
        if config.legs == "matched" and matching is None:
            raise ValueError("the hybrid's matched legs step motion matching's poses: they need a motion database")
        self.predictor, self.config = predictor, config
        self.matching = matching if config.legs == "matched" else None
        if self.matching is not None:
            self.matching.config = replace(self.matching.config, foot_lock=False, arm_ik=False)
            orientation_model = self.matching.facing.model
        self.fps = self.matching.fps if self.matching is not None else config.fps
        predictor.config = replace(predictor.config, foot_lock=False, hand_ik=False, fps=self.fps)
        predictor.standing_reference = None  # made anew at the hybrid's rate
        self.devices, self.offsets = predictor.devices, predictor.offsets
        self.skeleton = predictor.skeleton
        self.mapping = find_mapping(self.skeleton)
        self.legs = Legs.of(self.skeleton, self.mapping)
        self.arms = Arms.of(self.skeleton, self.mapping)
        self.torso = TorsoReach.of(self.skeleton, self.mapping, self.arms.chains)
        self.transfer = LegTransfer.between(predictor, self.matching) if self.matching is not None else None
        self.hips = self.mapping["hips"]
        self.lower = [self.hips, *(self.mapping[f"{s}_{j}"] for s in "lr" for j in LEG_JOINTS)]
        self.turned = np.array([*self.lower, self.mapping["spine"]])
        """The joints whose local rotations the lower-body turn (and matched legs) change: the spine turns back."""
        self.posed = [*self.turned, *self.arms.chains[:, -1], self.mapping["neck"]]
        """The joints whose global poses `combine` reads: those, the arms and the neck."""
        self.crouch = Crouch.of(self.skeleton, self.mapping, self.legs.chains,
                                joints_with_ancestors(self.skeleton.parents, self.posed), self.arms.chains[:, -1])
        self.hand_directions = unit(self.skeleton.offsets[self.arms.chains[:, -1]])
        """(2, 3) each hand's offset from its forearm, in the forearm's frame (ik/wrist_swivel.py)."""
        self.toes = [self.mapping[f"{s}_toes"] for s in "lr"]
        self.standing_toe_heights = predictor.model.initial_lo[[3 * J_LO.index(f"{s}_toes") + 1 for s in "lr"]]
        """The predictor's toes' heights over the floor in its standing state, at the model's size."""
        self.faces_with_model = config.face_with_model and orientation_model is not None
        self.held = HeldDevices(self.fps, MatchingConfig.head_centre_from_hmd, MatchingConfig.teleport_distance_m)
        self.facing = BodyFacing(orientation_model)
        self.reset()

    def standing_motion(self) -> Motion:
        """The predictor's standing reference: the body is the predictor's."""
        return self.predictor.standing_motion()

    @property
    def standing_height_m(self) -> float | None:
        """The user's standing HMD height as the predictor has measured it so far."""
        return self.predictor.standing_height_m

    def reset(self, standing_hmd_height_m: float | None = None) -> None:
        """Forget the user: the next step starts a new avatar where the devices are."""
        self.waiting_for_hmd = True
        self.predictor.reset(standing_hmd_height_m)
        if self.matching is not None:
            self.matching.reset(standing_hmd_height_m)
        self.held.reset()
        self.facing.reset()
        self.foot_lock = FootLock(self.config.foot_unlock_distance_m, self.config.foot_unlock_halflife_s,
                                  self.config.lift_off_m, self.config.step_height)
        self.hands = ControllerHands()
        self.headset = headset_filter()
        self.speed = TrailingMean(self.config.speed_window_s * self.fps)
        self.live_facing = TrailingMean(self.config.live_facing_window_s * self.fps)
        self.previous_hips: np.ndarray | None = None
        self.previous_yaw: float | None = None
        self.contacts: np.ndarray | None = None
        """The feet's contacts of the last step (left, right), as the offline solve's `contacts` has them."""

    @waits_for_hmd
    def step(self, positions: np.ndarray, rotations: np.ndarray, tracked: np.ndarray, dt: float) -> Motion:
        """One live frame from device poses (3, 3), (3, 4) and tracking flags (3,): a one-frame Motion."""
        body = self.predictor.step(positions, rotations, tracked, dt)
        pose = self.lower_pose(body)
        hips = pose[1][0, self.hips]
        if self.matching is not None:
            lower = self.matching.step_lower_body(positions, rotations, tracked, dt)
            dt, placed, yaw = lower.dt, lower.placed, lower.body_yaw
            matched, contacts = self.matched_legs(lower.rotations[None], lower.positions[None]), lower.contacts
            devices = (lower.device_positions, lower.device_rotations, lower.tracked)
        else:
            held = self.held.step(positions, rotations, tracked, dt)
            jumped = held.teleported or self.predictor.jumped
            dt, placed = held.dt, self.previous_hips is None or jumped
            yaw = self.facing.step(held.positions, held.rotations, dt, jumped) if self.faces_with_model else None
            if jumped:
                self.live_facing.clear()
                self.speed.clear()
            matched, contacts = None, self.predictor.contacts
            devices = (held.positions, held.rotations, held.tracked)
        speed = 0.0 if self.previous_hips is None or placed else float(np.hypot(*(hips - self.previous_hips)[[0, 2]])) / dt
        self.previous_hips = hips
        weight = travel_weights(self.speed.add(speed), self.config.standing_m_s, self.config.travelling_m_s)
        facing = None
        if self.faces_with_model:
            yaw = yaw if self.previous_yaw is None else unwrapped_after(self.previous_yaw, yaw)
            self.previous_yaw = yaw
            facing = np.array([self.live_facing.add(yaw)])
        self.contacts = np.asarray(contacts)
        rotations_out, positions_out = self.combine(body, pose, matched, facing, np.array([weight]), contacts[None],
                                                    dt, np.array([placed]), *self.device_joints(*(d[None] for d in devices)))
        return Motion(body.skeleton, rotations_out, positions_out, self.fps)

    def solve(self, stream: ThreePointStream, progress: Progress | None = None) -> Solution:
        """The offline driver over a calibrated stream: the predictor's solve (its 30 Hz poses on the output's
        timeline, the arms reaching every frame) and the devices' frames (or motion matching's steps 1-5), put
        together frame by frame with centred averages (`progress` told the share done)."""
        predicted = self.predictor.solve(stream, progress_between(progress, 0.0, PREDICTOR_SHARE))
        config = self.config
        devices_progress = progress_between(progress, PREDICTOR_SHARE, DEVICES_SHARE)
        if self.matching is not None:
            stepped, height, frames = lower_body_frames(stream, self.matching, devices_progress)
            yaws, targets = np.array([f.body_yaw for f in frames]), np.array([f.target for f in frames])
            dts, restarts = np.array([f.dt for f in frames]), np.array([f.placed for f in frames])
        else:
            stepped, height, yaws, targets, dts, restarts = self.device_frames(stream, self.predictor.output_jumps,
                                                                               devices_progress)
        body = predicted.motion  # on the same timeline as the stepped stream
        pose = self.lower_pose(body)
        speeds = np.where(restarts, 0.0, floor_speeds(pose[1][:, self.hips], self.fps))
        speed = centred_mean(speeds, config.speed_window_s * self.fps, restarts)
        facing = centred_mean(np.unwrap(yaws), config.facing_window_s * self.fps, restarts) if self.faces_with_model \
            else None
        if self.matching is not None:
            matched = self.matched_legs(np.array([f.rotations for f in frames]), np.array([f.positions for f in frames]))
            contacts = np.array([f.contacts for f in frames])
        else:  # the predictor's 30 Hz contacts held between its ticks, as live
            matched, contacts = None, predicted.contacts
        self.foot_lock.reset()
        self.hands.reset()
        self.headset.reset()
        rotations, positions = self.combine(
            body, pose, matched, facing, travel_weights(speed, config.standing_m_s, config.travelling_m_s),
            contacts, dts, restarts, *self.device_joints(stepped.positions, stepped.rotations, stepped.tracked))
        motion = Motion(body.skeleton, rotations, positions, self.fps, self.method)
        require_finite(motion, stepped)
        if progress is not None:
            progress(1.0)
        count = len(motion)
        if self.matching is None:
            return Solution(motion, stepped, np.zeros(count, int), np.zeros(count, int), targets,
                            np.zeros(count, bool), height, self.method, contacts=contacts)
        return Solution(motion, stepped, np.array([f.database for f in frames]), np.array([f.frame for f in frames]),
                        targets, np.array([f.searched for f in frames]), height, self.method, contacts=contacts)

    def device_frames(self, stream: ThreePointStream, jumps: np.ndarray, progress: Progress | None = None):
        """The devices over a whole stream on the output's timeline, as the live step holds them: the stream as
        stepped, its standing HMD height, and per frame the orientation model's yaw (or zero), the target, the time
        step and whether the avatar was placed (a teleport, or where the predictor's world jumped with the user,
        `jumps` (T,)). Frames before the HMD is first tracked wait in its first frame's (`progress` told the share
        stepped)."""
        stepped = held_up_to_jumps(without_unusable_samples(stream)[0])[0].resampled(self.fps)
        height = self.predictor.fixed_height or standing_height(stepped, self.predictor.config.calibration_s)
        first = int(np.flatnonzero(stepped.tracked[:, 0])[0])  # standing_height refused a stream without one
        self.held.reset()
        self.facing.reset()
        count = len(stepped) - first
        yaws, targets, dts, restarts = np.zeros(count), np.zeros((count, 3)), np.zeros(count), np.zeros(count, bool)
        for k, t in enumerate(with_progress(range(first, len(stepped)), progress)):
            held = self.held.step(stepped.positions[t], stepped.rotations[t], stepped.tracked[t],
                                  stepped.times[t] - stepped.times[t - 1] if k else 1.0 / self.fps)
            jumped = held.teleported or jumps[t]
            if self.faces_with_model:
                yaws[k] = self.facing.step(held.positions, held.rotations, held.dt, jumped)
            targets[k], dts[k], restarts[k] = held.target, held.dt, k == 0 or jumped
        waiting = np.zeros(first, int)
        return (stepped, height, *(np.concatenate([values[waiting], values]) for values in (yaws, targets, dts, restarts)))

    def lower_pose(self, body: Motion):
        """The global rotations and positions (T, J, ...) of the body's hips, legs, spine, arms and their ancestors
        (the other joints zero): what `combine` turns, plants and reaches with."""
        return forward_kinematics(self.skeleton.parents, body.rotations, body.positions, self.posed)

    def device_joints(self, positions: np.ndarray, rotations: np.ndarray, tracked: np.ndarray):
        """From device poses (T, 3, ...): the wrists (T, 2, 3) the controllers imply, where they are tracked (T, 2),
        the controllers' rotations (T, 2, 4; identity where untracked), the head (T, 3) the headset implies and
        where it is tracked (T,)."""
        usable = np.where(tracked[..., None], rotations, quat.identity())
        joints = joints_from_devices(np.where(np.isfinite(positions), positions, 0.0), usable, self.offsets)
        return joints[:, 1:], tracked[:, 1:], usable[:, 1:], joints[:, 0], tracked[:, 0]

    def matched_legs(self, rotations: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The matched poses' (T, J, ...) leg joints as world rotations (T, 8, 4) of this skeleton's legs, and their
        toes' heights (T, 2) above the floor."""
        toes = [self.matching.mapping[f"{s}_toes"] for s in "lr"]
        world, world_positions = forward_kinematics(self.matching.skeleton.parents, rotations, positions, toes)
        return self.transfer.carry(world), world_positions[:, toes, 1]

    def combine(self, body: Motion, pose, matched_legs, facing: np.ndarray | None, weights: np.ndarray,
                contacts: np.ndarray, dt, restarts: np.ndarray, wrists: np.ndarray, hands: np.ndarray,
                controllers: np.ndarray, heads: np.ndarray, head_tracked: np.ndarray):
        """The result's local rotations and positions (T, J, ...) from the predictor's `body` and its `lower_pose`
        (rotations, positions), the matched legs (world rotations (T, 8, 4), toe heights (T, 2); None: the
        predictor's legs stay), the body's facing (T,) or None (the predictor's), travel weights (T,), the contacts
        the feet lock on while travelling (T, 2; HybridConfig.legs says whose), time steps and foot-lock restarts
        (T,), the wrists the controllers imply (T, 2, 3), where they are tracked (T, 2) and the controllers'
        rotations (T, 2, 4), the head the headset implies (T, 3) and where it is tracked (T,). The body goes down and
        bends to bring the head to the headset (`crouch`); the feet and the hands are posed by one two-bone IK; the
        hands turn with the controllers (`controller_hands`)."""
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
            standing = self.standing_toe_heights * self.predictor.size
            contacts = contacts | (pose[1][:, self.toes, 1] < standing + self.config.toe_contact_m)
        local = body.rotations.copy()
        has_parent = self.turned[parents[self.turned] >= 0]
        local[:, has_parent] = quat.inverse_multiply(rotations[:, parents[has_parent]], rotations[:, has_parent])
        out_positions = body.positions.copy()
        hips = positions[:, self.hips]
        if parent >= 0:  # the hips where the turn put them, in their parent's frame
            hips = quat.inverse_rotate(pose[0][:, parent], hips - pose[1][:, parent])
        out_positions[:, self.hips] = hips
        if matched_legs is not None:  # the joints below the matched legs moved with them
            rotations, positions = forward_kinematics(parents, local, out_positions, self.posed)
        feet = positions[:, self.legs.chains]  # where the pose stands, whatever the hips do above it
        if self.config.crouch:
            ways = np.where(head_tracked[:, None], heads - self.crouch.heads(rotations, positions, out_positions),
                            0.0)  # an untracked headset asks for nothing
            rotations, positions = self.crouched(local, out_positions, rotations, positions,
                                                 self.headset.filter(ways, dt, restarts))
        rotations, positions = self.reach_with_torso(local, out_positions, rotations, positions, wrists, hands)
        chains = np.vstack([self.legs.chains[:, :4], self.arms.chains])
        chain_rotations, chain_positions = rotations[:, chains], positions[:, chains]
        if self.config.controller_hands:
            chain_rotations[:, 2:, 3] = self.hands.turned(chain_rotations[:, 2:, 3], controllers, hands, dt)
        targets = np.where(hands[..., None], wrists, chain_positions[:, 2:, 3])
        if self.config.foot_lock or toe_heights is not None:
            travelling = weights > 0.5
            locked = np.where(travelling[:, None], contacts, True) & self.config.foot_lock
            unlock = np.where(travelling, self.foot_lock.unlock_distance_m, self.config.standing_unlock_distance_m)
            targets = np.concatenate([self.legs.ankle_targets(feet, self.foot_lock, locked, dt, restarts, toe_heights,
                                                              unlock), targets], axis=1)
        else:  # the feet as they are
            targets = np.concatenate([feet[:, :, 3], targets], axis=1)
        upper, lower = two_bone_ik(chain_positions[..., 1, :], chain_positions[..., 2, :], chain_positions[..., 3, :],
                                   targets, chain_rotations[..., 1, :], chain_rotations[..., 2, :],
                                   np.array([self.config.leg_soft_ik_m] * 2 + [0.0] * 2),
                                   swung=ARMS_SWUNG)
        if self.config.wrist_swivel:
            upper[:, 2:], lower[:, 2:] = elbows_turned(chain_rotations[:, 2:], chain_positions[:, 2:], upper[:, 2:],
                                                       lower[:, 2:], chain_rotations[:, 2:, 3], hands,
                                                       self.hand_directions)
        self.legs.set(local, rotations[:, self.legs.chains], upper[:, :2], lower[:, :2])
        self.arms.set(local, chain_rotations[:, 2:], upper[:, 2:], lower[:, 2:], hands)
        return local, out_positions

    def crouched(self, local: np.ndarray, local_positions: np.ndarray, rotations: np.ndarray, positions: np.ndarray,
                 ways: np.ndarray):
        """Take the head `ways` (T, 3) toward the headset: lower the hips and bend the torso (ik/crouch.py), writing
        the hips' place and the spine's and neck's local rotations into `local_positions` and `local`; the global
        rotations and positions (T, J, ...) of the posed joints after it, the hands keeping their world rotations."""
        moves, bends = self.crouch.moves(positions, ways)
        if not moves.any() and np.all(bends[:, 0] == 1.0):
            return rotations, positions
        parent = self.skeleton.parents[self.hips]
        self.crouch.apply(local, local_positions, rotations, moves, bends, rotations[:, parent] if parent >= 0 else None)
        return self.crouch.pose(rotations, positions, moves, bends)

    def reach_with_torso(self, local: np.ndarray, local_positions: np.ndarray, rotations: np.ndarray,
                         positions: np.ndarray, wrists: np.ndarray, hands: np.ndarray):
        """Where a wrist (T, 2, 3; tracked (T, 2)) is beyond its arm's reach, twist the chest and turn the clavicles
        toward it (ik/torso_reach.py), writing their local rotations into `local`; the global rotations and
        positions (T, J, ...) of the posed joints after it, the hands keeping their world rotations."""
        config = self.config
        if config.torso_twist_deg == 0 and config.clavicle_turn_deg == 0:
            return rotations, positions
        chains = positions[:, self.arms.chains[:, 1:]]
        arm_m = np.linalg.norm(np.diff(chains, axis=-2), axis=-1).sum(axis=-1)
        if not (hands & (np.linalg.norm(wrists - chains[:, :, 0], axis=-1) > arm_m)).any():
            return rotations, positions  # every hand within its arm's reach: nothing turns (the usual frame)
        twist, clavicle = self.torso.turns(positions, wrists, arm_m, hands, np.radians(config.torso_twist_deg),
                                           np.radians(config.clavicle_turn_deg))
        if np.all(twist[:, 0] == 1.0) and np.all(clavicle[..., 0] == 1.0):
            return rotations, positions
        self.torso.apply(local, rotations, twist, clavicle)
        hand_joints = self.arms.chains[:, -1]
        hand_rotations = rotations[:, hand_joints]
        rotations, positions = forward_kinematics(self.skeleton.parents, local, local_positions, self.posed)
        rotations[:, hand_joints] = hand_rotations
        return rotations, positions
