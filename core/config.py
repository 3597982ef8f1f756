"""Configuration: dataclasses with documented defaults, shared by the command line and the Blender add-on."""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field, fields
from pathlib import Path

from .assets import asset
from .files.ik_constants import read_ik_constants, write_ik_constants


@dataclass(frozen=True)
class DeviceOffsets:
    """Where the three devices sit on the body, in each device's own frame (OpenXR: +Y up, -Z forward).

    The HMD pose is the view pose, the centre between the eyes; the controllers report their
    grip pose (OpenXR: -Z along the fist's tube from little finger to thumb, +X out of the left
    palm and into the right one). These offsets turn a skeleton into simulated devices and, in the
    other direction, devices into the joints they imply.
    """

    hmd_from_head: tuple[float, float, float] = (0.0, 0.07, -0.09)
    """HMD origin relative to the head joint (top of the neck): 7 cm up and 9 cm forward, at the eyes."""
    grip_from_wrist_m: float = 0.08
    """Grip centre along the hand, from the wrist joint toward the fingers (half a palm plus the fist)."""
    grip_tilt_deg: float = 0.0
    """Tilt of the grip's -Z axis from the thumb direction toward the fingers; 0 keeps it across the fist."""


@dataclass(frozen=True)
class DeviceNoise:
    """What a real headset's stream has and a simulated one has not (`stream simulate --device-noise`): a recorded
    HTC Vive Pro runs at 71 Hz, millisecond stamps, 20-35 ms gaps, quaternions to two decimals. Drawn per clip."""

    rates_hz: tuple[float, ...] = (72.0, 90.0, 120.0)
    """The device's rate, one of these per clip (the simulation's own `fps` stays the truth's)."""
    clock_s: float = 0.001
    """Timestamps are written rounded to this (milliseconds)."""
    jitter_s: float = 0.001
    """Each sample is captured up to this early or late against its nominal time (uniform)."""
    gaps_per_minute: float = 20.0
    """Samples the runtime missed: this many gaps a minute ..."""
    gap_s: tuple[float, float] = (0.02, 0.04)
    """... each this long (uniform)."""
    quaternion_decimals: int = 2
    """Quaternions are written rounded to this many decimals (not renormalised)."""
    position_noise_m: tuple[float, float] = (0.001, 0.002)
    """Each position is off by Gaussian noise of a standard deviation drawn per clip in this range."""
    latency_s: tuple[float, float] = (0.01, 0.03)
    """A sample's timestamp is its capture time plus a latency drawn per clip (whole milliseconds) in this range."""
    dropouts_per_minute: float = 4.0
    """One controller (either) loses tracking this many times a minute ..."""
    dropout_s: tuple[float, float] = (0.1, 0.5)
    """... for this long (uniform)."""


@dataclass(frozen=True)
class SimulationConfig:
    """Three-point streams simulated from mocap (SPEC §4 `stream simulate`)."""

    fps: float = 60.0
    """Rate of the simulated stream; MMVR runs at 60 fps, the mocap (30 fps) is resampled with slerp."""
    look_around_deg: float = 0.0
    """Largest head yaw about the neck added on top of the clip (VR users look around more than actors)."""
    look_around_hold_s: tuple[float, float] = (0.5, 2.0)
    """Range of seconds between look-around targets; the head eases from one target to the next."""
    seed: int = 0
    devices: DeviceOffsets = DeviceOffsets()
    attachment_noise_m: float = 0.0
    """Each controller held off the assumed grip by a random offset up to this long, per clip (issue 28: 0.03)."""
    attachment_noise_deg: float = 0.0
    """... and turned in the fist (about its grip centre) by a random rotation up to this angle (issue 28: 15)."""
    calibration_pose_s: float = 0.0
    """The person first holds the calibration gesture this long (calibration.py), then eases into the clip."""
    calibration_arms: str = "T"
    """The calibration pose's arms: "T" level, "A" 45 degrees below level."""
    device_noise: DeviceNoise | None = None
    """A real device's traits on the stream (None: samples exactly every 1/fps s, as simulated)."""
    body_scale: float = 1.0
    """The person is this many times the clip's actor's size (the clip scaled about the origin; the truth too)."""
    two_handed_m: float = 0.0
    """A two-handed hold (a bat, a stick, a rifle's fore-grip): the left controller is tied to the right one, held on
    the same object this far past the right fist along the grip's -Z (the fist's tube), turned as the right one is.
    The truth's left arm does not follow it. 0: each controller in its own hand."""
    grip: str = "openxr"
    """The controllers reported as this named grip (devices/grips.py: "index-openvr" is SteamVR's Index pose)."""

    def __post_init__(self):
        require_positive(self, "fps")
        require_positive(self, "look_around_deg", zero=True)
        for name in ("attachment_noise_m", "attachment_noise_deg", "calibration_pose_s", "two_handed_m"):
            require_positive(self, name, zero=True)
        require_positive(self, "body_scale")
        if self.calibration_arms not in ("T", "A"):
            raise ValueError(f"SimulationConfig.calibration_arms must be 'T' or 'A', not {self.calibration_arms!r}")


