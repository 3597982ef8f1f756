"""The three-point solver (MMVR §5-6): HMD and controllers in, a full-body pose on the database skeleton out.

Per frame (`MotionMatchingSolver.step`, the live driver):
1. devices: an untracked device holds its last pose (controllers relative to the HMD's frame); a sample
   that is not finite or absurd counts as untracked, a time step that is not finite, not positive or too
   long as a one-frame pause (devices/held.py counts both);
2. trajectory: the target is the centre of the head on the floor (§5.3); its velocity and the
   predicted body orientation (§4, or the HMD's forward) are smoothed by spring-dampers (eq. 3-4);
3. database: the one whose HMD-height-ratio range holds current / standing height (§5.5);
4. play on at the database's rate, whatever the devices' (`frames_due`); search every `search_interval` database
   frames, on a database switch and at a clip's end: query
   eq. 5-8, exact nearest neighbour; a different pose is blended in by inertialization;
5. root: integrated from the pose's root velocity, nudged toward the target in proportion to its
   speed, clamped to within alpha of it (§5.4);
6. foot lock (§6.2) with two-bone leg IK, then the upper-body IK on the matched torso (§6.1).
`solve` (the offline driver) resamples a stream and runs steps 1-6 through the same code: steps 1-5
frame by frame, then step 6 once over all frames (`finish_poses`): the foot lock's state still
advances frame by frame, but its forward kinematics and leg IK, and the stateless upper-body IK, run
vectorised. Nothing in steps 1-5 reads step 6's result, so both drivers give the same poses.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..anim.inertialize import Inertializer
from ..anim.motion import Motion, forward_kinematics
from ..config import DeviceOffsets, SimulationConfig, MatchingConfig
from ..devices.attachments import device_offsets, joints_from_devices
from ..devices.held import HeldDevices
from ..devices.jumps import crossing, held_up_to_jumps
from ..devices.plausibility import without_unusable_samples
from ..devices.simulate import simulate_stream
from ..devices.standing_height import StandingHeight
from ..files.stream import ThreePointStream
from ..ik.foot_lock import FootLock, Legs
from ..ik.upper_body_ik import UpperBodyCalibration, arm_length_from_span
from ..ik.upper_body_pose import DeviceAttachments, UpperBodyJoints, calibrate_upper_body, pose_upper_body
from ..math import quat
from ..math.spring import angle_spring_toward, spring_toward
from ..orientation.facing import BodyFacing, load_facing_model
from ..orientation.mmvr import OrientationModel
from ..orientation.window_model import WindowOrientationModel
from ..solution import Progress, Solution, progress_between, require_finite, standing_height, waits_for_hmd, with_progress
from .features import FORWARD, GROUPS, FeatureScale, pose_features, searchable_frames
from .pose_database import DatabaseError, PoseDatabase
from .search import FeatureIndex, squared_distances

TRAJECTORY_TIMES_S = np.array([1.0, 2.0, 3.0]) / 3.0
"""Eq. 7-8: the query's trajectory 0.33, 0.66 and 1 s ahead."""
POSE_FEATURES = slice(0, GROUPS["foot_positions"].stop)
"""z^v and z^l: the part of the query copied from the current pose (eq. 5-6)."""


@dataclass
class MatchingDatabase:
    """A pose database with its feature database and search index."""

    poses: PoseDatabase
    features: np.ndarray
    """(N, 27) raw."""
    scale: FeatureScale
    index: FeatureIndex

    @classmethod
    def prepare(cls, poses: PoseDatabase, config: MatchingConfig) -> "MatchingDatabase":
        features = pose_features(poses)
        scale = FeatureScale.fit(features, config.weights)
        searchable = searchable_frames(poses, max(config.end_margin, config.search_interval))
        if not searchable.any():
            raise DatabaseError(f"database of {len(poses)} poses has no clip longer than "
                                f"{max(config.end_margin, config.search_interval)} frames to search")
        return cls(poses, features, scale, FeatureIndex(scale.normalise(features), searchable))


