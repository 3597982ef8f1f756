"""RMR pose vectors (Kim et al. §4): one frame of locomotion as x_t = {r_t, p_t, q_t, v_t, c_t}, and back.

A clip is first put on its database skeleton (anim.character.rooted_motion): joint 0 is the root,
the hips projected on the floor facing the hips' forward direction, as §4 defines it. Then per frame
- r_t (3): the root's displacement from frame t-1 in the root frame of t-1, ordered (r_x, r_theta, r_z)
  as in the paper (metres, radians); the first frame repeats the second's;
- p_t (3 J_lower): root-relative positions of the lower body (hips, thighs, shins, feet, toes);
- q_t (4 J): rotations of every joint below the root relative to its parent (the hips relative to
  the root), quaternions w >= 0;
- v_t (3 J_lower): lower-body velocities (m/s) in the root frame of the previous frame;
- c_t (4): contacts of left heel, left toe, right heel, right toe.

Contacts, adapted to the Bandai skeleton: it has no heel or toe-tip joint. Its foot joint is the
ankle, which stands about 7.5 cm above the floor when the foot is flat, and its toe joint is the
ball of the foot. So the heel is "down" when the ankle is within HEEL_CONTACT_M (the paper's 2.5 cm)
of its own grounded height (the 1st percentile of the ankle's height in the clip), the toe when the
toe joint is within TOE_CONTACT_M (1.6 cm) of the floor (the 1st percentile of toe height, SPEC §5).

J_lower is 9 here (the paper's LaFAN1 skeleton gives 11) and J is 21 (22 there).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..math.angle import wrap_angle
from ..anim.motion import Motion
from ..anim.skeleton import Skeleton
from ..math import quat
from ..anim.contacts import floor_height
from ..rig.humanoid import find_mapping

LOWER_BODY = ("hips", "l_thigh", "l_shin", "l_foot", "l_toes", "r_thigh", "r_shin", "r_foot", "r_toes")
HEEL_CONTACT_M = 0.025
TOE_CONTACT_M = 0.016
FORWARD = np.array([0.0, 0.0, 1.0])


@dataclass(frozen=True)
class PoseLayout:
    """Where each part of x_t sits, for one database skeleton."""

    lower: np.ndarray
    """Skeleton indices of the LOWER_BODY joints."""
    upper: np.ndarray
    """Skeleton indices of the spine and every joint below it (the upper body)."""
    joints: int
    """J: joints below the root."""

    @classmethod
    def of(cls, skeleton: Skeleton) -> "PoseLayout":
        mapping = find_mapping(skeleton)
        spine = mapping["spine"]
        upper = [j for j in range(len(skeleton)) if skeleton.is_ancestor(spine, j)]
        return cls(mapping.indices(LOWER_BODY), np.array(upper), len(skeleton) - 1)

    @property
    def r(self) -> slice:
        return slice(0, 3)

    @property
    def p(self) -> slice:
        return slice(3, 3 + 3 * len(self.lower))

    @property
    def q(self) -> slice:
        return slice(self.p.stop, self.p.stop + 4 * self.joints)

    @property
    def v(self) -> slice:
        return slice(self.q.stop, self.q.stop + 3 * len(self.lower))

    @property
    def c(self) -> slice:
        return slice(self.v.stop, self.v.stop + 4)

    @property
    def size(self) -> int:
        return self.c.stop

    @property
    def feet(self) -> np.ndarray:
        """Indices into LOWER_BODY of left ankle, left toe, right ankle, right toe (the contact order)."""
        return np.array([3, 4, 7, 8])


def root_yaw(rotations: np.ndarray) -> np.ndarray:
    """Yaw angles (T,) of yaw-only root rotations (T, 4)."""
    return quat.yaw_of_direction(quat.rotate(rotations, FORWARD))


def root_displacements(positions: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """r_t (T, 3) = (x, theta, z) from t-1 to t in the root frame of t-1; r_0 repeats r_1."""
    r = np.zeros((len(yaw), 3))
    if len(yaw) < 2:
        return r
    step = quat.inverse_rotate(quat.from_yaw(yaw[:-1]), positions[1:] - positions[:-1])
    r[1:, 0], r[1:, 1], r[1:, 2] = step[:, 0], wrap_angle(np.diff(yaw)), step[:, 2]
    r[0] = r[1]
    return r


def accumulate_root(r: np.ndarray, start_position: np.ndarray, start_yaw: float):
    """Root positions (T, 3) and yaws (T,) from displacements r (T, 3), frame 0 at the given start (r_0 unused)."""
    yaw = start_yaw + np.concatenate([[0.0], np.cumsum(r[1:, 1])])
    local = np.stack([r[1:, 0], np.zeros(len(r) - 1), r[1:, 2]], axis=-1)
    steps = quat.rotate(quat.from_yaw(yaw[:-1]), local)
    positions = np.asarray(start_position, float) + np.concatenate([np.zeros((1, 3)), np.cumsum(steps, axis=0)])
    positions[:, 1] = 0.0
    return positions, yaw


def align_roots(positions: np.ndarray, yaw: np.ndarray, onto_position: np.ndarray, onto_yaw: float):
    """A root trajectory moved rigidly (about +Y) so that its first frame sits at the given root."""
    turn = onto_yaw - yaw[0]
    moved = quat.rotate(quat.from_yaw(np.full(len(yaw), turn)), positions - positions[0]) + onto_position
    moved[:, 1] = 0.0
    return moved, yaw + turn


def lower_body_velocities(x: np.ndarray, layout: PoseLayout, fps: float) -> np.ndarray:
    """v (T, 3 J_lower) as r and p imply it: each joint's move from t-1 to t, in the root frame of t-1, per second.

    With the root's step s_t = (r_x, 0, r_z) and turn r_theta, that is (s_t + R_y(r_theta) p_t - p_{t-1}) fps;
    v_0 repeats v_1 (r_0 repeats r_1)."""
    frames = len(x)
    p = x[:, layout.p].reshape(frames, -1, 3)
    v = np.zeros_like(p)
    if frames > 1:
        r = x[1:, layout.r]
        step = np.stack([r[:, 0], np.zeros(frames - 1), r[:, 2]], axis=-1)
        v[1:] = (step[:, None] + quat.rotate(quat.from_yaw(r[:, 1])[:, None], p[1:]) - p[:-1]) * fps
        v[0] = v[1]
    return v.reshape(frames, -1)


def step_yaws(r: np.ndarray) -> np.ndarray:
    """Yaw (T,) of the frame each displacement of r (T, 3) is taken in, relative to the frame before r_0."""
    return np.concatenate([[0.0], np.cumsum(r[:-1, 1])])


def match_root_path(r: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Displacements r (T, 3) changed evenly so that, summed up, they turn and move the root exactly as
    `reference` does: the turn error is spread over the frames, then the end-point error in the
    starting frame, each share taken into the frame of its step."""
    r = r.copy()
    r[:, 1] += (reference[:, 1].sum() - r[:, 1].sum()) / len(r)

    def end_point(displacements):
        yaws = quat.from_yaw(step_yaws(displacements))
        steps = np.stack([displacements[:, 0], np.zeros(len(displacements)), displacements[:, 2]], axis=-1)
        return quat.rotate(yaws, steps).sum(axis=0), yaws

    target, _ = end_point(reference)
    reached, yaws = end_point(r)
    share = quat.inverse_rotate(yaws, np.broadcast_to((target - reached) / len(r), (len(r), 3)))
    r[:, 0] += share[:, 0]
    r[:, 2] += share[:, 2]
    return r