@dataclass(frozen=True)
class CalibrationConfig:
    """Calibration from the stream's first minute (calibration.py): a T- or A-pose with the wrists circling."""

    search_s: float = 60.0
    """Look for the calibration gesture within the stream's first minute: a session is often started before the
    headset is put on (a live preview, a recording by another tool). Over the first minute of every Bandai and
    other-studio clip (77 minutes of plain motion, with and without a device's noise) nothing is taken for it."""
    min_pose_s: float = 0.5
    """The pose must be held at least this long."""
    min_wrist_turn_deg: float = 15.0
    """The grip-to-wrist offset is estimated only if the controllers turn at least this much (RMS) about the wrists ..."""
    max_pivot_residual_m: float = 0.01
    """... and the wrists held still to within this (RMS of the pivot fit) ..."""
    max_offset_error_m: float = 0.003
    """... and the offset pinned down by the turns to within this (its standard error from the fit: wrists circled
    give 0.1-0.7 mm; a T-pose held without circling them, the controllers turning with the arms about the shoulders,
    8-42 mm). A controller whose grip is not measured keeps the assumed one; where neither is, the pose is not
    the gesture."""
    max_tilt_deg: float = 35.0
    """A pose whose grips are turned more than this from palms down, in line with the arms, is not the gesture
    (plain motion with the arms spread; on the Bandai clips every such false find turned them 58-85 degrees)."""


def require_positive(config, name: str, zero: bool = False) -> None:
    """Refuse (ValueError) a config field that is NaN, infinite, negative, or zero unless `zero`."""
    value = getattr(config, name)
    if not (math.isfinite(value) and (value >= 0 if zero else value > 0)):
        raise ValueError(f"{type(config).__name__}.{name} must be {'0 or more' if zero else 'positive'}, not {value}")


def describe(config) -> dict:
    """A dataclass as a plain dict (nested dataclasses included), for JSON and CSV comments."""
    out = {}
    for f in fields(config):
        value = getattr(config, f.name)
        out[f.name] = describe(value) if hasattr(value, "__dataclass_fields__") else value
    return out