@dataclass
class DeviceRig:
    """How the avatar (the database skeleton) carries the devices: the upper-body IK's calibration."""

    calibration: UpperBodyCalibration
    attachments: DeviceAttachments
    frame_in_chest: np.ndarray

    @classmethod
    def from_database(cls, poses: PoseDatabase, devices: DeviceOffsets, seconds: float = 0.5) -> "DeviceRig":
        """Measured on the first clip's first `seconds` (taken as standing) with devices simulated on it."""
        clip = poses.clip_motion(0)
        simulated = simulate_stream(clip, SimulationConfig(fps=poses.fps, devices=devices))
        frames = max(1, int(round(seconds * poses.fps)))
        calibration, attachments, frame_in_chest = calibrate_upper_body(simulated.truth, simulated.stream,
                                                                        poses.mapping, frames)
        return cls(calibration, attachments, frame_in_chest)


@dataclass
class LowerBodyFrame:
    """What the sequential part of a step produces: the pose without the upper-body IK, and the devices."""

    rotations: np.ndarray
    """(J, 4) local, joint 0 the root's world rotation."""
    positions: np.ndarray
    """(J, 3) local, joint 0 the root's world position."""
    device_positions: np.ndarray
    """(3, 3) as used (held where untracked)."""
    device_rotations: np.ndarray
    database: int
    frame: int
    target: np.ndarray
    """(3,) the centre of the head on the floor."""
    searched: bool
    standing_height_m: float
    contacts: np.ndarray
    """(2,) the played pose's toe contacts, for the foot lock."""
    placed: bool
    """The avatar was put at the target this frame (first frame, teleport): the foot lock starts afresh."""
    dt: float
    body_yaw: float = 0.0
    """The orientation model's answer this frame (radians about +Y), before the facing spring."""
    tracked: np.ndarray | None = None
    """(3,) the devices whose sample this frame was usable."""


FRAME_CLOCK_TOLERANCE = 1e-3
"""A database frame this close to due is played (a time step's rounding)."""


@dataclass
class SolverState:
    """Everything a live solver carries from one frame to the next."""

    started: bool = False
    database: int = 0
    frame: int = 0
    clip_stop: int = 0
    """End (exclusive) of the clip the current frame belongs to."""
    since_search: int = 0
    """Database frames played since the last search."""
    frame_clock: float = 0.0
    """Database frames due but not yet played (`frames_due`)."""
    root_position: np.ndarray = field(default_factory=lambda: np.zeros(3))
    root_rotation: np.ndarray = field(default_factory=lambda: quat.identity())
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    acceleration: np.ndarray = field(default_factory=lambda: np.zeros(3))
    facing_yaw: float = 0.0
    """The smoothed body orientation (eq. 4), radians about +Y, and its rate."""
    facing_yaw_rate: float = 0.0
    previous_target: np.ndarray | None = None
    standing: StandingHeight = field(default_factory=lambda: StandingHeight(MatchingConfig.calibration_s))
    """The user's standing HMD height, measured as the stream goes (given: fixed)."""


