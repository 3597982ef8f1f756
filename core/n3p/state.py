"""The Neural3Points character state (Ye et al. §4): tracker signals o, aggregated state z, body states g_up, g_lo.

All in the reference heading frame h of the frame (heading.py), per joint of the canonical humanoid:
- o: per tracker (head joint, left wrist, right wrist as the devices imply them, §7) its position
  and its device's rotation, 3 x (3 + 6) = 27. Deviation: the 6D rotation (two matrix columns)
  instead of a quaternion, which has two signs and wraps where the HMD's frame (looking along -Z)
  meets the heading frame (facing +Z).
- g_up: positions, velocities and orientations (rotation vectors) of J_up = spine, chest, neck,
  head, shoulders, upper arms, forearms, hands (12 x 9 = 108).
- g_lo: the same for J_lo = hips, thighs, shins, feet, toes (9 x 9 = 81), the feet's contacts c
  (2) and z (12) = 95.
- z: the upper body's centroid position, velocity and angular momentum, and dh = inv(h^{t-1}) (x) h^t
  as (dx, dz, dyaw) = 12. The upper body's mass is split into segments with de Leva's (1996) mass
  fractions, each a point mass midway along its bone (head and hands at their joint); L is per unit
  of upper-body mass (the paper does not give its mass model).
Velocities are backward differences of world positions, expressed in the current heading frame.
Orientations are rotation vectors of each joint's rotation away from its reference orientation (the
mean over the training data, in the heading frame): Bandai's bones lie along their local X, so raw
orientations sit near half a turn, where rotation vectors jump; deviations from the mean pose stay
well inside it. The references travel with the model.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..anim.motion import Motion, local_from_global
from ..anim.skeleton import Skeleton
from ..config import DatabaseConfig, DeviceOffsets
from ..devices.attachments import device_offsets, joints_from_devices
from ..anim.contacts import foot_contacts
from ..anim import heading
from ..math import quat
from ..rig.humanoid import CANONICAL_JOINTS, LOWER_BODY, UPPER_BODY, find_mapping

FPS = 30.0
"""§3: the predictor runs at 30 Hz."""
TRACKERS = 3
SIGNAL_SIZE = TRACKERS * 9
Z_SIZE = 12
J_UP = UPPER_BODY
J_LO = LOWER_BODY
UP_SIZE = len(J_UP) * 9
LO_SIZE = len(J_LO) * 9 + 2 + Z_SIZE
CONTACTS = slice(len(J_LO) * 9, len(J_LO) * 9 + 2)
Z_IN_LO = slice(LO_SIZE - Z_SIZE, LO_SIZE)
HEADING_CHANGE = slice(9, 12)
"""dh inside z."""
SEGMENTS = (("spine", "chest", 0.1633), ("chest", "neck", 0.1596), ("head", None, 0.0694)) + tuple(
    (f"{s}_{j}", child, m) for s in "lr" for j, child, m in (
        ("upper_arm", f"{s}_forearm", 0.0271), ("forearm", f"{s}_hand", 0.0162), ("hand", None, 0.0061)))
"""Upper-body point masses (joint, child or None, de Leva's mass fraction of the body)."""


def canonical_parents() -> np.ndarray:
    """Each canonical joint's parent among the canonical joints (-1 for the hips)."""
    parent = {"hips": None, "spine": "hips", "chest": "spine", "neck": "chest", "head": "neck"}
    for s in "lr":
        parent.update({f"{s}_shoulder": "chest", f"{s}_upper_arm": f"{s}_shoulder", f"{s}_forearm": f"{s}_upper_arm",
                       f"{s}_hand": f"{s}_forearm", f"{s}_thigh": "hips", f"{s}_shin": f"{s}_thigh",
                       f"{s}_foot": f"{s}_shin", f"{s}_toes": f"{s}_foot"})
    names = list(CANONICAL_JOINTS)
    return np.array([-1 if parent[n] is None else names.index(parent[n]) for n in names])


PARENTS = canonical_parents()
UP_INDEX = np.array([CANONICAL_JOINTS.index(j) for j in J_UP])
LO_INDEX = np.array([CANONICAL_JOINTS.index(j) for j in J_LO])


def segment_weights() -> np.ndarray:
    """(S, 21) weights turning canonical joint positions into segment points, and (S,) normalised masses."""
    names = list(CANONICAL_JOINTS)
    points = np.zeros((len(SEGMENTS), len(names)))
    for s, (joint, child, _) in enumerate(SEGMENTS):
        if child is None:
            points[s, names.index(joint)] = 1.0
        else:
            points[s, [names.index(joint), names.index(child)]] = 0.5
    masses = np.array([m for _, _, m in SEGMENTS])
    return points, masses / masses.sum()


SEGMENT_POINTS, SEGMENT_MASSES = segment_weights()


def bone_offsets(global_positions: np.ndarray, global_rotations: np.ndarray) -> np.ndarray:
    """Each canonical joint's offset from its canonical parent in the parent's frame (21, 3), from one pose."""
    offsets = np.zeros((len(PARENTS), 3))
    child = PARENTS >= 0
    parents = PARENTS[child]
    offsets[child] = quat.inverse_rotate(global_rotations[parents], global_positions[child] - global_positions[parents])
    return offsets


def tracker_signals(positions: np.ndarray, rotations: np.ndarray, devices: DeviceOffsets = DeviceOffsets()):
    """World tracker signals (..., 3, 9): the implied head and wrist positions and each device's 6D rotation."""
    joints = joints_from_devices(positions, rotations, device_offsets(devices))
    return np.concatenate([joints, quat.to_6d(rotations)], axis=-1)


def signals_into(h: np.ndarray, world: np.ndarray) -> np.ndarray:
    """o (..., 27) in the heading frames h (..., 3) from world signals (..., 3, 9)."""
    position = heading.points_into(h, world[..., :3])
    columns = heading.vectors_into(h, world[..., 3:].reshape(*world.shape[:-1], 2, 3).reshape(
        *world.shape[:-2], 2 * TRACKERS, 3))
    return np.concatenate([position, columns.reshape(*world.shape[:-1], 6)], axis=-1).reshape(*world.shape[:-2], -1)


def signals_out_of(h: np.ndarray, o: np.ndarray) -> np.ndarray:
    """World signals (..., 3, 9) from o (..., 27) given in the heading frames h."""
    o = o.reshape(*o.shape[:-1], TRACKERS, 9)
    position = heading.points_out_of(h, o[..., :3])
    columns = quat.rotate(heading.rotation(h)[..., None, None, :], o[..., 3:].reshape(*o.shape[:-1], 2, 3))
    return np.concatenate([position, columns.reshape(*o.shape[:-1], 6)], axis=-1)


def joint_states(h: np.ndarray, positions: np.ndarray, previous: np.ndarray, rotations: np.ndarray,
                 reference: np.ndarray, fps: float) -> np.ndarray:
    """(T, K * 9): positions, velocities, orientations of K joints in the frames h; previous = positions a frame before."""
    p = heading.points_into(h, positions)
    v = heading.vectors_into(h, (positions - previous) * fps)
    q = quat.to_rotation_vector(quat.multiply_inverse(heading.rotations_into(h, rotations), reference))
    return np.concatenate([p.reshape(len(h), -1), v.reshape(len(h), -1), q.reshape(len(h), -1)], axis=-1)


def aggregated_state(h: np.ndarray, positions: np.ndarray, previous: np.ndarray, fps: float) -> np.ndarray:
    """z without dh (T, 9): the upper body's centroid, its velocity and angular momentum, in the frames h."""
    points = SEGMENT_POINTS @ positions
    velocities = (points - SEGMENT_POINTS @ previous) * fps
    centre = SEGMENT_MASSES @ points
    centre_velocity = SEGMENT_MASSES @ velocities
    momentum = np.einsum("s,tsk->tk", SEGMENT_MASSES,
                         np.cross(points - centre[:, None], velocities - centre_velocity[:, None]))
    return np.concatenate([heading.points_into(h, centre[:, None])[:, 0],
                           heading.vectors_into(h, centre_velocity[:, None])[:, 0],
                           heading.vectors_into(h, momentum[:, None])[:, 0]], axis=-1)


@dataclass
class BodyStates:
    """One clip's states at 30 Hz: heading frames (T, 3), z (T, 12), g_up (T, 108), g_lo (T, 95), offsets (21, 3)."""

    heading: np.ndarray
    z: np.ndarray
    g_up: np.ndarray
    g_lo: np.ndarray
    offsets: np.ndarray


def canonical_transforms(motion: Motion, mapping=None):
    """World rotations (T, 21, 4) and positions (T, 21, 3) of the canonical joints at the predictor's 30 Hz."""
    motion = motion.resampled(FPS)
    rotations, positions = motion.global_transforms()
    canonical = (mapping or find_mapping(motion.skeleton)).indices()
    return rotations[:, canonical], positions[:, canonical]


CANONICAL_MAPPING = {name: i for i, name in enumerate(CANONICAL_JOINTS)}


def heading_orientations(rotations: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Canonical joints' world rotations (T, 21, 4) in each frame's heading frame."""
    return heading.rotations_into(heading.from_root(positions, CANONICAL_MAPPING), rotations)


def reference_orientations(clips) -> np.ndarray:
    """(21, 4): the mean heading-frame orientation of each joint over clips of (rotations, positions)."""
    oriented = np.concatenate([heading_orientations(r, p) for r, p in clips])
    return np.stack([quat.mean(oriented[:, j]) for j in range(oriented.shape[1])])


def body_states(rotations: np.ndarray, positions: np.ndarray, reference: np.ndarray) -> BodyStates:
    """The ground-truth states of a clip from its canonical_transforms, orientations relative to `reference`."""
    previous = np.concatenate([2 * positions[:1] - positions[1:2], positions[:-1]]) if len(positions) > 1 \
        else positions
    h = heading.from_root(positions, CANONICAL_MAPPING)
    z = np.concatenate([aggregated_state(h, positions[:, :], previous, FPS), heading.changes(h)], axis=-1)
    toes = positions[:, [CANONICAL_JOINTS.index("l_toes"), CANONICAL_JOINTS.index("r_toes")]]
    contacts = foot_contacts(toes, FPS, DatabaseConfig.contact_speed_m_s, DatabaseConfig.contact_height_m).astype(float)
    g_up = joint_states(h, positions[:, UP_INDEX], previous[:, UP_INDEX], rotations[:, UP_INDEX],
                        reference[UP_INDEX], FPS)
    g_lo = np.concatenate([joint_states(h, positions[:, LO_INDEX], previous[:, LO_INDEX], rotations[:, LO_INDEX],
                                        reference[LO_INDEX], FPS),
                           contacts, z], axis=-1)
    return BodyStates(h, z, g_up, g_lo, bone_offsets(positions[0], rotations[0]))


def split_joint_states(g: np.ndarray, joints: int):
    """(positions, velocities, rotation vectors), each (..., K, 3), of a g_up or the joint part of a g_lo."""
    p, v, q = (g[..., k * joints * 3:(k + 1) * joints * 3].reshape(*g.shape[:-1], joints, 3) for k in range(3))
    return p, v, q


def global_pose(h: np.ndarray, g_up: np.ndarray, g_lo: np.ndarray, reference: np.ndarray):
    """World rotations (..., 21, 4) and positions (..., 21, 3) of the canonical joints from states in frames h."""
    up_p, _, up_q = split_joint_states(g_up, len(J_UP))
    lo_p, _, lo_q = split_joint_states(g_lo, len(J_LO))
    positions = np.empty((*h.shape[:-1], len(CANONICAL_JOINTS), 3))
    rotations = np.empty((*h.shape[:-1], len(CANONICAL_JOINTS), 4))
    positions[..., UP_INDEX, :], positions[..., LO_INDEX, :] = up_p, lo_p
    rotations[..., UP_INDEX, :] = quat.multiply(quat.from_rotation_vector(up_q), reference[UP_INDEX])
    rotations[..., LO_INDEX, :] = quat.multiply(quat.from_rotation_vector(lo_q), reference[LO_INDEX])
    return heading.rotations_out_of(h, rotations), heading.points_out_of(h, positions)


@dataclass(frozen=True)
class OutputSkeleton:
    """The skeleton the predictor's poses are written on, and where its canonical joints sit in it.

    Joints outside the canonical set keep their rest rotation, so a joint above the hips (Bandai's
    joint_Root) stays at the origin and the hips carry the translation in its frame.
    """

    skeleton: Skeleton
    canonical: np.ndarray
    followers: tuple[int, ...]
    """Joints outside the canonical set that have a parent, parents first: they turn with it."""
    above_hips: np.ndarray
    """The rest offsets of the hips' ancestors, summed (3,)."""

    @classmethod
    def of(cls, skeleton: Skeleton) -> "OutputSkeleton":
        canonical = find_mapping(skeleton).indices()
        kept = set(canonical.tolist())
        followers = tuple(j for j in range(len(skeleton)) if j not in kept and skeleton.parents[j] >= 0)
        above, joint = np.zeros(3), int(skeleton.parents[canonical[0]])
        while joint >= 0:
            above, joint = above + skeleton.offsets[joint], int(skeleton.parents[joint])
        return cls(skeleton, canonical, followers, above)

    def motion(self, rotations: np.ndarray, hips_positions: np.ndarray, fps: float, name: str = "") -> Motion:
        """A Motion from world rotations of the canonical joints (T, 21, 4) and hips positions (T, 3)."""
        skeleton = self.skeleton
        world = np.tile(quat.identity(), (len(rotations), len(skeleton), 1))
        world[:, self.canonical] = rotations
        for j in self.followers:
            world[:, j] = world[:, skeleton.parents[j]]
        positions = np.repeat(skeleton.offsets[None], len(rotations), axis=0)
        positions[:, self.canonical[0]] = hips_positions - self.above_hips
        return Motion(skeleton, local_from_global(skeleton.parents, world), positions, fps, name)