@dataclass(frozen=True)
class UpperBodyIKConfig:
    """Upper-body IK from head and hands (Parger et al. 2018, §3). Every default is the paper's constant."""

    neck_pitch_base_deg: float = 135.3
    """beta_n,0 of eq. 2: chest bend per unit of relative HMD height drop."""
    neck_pitch_hmd_weight: float = 0.333
    """b of eq. 2: how much of the HMD's own pitch adds to the chest bend."""
    neck_max_yaw_from_hmd_deg: float = 90.0
    """The neck's yaw stays within this of the HMD's yaw (§3.1)."""
    shoulder_gain_deg: float = 30.0
    """c of eq. 3: shoulder yaw / roll per arm length of reach beyond the threshold."""
    shoulder_threshold: float = 0.5
    """d of eq. 3: reach (in arm lengths, along the neck's forward / up axis) before the shoulder turns."""
    shoulder_max_deg: float = 33.0
    """Eq. 3's result is clamped to [0, this]."""
    elbow_offset_deg: float = 15.0
    """phi_0 of eq. 4: swivel angle, 0 = elbow toward the neck's up axis, 90 = outward, 180 = down."""
    elbow_weights_deg_per_m: tuple[float, float, float] = (-50.0, -60.0, 260.0)
    """w of eq. 4, per metre of the hand's (outward, up, forward) offset from the shoulder."""
    elbow_biases_deg: tuple[float, float, float] = (30.0, 120.0, 65.0)
    """b of eq. 4."""
    elbow_min_deg: float = 13.0
    elbow_max_deg: float = 175.0
    """Eq. 4's swivel angle is clamped to [elbow_min_deg, elbow_max_deg]."""
    elbow_rest_direction: tuple[float, float, float] = (0.133, -0.443, -0.886)
    """v_f (outward, up, forward): the elbow direction blended in near the singularities."""
    singularity_radius_m: float = 0.5
    """Blend toward v_f as the hand comes within this distance of the shoulder's vertical axis."""
    behind_range_m: float = 0.1
    """Blend toward v_f as the hand moves from 0 to this far behind the shoulder."""
    wrist_yaw_limit_deg: float = 45.0
    """alpha_u / alpha_l of eq. 5 (+-): hand yaw in the forearm's frame beyond which the elbow turns."""
    wrist_yaw_gain_deg: float = 135.0
    """c_alpha = +-1 / this (eq. 5)."""
    wrist_roll_lower_deg: float = 0.0
    wrist_roll_lower_gain_deg: float = -600.0
    """gamma_l and c_gamma,l = 1 / this (eq. 5): forearm roll below palm-down."""
    wrist_roll_upper_deg: float = 90.0
    wrist_roll_upper_gain_deg: float = 300.0
    """gamma_u and c_gamma,u = 1 / this (eq. 5): forearm roll past thumb-up."""
    wrist_correction: bool = True
    """Apply eq. 5; off leaves the elbow where eq. 4 and the singularity blend put it."""

    def save(self, path: str | Path, names, record: dict) -> None:
        """Write the constants `names` of this config and a record of how they were found, as `load` reads them."""
        values = describe(self)
        write_ik_constants(path, {n: values[n] for n in names}, record)

    @classmethod
    def load(cls, path: str | Path) -> "UpperBodyIKConfig":
        """The paper's constants with those in a file from `train ik` ({"constants": {field: value}}) in their place;
        ValueError naming the file where it is not one (core/files/ik_constants.py)."""
        defaults = cls()
        return dataclasses.replace(defaults, **read_ik_constants(path, defaults))


FITTED_IK_CONSTANTS = asset("upper_body_ik_fitted.json")
"""Parger's elbow constants refitted to the Bandai training split by §3.3's own procedure (`train ik`)."""


@functools.lru_cache(maxsize=1)
def fitted_ik_constants() -> UpperBodyIKConfig:
    """The shipped refit of the arm IK's constants (FITTED_IK_CONSTANTS), read once: the solver's default."""
    return UpperBodyIKConfig.load(FITTED_IK_CONSTANTS)


@dataclass(frozen=True)
class DatabaseConfig:
    """Pose and feature databases (MMVR §5.1-5.2, §5.5; SPEC §4 `db build`)."""

    fps: float = 60.0
    """Runtime rate: the paper's 60 fps, at which 20 / 40 / 60 frames are 0.33 / 0.66 / 1 s."""
    mirror: bool = False
    """Append left-right mirrored copies of every clip (doubles the turns and side steps)."""
    height_range: tuple[float, float] = (0.0, float("inf"))
    """HMD-height ratios (current / standing, §5.5) that this database serves."""
    contact_speed_m_s: float = 0.15
    """A foot is in contact while its toe moves slower than this (§6.2: "close to zero")."""
    contact_height_m: float = 0.06
    """... and is this close to the clip's floor (not in the paper: keeps still feet in the air unlocked)."""
    min_clip_s: float = 1.0
    """Shortest clip accepted: the trajectory features look one second ahead."""

    def __post_init__(self):
        require_positive(self, "fps")
        low, high = self.height_range
        if not 0 <= low <= high:
            raise ValueError(f"DatabaseConfig.height_range must be (low, high) with 0 <= low <= high, not {self.height_range}")


