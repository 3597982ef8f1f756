"""Motion: a skeleton's local joint rotations and translations over frames, and forward kinematics."""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..math import quat
from .sides import mirror_pairs
from .skeleton import Skeleton


SMALL_BATCH = 16
"""Up to this many frames, forward kinematics multiplies 4x4 rigid transforms (`_global_matrices`): on a frame or
two numpy's per-call cost rules, and a few stacked matrix products are far fewer calls than a quaternion chain."""


def joints_with_ancestors(parents: np.ndarray, joints) -> list[int]:
    """The given joints and all their ancestors, in index order (parents before children)."""
    needed = set()
    for joint in joints:
        while joint >= 0 and joint not in needed:
            needed.add(int(joint))
            joint = parents[joint]
    return sorted(needed)


def forward_kinematics(parents: np.ndarray, rotations: np.ndarray, positions: np.ndarray, joints=None):
    """Global rotations (..., J, 4) and positions (..., J, 3) from local ones; vectorised over leading axes.

    `joints` limits the work to those joints and their ancestors; the other joints are left zero.
    """
    order = _order(parents, joints)
    if rotations[..., 0, 0].size <= SMALL_BATCH:
        return _forward_kinematics_matrices(parents, rotations, positions, order)
    global_rotations = np.zeros_like(rotations)
    global_positions = np.zeros_like(positions)
    for j in order:
        p = parents[j]
        if p < 0:
            global_rotations[..., j, :] = rotations[..., j, :]
            global_positions[..., j, :] = positions[..., j, :]
        else:
            global_rotations[..., j, :] = quat.multiply(global_rotations[..., p, :], rotations[..., j, :])
            global_positions[..., j, :] = (quat.rotate(global_rotations[..., p, :], positions[..., j, :])
                                           + global_positions[..., p, :])
    return global_rotations, global_positions


_ORDERS: dict[tuple[bytes, bytes], np.ndarray] = {}


def _order(parents: np.ndarray, joints) -> np.ndarray:
    """The joints forward kinematics computes, parents first: `joints` and their ancestors, or all (None)."""
    parents = np.asarray(parents)
    key = (parents.tobytes(), b"" if joints is None else np.asarray(joints, dtype=np.int64).tobytes())
    if key not in _ORDERS:
        _ORDERS[key] = np.array(range(len(parents)) if joints is None else joints_with_ancestors(parents, joints), int)
    return _ORDERS[key]


def _forward_kinematics_matrices(parents: np.ndarray, rotations: np.ndarray, positions: np.ndarray, order):
    """forward_kinematics for a few frames, through 4x4 rigid transforms (one product per joint): the same
    rotations to 1e-15, though a quaternion may come out negated (from_matrix picks w >= 0)."""
    transforms = _global_matrices(parents, rotations, positions, order)
    global_rotations = np.zeros(rotations.shape)
    global_rotations[..., order, :] = quat.from_matrix(transforms[..., order, :3, :3])
    return global_rotations, transforms[..., :3, 3]


_ANCESTOR_JUMPS: dict[bytes, list[np.ndarray]] = {}


def ancestor_jumps(parents: np.ndarray) -> list[np.ndarray]:
    """Pointer-jumping tables of a hierarchy: the k-th maps each joint to its ancestor 2^k generations up, index J
    (an identity appended after the joints) past the root; enough tables that the last reaches past every root."""
    parents = np.asarray(parents, dtype=np.int64)
    key = parents.tobytes()
    if key not in _ANCESTOR_JUMPS:
        count = len(parents)
        up = np.append(np.where(parents < 0, count, parents), count)
        depth = np.zeros(count, int)
        for j in range(count):
            depth[j] = 0 if parents[j] < 0 else depth[parents[j]] + 1
        jumps = [up]
        while 2 ** len(jumps) <= depth.max():
            jumps.append(jumps[-1][jumps[-1]])
        _ANCESTOR_JUMPS[key] = jumps
    return _ANCESTOR_JUMPS[key]