class MotionMatchingSolver:
    """Motion matching over one or more databases, then foot lock and upper-body IK (live driver: `step`)."""

    method = "mm"

    def __init__(self, databases: list[PoseDatabase | MatchingDatabase], config: MatchingConfig = MatchingConfig(),
                 orientation_model: WindowOrientationModel | OrientationModel | None = None,
                 standing_hmd_height_m: float | None = None,
                 devices: DeviceOffsets = DeviceOffsets()):
        """`databases` may come prepared (MatchingDatabase.prepare with the same feature weights and margins),
        so that solvers differing in other settings share one feature database and index."""
        if not databases:
            raise DatabaseError("the solver needs at least one database")
        prepared = [d if isinstance(d, MatchingDatabase) else MatchingDatabase.prepare(d, config) for d in databases]
        first = prepared[0].poses
        for other in (p.poses for p in prepared[1:]):
            if other.skeleton.names != first.skeleton.names or abs(other.fps - first.fps) > 1e-9:
                raise DatabaseError("all databases must share one skeleton and frame rate "
                                    f"({len(first.skeleton)} joints at {first.fps:g} fps first)")
        if config.orientation == "network" and orientation_model is None:
            raise ValueError("orientation 'network' needs a model (orientation_window.load_orientation_model()), "
                             "or use 'hmd'")
        if config.orientation not in ("network", "hmd"):
            raise ValueError(f"orientation must be 'network' or 'hmd', not {config.orientation!r}")
        self.config = config
        self.devices = devices
        self.databases = prepared
        self.skeleton = first.skeleton
        self.mapping = first.mapping
        self.fps = first.fps
        self.rig = DeviceRig.from_database(first, devices, config.calibration_s)
        self.offsets = device_offsets(devices)
        self.model = orientation_model
        self.held = HeldDevices(self.fps, config.head_centre_from_hmd, config.teleport_distance_m)
        self.facing = BodyFacing(orientation_model if config.orientation == "network" else None)
        self.fixed_height = standing_hmd_height_m
        try:
            self.legs = Legs.of(self.skeleton, self.mapping)
            self.upper_body = UpperBodyJoints.of(self.skeleton, self.mapping)
        except ValueError as error:
            raise DatabaseError(str(error)) from None
        # Step 6 needs global poses down to the toes (foot lock) and the neck and shoulders (IK).
        self.finished_ends = [*self.legs.chains[:, -1], *self.upper_body.neck_and_shoulders]
        self.reset()

    def standing_motion(self) -> Motion:
        """The first database's first clip: where retargeting finds this skeleton's standing reference."""
        return self.databases[0].poses.clip_motion(0)

    @property
    def standing_height_m(self) -> float | None:
        """The user's standing HMD height as measured so far (None before the first step)."""
        return self.state.standing.height_m

    def reset(self, standing_hmd_height_m: float | None = None) -> None:
        """Forget the user: the next step starts a new avatar where the devices are.

        The standing HMD height is the one given here, else the solver's, else measured live.
        """
        self.waiting_for_hmd = True
        self.state = SolverState(standing=StandingHeight(self.config.calibration_s,
                                                         standing_hmd_height_m or self.fixed_height))
        self.held.reset()
        self.facing.reset()
        self.inertializer = Inertializer.at_rest(len(self.skeleton))
        self.foot_lock = FootLock(self.config.foot_unlock_distance_m, self.config.foot_unlock_halflife_s)
        self.root_speed = 0.0

    # -- calibration ------------------------------------------------------------------------------------------

    def measured_standing_height(self, hmd_height: float, dt: float, sample: bool = True) -> float:
        """The standing HMD height (devices/standing_height.py: given, or measured), with this frame's HMD height
        (`sample` False: not measured, its sample rejected), `dt` seconds before the next frame."""
        return self.state.standing.add(hmd_height, dt, sample)

    def upper_body_calibration(self, standing_height: float) -> UpperBodyCalibration:
        return replace(self.rig.calibration, hmd_height_m=standing_height)

    # -- one frame ----------------------------------------------------------------------------------------------

    @waits_for_hmd
    def step(self, positions: np.ndarray, rotations: np.ndarray, tracked: np.ndarray, dt: float) -> Motion:
        """One live frame from device poses (3, 3), (3, 4) and tracking flags (3,): a one-frame Motion."""
        lower = self.step_lower_body(positions, rotations, tracked, dt)
        return self.finish_poses([lower], self.upper_body_calibration(lower.standing_height_m))

    def solve(self, stream: ThreePointStream, progress: Progress | None = None) -> Solution:
        """The offline driver over a calibrated stream: steps 1-5 frame by frame, then step 6 over all frames
        (`progress` told the share done)."""
        stream, height, frames = lower_body_frames(stream, self, progress_between(progress, 0.0, 0.9))
        motion = self.finish_poses(frames, self.upper_body_calibration(height))
        require_finite(motion, stream)
        if progress is not None:
            progress(1.0)
        return Solution(motion, stream, np.array([f.database for f in frames]), np.array([f.frame for f in frames]),
                        np.array([f.target for f in frames]), np.array([f.searched for f in frames]), height,
                        self.method)

    def step_lower_body(self, positions, rotations, tracked, dt: float, jump: bool = False) -> LowerBodyFrame:
        """Steps 1-5 of the module docstring: the matched pose and its root, before the foot lock and the IK (`jump`:
        the user is known to have jumped since the last frame, as HeldDevices.step takes it)."""
        state, config = self.state, self.config
        held = self.held.step(positions, rotations, tracked, dt, jump)
        positions, rotations, dt, target, teleported = held.positions, held.rotations, held.dt, held.target, \
            held.teleported
        hmd_position = positions[0]
        standing = self.measured_standing_height(held.hmd_height, dt, bool(held.tracked[0]))

        body_yaw = self.facing.step(positions, rotations, dt, teleported)
        placed = not state.started or teleported
        if placed:
            self.place(target, body_yaw)
        raw_velocity = (target - state.previous_target) / dt if state.started and not teleported else np.zeros(3)
        state.velocity, state.acceleration = spring_toward(state.velocity, state.acceleration, raw_velocity,
                                                           config.velocity_halflife_s, dt)
        state.facing_yaw, state.facing_yaw_rate = angle_spring_toward(state.facing_yaw, state.facing_yaw_rate,
                                                                      body_yaw, config.orientation_halflife_s, dt)
        state.previous_target = target

        database = self.choose_database(hmd_position[1] / standing)
        advance = self.frames_due(dt)
        at_end = state.frame + max(advance, 1) >= state.clip_stop - 1
        searched = (not state.started or teleported or database != state.database or at_end
                    or state.since_search >= config.search_interval)
        if searched:
            self.search(database, target, body_yaw)
            state.since_search = 0
        state.started = True
        state.since_search += advance
        state.frame = min(state.frame + advance, state.clip_stop - 1)  # never past the clip (a search is forced there)

        rotations_out, positions_out = self.play(dt)
        self.follow_target(target, dt)
        rotations_out[0], positions_out[0] = state.root_rotation, state.root_position
        return LowerBodyFrame(rotations_out, positions_out, positions, rotations, state.database, state.frame,
                              target, searched, standing, self.databases[state.database].poses.contacts[state.frame],
                              placed, dt, body_yaw, held.tracked)

    def frames_due(self, dt: float) -> int:
        """How many database frames to play on over `dt` seconds: the database's rate, whatever the devices' (a
        frame a step played a 60 fps database 2.4 times too fast at 144 Hz, the feet sliding 14 times as much)."""
        state = self.state
        state.frame_clock += dt * self.fps
        advance = int(state.frame_clock + FRAME_CLOCK_TOLERANCE)
        state.frame_clock = max(state.frame_clock - advance, 0.0)
        return advance

    def place(self, target: np.ndarray, yaw: float) -> None:
        """Put the avatar at the target, facing `yaw` (radians), at rest (first frame and teleports)."""
        state = self.state
        state.root_position, state.root_rotation = target.copy(), quat.from_yaw(yaw)
        state.facing_yaw, state.facing_yaw_rate = yaw, 0.0
        state.velocity, state.acceleration = np.zeros(3), np.zeros(3)

    def choose_database(self, ratio: float) -> int:
        """The database whose height range holds the ratio; otherwise the one whose range is nearest (§5.5)."""
        if len(self.databases) == 1:
            return 0
        distances = [max(db.poses.height_range[0] - ratio, ratio - db.poses.height_range[1], 0.0)
                     for db in self.databases]
        return int(np.argmin(distances))

    # -- motion matching ----------------------------------------------------------------------------------------

    def query(self, database: int, target: np.ndarray, body_yaw: float) -> np.ndarray:
        """The raw query q (eq. 5-8) in the avatar's character space."""
        state = self.state
        current = self.databases[state.database]
        pose_part = current.features[state.frame, POSE_FEATURES] if state.started \
            else self.databases[database].scale.mean[POSE_FEATURES]
        ahead = target[None] + TRAJECTORY_TIMES_S[:, None] * state.velocity[None]
        future = quat.inverse_rotate(state.root_rotation, ahead - state.root_position)
        yaws, _ = angle_spring_toward(state.facing_yaw, state.facing_yaw_rate, body_yaw,
                                      self.config.orientation_halflife_s, TRAJECTORY_TIMES_S)
        directions = quat.inverse_rotate(state.root_rotation, quat.rotate(quat.from_yaw(yaws), FORWARD))
        return np.concatenate([pose_part, future[:, [0, 2]].ravel(), directions[:, [0, 2]].ravel()])

    def search(self, database: int, target: np.ndarray, body_yaw: float) -> None:
        """Search `database` for the best match; switch to it (with inertialization) if it is not the current pose."""
        state = self.state
        matching = self.databases[database]
        query = matching.scale.normalise(self.query(database, target, body_yaw))
        best, cost = -1, np.inf
        if state.started and database == state.database and matching.index.searchable[state.frame]:
            best = state.frame
            cost = float(squared_distances(matching.index.features[state.frame:state.frame + 1], query)[0])
        found, _ = matching.index.nearest(query, best, cost)
        if state.started and found == state.frame and database == state.database:
            return
        if state.started:
            self.inertializer.transition(self.database_pose(state.database, state.frame),
                                         self.database_pose(database, found))
        poses = matching.poses
        state.database, state.frame = database, found
        state.clip_stop = int(poses.range_stops[poses.clip_of(found)])

    def database_pose(self, database: int, frame: int):
        """(rotations, angular velocities, positions, velocities) of one pose; joint 0 carries the root's rates."""
        poses = self.databases[database].poses
        rotations = quat.normalize(poses.rotations[frame].astype(float))  # stored as float32: unit to 1e-7 only
        positions = poses.positions[frame].astype(float)
        rotations[0], positions[0] = quat.identity(), 0.0
        return (rotations, poses.angular_velocities[frame].astype(float), positions,
                poses.velocities[frame].astype(float))

    def play(self, dt: float):
        """The current pose with the transition offsets applied; the root integrated from its velocity."""
        state = self.state
        rotations, angular, positions, velocities = self.inertializer.update(
            self.database_pose(state.database, state.frame), self.config.inertialization_halflife_s, dt)
        world_velocity, world_angular = quat.rotate(state.root_rotation, np.array([velocities[0], angular[0]]))
        state.root_position = state.root_position + world_velocity * dt
        state.root_position[1] = 0.0
        turn = quat.from_yaw(world_angular[1] * dt)
        state.root_rotation = quat.normalize(quat.multiply(turn, state.root_rotation))
        self.root_speed = float(np.hypot(world_velocity[0], world_velocity[2]))
        return rotations, positions

    def follow_target(self, target: np.ndarray, dt: float) -> None:
        """§5.4: nudge the root toward the target in proportion to its speed, then clamp it to within alpha."""
        state, config = self.state, self.config
        gap = target - state.root_position
        share = min(1.0, config.root_follow_per_m * self.root_speed * dt)
        state.root_position = state.root_position + share * gap
        gap = state.root_position - target
        distance = float(np.hypot(gap[0], gap[2]))
        if distance > config.alpha_m:
            state.root_position = target + gap * (config.alpha_m / distance)

    # -- final adjustments -----------------------------------------------------------------------------------------

    def finish_poses(self, frames: list[LowerBodyFrame], calibration: UpperBodyCalibration) -> Motion:
        """Step 6 over lower-body frames that follow the ones finished before: the foot lock (§6.2, in frame
        order; its leg IK over all frames at once), then the upper-body IK (§6.1, stateless, all at once)."""
        rotations, positions = np.array([f.rotations for f in frames]), np.array([f.positions for f in frames])
        # One forward kinematics serves both: the foot lock turns leg joints only, the IK starts from the torso.
        global_pose = forward_kinematics(self.skeleton.parents, rotations, positions, self.finished_ends)
        if self.config.foot_lock:
            self.legs.plant(rotations, positions, self.foot_lock, np.array([f.contacts for f in frames]),
                            np.array([f.dt for f in frames]), np.array([f.placed for f in frames]), global_pose)
        return self.pose_arms(Motion(self.skeleton, rotations, positions, self.fps),
                              np.array([f.device_positions for f in frames]),
                              np.array([f.device_rotations for f in frames]), calibration, global_pose)

    def pose_arms(self, motion: Motion, devices_p: np.ndarray, devices_r: np.ndarray,
                  calibration: UpperBodyCalibration, global_pose=None) -> Motion:
        """The upper-body IK (§6.1) of a motion on the database skeleton toward devices (T, 3, ...) per frame;
        `global_pose` as pose_upper_body takes it."""
        joints = joints_from_devices(devices_p, devices_r, self.offsets)
        if not self.config.arm_ik:
            return motion
        return pose_upper_body(motion, self.upper_body, joints[:, 0], devices_r[:, 0], joints[:, 1:], devices_r[:, 1:],
                               self.rig.attachments, self.rig.frame_in_chest, calibration, self.config.upper_body,
                               global_pose)