@dataclass(frozen=True)
class FeatureWeights:
    """Per-group weights of the feature vector z (MMVR §5.2); the paper gives none, these are Holden et al.'s."""

    pose_velocities: float = 1.0
    """z^v: velocities of the feet and hips."""
    foot_positions: float = 0.75
    """z^l: positions of the feet."""
    trajectory_positions: float = 1.0
    """z^p: 2-D positions 20, 40, 60 frames ahead."""
    trajectory_directions: float = 1.5
    """z^d: 2-D facing directions 20, 40, 60 frames ahead."""


@dataclass(frozen=True)
class MatchingConfig:
    """The three-point solver (MMVR §5.3-5.5, §6): motion matching for the body, Parger IK for the arms."""

    search_interval: int = 10
    """Frames between motion-matching searches (§5.3: "every a few frames (e.g., 10 frames)")."""
    end_margin: int = 20
    """Frames this close to a clip's end are never returned by a search (Holden et al.'s 20)."""
    inertialization_halflife_s: float = 0.05
    """Half-life of the offsets that hide each transition (Bollo's inertialization, §5.3); tuned, see docs/methods/motion_matching.md."""
    velocity_halflife_s: float = 0.1
    """Half-life of the spring-damper smoothing the HMD's floor velocity (eq. 3 with [Kir04]); tuned, see docs/methods/motion_matching.md."""
    orientation_halflife_s: float = 0.2
    """Half-life of the spring-damper smoothing the predicted body orientation (eq. 4 with [Kir04]); tuned, see docs/methods/motion_matching.md."""
    alpha_m: float = 0.3
    """Position accuracy (§5.4): the root stays within this of the target; 0.1 m for self-avatars."""
    root_follow_per_m: float = 2.0
    """§5.4's nudge: per metre the character moves, the root closes this share of its gap to the target (tuned)."""
    head_centre_from_hmd: tuple[float, float, float] = (0.0, 0.0, 0.09)
    """Centre of the head in the HMD's frame (the HMD is at the eyes, -Z forward): its floor projection is the target."""
    orientation: str = "network"
    """'network' (the orientation model the solver is given: the shipped window model, or MMVR §4's) or 'hmd'
    (the HMD's forward direction)."""
    foot_lock: bool = True
    """§6.2: hold a foot in contact where it touched down."""
    arm_ik: bool = True
    """§6.1: pose neck, shoulders and arms from the devices (Parger IK); off keeps the matched upper body."""
    upper_body: UpperBodyIKConfig = field(default_factory=fitted_ik_constants)
    """The arm IK's constants: by default the refit to mocap (elbows 3.4 cm against the printed constants'
    5.9 cm on walking and waving, docs/methods/upper_body_ik.md); `upper_body_ik.ik_constants('paper')` gives
    Parger et al.'s as printed."""
    foot_unlock_distance_m: float = 0.3
    """Release a lock when the matched pose's foot is this far from it (§6.2's maximum distance; tuned)."""
    foot_unlock_halflife_s: float = 0.1
    """Half-life over which a released foot returns to the matched pose."""
    teleport_distance_m: float = 1.0
    """An HMD jump longer than this within one step is a teleport: the avatar is placed anew."""
    calibration_s: float = 0.5
    """Standing calibration: the HMD height over the stream's first half second (devices/standing_height.py)."""
    fps: float = 60.0
    """Rate the offline solver resamples streams to (the databases' rate)."""
    weights: FeatureWeights = FeatureWeights()

    def __post_init__(self):
        require_positive(self, "fps")
        if not self.alpha_m > 0:
            raise ValueError(f"MatchingConfig.alpha_m must be positive, not {self.alpha_m}")
        if self.search_interval < 1:
            raise ValueError(f"MatchingConfig.search_interval must be 1 or more, not {self.search_interval}")