def _global_matrices(parents: np.ndarray, rotations: np.ndarray, positions: np.ndarray, order) -> np.ndarray:
    """Global 4x4 rigid transforms (..., J, 4, 4) of the joints in `order` (parents first); the others zero.

    Pointer jumping: each round multiplies every joint's transform by its ancestor's 2^k generations up, so a
    hierarchy of depth D takes ceil(log2(D + 1)) stacked products rather than one product per joint."""
    count = len(parents)
    transforms = np.zeros(rotations.shape[:-2] + (count + 1, 4, 4))
    transforms[..., :count, :3, :3] = quat.to_matrix(rotations)
    transforms[..., :count, :3, 3] = positions
    transforms[..., :, 3, 3] = 1.0
    transforms[..., count, :3, :3] = _IDENTITY3
    for up in ancestor_jumps(parents):
        transforms = transforms[..., up, :, :] @ transforms
    transforms = transforms[..., :count, :, :]
    if len(order) < count:
        transforms[..., _others(count, order), :, :] = 0.0
    return transforms


_OTHERS: dict[tuple[int, bytes], np.ndarray] = {}


def _others(count: int, order: np.ndarray) -> np.ndarray:
    """The joints of 0..count-1 not in `order`."""
    key = (count, order.tobytes())
    if key not in _OTHERS:
        _OTHERS[key] = np.setdiff1d(np.arange(count), order)
    return _OTHERS[key]


_IDENTITY3 = np.eye(3)


def local_from_global(parents: np.ndarray, global_rotations: np.ndarray) -> np.ndarray:
    """Local rotations from global ones: inverse(parent global) * global."""
    local = global_rotations.copy()
    child = parents >= 0
    local[..., child, :] = quat.inverse_multiply(global_rotations[..., parents[child], :],
                                                 global_rotations[..., child, :])
    return local


