"""Stitching locomotion clips (Kim et al. §6): align, refine window by window, blend the seams, lock the feet.

1. Align: every clip goes on its database skeleton at 60 fps with its floor at y = 0, and each
   clip's root trajectory is moved rigidly so that its first root sits on the previous clip's last
   root (§3, Figure 3). The result is one sequence K of pose vectors (stitch_pose).
2. Refine: a window of w frames slides along K by s frames; each window is replaced by the
   network's output, and later windows read the updated frames (§6). The jump between the last
   frame before a window and the window's first output frame is hidden by inertialization over
   10 frames (Bollo's quintic, inertialize.blend_seam). w, s = 180, 90 or 60, 30 as in §7.
3. Rebuild the motion: the root accumulated from the refined displacements from K's first root,
   rotations from q, the hips from p; leg IK then puts the ankles and toes where x_t says (§5): on
   the least-squares path between p's positions and v's steps (least_squares_path), and
   holds each toe while its predicted toe contact says it is down (foot_lock.FootLock, the same lock
   the live solver uses). Every method's vectors are rebuilt this way.
`WindowRefiner` takes frames as they come (a live motion-matching output) or all at once; both give
the same result. Baselines: `concat` (K as aligned) and `inertialization` (each clip seam blended
over 30 frames, as §7.5 runs IB).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..anim.inertialize import blend_seam
from ..anim.motion import Motion
from ..config import StitchConfig
from ..errors import InputError
from ..ik.foot_lock import FootLock
from ..ik.two_bone import two_bone_ik
from ..anim.character import database_skeleton, rooted_motion
from ..math import quat
from ..math.least_squares_path import least_squares_path
from ..retarget.target import clip_mapping
from ..rig.humanoid import find_mapping
from .model import StitchModel
from .pose import (PoseLayout, align_roots, lower_body_velocities, match_root_path, motion_from_vectors,
                          on_floor, pose_vectors, root_yaw, toe_contacts)

FPS = 60.0
METHODS = ("concat", "inertialization", "rmr")
DEFAULTS = StitchConfig()


class StitchError(InputError):
    """Clips that cannot be stitched; the message names the clip."""


@dataclass
class AlignedClips:
    """K: the clips one after another on one database skeleton, with where each begins."""

    motion: Motion
    vectors: np.ndarray
    starts: np.ndarray
    layout: PoseLayout
    levels: np.ndarray


def align_clips(motions: list[Motion]) -> AlignedClips:
    """§3: the clips at 60 fps, floors at y = 0, each clip's first root put on the previous clip's last."""
    if len(motions) < 1:
        raise StitchError("nothing to stitch")
    parts, first = [], None
    for motion in motions:
        name = motion.name or len(parts) + 1
        mapping = clip_mapping(motion, where=f"clip {name}")
        if not {"l_toes", "r_toes"} <= set(mapping.joints):
            raise StitchError(f"clip {name}: its skeleton has no toe joints; stitching's poses hold the toes "
                              "(the refiner is trained with them)")
        rooted = rooted_motion(motion.resampled(FPS), mapping)
        if first is None:
            first = rooted
            layout = PoseLayout.of(rooted.skeleton)
        elif rooted.skeleton.names != first.skeleton.names:
            raise StitchError(f"clip {name}: its skeleton differs from "
                              f"{motions[0].name or 'the first clip'}'s; stitching needs one skeleton")
        if len(rooted) < 2:
            raise StitchError(f"clip {name} has {len(rooted)} frame(s) at 60 fps; "
                              "each clip needs at least 2 (the paper: more than 10)")
        rooted, levels = on_floor(rooted, layout)
        positions, rotations = rooted.positions.copy(), rooted.rotations.copy()
        yaw = root_yaw(rotations[:, 0])
        if parts:
            last_position, last_yaw = parts[-1][1][-1, 0], root_yaw(parts[-1][0][-1:, 0])[0]
            positions[:, 0], yaw = align_roots(positions[:, 0], yaw, last_position, last_yaw)
        else:
            positions[:, 0, 1] = 0.0
        rotations[:, 0] = quat.from_yaw(yaw)
        parts.append((rotations, positions, levels))
    lengths = np.array([len(p[0]) for p in parts])
    motion = Motion(first.skeleton, np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                    FPS, "+".join(m.name for m in motions if m.name))
    levels = np.mean([p[2] for p in parts], axis=0)
    return AlignedClips(motion, pose_vectors(motion, layout, levels), np.cumsum(lengths) - lengths, layout, levels)


def pose_dims(layout: PoseLayout) -> slice:
    """r, p, q, v: the part of x_t that is blended (contacts are not)."""
    return slice(0, layout.v.stop)


MIN_SHIFT_SHARE = 0.25
"""A window moves at least this share of itself: at 1/18 (w 180, s 10) the root strayed 1 m on two walks, at 1/60
(s 1) 5 m; the paper moves it by a half."""
MIN_WINDOW_BLENDS = 2
"""A window spans at least this many seam blends (StitchConfig.seam_blend_frames)."""


class WindowRefiner:
    """§6's sliding window over a growing sequence of pose vectors.

    Windows start at 0, s, 2s, ...; a window runs once w frames from its start have arrived (or at
    `finish`, over the last w frames). Frames before the next window's start are final.
    """

    def __init__(self, model: StitchModel, layout: PoseLayout, window: int = DEFAULTS.window,
                 shift: int = DEFAULTS.shift, blend_frames: int = DEFAULTS.seam_blend_frames,
                 keep_trajectory: bool = DEFAULTS.keep_trajectory):
        if window < MIN_WINDOW_BLENDS * blend_frames:
            raise StitchError(f"the window ({window} frames) must be at least {MIN_WINDOW_BLENDS * blend_frames} "
                              f"frames: {MIN_WINDOW_BLENDS} seam blends of {blend_frames}")
        if not window * MIN_SHIFT_SHARE <= shift <= window:
            raise StitchError(f"the window shift ({shift}) must be between a quarter of the window and the window "
                              f"({window} frames): a smaller shift refines each frame over and over, and the root "
                              "drifts (w 180, s 10: 1 m)")
        model.check_layout(layout)
        self.model, self.layout = model, layout
        self.window, self.shift, self.blend_frames = window, shift, blend_frames
        self.keep_trajectory = keep_trajectory
        self.frames = np.zeros((0, layout.size))
        self.next_start = 0
        self.finished = False

    def push(self, vectors: np.ndarray) -> int:
        """Append frames (n, d); run every window now complete. Returns how many frames are final."""
        self.frames = np.concatenate([self.frames, np.asarray(vectors, float)])
        while self.next_start + self.window <= len(self.frames):
            self._refine(self.next_start)
            self.next_start += self.shift
        return min(self.next_start, len(self.frames))

    def finish(self) -> np.ndarray:
        """Refine the tail not yet covered by a full window; return every frame, refined."""
        covered = self.next_start - self.shift + self.window if self.next_start else 0
        if len(self.frames) and covered < len(self.frames):
            self._refine(max(0, len(self.frames) - self.window))
        self.finished = True
        return self.frames

    def _refine(self, start: int) -> None:
        stop = min(start + self.window, len(self.frames))
        out = self.model.forward(self.frames[start:stop]).astype(float)
        if self.keep_trajectory:
            r = self.layout.r
            out[:, r] = match_root_path(out[:, r], self.frames[start:stop, r])
        self.frames[start:stop] = out
        if start > 0:
            dims = pose_dims(self.layout)
            blended = blend_seam(self.frames[:stop, dims], start, self.blend_frames)
            self.frames[start:stop, dims] = blended[start:stop]


def refine(vectors: np.ndarray, model: StitchModel, layout: PoseLayout, config: StitchConfig = DEFAULTS) -> np.ndarray:
    """The whole sequence through WindowRefiner at once."""
    refiner = WindowRefiner(model, layout, config.window, config.shift, config.seam_blend_frames,
                            config.keep_trajectory)
    refiner.push(vectors)
    return refiner.finish()


def inertialized(vectors: np.ndarray, starts, layout: PoseLayout, frames: int = DEFAULTS.baseline_blend_frames):
    """The IB baseline: K with every clip seam (the clip `starts` after the first) blended over `frames` frames.

    The pose (p and q) is blended; the root's displacements are not: the clips' roots are aligned already,
    and a blended displacement would move the rest of the trajectory. v is then the velocity of the blended
    positions: blending v on its own would give feet whose speed disagrees with their path."""
    vectors = vectors.copy()
    dims = slice(layout.p.start, layout.q.stop)
    for seam in list(starts)[1:]:
        vectors[:, dims] = blend_seam(vectors[:, dims], int(seam), frames)
    vectors[:, layout.v] = lower_body_velocities(vectors, layout, FPS)
    return vectors


def predicted_feet(motion: Motion, vectors: np.ndarray, layout: PoseLayout,
                   velocity_weight: float = DEFAULTS.feet_velocity_weight) -> np.ndarray:
    """World positions (T, 2, 2, 3) of left and right ankle and toe, about the motion's root: the least-squares
    path between where p puts them and the steps v takes them (StitchConfig.feet_velocity_weight)."""
    frames = len(vectors)
    p = vectors[:, layout.p].reshape(frames, -1, 3)[:, layout.feet].reshape(frames, 2, 2, 3)
    v = vectors[:, layout.v].reshape(frames, -1, 3)[:, layout.feet].reshape(frames, 2, 2, 3)
    root_rotation, root_position = motion.rotations[:, 0, None, None], motion.positions[:, 0, None, None]
    positions = quat.rotate(root_rotation, p) + root_position
    steps = quat.rotate(root_rotation[:-1], v[1:]) / motion.fps
    return least_squares_path(positions, steps, velocity_weight)


def place_feet(motion: Motion, vectors: np.ndarray, layout: PoseLayout, contacts: np.ndarray | None = None,
               lock: FootLock | None = None, velocity_weight: float = DEFAULTS.feet_velocity_weight) -> Motion:
    """§5's last step: IK puts each foot where the network says, rather than where forward kinematics of its
    rotations ends up ("the forward kinematics accumulates the error to the joints at ends").

    Two-bone IK on thigh and shin brings the ankle to the predicted ankle (`predicted_feet`), and the foot
    turns to point at the predicted toe. With `contacts` (T, 2), FootLock first holds each toe where it
    touched down (the same lock as the live solver's), the ankle moving with it. The lock pins the toe joint, so its contacts are the
    toes' (toe_contacts): a heel contact starts while the toe is still in the air and moving.
    """
    mapping = find_mapping(motion.skeleton)
    legs = np.array([[mapping[f"{s}_{j}"] for j in ("thigh", "shin", "foot", "toes")] for s in "lr"])
    global_rotations, global_positions = motion.global_transforms()
    feet = predicted_feet(motion, vectors, layout, velocity_weight)
    ankles, toes = feet[:, :, 0], feet[:, :, 1]
    if contacts is not None:
        lock = lock or FootLock()
        dt = 1.0 / motion.fps
        locked = np.stack([lock.targets(toes[t], contacts[t], dt) for t in range(len(motion))])
        ankles, toes = ankles + locked - toes, locked
    hips, knees = global_positions[:, legs[:, 0]], global_positions[:, legs[:, 1]]
    thigh, shin = two_bone_ik(hips, knees, global_positions[:, legs[:, 2]], ankles,
                              global_rotations[:, legs[:, 0]], global_rotations[:, legs[:, 1]])
    reached = (hips + quat.rotate(thigh, motion.positions[:, legs[:, 1]])
               + quat.rotate(shin, motion.positions[:, legs[:, 2]]))
    foot = global_rotations[:, legs[:, 2]]
    foot = quat.multiply(quat.between(quat.rotate(foot, motion.positions[:, legs[:, 3]]), toes - reached), foot)
    parents = motion.skeleton.parents
    rotations = motion.rotations.copy()
    rotations[:, legs[:, 0]] = quat.inverse_multiply(global_rotations[:, parents[legs[:, 0]]], thigh)
    rotations[:, legs[:, 1]] = quat.inverse_multiply(thigh, shin)
    rotations[:, legs[:, 2]] = quat.inverse_multiply(shin, foot)
    return Motion(motion.skeleton, rotations, motion.positions, motion.fps, motion.name)


@dataclass
class Stitched:
    """A stitched motion on the database skeleton, the aligned input it came from, and its toe contacts."""

    motion: Motion
    aligned: AlignedClips
    vectors: np.ndarray
    contacts: np.ndarray

    def root_deviation(self) -> np.ndarray:
        """Per frame, the horizontal distance (m) between the output's and the aligned input's root (Figure 9)."""
        gap = self.motion.positions[:, 0] - self.aligned.motion.positions[:, 0]
        return np.hypot(gap[:, 0], gap[:, 2])


def stitch_vectors(vectors: np.ndarray, starts, layout: PoseLayout, config: StitchConfig = DEFAULTS,
                   model: StitchModel | None = None) -> np.ndarray:
    """Pose vectors of K (clips beginning at `starts`) joined by config.method (METHODS)."""
    if config.method == "concat":
        return vectors.copy()
    if config.method == "inertialization":
        return inertialized(vectors, starts, layout, config.baseline_blend_frames)
    if config.method == "rmr":
        if model is None:
            raise StitchError("the rmr method needs a stitch model")
        return refine(vectors, model, layout, config)
    raise StitchError(f"unknown stitch method {config.method!r}; choose from {', '.join(METHODS)}")


def stitch(motions: list[Motion], config: StitchConfig = DEFAULTS, model: StitchModel | None = None) -> Stitched:
    """The clips joined into one motion (on the database skeleton) as `config` says."""
    if not config.feet_velocity_weight >= 0:
        raise StitchError(f"the feet velocity weight must be 0 or more, not {config.feet_velocity_weight}")
    aligned = align_clips(motions)
    vectors = stitch_vectors(aligned.vectors, aligned.starts, aligned.layout, config, model)
    start = aligned.motion.positions[0, 0]
    motion = motion_from_vectors(vectors, aligned.layout, aligned.motion.skeleton, FPS, start,
                                 root_yaw(aligned.motion.rotations[:1, 0])[0], aligned.motion.name)
    contacts = toe_contacts(vectors, aligned.layout)
    motion = place_feet(motion, vectors, aligned.layout, contacts if config.foot_lock else None,
                        velocity_weight=config.feet_velocity_weight)
    return Stitched(motion, aligned, vectors, contacts)


def on_skeleton(rooted: Motion, skeleton) -> Motion:
    """A motion on its database skeleton carried back to the full skeleton it came from.

    Joints above the hips (a BVH's static `joint_Root`, say) stay at rest; the hips take the
    global transform that the root and the hips' local transform give.
    """
    hips = find_mapping(skeleton)["hips"]
    _, kept = database_skeleton(skeleton, hips)
    frames = len(rooted)
    rotations = quat.identity(frames, len(skeleton))
    positions = np.repeat(skeleton.offsets[None], frames, axis=0)
    rotations[:, kept] = rooted.rotations[:, 1:]
    positions[:, kept] = rooted.positions[:, 1:]
    above_hips = np.zeros(3)
    joint = int(skeleton.parents[hips])
    while joint >= 0:
        above_hips += skeleton.offsets[joint]
        joint = int(skeleton.parents[joint])
    rotations[:, hips] = quat.multiply(rooted.rotations[:, 0], rooted.rotations[:, 1])
    positions[:, hips] = rooted.positions[:, 0] + quat.rotate(rooted.rotations[:, 0], rooted.positions[:, 1]) - above_hips
    return Motion(skeleton, rotations, positions, rooted.fps, rooted.name)