@dataclass(frozen=True)
class StitchConfig:
    """Stitching locomotion clips with the Recurrent Motion Refiner (Kim et al. §6-7)."""

    method: str = "rmr"
    """'rmr' (the refiner), 'inertialization' (each seam blended, §7.5's IB) or 'concat' (aligned only)."""
    window: int = 180
    """w: frames the refiner edits at once (§7: 180; 60 in the RNN and T_begin studies)."""
    shift: int = 90
    """s: frames the window moves between runs (§7: 90; 30 with w = 60)."""
    seam_blend_frames: int = 10
    """§6: the jump at each window's first frame is inertialized away over this many frames."""
    baseline_blend_frames: int = 30
    """§7.5: the inertialization baseline blends each clip seam over this many frames."""
    foot_lock: bool = True
    """§5: lock the feet with leg IK on the predicted contacts."""
    feet_velocity_weight: float = 32.0
    """Not in the paper: x_t gives each foot twice, as a position (p) and a velocity (v). The feet are read
    as the least-squares path between the two, this weight on v's steps against p's positions (0: p
    alone). 32 gave the lowest toe error on the refiner's training pairs (1.77 cm with p alone, 1.58)."""
    keep_trajectory: bool = True
    """Not in §6 (a remedy for the drift §8 discusses): shift each window's root displacements evenly so the
    window moves and turns the root as much as its input did; off runs the paper's runtime as written."""


@dataclass(frozen=True)
class N3PConfig:
    """The Neural3Points pose predictor as a solver (Ye et al. §4 and §7, direct mode)."""

    hmd_only: bool = False
    """§8.2: ignore the controllers; the predictor's own o* stands in for them every frame."""
    hand_ik: bool = True
    """§7: arm IK puts the wrists where the controllers imply them (tracked controllers only)."""
    controller_hands: bool = True
    """With the arm IK, each tracked hand turns as its controller does, about the predicted grip
    (ik/controller_hands.py); off: the hands keep the predicted orientation."""
    wrist_swivel: bool = True
    """With the arm IK, an elbow turns about the shoulder-to-wrist line where the wrist would bend past 75 degrees
    (Parger §3.3; ik/wrist_swivel.py); off: the elbow stays in the pose's plane."""
    foot_lock: bool = True
    """§7: hold the feet the predictor says are in contact where they touched down (leg IK)."""
    foot_unlock_distance_m: float = 0.2
    """Release a lock when the predicted foot is this far from it."""
    foot_unlock_halflife_s: float = 0.1
    """Half-life over which a released foot returns to the predicted pose."""
    calibration_s: float = 0.5
    """Standing calibration: the head's height (devices/standing_height.py) scales the user to the model."""
    fit_arms: bool = True
    """Stretch the skeleton's arms (at most a fifth) to the reach the controllers show from its shoulders over the
    first minute (ik/two_bone.py: arm_stretch); offline from the start, live as the minute goes on."""
    fps: float = 60.0
    """The output's rate. The predictor steps at its own 30 Hz (§4); offline its poses are interpolated onto the
    output's timeline and the IK follows the devices at every output frame, live it holds its pose between
    ticks."""

    def __post_init__(self):
        require_positive(self, "fps")


