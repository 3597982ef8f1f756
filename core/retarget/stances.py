"""Feet on the target: each leg's joints and standing heights (`TargetLeg`), and stances held where they began
(contacts from anim/contacts.py): over a whole motion offline (`held_over_stances`), one frame at a time live
(`LiveStances`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..anim.contacts import contact_segments, contact_weight, floor_height
from ..anim.motion import Motion
from ..math import quat
from ..anim.character import UP, hips_forward
from ..math.vector import length, unit_across
from ..rig.humanoid import HumanoidMapping, find_mapping
from .target import TargetSkeleton, leaf_end, toe_point


HEEL_RISE_LIMIT_DEG = 50.0
"""Largest tilt of a planted foot behind the hips about its toe point, heel up (push-off: the foot stands about
50 degrees off the floor at toe-off in walking gait)."""

TOE_RISE_LIMIT_DEG = 25.0
"""Largest tilt of a planted foot ahead of the hips about its heel, toes up (heel strike: about 25 degrees)."""


def leg_length(positions: np.ndarray, mapping: HumanoidMapping, side: str, ankle_height: float) -> float:
    """Hip joint to the floor along a straight leg: thigh and shin lengths plus the ankle's height."""
    thigh, shin, foot = (positions[mapping[f"{side}_{j}"]] for j in ("thigh", "shin", "foot"))
    return float(length(shin - thigh) + length(foot - shin) + ankle_height)


@dataclass(frozen=True)
class TargetLeg:
    """One side's leg joints on the target, with their heights above the floor at standing (scaled)."""

    thigh: int
    shin: int
    foot: int
    toes: int | None
    ankle_height: float
    heel_offset: np.ndarray
    """(3,) the point under the ankle on the floor at standing (the heel's underside), in the foot bone's axes."""
    toe_offset: np.ndarray
    """(3,) the toe point (toe joint, else the foot's tail) in the foot bone's axes."""
    toe_height: float
    """The toe point's standing height above the floor."""
    tip_offset: np.ndarray | None
    """(3,) the toe bone's tail in its axes, when the rig has a toe bone and tails."""
    tip_height: float | None
    """The toe bone's tail's standing height above the floor."""
    skin: np.ndarray
    """(K, 3) points of the skin the foot bone carries, in its axes, above the floor at standing (may be empty)."""
    toe_skin: np.ndarray
    """(K, 3) likewise for the toe bone."""
    length: float
    """Thigh plus shin, scaled."""
    source_toe: int
    forward: np.ndarray
    """(3,) where the foot points at standing, on the floor (world, unit): heel to toe point, else the body's forward."""
    foot_axes: np.ndarray
    """(4,) the foot bone's axes standing flat (world)."""
    toe_axes: np.ndarray | None
    """(4,) the toe bone's, when the rig has one."""


def leg_on_target(target: TargetSkeleton, source_mapping: HumanoidMapping, side: str, scale: float) -> TargetLeg:
    """One side's leg on the target at `scale`: joints, standing heights above its floor, the feet's skin."""
    tm = target.mapping
    pose = target.foot_pose(side)
    axes, heads = pose
    floor = target.floor_height()
    foot, toes = tm[f"{side}_foot"], tm.joints.get(f"{side}_toes")
    toe = toe_point(target, side)
    tip = leaf_end(target, side, "toes", pose) if toes is not None and target.tails is not None else None

    def skin(bone: int | None) -> np.ndarray:
        """The skin points bound to `bone`, from its head in its axes, scaled."""
        if bone is None or target.skin is None:
            return np.zeros((0, 3))
        points = target.skin[1][target.skin[0] == bone]
        return scale * quat.inverse_rotate(axes[bone], points - heads[bone])

    ankle_height = scale * float(heads[foot, 1] - floor)
    body_forward = hips_forward(heads[tm["l_thigh"]], heads[tm["r_thigh"]])
    forward = unit_across(toe - heads[foot], UP, body_forward)
    return TargetLeg(tm[f"{side}_thigh"], tm[f"{side}_shin"], foot, toes, ankle_height,
                quat.inverse_rotate(axes[foot], np.array([0.0, -ankle_height, 0.0])),
                scale * quat.inverse_rotate(axes[foot], toe - heads[foot]), scale * float(toe[1] - floor),
                None if tip is None else scale * quat.inverse_rotate(axes[toes], tip - heads[toes]),
                None if tip is None else scale * float(tip[1] - floor), skin(foot), skin(toes),
                scale * leg_length(heads, tm, side, 0.0), source_mapping[f"{side}_toes"], forward, axes[foot],
                None if toes is None else axes[toes])


