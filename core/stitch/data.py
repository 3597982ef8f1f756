"""RMR training pairs (Kim et al. §4): ground-truth windows Y and stitched inputs X built by KNN search.

Ground truth: windows of T = 60 frames at 60 fps sliding by T/2 through locomotion clips. Each window
is cut into segments A, B, C whose lengths are multiples of 10 adding up to T (A and C at least 10,
B possibly empty), drawn uniformly among the 15 such splits. A is copied from the ground truth; B
and C are the k-th nearest neighbours (k drawn from 5 to 10) of the ground truth's segments in a
reference database of every segment of that length, under the motion feature
m = {0.1 j_1, 1.0 j_T, 1.0 u}: all joint positions of the first and last frame and the root's floor
position and facing on every frame, all relative to the segment's first root.
The root trajectory is copied from the ground truth, B aligned to A (its first root put on A's last)
and C to B'; the upper body (spine and below) is the ground truth's; contacts and velocities are
measured on the assembled motion, so X carries the jumps at its seams as the runtime input does.

Deviation: the paper does not say how it keeps the search from returning the query's own frames;
here segments of the query's clip that start within T frames of it are left out, so B and C always
come from another place in the data (otherwise the 5th-10th neighbours are the query shifted by a
few frames).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..anim.motion import Motion
from ..files.bvh import read_bvh
from ..anim.character import rooted_motion
from ..retarget.target import clip_mapping
from ..math import quat
from .pose import PoseLayout, align_roots, on_floor, pose_vectors, root_yaw

FPS = 60.0
WINDOW = 60
"""T: frames per ground-truth window (§7.1)."""
SEGMENT_STEP = 10
NEIGHBOUR_RANKS = (5, 10)
"""k is drawn from this range, inclusive (§4)."""
FEATURE_WEIGHTS = (0.1, 1.0, 1.0)
"""w_1, w_T, w_u of the motion feature m (§4)."""
DATABASE_STRIDE = 2
"""Reference segments start every this many frames."""


@dataclass
class LocomotionClip:
    """A clip at 60 fps on its database skeleton, floor at y = 0, with its pose vectors."""

    name: str
    motion: Motion
    vectors: np.ndarray
    levels: np.ndarray
    joint_positions: np.ndarray
    """(T, J, 3) global positions of the joints below the root."""
    yaw: np.ndarray


def load_clip(path, layout: PoseLayout | None = None) -> LocomotionClip:
    """A BVH clip resampled to 60 fps, rooted, its floor moved to y = 0; one that does not map or is not +Y up is a
    HumanoidMappingError naming the file."""
    clip = read_bvh(path).resampled(FPS)
    rooted = rooted_motion(clip, clip_mapping(clip, where=str(path)))
    layout = layout or PoseLayout.of(rooted.skeleton)
    rooted, levels = on_floor(rooted, layout)
    return LocomotionClip(rooted.name, rooted, pose_vectors(rooted, layout, levels), levels,
                          rooted.global_positions()[:, 1:], root_yaw(rooted.rotations[:, 0]))


def segment_features(clip: LocomotionClip, starts: np.ndarray, length: int) -> np.ndarray:
    """Motion features m (n, 6J + 4 length) of the segments [s, s + length) of a clip."""
    starts = np.asarray(starts)
    root_p = clip.motion.positions[starts, 0]
    root_q = quat.from_yaw(clip.yaw[starts])
    first = quat.inverse_rotate(root_q[:, None], clip.joint_positions[starts] - root_p[:, None])
    last = quat.inverse_rotate(root_q[:, None], clip.joint_positions[starts + length - 1] - root_p[:, None])
    frames = starts[:, None] + np.arange(length)[None]
    trajectory = quat.inverse_rotate(root_q[:, None], clip.motion.positions[frames, 0] - root_p[:, None])
    turn = clip.yaw[frames] - clip.yaw[starts][:, None]
    u = np.stack([trajectory[..., 0], trajectory[..., 2], np.sin(turn), np.cos(turn)], axis=-1)
    w1, wt, wu = FEATURE_WEIGHTS
    n = len(starts)
    return np.concatenate([w1 * first.reshape(n, -1), wt * last.reshape(n, -1), wu * u.reshape(n, -1)], axis=1)


@dataclass
class ReferenceDatabase:
    """M_l: every segment of one length in the reference clips, as motion features."""

    length: int
    features: np.ndarray
    clips: np.ndarray
    starts: np.ndarray

    @classmethod
    def build(cls, clips: list[LocomotionClip], length: int, stride: int = DATABASE_STRIDE) -> "ReferenceDatabase":
        features, owners, starts = [], [], []
        for c, clip in enumerate(clips):
            s = np.arange(0, len(clip.vectors) - length + 1, stride)
            if len(s):
                features.append(segment_features(clip, s, length).astype(np.float32))
                owners.append(np.full(len(s), c))
                starts.append(s)
        return cls(length, np.concatenate(features), np.concatenate(owners), np.concatenate(starts))

    def kth_nearest(self, query: np.ndarray, k: int, exclude_clip: int = -1, exclude_start: int = 0,
                    exclude_radius: int = WINDOW) -> int:
        """Row of the k-th nearest segment (k = 1 is the nearest), skipping the query's own neighbourhood."""
        distances = np.sum((self.features - query.astype(np.float32)) ** 2, axis=1)
        own = (self.clips == exclude_clip) & (np.abs(self.starts - exclude_start) < exclude_radius)
        distances[own] = np.inf
        return int(np.argpartition(distances, k - 1)[k - 1]) if k > 1 else int(np.argmin(distances))


