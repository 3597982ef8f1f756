"""Neural3Points as a solver (Ye et al. §3-4 and §7, direct mode): the devices in, a full-body pose out.

Per frame (`N3PSolver.step`, the live driver):
1. devices: an untracked HMD holds its last pose and eases back when found again (devices/regained.py; a
   non-finite or absurd sample counts as untracked, a time step that is not finite, not positive or too long as a
   pause: plausibility.py); the controllers are turned into the joints they
   imply (head, wrists: §7's input signals); untracked controllers, or all of them in HMD-only mode
   (§8.2), are replaced by the predictor's own forecast o*;
2. calibration: the user's standing head height (HMD height over the first half second, raised if the user stands
   up later: devices/standing_height.py; or given)
   scales the signals to the model's body, and the model's pose back to the user's size on the way out
   (the skeleton is the model's scaled to the user: its hands reach where the user's do);
3. every 1/30 s the predictor steps (eq. 2) from the model's standing state; between steps live, the
   body is carried along the floor with the head the HMD implies, from where it was at the step, and each step's
   change of pose is eased in (inertialized over TICK_BLEND_HALFLIFE_S); the IK follows the devices;
4. the predicted orientations of the canonical joints pose the model's skeleton, the hips at the
   predicted position;
5. §7's IK: feet the predictor marks in contact are locked where they touched down (leg IK), and
   the wrists are put on the controllers (arm IK), the hands turning as the controllers do (ik/controller_hands.py)
   and an elbow turning where its wrist would break (ik/wrist_swivel.py).
`solve` (the offline driver) steps the stream resampled to 30 Hz through the same code (steps 1-3), then poses
the predictions interpolated onto the output's timeline (`N3PConfig.fps`; along Catmull-Rom splines, anim/spline.py)
with the IK at every output frame.
The physics-based normal mode (control policy, simulation, tracker correction) is not here; it would
take the predictor's states (`N3PPredictor`) as its reference.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..anim.inertialize import Inertializer
from ..anim.motion import Motion, forward_kinematics
from ..anim.spline import spline_resampled
from ..anim.skeleton import Skeleton
from ..config import DeviceOffsets, N3PConfig, MatchingConfig
from ..devices.attachments import device_offsets, head_on_floor, hmd_forward, joints_from_devices
from ..devices.jumps import crossing, held_up_to_jumps, hmd_may_have_jumped, jumped, turned_with_controllers, vertical_turns
from ..devices.plausibility import step_seconds, usable_poses, without_unusable_samples
from ..devices.regained import RegainedHeadset
from ..devices.standing_height import StandingHeight, measured_over
from ..files.stream import ThreePointStream, held_samples
from ..ik.controller_hands import ControllerHands
from ..ik.foot_lock import FootLock, Legs
from ..ik.two_bone import REACH_WINDOW_S, Arms, arm_stretch, two_bone_ik
from ..ik.wrist_swivel import elbows_turned
from ..math import quat
from ..math.spring import decay_toward_zero
from ..math.vector import unit
from ..rig.humanoid import find_mapping
from ..solution import Progress, Solution, progress_between, require_finite, waits_for_hmd, with_progress
from .model import N3PModel, N3PPredictor, contacts_of, moved_with
from .state import FPS, global_pose, tracker_signals

TICK_S = 1.0 / FPS
TICK_TOLERANCE_S = 1e-6
"""Live, the predictor ticks once this close to TICK_S since the last tick (a clock's rounding)."""
TICK_BLEND_HALFLIFE_S = 0.015
"""Live, each 30 Hz prediction's change of pose is eased in with this half-life (a critically damped offset,
anim/inertialize.py) rather than shown at once (docs/methods/neural3points.md: less jitter for a little MPJPE)."""
STRETCH_HALFLIFE_S = 0.1
"""Live, the arms' stretch eases to each new reading of the reach with this half-life (math/spring.py)."""
STRETCH_SETTLED = 1e-5
"""... and is set to it once this close."""
REACH_UPDATE_TICKS = 15
"""Live, the reach is seen at the predictor's ticks (30 Hz) over the first minute, and the arms' stretch read off it
every this many ticks."""
STANDING_REFERENCE_S = 2.0
STANDING_REFERENCE_HMD_M = 1.6
"""The still headset's height for the standing reference when the user's is not given (signals are scaled to
the model's body: any adult height serves)."""
HANGING_CONTROLLERS_PER_HEIGHT = ((0.137, 0.535, -0.015), (-0.124, 0.522, -0.017))
"""Left and right controller with the arms hanging, over the HMD's height, in the HMD's heading frame (x left,
z forward, from the point under the HMD): medians over 1080 simulated frames of the training split where the
body stands upright and the arm hangs within 32 degrees of straight down."""
HANGING_CONTROLLER_ROTATIONS = ((0.054, -0.083, 0.987, -0.125), (0.155, -0.048, -0.979, 0.12))
"""Their orientations (w, x, y, z) in the same frame: the mean over the same frames."""
HEAD_CENTRE_FROM_HMD = MatchingConfig.head_centre_from_hmd
"""The solution's targets are motion matching's (the head's centre on the floor), to compare the root's strays."""


def held_across(motion: Motion, ticks: Motion, jumps: np.ndarray, hmd: np.ndarray, tick_hmd: np.ndarray
                ) -> tuple[Motion, np.ndarray]:
    """`motion`, resampled from the predictor's `ticks` (30 Hz), with each frame between two ticks across a jump
    (`jumps`, per tick: the predictor's world moved with the user) taken from the tick on its side of the jump (the
    one whose HMD position, `tick_hmd` (ticks, 3), is nearer the frame's, `hmd` (frames, 3)) rather than
    interpolated halfway across it; and the first frame after each jump (frames,), where the feet start anew."""
    restarts = np.zeros(len(motion), bool)
    if not jumps.any():
        return motion, restarts
    at = np.arange(len(motion)) * ticks.fps / motion.fps
    after = np.minimum(np.ceil(at - 1e-6).astype(int), len(ticks) - 1)
    since = np.minimum(np.floor(at + 1e-6).astype(int), len(ticks) - 1)  # the last tick at or before each frame
    across = np.flatnonzero(jumps[after] & (at % 1.0 > 1e-6))
    nearer = np.linalg.norm(hmd[across] - tick_hmd[after[across]], axis=-1) < \
        np.linalg.norm(hmd[across] - tick_hmd[after[across] - 1], axis=-1)
    source = after[across] - ~nearer
    motion.rotations[across], motion.positions[across] = ticks.rotations[source], ticks.positions[source]
    since[across] = source
    jumped_by = np.cumsum(jumps)[since]
    restarts[1:] = jumped_by[1:] > jumped_by[:-1]
    return motion, restarts


def carried(motion: Motion, moved: np.ndarray) -> Motion:
    """A prediction moved along the floor by `moved` (3,; its height dropped): between the predictor's steps the
    body goes with the head instead of waiting for the next step."""
    positions = motion.positions.copy()
    positions[:, 0] += [moved[0], 0.0, moved[2]]
    return Motion(motion.skeleton, motion.rotations, positions, motion.fps)


class Advanced(NamedTuple):
    """What `N3PSolver.advance` gives of a frame (or, stacked, of several): the devices as the predictor uses them,
    the user's scale, the time step and the prediction."""

    positions: np.ndarray
    """(3, 3) the HMD held where untracked."""
    rotations: np.ndarray
    tracked: np.ndarray
    """(3,) usable samples (the controllers none in HMD-only mode)."""
    scales: float
    """The model's standing head height over the user's."""
    dts: float
    g_up: np.ndarray
    g_lo: np.ndarray
    headings: np.ndarray
    """The prediction's heading frame (x, z, yaw)."""


def time_past_tick(since_tick_s: float) -> float:
    """Live, the time since the tick that just fired, from the time since the one before (`since_tick_s`, at least
    TICK_S less TICK_TOLERANCE_S): what is left past TICK_S, none where the tick fired a hair early, and a longer
    backlog (a slow frame) dropped, not ticked again at the next frame; none after the first tick (`since_tick_s`
    infinite)."""
    if not np.isfinite(since_tick_s):
        return 0.0
    left = since_tick_s - TICK_S
    return left % TICK_S if left >= TICK_S else max(left, 0.0)


class N3PSolver:
    """The pose predictor and its IK as a solver with motion matching's interface (`step`, `solve`)."""

    method = "n3p"

    def __init__(self, model: N3PModel, config: N3PConfig = N3PConfig(), standing_hmd_height_m: float | None = None,
                 devices: DeviceOffsets = DeviceOffsets()):
        self.model = model
        self.config = config
        self.devices = devices
        self.offsets = device_offsets(devices)
        self.skeleton = model.output.skeleton
        """The model's skeleton at the user's size (`size`) once it is known; the model's own before."""
        self.mapping = find_mapping(self.skeleton)
        self.fixed_height = standing_hmd_height_m
        self.legs = Legs.of(self.skeleton, self.mapping)
        self.arms = Arms.of(self.skeleton, self.mapping)
        self.standing_reference: Motion | None = None
        """`standing_motion`, once made."""
        self.reset()

    @property
    def fps(self) -> float:
        """The output's rate (N3PConfig.fps)."""
        return self.config.fps

    @property
    def standing_height_m(self) -> float | None:
        """The user's standing HMD height as measured so far (None before the first step)."""
        return self.standing.height_m

    def standing_motion(self) -> Motion:
        """The predictor standing still for STANDING_REFERENCE_S under a level headset, the controllers held with
        the arms hanging: where live retargeting reads this skeleton's standing reference (its rest pose need
        not stand, and there is no database to read one from). Made once: it does not depend on the user."""
        if self.standing_reference is not None:
            return self.standing_reference
        height = self.fixed_height or STANDING_REFERENCE_HMD_M
        frames = int(STANDING_REFERENCE_S * FPS)
        positions = np.zeros((frames, 3, 3))
        positions[:, 0, 1] = height
        positions[:, 1:] = height * np.array(HANGING_CONTROLLERS_PER_HEIGHT)
        level = quat.from_yaw(np.pi)  # the HMD looking along +Z: its heading frame is the world's
        rotations = np.broadcast_to(np.vstack([level, quat.normalize(np.array(HANGING_CONTROLLER_ROTATIONS))]),
                                    (frames, 3, 4))
        still = ThreePointStream(np.arange(frames) / FPS, positions, rotations, np.ones((frames, 3), bool))
        self.standing_reference = N3PSolver(self.model, self.config, height, self.devices).solve(still).motion
        return self.standing_reference

    def reset(self, standing_hmd_height_m: float | None = None) -> None:
        """Forget the user: the next step starts the avatar standing under the HMD."""
        self.waiting_for_hmd = True
        self.predictor = N3PPredictor(self.model)
        self.foot_lock = FootLock(self.config.foot_unlock_distance_m, self.config.foot_unlock_halflife_s)
        self.hands = ControllerHands()
        self.standing = StandingHeight(self.config.calibration_s, standing_hmd_height_m or self.fixed_height)
        """The user's standing HMD height, measured as the stream goes (given: fixed)."""
        self.size: float | None = None
        """The user's size over the model's (None before the first step): the output's skeleton and positions are
        the model's times this."""
        self.stretch = 1.0
        """How much longer than the model's (at the user's size) the user's arms reach (`fit_arms`)."""
        self.stretch_goal, self.stretch_rate = 1.0, 0.0
        """Live: the stretch last read off the reach, which `stretch` eases to (`ease_stretch`), and its rate."""
        self.reach_seen: list[tuple] = []
        """Live: (shoulders, wrists, tracked) at each tick over the first REACH_WINDOW_S, for `fit_arms`."""
        self.elapsed_s = 0.0
        self.signal_scale = 1.0
        """The scale the predictor's world was last given signals at (`advance`)."""
        self.since_tick_s = np.inf
        self.hmd: tuple | None = None
        self.regained = RegainedHeadset()
        """The HMD found again after a loss, eased from where it was held (devices/regained.py)."""
        self.devices_before: tuple | None = None
        """The devices (positions, rotations, tracked) of the last `advance`, the HMD held where untracked."""
        self.prediction = None
        self.predicted: tuple | None = None
        """The last prediction on the skeleton, as step posed it: (prediction, scale, motion, contacts)."""
        self.tick_blend = Inertializer.at_rest(len(self.skeleton.parents))
        """Live: the offset of the pose before the predictor's last step from the one after, decaying."""
        self.head: np.ndarray | None = None
        """Live: the head the HMD implied at the last step."""
        self.jumped = False
        """Whether the last `advance` moved the predictor's world with the user (`follow_jump`)."""
        self.output_jumps = np.zeros(0, bool)
        """Offline: the output frames of the last solve where the user had just jumped (the feet start anew)."""
        self.carry = np.zeros(3)
        """Live: how far along the floor the head has walked since the last prediction (`carried`)."""
        self.contacts = np.ones(2, bool)
        """The feet's contacts of the last prediction (left, right)."""
        self.rejected_samples = 0
        """Device samples flagged tracked that were not usable (non-finite, absurd) and counted as untracked."""
        self.paused_steps = 0
        """Steps whose dt was not finite, not positive or too long, taken as one tick."""

    def scale(self, hmd_height: float, dt: float, sample: bool = True) -> float:
        """The model's standing head height over the user's (the HMD sits hmd_from_head above the head joint), with
        this frame's HMD height measured (`sample` False: not measured, its sample rejected); the skeleton
        follows."""
        raised = self.standing.raised
        height = self.standing.add(hmd_height, dt, sample)
        if self.standing.raised != raised:  # the reach seen so far was a lower user's
            self.reach_seen.clear()
        scale = self.model.standing_head_m / max(height - self.devices.hmd_from_head[1], 0.5)
        if self.size != 1.0 / scale:
            self.resize(1.0 / scale, self.stretch)
        return scale

    def resize(self, size: float, stretch: float) -> None:
        """The skeleton at the user's size, its arms `stretch` times as long."""
        self.size, self.stretch = size, stretch
        skeleton = self.model.output.skeleton.scaled(size)
        self.skeleton = Skeleton(skeleton.names, skeleton.parents, self.arms.stretched(skeleton.offsets, stretch),
                                 skeleton.end_sites)

    def fit_arms(self, shoulders: np.ndarray, wrists: np.ndarray, tracked: np.ndarray, at_once: bool = True) -> None:
        """Stretch the arms to the reach the tracked wrists (T, 2, 3; tracked (T, 2)) show from the shoulders
        (T, 2, 3) (ik/two_bone.py: arm_stretch): `at_once`, or live eased there over the next frames
        (`ease_stretch`)."""
        self.stretch_goal = arm_stretch(shoulders, wrists, tracked,
                                        self.arms.length(self.model.output.skeleton) * self.size)
        if at_once and self.stretch_goal != self.stretch:
            self.resize(self.size, self.stretch_goal)

    def ease_stretch(self, dt: float) -> None:
        """Live, the arms' stretch `dt` seconds further on its way to the one last read off the reach: a critically
        damped spring (STRETCH_HALFLIFE_S), not at once (a first reading of 1.17 moved an elbow 9 cm in a frame)."""
        if self.stretch == self.stretch_goal:
            return
        offset, self.stretch_rate = decay_toward_zero(self.stretch - self.stretch_goal, self.stretch_rate,
                                                      STRETCH_HALFLIFE_S, dt)
        settled = abs(offset) < STRETCH_SETTLED
        self.stretch_rate = 0.0 if settled else float(self.stretch_rate)
        self.resize(self.size, self.stretch_goal if settled else self.stretch_goal + float(offset))

    @waits_for_hmd
    def step(self, positions: np.ndarray, rotations: np.ndarray, tracked: np.ndarray, dt: float) -> Motion:
        """One live frame from device poses (3, 3), (3, 4) and tracking flags (3,): a one-frame Motion."""
        frame = Advanced(*(np.asarray(value)[None] for value in self.advance(positions, rotations, tracked, dt)))
        scale = float(frame.scales[0])
        self.walk_with_head(joints_from_devices(frame.positions[0, 0], frame.rotations[0, 0], self.offsets[0]))
        jumped = self.jumped
        ticked = self.predicted is None or self.predicted[0] is not self.prediction
        if ticked or self.predicted[1] != scale:
            was = None if self.predicted is None or jumped else carried(self.predicted[2], self.carry)
            self.predicted = (self.prediction, scale, *self.predicted_motion(*frame[3:]))
            if ticked:
                self.carry = np.zeros(3)
            self.ease_in(was, carried(self.predicted[2], self.carry))
        elif jumped:
            self.ease_in(None, self.predicted[2])
        motion, contacts = self.predicted[2:]
        motion = self.eased(motion, self.carry, float(frame.dts[0]))
        self.ease_stretch(float(frame.dts[0]))
        fitting = ticked and self.config.fit_arms and self.elapsed_s <= REACH_WINDOW_S
        arms = self.arm_poses(motion) if self.config.hand_ik or fitting else None
        if fitting:
            wrists = joints_from_devices(frame.positions, frame.rotations, self.offsets)[:, 1:]
            self.reach_seen.append((arms[1][:, :, 1], wrists, frame.tracked[:, 1:]))
            if len(self.reach_seen) % REACH_UPDATE_TICKS == 0:
                self.fit_arms(*(np.concatenate(values) for values in zip(*self.reach_seen)), at_once=False)
        motion = Motion(self.skeleton, motion.rotations.copy(), self.arms.stretched(motion.positions, self.stretch),
                        self.fps)
        self.fit(motion, contacts, frame.positions, frame.rotations, frame.tracked, frame.dts,
                 None if arms is None else self.arms.stretched_poses(arms, self.stretch), np.array([self.jumped]))
        self.contacts = contacts[0]
        return motion

    def walk_with_head(self, head: np.ndarray) -> None:
        """Add the head's step along the floor since the last frame to the carry, unless the user jumped in it
        (`follow_jump`: the body was placed anew instead)."""
        if self.head is not None and not self.jumped:
            self.carry = self.carry + (head - self.head)
        self.head = head

    def ease_in(self, was: Motion | None, now: Motion) -> None:
        """A new prediction `now` (one frame) replaces `was` (the last one, carried to this frame; None: none to
        ease from): the jump between them becomes an offset that `eased` decays."""
        if was is None:
            self.tick_blend = Inertializer.at_rest(now.rotations.shape[1])
            return
        still = np.zeros((now.rotations.shape[1], 3))
        self.tick_blend.transition((was.rotations[0], still, was.positions[0], still),
                                   (now.rotations[0], still, now.positions[0], still))

    def eased(self, motion: Motion, carry: np.ndarray, dt: float) -> Motion:
        """The one-frame prediction `carried` by `carry`, with the tick's offset (`ease_in`), decayed by `dt`,
        added."""
        still = np.zeros((motion.rotations.shape[1], 3))
        rotations, _, positions, _ = self.tick_blend.update((motion.rotations[0], still,
                                                             carried(motion, carry).positions[0], still),
                                                            TICK_BLEND_HALFLIFE_S, dt)
        return Motion(motion.skeleton, rotations[None], positions[None], motion.fps)

    def advance(self, positions: np.ndarray, rotations: np.ndarray, tracked: np.ndarray, dt: float,
                jump: bool = False) -> "Advanced":
        """Steps 1-3 of one frame, the predictor ticked if one is due; `jump`: the user is known to have jumped since
        the last frame (found at the stream's own rate offline), whatever this step's own test says."""
        positions, rotations, usable = usable_poses(positions, rotations, tracked)
        measured = bool(usable[0])  # the HMD's own sample, not the one held for it below
        self.rejected_samples += int((np.asarray(tracked, dtype=bool) & ~usable).sum())
        tracked = usable
        before = self.devices_before
        if tracked[0]:
            self.hmd = (positions[0].copy(), rotations[0].copy())
        elif self.hmd is None:
            raise ValueError("the HMD has not been tracked yet: the predictor needs its pose to place the avatar")
        dt, paused = step_seconds(dt, TICK_S)
        self.paused_steps += paused
        positions[0], rotations[0] = self.regained.eased(*self.hmd, measured, dt,
                                                         None if before is None else (before[0][0], before[1][0]))
        tracked[0] = True
        if self.config.hmd_only:
            tracked[1:] = False
        scale = self.scale(float(self.hmd[0][1]), dt, measured)
        self.elapsed_s += dt

        signals = tracker_signals(np.where(tracked[:, None], positions, 0.0),
                                  np.where(tracked[:, None], rotations, quat.identity()), self.devices)
        signals[:, :3] *= scale
        self.jumped = False
        if self.prediction is None:
            yaw = float(quat.yaw_of_direction(hmd_forward(rotations[0])))
            self.predictor.reset(np.array([signals[0, 0], signals[0, 2], yaw]))
        else:
            if scale != self.signal_scale:  # the user measured anew: the predictor's world scales with the signals
                self.predictor.rescale(scale / self.signal_scale)
                self.prediction[2][:2] *= scale / self.signal_scale
            self.jumped = (jump or hmd_may_have_jumped((before[0][0], before[1][0]), (positions[0], rotations[0]), dt)) \
                and self.follow_jump(before, (positions, rotations, tracked), scale, dt, jump)
            if self.jumped:
                self.regained.clear()
        self.devices_before = (positions.copy(), rotations.copy(), tracked.copy())
        self.signal_scale = scale
        self.since_tick_s += dt
        if self.since_tick_s >= TICK_S - TICK_TOLERANCE_S:
            self.prediction = self.predictor.step(signals, tracked)
            self.since_tick_s = time_past_tick(self.since_tick_s)
        return Advanced(positions, rotations, tracked, scale, dt, *self.prediction)

    def follow_jump(self, before: tuple, now: tuple, scale: float, dt: float, known: bool = False) -> bool:
        """Where the devices (positions (3, 3), rotations (3, 4), tracked (3,); the HMD held where untracked) jumped
        from `before` to `now` over `dt` (`known`, or devices/jumps.py: the head the HMD implies moved faster than
        CARRY_SPEED_M_S, or it turned faster than TURN_SPEED_DEG_S with the controllers), the predictor's world
        (scaled by `scale`) moves with the head, turned as the HMD turned: the avatar is placed where the user now is,
        still in its stride, instead of walking or turning there. Whether it did."""
        heads = [joints_from_devices(positions[0], rotations[0], self.offsets[0]) for positions, rotations, _ in
                 (before, now)]
        if known or jumped(heads[1] - heads[0], dt):
            turn = float(vertical_turns(before[1][0], now[1][0]))
        else:
            turn = turned_with_controllers(before, now, dt)
            if turn == 0.0:
                return False
        frames = [np.array([*(head[[0, 2]] * scale), yaw]) for head, yaw in zip(heads, (0.0, turn))]
        self.predictor.move(*frames)
        self.prediction = (*self.prediction[:2], moved_with(self.prediction[2], *frames))
        return True

    def predicted_motion(self, scales, dts, g_up, g_lo, headings, fps: float | None = None):
        """Step 4 over frames (T, ...) of `advance`: the predictions on the model's skeleton at the user's size (at
        `fps`, default the output's; the arms as long as the model's) and their contacts (T, 2)."""
        world_rotations, world_positions = global_pose(headings, g_up, g_lo, self.model.reference)
        model = self.model.output.motion(world_rotations, world_positions[:, 0], fps or self.fps)
        motion = Motion(self.skeleton, model.rotations, model.positions / scales[:, None, None], model.fps)
        return motion, contacts_of(g_lo)

    def fit(self, motion: Motion, contacts, positions, rotations, tracked, dts, arms, restarts: np.ndarray) -> None:
        """Step 5 over frames (T, ...), in place: the foot lock on the contacts (in frame order, started anew where
        the user jumped, `restarts` (T,)), the arms' IK toward each frame's devices (T, 3, ...; tracked (T, 3)) from
        the arms' global poses."""
        if self.config.foot_lock:
            self.legs.plant(motion.rotations, motion.positions, self.foot_lock, contacts, dts, restarts)
        hands = tracked[:, 1:]
        if self.config.hand_ik and hands.any():
            wrists = joints_from_devices(positions, rotations, self.offsets)[:, 1:]
            if self.config.controller_hands:
                arms = (arms[0].copy(), arms[1])
                arms[0][:, :, 3] = self.hands.turned(arms[0][:, :, 3], rotations[:, 1:], hands, dts)
            self.reach(motion.rotations, arms, wrists, hands)

    def arm_poses(self, motion: Motion):
        """The arm chains' global rotations (T, 2, 4, 4) and positions (T, 2, 4, 3) (Arms.chains): the foot lock
        leaves them as they are."""
        rotations, positions = forward_kinematics(self.skeleton.parents, motion.rotations, motion.positions,
                                                  self.arms.chains[:, -1])
        return rotations[:, self.arms.chains], positions[:, self.arms.chains]

    def reach(self, rotations: np.ndarray, arms, wrists: np.ndarray, tracked: np.ndarray) -> None:
        """Arm IK over poses (T, J, 4) whose arm chains' global poses are `arms` (arm_poses): turn upper arm and
        forearm so each tracked wrist (T, 2, 3; tracked (T, 2)) reaches its target; each hand takes its world
        rotation in `arms`."""
        global_rotations, global_positions = arms
        targets = np.where(tracked[..., None], wrists, global_positions[:, :, 3])
        upper, fore = two_bone_ik(global_positions[:, :, 1], global_positions[:, :, 2], global_positions[:, :, 3],
                                  targets, global_rotations[:, :, 1], global_rotations[:, :, 2], swung=True)
        if self.config.wrist_swivel:
            upper, fore = elbows_turned(global_rotations, global_positions, upper, fore, global_rotations[:, :, 3],
                                        tracked, unit(self.skeleton.offsets[self.arms.chains[:, -1]]))
        self.arms.set(rotations, global_rotations, upper, fore, tracked)

    def solve(self, stream: ThreePointStream, progress: Progress | None = None):
        """The offline driver: calibrate on the stream's standing height, advance every sample of the stream at 30 Hz,
        pose the predictions interpolated onto the output's timeline, then the IK toward the devices at every
        output frame (`progress` told the share done)."""
        stream, jump_times = held_up_to_jumps(without_unusable_samples(stream)[0])
        ticks, output = stream.resampled(FPS), stream.resampled(self.fps)
        if stream.tracked[:, 0].any() and not ticks.tracked[:, 0].any():  # first seen after the last tick
            ticks = stream.sampled_at(np.append(ticks.times, ticks.times[-1] + 1.0 / FPS))  # one more, on the last
        known = crossing(jump_times, ticks.times)
        measured = None if self.fixed_height else measured_over(ticks.times, ticks.positions[:, 0, 1],
                                                                ticks.tracked[:, 0], self.config.calibration_s)
        height = self.fixed_height or measured.height_m
        since = 0.0 if measured is None or measured.raised is None else measured.raised_s  # the user's own reach
        first = int(np.flatnonzero(ticks.tracked[:, 0])[0])
        self.reset(height)
        frames, jumps = [], np.zeros(len(ticks), bool)
        for t in with_progress(range(first, len(ticks)), progress_between(progress, 0.0, 0.9)):
            frames.append(self.advance(ticks.positions[t], ticks.rotations[t], ticks.tracked[t],
                                       ticks.times[t] - ticks.times[t - 1] if t > first else TICK_S, bool(known[t])))
            jumps[t] = self.jumped
        frames = [frames[0]] * first + frames  # before the HMD is first seen the avatar waits in its first pose
        advanced = Advanced(*(np.array(values) for values in zip(*frames)))
        predicted, contacts = self.predicted_motion(*advanced[3:], FPS)
        motion, self.output_jumps = held_across(spline_resampled(predicted, self.fps, len(output), jumps), predicted,
                                                jumps, np.nan_to_num(output.positions[:, 0]),
                                                np.nan_to_num(ticks.positions[:, 0]))
        arms = self.arm_poses(motion)
        tick = np.minimum((np.arange(len(output)) * FPS / self.fps + 1e-6).astype(int), len(ticks) - 1)
        contacts = contacts[tick]  # held between ticks, as live
        tracked = output.tracked.copy()
        tracked[:, 1:] &= not self.config.hmd_only
        positions, rotations = np.nan_to_num(output.positions), np.where(tracked[..., None], output.rotations,
                                                                        quat.identity())
        steps = np.diff(output.times, prepend=output.times[0] - 1.0 / self.fps)
        elapsed = output.times - output.times[0] - since
        minute = (elapsed >= 0.0) & (elapsed <= REACH_WINDOW_S)
        wrists = joints_from_devices(positions, rotations, self.offsets)[:, 1:]
        if self.config.fit_arms:
            self.fit_arms(arms[1][minute, :, 1], wrists[minute], tracked[minute, 1:])
        motion = Motion(self.skeleton, motion.rotations, self.arms.stretched(motion.positions, self.stretch), self.fps)
        self.fit(motion, contacts, positions, rotations, tracked, steps, self.arms.stretched_poses(arms, self.stretch),
                 self.output_jumps)
        motion.name = "n3p"
        require_finite(motion, output)
        if progress is not None:
            progress(1.0)
        count = len(motion)
        held = held_samples(output.tracked[:, 0])
        targets = head_on_floor(output.positions[held, 0], output.rotations[held, 0], HEAD_CENTRE_FROM_HMD)
        return Solution(motion, output, np.zeros(count, int), np.zeros(count, int), targets,
                        np.zeros(count, bool), height, self.method, contacts=contacts)