def lower_body_frames(stream: ThreePointStream, solver: MotionMatchingSolver, progress: Progress | None = None):
    """Steps 1-5 over a whole stream: on the solver's timeline (resampled to its rate), the standing height
    measured on it (devices/standing_height.py), every frame from the HMD's first tracked one stepped and the frames
    before it waiting in that one's pose (`progress` told the share stepped). Returns the stream as stepped, the
    height and one frame per sample."""
    stream, jump_times = held_up_to_jumps(without_unusable_samples(stream)[0])
    stream = stream.resampled(solver.fps)
    known = crossing(jump_times, stream.times)
    height = solver.fixed_height or standing_height(stream, solver.config.calibration_s)
    first = int(np.flatnonzero(stream.tracked[:, 0])[0])  # standing_height refused a stream without one
    solver.reset(height)
    frames = []
    for t in with_progress(range(first, len(stream)), progress):
        dt = stream.times[t] - stream.times[t - 1] if t > first else 1.0 / solver.fps
        frames.append(solver.step_lower_body(stream.positions[t], stream.rotations[t], stream.tracked[t], dt,
                                             bool(known[t])))
    return stream, height, [frames[0]] * first + frames


def load_matching_solver(database_paths, config: MatchingConfig = MatchingConfig(), orientation: str | None = None,
                         standing_hmd_height_m: float | None = None,
                         arm_span_m: float | None = None) -> MotionMatchingSolver:
    """Motion matching over database files with the user's calibration; `orientation` as
    orientation.facing.load_facing_model takes it; `arm_span_m` (wrist to wrist in a T-pose, Parger eq. 1)
    replaces the avatar's arm lengths."""
    databases = [PoseDatabase.load(path) for path in database_paths]
    model = load_facing_model(orientation)
    solver = MotionMatchingSolver(databases, replace(config, orientation="hmd" if model is None else "network"), model,
                                  standing_hmd_height_m)
    if arm_span_m:
        arm = arm_length_from_span(arm_span_m, solver.rig.calibration.shoulder_from_neck[0])
        solver.rig.calibration = replace(solver.rig.calibration, upper_arm_m=arm, forearm_m=arm)
    return solver