def contact_levels(rooted: Motion, layout: PoseLayout) -> np.ndarray:
    """Grounded heights (4,) of left ankle, left toe, right ankle, right toe in one clip (see module docstring)."""
    heights = rooted.global_positions()[:, layout.lower[layout.feet], 1]
    floor = floor_height(heights[:, [1, 3]])
    ankle = np.percentile(heights[:, [0, 2]], 1.0)
    return np.array([ankle, floor, ankle, floor])


def on_floor(rooted: Motion, layout: PoseLayout) -> tuple[Motion, np.ndarray]:
    """The motion with its floor (the 1st percentile of toe height) moved to y = 0, and its contact levels there."""
    levels = contact_levels(rooted, layout)
    positions = rooted.positions.copy()
    positions[:, 1, 1] -= levels[1]
    return Motion(rooted.skeleton, rooted.rotations, positions, rooted.fps, rooted.name), levels - levels[1]


COLLAPSED_NORM = 0.5
"""A network's quaternion shorter than this is no rotation (`repaired_rotations`)."""

def pose_vectors(rooted: Motion, layout: PoseLayout, levels: np.ndarray) -> np.ndarray:
    """x_t (T, d) of a motion on its database skeleton; `levels` from contact_levels."""
    global_positions = rooted.global_positions()[:, layout.lower]
    root_position, root_rotation = rooted.positions[:, 0], rooted.rotations[:, 0]
    yaw = root_yaw(root_rotation)
    frames = len(rooted)
    x = np.empty((frames, layout.size))
    x[:, layout.r] = root_displacements(root_position, yaw)
    p = quat.inverse_rotate(root_rotation[:, None], global_positions - root_position[:, None])
    x[:, layout.p] = p.reshape(frames, -1)
    x[:, layout.q] = quat.positive_hemisphere(rooted.rotations[:, 1:]).reshape(frames, -1)
    x[:, layout.v] = lower_body_velocities(x, layout, rooted.fps)
    heights = global_positions[:, layout.feet, 1] - levels
    thresholds = np.array([HEEL_CONTACT_M, TOE_CONTACT_M, HEEL_CONTACT_M, TOE_CONTACT_M])
    x[:, layout.c] = (heights < thresholds).astype(float)
    return x