@dataclass(frozen=True)
class HybridConfig:
    """The hybrid, the default method (core/hybrid): Neural3Points' pose with MMVR's body facing and held feet.

    The predictor and the orientation model run side by side on the stream (motion matching too, over the user's
    databases, for matched legs); these settings say how their answers are put together."""

    legs: str = "predicted"
    """Whose legs step while the body travels: "predicted", the predictor's own, locked on its predicted contacts
    (its legs step in the person's phase; no database needed); "matched", motion matching's over the user's
    databases, locked on the matched poses' contacts (they step in their clip's phase, docs/default_method.md)."""
    fps: float = 60.0
    """The output's rate (with matched legs, the databases')."""
    toe_contact_m: float = 0.0
    """With the predictor's legs, a toe this close to its standing height counts as in contact too (the predicted
    contact flags miss feet that touch down briefly or skim the floor)."""
    step_height: float = 0.15
    """A released foot catches up with its pose in an arc, at most this share of the gap it had to close over the
    floor (FootLock.step_height; 0: along the floor)."""
    standing_m_s: float = 0.15
    """Under this floor speed of the predicted hips the predictor's own legs are kept (both feet locked)."""
    travelling_m_s: float = 0.45
    """Over this floor speed the legs are motion matching's (smoothstep in between)."""
    speed_window_s: float = 0.25
    """The hips' floor speed is averaged over this long: centred offline, the last this many seconds live."""
    facing_window_s: float = 0.25
    """The orientation model's body yaw is averaged over this long, centred (offline)."""
    live_facing_window_s: float = 0.0833
    """Live, over the last this many seconds (five 60 Hz frames: a centred average needs the future)."""
    face_with_model: bool = True
    """Turn the hips and legs to where the orientation model says the body faces (off: the predictor's own hips'
    facing)."""
    foot_lock: bool = True
    """MMVR §6.2 on the result: the contacts while travelling, both feet while standing."""
    controller_hands: bool = True
    """Each tracked hand turns as its controller does, about the predicted grip (MMVR §6's end effectors oriented by
    the controllers; ik/controller_hands.py); off: the hands keep the predictor's orientation."""
    wrist_swivel: bool = True
    """An elbow turns about the shoulder-to-wrist line where the wrist would bend past 75 degrees (Parger §3.3's
    elbow rotation from the wrist's; ik/wrist_swivel.py); off: the elbow stays in the predicted pose's plane."""
    crouch: bool = True
    """The head goes where the headset is: the hips down (the knees bend over the feet) and the torso over, as a
    user crouches or bends to the floor (ik/crouch.py); off: the predictor's torso and hips stay."""
    leg_soft_ik_m: float = 0.01
    """The leg IK eases into full extension over its last this many metres (Nicholls' soft IK, ik/two_bone.py
    soft_reach): where a foot's target came back within reach of a straight leg the knee bent 2-8 cm in a frame. On
    100STYLE's walks the knees' jerk falls by 30 % at 1 cm, 45 % at 4 cm, but planted feet then fall short of their
    locks on long strides, and the physics pass's feet slide 0.57x the person's at 1 cm against 0.95x at 4 cm
    (0.52x without; docs/default_method.md). 0: MMVR's plain two-bone IK."""
    foot_unlock_distance_m: float = 0.3
    """While travelling, release a locked foot when the pose's toe is this far from it (motion matching's)."""
    foot_unlock_halflife_s: float = 0.1
    """Half-life over which a released foot returns to the pose."""
    matched_toe_heights: bool = True
    """With matched legs, put the toes at the matched poses' heights above the floor (by the travel weight; the leg
    IK bends the knees): the predictor's hips sit lower than the matched ones, so the matched legs' rotations alone
    drag the feet along the floor."""
    standing_unlock_distance_m: float = 0.6
    """While standing (travel weight 0.5 or less: both feet locked) a locked foot is released only when the pose's
    toe is this far from it: under a body that moves without travelling (bows) a foot stays until its leg no
    longer reaches (docs/hybrid_steps.md)."""
    lift_off_m: float = 0.005
    """A foot whose contact ends stays where it was locked, rising with the pose, until its toe is this high over
    the lock (ik/foot_lock.py): the catch-up to the pose's toe then happens in the air, not along the floor (0:
    released at the contact's end, as motion matching's own lock does; docs/default_method.md)."""
    torso_twist_deg: float = 35.0
    """A hand whose target is beyond its arm's reach twists the chest (about the spine, the head kept) at most this
    much either way: the thoracic spine's range of axial rotation (ik/torso_reach.py; 0: no twist)."""
    clavicle_turn_deg: float = 33.0
    """... and turns its clavicle at most this much toward it (Parger §3.2's limit, shoulder_max_deg; 0: none)."""

    def __post_init__(self):
        require_positive(self, "fps")
        require_positive(self, "torso_twist_deg", zero=True)
        require_positive(self, "clavicle_turn_deg", zero=True)


@dataclass(frozen=True)
class FootStabilisation:
    """How Smooth Solve holds a planted foot (after MotionBuilder's feet stabilisation; core/anim/foot_holds.py)."""

    lock_time_s: float = 0.1
    """A contact shorter than this is not held: a toe brushing the floor is not a step."""
    lock_radius_m: float = 0.03
    """A held foot stays where it landed while the solve's own foot is within this of it along the floor; past it
    the hold lets go. 0: the foot follows the solve's own planted foot."""
    recovery_s: float = 0.15
    """A released hold hands the foot back to the solve over this time, so it never jumps."""

    def __post_init__(self):
        for name in ("lock_time_s", "lock_radius_m", "recovery_s"):
            if not 0.0 <= getattr(self, name) <= 10.0:
                raise ValueError(f"{name} must be between 0 and 10, got {getattr(self, name)}")


