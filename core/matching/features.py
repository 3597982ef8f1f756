"""Feature database (MMVR §5.2): z in R^27 per pose, its normalisation and weights.

z = (z^v, z^l, z^p, z^d) (eq. 2), all in character space (the virtual root's frame):
- z^v (9): velocities of the left foot, right foot and hips;
- z^l (6): positions of the left and right foot;
- z^p (6): the root's 2-D floor position 20, 40 and 60 frames ahead (0.33, 0.66, 1 s at 60 fps);
- z^d (6): the root's 2-D facing direction at the same instants.
Trajectory frames past a clip's end take the clip's last frame. Each group is normalised by
subtracting its per-dimension mean and dividing by the group's standard deviation (the mean of its
dimensions' deviations, as Holden et al. do, so a group's vectors keep their shape), then weighted.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import FeatureWeights
from ..math import quat
from .pose_database import PoseDatabase, global_transforms

TRAJECTORY_FRAMES = (20, 40, 60)
"""MMVR eq. 7-8: 0.33, 0.66 and 1 s ahead at 60 fps."""
GROUPS = {
    "pose_velocities": slice(0, 9),
    "foot_positions": slice(9, 15),
    "trajectory_positions": slice(15, 21),
    "trajectory_directions": slice(21, 27),
}
FEATURE_SIZE = 27
FORWARD = np.array([0.0, 0.0, 1.0])
"""The character faces +Z in its own space."""


def trajectory_offsets(fps: float) -> np.ndarray:
    """Frames ahead for the trajectory features at a database rate (20, 40, 60 at 60 fps)."""
    return np.array([int(round(f * fps / 60.0)) for f in TRAJECTORY_FRAMES])


def pose_features(database: PoseDatabase) -> np.ndarray:
    """Raw (un-normalised) features (N, 27) of every pose."""
    mapping = database.mapping
    feet = [mapping["l_foot"], mapping["r_foot"]]
    joints = feet + [mapping["hips"]]
    _, positions = global_transforms(database)
    root_rotation, root_position = database.rotations[:, 0].astype(float), database.positions[:, 0].astype(float)

    velocities = np.empty((len(database), 3, 3))
    clip = database.clip_of(np.arange(len(database)))
    for start, stop in zip(database.range_starts, database.range_stops):
        part = positions[start:stop, joints]
        velocities[start:stop - 1] = np.diff(part, axis=0) * database.fps
        velocities[stop - 1] = velocities[stop - 2]
    local_velocities = quat.inverse_rotate(root_rotation[:, None], velocities)
    local_feet = quat.inverse_rotate(root_rotation[:, None], positions[:, feet] - root_position[:, None])

    ahead = np.arange(len(database))[:, None] + trajectory_offsets(database.fps)[None]
    ahead = np.minimum(ahead, database.range_stops[clip][:, None] - 1)
    future_positions = quat.inverse_rotate(root_rotation[:, None], root_position[ahead] - root_position[:, None])
    future_directions = quat.inverse_rotate(root_rotation[:, None], quat.rotate(root_rotation[ahead], FORWARD))
    frames = len(database)
    return np.concatenate([local_velocities.reshape(frames, 9), local_feet.reshape(frames, 6),
                           future_positions[..., [0, 2]].reshape(frames, 6),
                           future_directions[..., [0, 2]].reshape(frames, 6)], axis=1)


@dataclass(frozen=True)
class FeatureScale:
    """z_normalised = (z - mean) / scale, where scale = group deviation / group weight."""

    mean: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(cls, features: np.ndarray, weights: FeatureWeights = FeatureWeights()) -> "FeatureScale":
        mean = features.mean(axis=0)
        deviation = features.std(axis=0)
        scale = np.empty(FEATURE_SIZE)
        for name, group in GROUPS.items():
            scale[group] = max(float(deviation[group].mean()), 1e-6) / getattr(weights, name)
        return cls(mean, scale)

    def normalise(self, features: np.ndarray) -> np.ndarray:
        return (features - self.mean) / self.scale


def searchable_frames(database: PoseDatabase, end_margin: int) -> np.ndarray:
    """(N,) bool: frames at least `end_margin` frames before their clip's end."""
    frames = np.arange(len(database))
    return frames < database.range_stops[database.clip_of(frames)] - end_margin