def motion_from_vectors(x: np.ndarray, layout: PoseLayout, skeleton: Skeleton, fps: float,
                        start_position: np.ndarray, start_yaw: float, name: str = "") -> Motion:
    """The motion that x (T, d) describes, its root accumulated from frame 0 at the given place.

    Rotations come from q (normalised), the hips' place from p; the other joints keep their rest
    offsets, as the skeleton defines them.
    """
    frames = len(x)
    root_position, yaw = accumulate_root(x[:, layout.r], start_position, start_yaw)
    rotations = np.empty((frames, len(skeleton), 4))
    rotations[:, 0] = quat.from_yaw(yaw)
    rotations[:, 1:] = repaired_rotations(x[:, layout.q].reshape(frames, layout.joints, 4))
    positions = np.repeat(skeleton.offsets[None], frames, axis=0)
    positions[:, 0] = root_position
    positions[:, layout.lower[0]] = x[:, layout.p][:, :3]
    return Motion(skeleton, rotations, positions, fps, name)


def repaired_rotations(q: np.ndarray) -> np.ndarray:
    """Unit rotations (T, J, 4) from a network's q (T, J, 4): normalised, except where a quaternion collapsed toward
    zero (shorter than COLLAPSED_NORM: the training targets' w >= 0 hemisphere flips across a thigh at w ~ 0, and the
    network answers the mean of both signs), which is taken along the joint's sound frames on either side (nlerp;
    normalised it turned the knee 36 cm for one frame)."""
    norms = np.linalg.norm(q, axis=-1)
    rotations = quat.normalize(q)
    for joint in np.flatnonzero((norms < COLLAPSED_NORM).any(axis=0)):
        sound = np.flatnonzero(norms[:, joint] >= COLLAPSED_NORM)
        collapsed = np.flatnonzero(norms[:, joint] < COLLAPSED_NORM)
        if not len(sound):
            rotations[:, joint] = quat.identity()
            continue
        along = quat.unroll(rotations[sound, joint])
        taken = np.stack([np.interp(collapsed, sound, along[:, c]) for c in range(4)], axis=-1)
        rotations[collapsed, joint] = quat.normalize(taken)
    return rotations


def predicted_contacts(x: np.ndarray, layout: PoseLayout) -> np.ndarray:
    """(T, 2) bool: left and right foot down (heel or toe) in pose vectors whose c holds 0/1 or probabilities."""
    c = x[:, layout.c] > 0.5
    return np.stack([c[:, 0] | c[:, 1], c[:, 2] | c[:, 3]], axis=-1)


def toe_contacts(x: np.ndarray, layout: PoseLayout) -> np.ndarray:
    """(T, 2) bool: left and right toe down; the contacts that hold the toe joint, where the foot lock pins a foot."""
    return x[:, layout.c][:, [1, 3]] > 0.5