@dataclass(frozen=True)
class PhysicsConfig:
    """The physics pass (core/physics/, docs/physics.md): a simulated body follows the solve, one quadratic program a
    step (PhysCap's formulation) in place of Neural3Points' trained policy (§5)."""

    sim_hz: float = 60.0
    """Simulation steps a second, at least: a frame of a faster stream is one step of its own length."""
    stiffness: float = 400.0
    """Tracking gain on the pose error, 1/s^2 (the joints come back at about 3 Hz)."""
    damping: float = 40.0
    """Tracking gain on the velocity error, 1/s: 2·sqrt(stiffness), critically damped."""
    friction: float = 1.0
    """Foot-floor friction coefficient (rubber on wood: about 0.8-1.0)."""
    torque_scale: float = 1.0
    """Joint torque limits (physics/body.py TORQUE_LIMITS_NM, for 70 kg) times this."""
    residual_force_n: float = 300.0
    """Largest force on the root that no joint or contact gives (Neural3Points' residual force), per axis, N."""
    residual_torque_nm: float = 150.0
    """Largest such torque, per axis, N m."""
    slide_weight: float = 30.0
    """How hard a sole point on the floor is asked to stop sliding, against following the target."""
    task_weight: float = 10.0
    """How hard the hands' and feet's joints are pulled to the solve's places (accelerations in m/s², against the
    joints' angular ones): joint angles alone add their small errors up each limb. 0: the joints alone."""
    grounding_m: float = 0.03
    """The target's lowest sole, under the floor or within this above it, is put on it (fading out to twice this),
    so the body stands where the solve plants a foot. 0: the target as solved."""
    head_on_solve: bool = True
    """After each step the torso turns and the neck and head take the solve's rotations so that the head is the
    solve's, on the headset (the first-person view). False: as simulated."""
    hands_on_solve: bool = True
    """After each step the arms are bent so that the hands are the solve's, on the controllers. False: as simulated."""
    teleport_m: float = 1.0
    """A target root this far from the simulated one resets the simulation onto it."""
    body_mass_kg: float | None = None
    """The avatar's mass (None: a body-mass index of 22 at its standing height)."""

    def __post_init__(self):
        for name in ("sim_hz", "stiffness", "friction", "torque_scale", "teleport_m"):
            require_positive(self, name)
        for name in ("damping", "residual_force_n", "residual_torque_nm", "slide_weight", "task_weight",
                     "grounding_m"):
            require_positive(self, name, zero=True)


METHODS = ("hybrid", "mm", "n3p")
"""The solving methods: the default (Neural3Points' body with MMVR's facing, core/hybrid), motion matching (MMVR,
over motion databases) and the Neural3Points predictor alone."""


@dataclass(frozen=True)
class SolveConfig:
    """What a solve runs with: the method, each method's settings and the user's calibration. The command line and
    the add-on fill it from their options; core/solve.py's `load_solver` makes the solver."""

    method: str = "hybrid"
    """One of METHODS."""
    hybrid: HybridConfig = HybridConfig()
    matching: MatchingConfig = field(default_factory=MatchingConfig)
    """Motion matching's settings: the `mm` method's, and the hybrid's matched legs'."""
    n3p: N3PConfig = N3PConfig()
    """The predictor's: the `n3p` method's, and the hybrid's body."""
    model: str | None = None
    """The predictor's model file (None: the shipped assets/n3p.npz)."""
    orientation: str | None = None
    """The body-orientation model of `hybrid` and `mm`: None (the shipped window model), 'mmvr' (MMVR §4's
    network), a model file, or 'hmd' (the HMD's forward)."""
    standing_hmd_height_m: float | None = None
    """The user's standing HMD height (None: measured from the stream, devices/standing_height.py)."""
    arm_span_m: float | None = None
    """`mm`: the user's T-pose wrist-to-wrist span (Parger eq. 1; None: the avatar's arms)."""

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; methods are {', '.join(METHODS)}")
        if self.method != "n3p" and self.n3p.hmd_only:
            raise ValueError(f"HMD-only is a mode of the n3p method; {self.method} needs the controllers")

    @property
    def needs_database(self) -> bool:
        """Whether the method takes poses from motion databases: motion matching, and the hybrid's matched legs."""
        return self.method == "mm" or (self.method == "hybrid" and self.hybrid.legs == "matched")