def segment_splits(total: int = WINDOW, step: int = SEGMENT_STEP) -> list[tuple[int, int, int]]:
    """Every (T_A, T_B, T_C) in multiples of `step` adding up to `total`, with T_A, T_C > 0 and T_B >= 0."""
    return [(a, total - a - c, c) for a in range(step, total, step) for c in range(step, total - a + 1, step)]


@dataclass
class StitchPairs:
    """Inputs X and ground truths Y (N, T, d), with how each pair was made."""

    inputs: np.ndarray
    truths: np.ndarray
    splits: np.ndarray
    """(N, 3) T_A, T_B, T_C."""
    sources: list = field(default_factory=list)
    """Per pair: (ground-truth clip, window start, [(neighbour clip, start, k) for B and C])."""


def assemble_input(truth: LocomotionClip, start: int, split, neighbours, layout: PoseLayout) -> np.ndarray:
    """X for the ground-truth window [start, start + T) of `truth`: A copied, B and C from `neighbours`
    ((clip, start) each, None for an empty B), trajectory copied and aligned, upper body from the truth."""
    window = truth.motion[start:start + sum(split)]
    rotations, positions = window.rotations.copy(), window.positions.copy()
    yaw = truth.yaw[start:start + len(window)].copy()
    begin = split[0]
    for length, neighbour in zip(split[1:], neighbours):
        if length == 0:
            continue
        clip, first = neighbour
        part = slice(begin, begin + length)
        rotations[part, 1:] = clip.motion.rotations[first:first + length, 1:]
        positions[part, 1] = clip.motion.positions[first:first + length, 1]
        positions[part, 0], yaw[part] = align_roots(positions[part, 0], yaw[part], positions[begin - 1, 0],
                                                    yaw[begin - 1])
        begin += length
    rotations[:, 0] = quat.from_yaw(yaw)
    rotations[:, layout.upper] = window.rotations[:, layout.upper]
    return pose_vectors(Motion(window.skeleton, rotations, positions, window.fps), layout, truth.levels)


def generate_pairs(clips: list[LocomotionClip], databases: dict[int, ReferenceDatabase], database_clips,
                   seed: int = 0, window: int = WINDOW, progress=None) -> StitchPairs:
    """One pair per ground-truth window of every clip (§4). `database_clips` are the clips the databases
    index; a clip that is also there is kept from matching itself (see the module docstring)."""
    rng = np.random.default_rng(seed)
    layout = PoseLayout.of(clips[0].motion.skeleton)
    splits = segment_splits(window)
    own_index = {id(c): i for i, c in enumerate(database_clips)}
    inputs, truths, chosen, sources = [], [], [], []
    for n, clip in enumerate(clips):
        own = own_index.get(id(clip), -1)
        for start in range(0, len(clip.vectors) - window + 1, window // 2):
            split = splits[rng.integers(len(splits))]
            neighbours, made, begin = [], [], split[0]
            for length in split[1:]:
                if length == 0:
                    neighbours.append(None)
                    continue
                database = databases[length]
                query = segment_features(clip, np.array([start + begin]), length)[0]
                k = int(rng.integers(NEIGHBOUR_RANKS[0], NEIGHBOUR_RANKS[1] + 1))
                row = database.kth_nearest(query, k, own, start + begin)
                found = database_clips[database.clips[row]]
                neighbours.append((found, int(database.starts[row])))
                made.append((found.name, int(database.starts[row]), k))
                begin += length
            inputs.append(assemble_input(clip, start, split, neighbours, layout))
            truths.append(pose_vectors(clip.motion[start:start + window], layout, clip.levels))
            chosen.append(split)
            sources.append((clip.name, start, made))
        if progress:
            progress(n + 1, len(clips))
    return StitchPairs(np.array(inputs, dtype=np.float32), np.array(truths, dtype=np.float32), np.array(chosen),
                       sources)


def reference_databases(clips: list[LocomotionClip], window: int = WINDOW) -> dict[int, ReferenceDatabase]:
    """M_l for every segment length a split of `window` can have."""
    lengths = sorted({length for split in segment_splits(window) for length in split if length})
    return {length: ReferenceDatabase.build(clips, length) for length in lengths}