@dataclass
class Motion:
    """A clip: `rotations` (T, J, 4) and `positions` (T, J, 3) are local to each joint's parent.

    `positions[:, 0]` is the root translation; other joints carry their rest offset unless the
    source animates their translation (BVH position channels on any joint).
    """

    skeleton: Skeleton
    rotations: np.ndarray
    positions: np.ndarray
    fps: float
    name: str = ""

    def __post_init__(self):
        self.rotations = np.asarray(self.rotations, dtype=float)
        self.positions = np.asarray(self.positions, dtype=float)
        frames, joints = self.rotations.shape[:2]
        if self.rotations.shape != (frames, len(self.skeleton), 4):
            raise ValueError(f"rotations shaped {self.rotations.shape}, expected (T, {len(self.skeleton)}, 4)")
        if self.positions.shape != (frames, joints, 3):
            raise ValueError(f"positions shaped {self.positions.shape}, expected ({frames}, {joints}, 3)")
        if not self.fps > 0:
            raise ValueError(f"frame rate must be positive, got {self.fps}")

    @classmethod
    def from_root(cls, skeleton: Skeleton, rotations, root_positions, fps: float, name: str = "") -> "Motion":
        """A motion whose only animated translation is the root's."""
        rotations = np.asarray(rotations, dtype=float)
        positions = np.repeat(skeleton.offsets[None], len(rotations), axis=0)
        positions[:, 0] = root_positions
        return cls(skeleton, rotations, positions, fps, name)

    def __len__(self) -> int:
        return len(self.rotations)

    @property
    def frames(self) -> int:
        return len(self.rotations)

    @property
    def duration(self) -> float:
        """Seconds from the first to the last frame."""
        return (len(self) - 1) / self.fps

    def frames_at(self, fps: float) -> int:
        """How many frames at `fps` its duration holds, from its first frame (as ThreePointStream.frames_at)."""
        return int(np.floor(self.duration * fps + 1e-6)) + 1

    @property
    def root_positions(self) -> np.ndarray:
        return self.positions[:, 0]

    def global_transforms(self):
        """Global rotations (T, J, 4) and positions (T, J, 3)."""
        return forward_kinematics(self.skeleton.parents, self.rotations, self.positions)

    def global_positions(self) -> np.ndarray:
        """Global positions (T, J, 3); on a few frames without the global rotations (a live step's posed skeleton)."""
        parents = self.skeleton.parents
        if len(self) <= SMALL_BATCH:
            return _global_matrices(parents, self.rotations, self.positions, range(len(parents)))[..., :3, 3]
        return self.global_transforms()[1]

    def __getitem__(self, frames) -> "Motion":
        if isinstance(frames, (int, np.integer)):
            frames = slice(frames, frames + 1 if frames != -1 else None)
        return Motion(self.skeleton, self.rotations[frames], self.positions[frames], self.fps, self.name)

    def scaled(self, factor: float) -> "Motion":
        """The same motion in other length units (all translations times `factor`)."""
        return Motion(self.skeleton.scaled(factor), self.rotations, self.positions * factor, self.fps, self.name)

    def resampled(self, fps: float, frames: int | None = None) -> "Motion":
        """The motion at another frame rate: slerp for rotations, linear for translations; `frames` (default: as
        many as its duration holds) from its first frame, the last frame held past its end."""
        count = self.frames_at(fps) if frames is None else frames
        if abs(fps - self.fps) < 1e-9 and count == len(self):
            return self
        source = np.arange(count) * (self.fps / fps)
        first = np.minimum(np.floor(source).astype(int), len(self) - 1)
        second = np.minimum(first + 1, len(self) - 1)
        alpha = (source - first)[:, None]
        rotations = quat.slerp(self.rotations[first], self.rotations[second], alpha)
        positions = self.positions[first] + alpha[..., None] * (self.positions[second] - self.positions[first])
        return Motion(self.skeleton, rotations, positions, fps, self.name)

    def mirrored(self) -> "Motion":
        """Left and right swapped: the clip reflected through the world's YZ plane (x -> -x).

        Joints pair by name (sides.mirror_pairs). Rigs orient their left and right joints
        differently, so each joint j gets its own local reflection L_j (see joint_reflections):
        the partner's global rotation is M G_j L_j with M the world reflection, hence its local
        rotation is L_parent R_j L_j and its local translation L_parent t_j. Since -L is a proper
        rotation, L_parent R L_j = (-L_parent) R (-L_j) is computed with quaternions.
        """
        pairs = mirror_pairs(self.skeleton.names)
        reflections = joint_reflections(self, pairs)
        parents = self.skeleton.parents
        parent_reflections = np.where(parents[:, None, None] >= 0, reflections[np.maximum(parents, 0)], WORLD_MIRROR)
        rotations = quat.multiply(quat.multiply(quat.from_matrix(-parent_reflections), self.rotations),
                                  quat.from_matrix(-reflections))
        positions = np.einsum("jab,tjb->tja", parent_reflections, self.positions)
        # Joint j's mirrored data belongs to its partner.
        inverse_pairs = np.argsort(pairs)
        return Motion(self.skeleton, rotations[:, inverse_pairs], positions[:, inverse_pairs], self.fps,
                      self.name + "_mirror" if self.name else "")

    @staticmethod
    def concatenate(motions: list["Motion"], name: str = "") -> "Motion":
        """Clips of one skeleton and frame rate, one after the other (no blending at the seams)."""
        if not motions:
            raise ValueError("nothing to concatenate")
        first = motions[0]
        for m in motions[1:]:
            if m.skeleton != first.skeleton:
                raise ValueError(f"cannot concatenate {m.name or 'a clip'}: its skeleton differs from {first.name or 'the first'}")
            if abs(m.fps - first.fps) > 1e-9:
                raise ValueError(f"cannot concatenate clips at {first.fps} and {m.fps} fps: resample first")
        return Motion(first.skeleton, np.concatenate([m.rotations for m in motions]),
                      np.concatenate([m.positions for m in motions]), first.fps, name or first.name)


WORLD_MIRROR = np.diag([-1.0, 1.0, 1.0])


def _improper_axis_permutations() -> np.ndarray:
    """The 24 signed permutation matrices with determinant -1 (reflections of the coordinate axes)."""
    found = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((-1.0, 1.0), repeat=3):
            m = np.zeros((3, 3))
            m[range(3), perm] = signs
            if np.linalg.det(m) < 0:
                found.append(m)
    return np.array(found)


def joint_reflections(motion: Motion, pairs: np.ndarray) -> np.ndarray:
    """Per joint, the local reflection L_j (3x3) such that partner frames relate by G_partner = M G_j L_j.

    In a left/right symmetric pose L_j = G_j^T M G_partner exactly; averaged over the clip it is
    close, and snapping to the nearest signed axis permutation (how rigs mirror joint orientations)
    removes what asymmetry the clip has.
    """
    frames = quat.to_matrix(motion.global_transforms()[0])
    estimate = np.einsum("tjba,bc,tjcd->jad", frames, WORLD_MIRROR, frames[:, pairs]) / len(motion)
    candidates = _improper_axis_permutations()
    distance = np.linalg.norm(estimate[:, None] - candidates[None], axis=(-2, -1))
    return candidates[np.argmin(distance, axis=1)]