def yaw_turn(rotations: np.ndarray, rest: np.ndarray, forward: np.ndarray) -> np.ndarray:
    """(F, 4) the turn about the vertical that carries a bone's standing `forward` (3,), on the floor, onto its
    posed one: the same whichever way the character faces at rest."""
    posed = quat.rotate(quat.multiply_inverse(rotations, rest), forward)
    return quat.from_yaw(quat.yaw_of_direction(posed) - quat.yaw_of_direction(forward))


def held_over_stances(planted: np.ndarray, ankle: np.ndarray, yaw: np.ndarray) -> tuple:
    """(ankle, yaw) of one leg over a whole motion with each stance (frames of positive contact weight `planted`
    (F,)) held at its mean place and turn. Between stances the foot carries the hold's offset from its own path,
    easing from the last stance's to the next one's over the swing, so it neither jumps at a touchdown nor at a
    lift-off."""
    ankle, yaw = ankle.copy(), yaw.copy()
    segments = contact_segments(planted)
    if not segments:
        return ankle, yaw
    offsets = np.zeros((len(ankle), 2))
    for start, stop in segments:
        weights = planted[start:stop] + 1e-9
        place = np.average(ankle[start:stop, [0, 2]], axis=0, weights=weights)
        offsets[start:stop] = place - ankle[start:stop, [0, 2]]
        yaw[start:stop] = quat.mean(yaw[start:stop], weights)
    offsets[:segments[0][0]] = offsets[segments[0][0]]
    offsets[segments[-1][1]:] = offsets[segments[-1][1] - 1]
    for (_, stop), (start, _) in zip(segments, segments[1:]):
        s = (np.arange(stop, start) - stop + 1.0) / (start - stop + 1.0)
        s = (s * s * (3.0 - 2.0 * s))[:, None]
        offsets[stop:start] = (1.0 - s) * offsets[stop - 1] + s * offsets[start]
    ankle[:, [0, 2]] += offsets
    return ankle, yaw


class LiveStances:
    """Planting a live retargeting's feet one frame at a time: contacts read from each source toe's height
    over the source's floor and its speed since the last frame, each stance held where it began."""

    def __init__(self, source_floor: float):
        self.source_floor = source_floor
        self.previous_toes: list[np.ndarray | None] = [None, None]
        self.held: list[tuple | None] = [None, None]

    @classmethod
    def of(cls, standing: Motion) -> "LiveStances":
        """Stances over the floor of `standing`, a motion on the source skeleton."""
        mapping = find_mapping(standing.skeleton)
        toes = standing.global_positions()[:, [mapping["l_toes"], mapping["r_toes"]], 1]
        return cls(floor_height(toes))

    def hold(self, side: int, toe: np.ndarray, ankle: np.ndarray, yaw: np.ndarray, fps: float) -> tuple:
        """(planted (1,), ankle (1, 3), yaw (1, 4)) of leg `side` (0 left, 1 right) this frame."""
        previous = self.previous_toes[side]
        speed = 0.0 if previous is None else float(length(toe[0, [0, 2]] - previous[[0, 2]])) * fps
        self.previous_toes[side] = toe[0].copy()
        planted = np.atleast_1d(contact_weight(toe[0, 1] - self.source_floor, speed))
        if planted[0] <= 0.0:
            self.held[side] = None
            return planted, ankle, yaw
        if self.held[side] is None:
            self.held[side] = (ankle[0, [0, 2]].copy(), yaw[0].copy())
        place, held_yaw = self.held[side]
        ankle = ankle.copy()
        ankle[:, [0, 2]] = (1.0 - planted[0]) * ankle[:, [0, 2]] + planted[0] * place
        return planted, ankle, held_yaw[None].copy()


