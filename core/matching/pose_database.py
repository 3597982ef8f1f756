"""Pose database (MMVR §5.1): every pose of the animation clips with a virtual root, velocities and foot contacts.

Each pose is y = (y^p, y^r, y^v, y^w, y^c) (eq. 1): local joint positions, rotations, velocities
and angular velocities, and whether the left and right foot touch the ground. Joint 0 is the
virtual root that §5.1 adds: the hips projected on the floor, turned to the hips' forward
direction (character.character_frames); the hips become its child, so the rest of the skeleton
keeps its local values. Joint 0's arrays hold the root's world position and yaw rotation, and
its velocity and angular velocity in its own frame; other joints' velocities are in their
parent's frame, angular velocities are rotation vectors per second of q(t+1) q(t)^-1. Clips keep
their order; `range_starts` / `range_stops` mark where each begins and ends (stop exclusive).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..anim.character import VIRTUAL_ROOT, rooted_motion
from ..anim.motion import Motion, forward_kinematics
from ..anim.skeleton import Skeleton
from ..config import DatabaseConfig, describe
from ..errors import FileFormatError
from ..files.atomic import write_npz
from ..files.npz_archive import read_npz
from ..math import quat
from ..anim.contacts import foot_contacts
from ..rig.humanoid import HumanoidMapping, HumanoidMappingError, find_mapping
from ..retarget.target import clip_mapping

FILE_VERSION = 1
FPS_RANGE = (1.0, 1000.0)
"""Rates a database may be stored at."""
POSITION_LIMIT_M = 1e4
"""Positions and offsets beyond this many metres are a damaged file, not a capture."""
BONE_TOLERANCE_M = 0.01
"""How far a clip's bone may be from the first clip's in one database: one studio's captures of one skeleton are
within it (Bandai's 1190 files, both datasets: their bones within 0.0001 mm of the first's); another studio's
skeleton with the same joint names (6.5 cm apart at the thigh), or the figure at another size, is not: its bones
would change length whenever matching switched clips."""
SPEED_LIMIT = 1e5
"""Linear (m/s) and angular (rad/s) velocities beyond this are a damaged file (a half-turn a frame at 1000 fps
is 3,142 rad/s)."""


class DatabaseError(FileFormatError):
    """A database that cannot be built or read; the message names the file or clip."""


@dataclass
class PoseDatabase:
    """Poses (N frames, J joints) on `skeleton`, whose joint 0 is the virtual root."""

    skeleton: Skeleton
    rotations: np.ndarray
    """(N, J, 4) local; joint 0: the root's world rotation (yaw only)."""
    positions: np.ndarray
    """(N, J, 3) local; joint 0: the root's world position (y = 0)."""
    velocities: np.ndarray
    """(N, J, 3)"""
    angular_velocities: np.ndarray
    """(N, J, 3)"""
    contacts: np.ndarray
    """(N, 2) bool: left, right foot on the ground."""
    range_starts: np.ndarray
    range_stops: np.ndarray
    clip_names: tuple[str, ...]
    fps: float
    height_range: tuple[float, float] = (0.0, np.inf)
    """HMD-height ratios (current / standing) this database serves (§5.5), low inclusive."""
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rotations)

    @property
    def mapping(self) -> HumanoidMapping:
        return find_mapping(self.skeleton, self.info.get("mapping"))

    def clip_of(self, frames: np.ndarray) -> np.ndarray:
        """Index of the clip that holds each frame."""
        return np.searchsorted(self.range_stops, frames, side="right")

    def clip_motion(self, clip: int) -> Motion:
        """One clip as a Motion on the database skeleton (root at its world position)."""
        frames = slice(self.range_starts[clip], self.range_stops[clip])
        return Motion(self.skeleton, self.rotations[frames], self.positions[frames], self.fps, self.clip_names[clip])

    def subset(self, share: float) -> "PoseDatabase":
        """About `share` of the poses as whole clips, spread evenly over the clip list (the paper's 25 % and
        10 % databases, §7.2; how the paper cut them is not said)."""
        clips = [c for c in range(len(self.clip_names)) if np.floor((c + 1) * share) > np.floor(c * share)] or [0]
        index = np.concatenate([np.arange(self.range_starts[c], self.range_stops[c]) for c in clips])
        lengths = self.range_stops[clips] - self.range_starts[clips]
        stops = np.cumsum(lengths)
        return PoseDatabase(self.skeleton, self.rotations[index], self.positions[index], self.velocities[index],
                            self.angular_velocities[index], self.contacts[index], stops - lengths, stops,
                            tuple(self.clip_names[c] for c in clips), self.fps, self.height_range,
                            dict(self.info, subset=share))

    def save(self, path: str | Path) -> None:
        skeleton = self.skeleton
        meta = {"version": FILE_VERSION, "names": list(skeleton.names), "clip_names": list(self.clip_names),
                "end_sites": [[j, list(o)] for j, o in skeleton.end_sites], "info": self.info}
        write_npz(
            path, meta=np.array(json.dumps(meta)), parents=skeleton.parents, offsets=skeleton.offsets,
            rotations=self.rotations.astype(np.float32), positions=self.positions.astype(np.float32),
            velocities=self.velocities.astype(np.float32),
            angular_velocities=self.angular_velocities.astype(np.float32), contacts=self.contacts,
            range_starts=self.range_starts, range_stops=self.range_stops, fps=np.array(self.fps),
            height_range=np.array(self.height_range, dtype=float))

    @classmethod
    def load(cls, path: str | Path) -> "PoseDatabase":
        """A database file as `save` writes it; DatabaseError names the file and what is wrong in it."""
        with read_npz(path, "a VR Avatar database", DatabaseError) as archive:
            meta = archive.json("meta")
            if meta.get("version") != FILE_VERSION:
                raise DatabaseError(f"{path}: database version {meta.get('version')}, expected {FILE_VERSION}")
            skeleton = Skeleton(meta["names"], archive.array("parents", ("J",), "i"),
                                archive.array("offsets", ("J", 3), limit=POSITION_LIMIT_M),
                                tuple((j, tuple(o)) for j, o in meta["end_sites"]))
            arrays = [archive.array("rotations", ("N", "J", 4), unit=True)] + [
                archive.array(key, ("N", "J", 3), limit=limit) for key, limit in
                (("positions", POSITION_LIMIT_M), ("velocities", SPEED_LIMIT), ("angular_velocities", SPEED_LIMIT))]
            contacts = archive.array("contacts", ("N", 2), "b").astype(bool)
            starts, stops = archive.array("range_starts", ("C",), "i"), archive.array("range_stops", ("C",), "i")
            fps = float(archive.array("fps", ()))
            height_range = archive.array("height_range", (2,), finite=False)
            clip_names = tuple(meta["clip_names"])
            problem = _layout_problem(skeleton, len(arrays[0]), starts, stops, clip_names, fps, height_range)
            if problem:
                raise DatabaseError(f"{path}: {problem}")
            return cls(skeleton, *arrays, contacts, starts, stops, clip_names, fps,
                       tuple(float(h) for h in height_range), meta["info"])


def _layout_problem(skeleton: Skeleton, poses: int, starts, stops, clip_names, fps: float, height_range) -> str | None:
    """What does not fit together in a loaded database, or None."""
    if skeleton.names[0] != VIRTUAL_ROOT:
        return f"joint 0 is {skeleton.names[0]!r}, not the virtual root {VIRTUAL_ROOT!r}"
    if len(clip_names) != len(starts) or not len(starts):
        return f"{len(clip_names)} clip names for {len(starts)} clip ranges"
    if starts[0] != 0 or stops[-1] != poses or (starts[1:] != stops[:-1]).any() or (stops <= starts).any():
        return f"the clip ranges do not cover the {poses} poses one after another"
    if not (FPS_RANGE[0] <= fps <= FPS_RANGE[1]):
        return f"fps {fps:g} is not a plausible rate"
    if np.isnan(height_range).any() or not 0 <= height_range[0] <= height_range[1]:
        return f"height range {tuple(height_range.tolist())} is not an interval of HMD-height ratios"
    return None


def clip_poses(motion: Motion, config: DatabaseConfig, override: dict[str, str] | None = None,
               where: str | None = None):
    """(skeleton, rotations, positions, velocities, angular velocities, contacts) of one clip at the database rate;
    a clip that does not map (HumanoidMappingError), is not +Y up (the same) or has no toes (DatabaseError) is
    named: `where` (its file), else "clip NAME"."""
    where = where or f"clip {motion.name or '?'}"
    resampled = motion.resampled(config.fps)
    rooted = rooted_motion(resampled, clip_mapping(resampled, override, where))
    try:
        mapping = find_mapping(rooted.skeleton, override)
    except HumanoidMappingError as error:
        raise HumanoidMappingError(f"{where}: {error}") from None
    if not {"l_toes", "r_toes"} <= set(mapping.joints):
        raise DatabaseError(f"{where}: its skeleton has no toe joints; a database's foot contacts "
                            "and the solver's foot lock are the toes'")
    toes = rooted.global_positions()[:, [mapping["l_toes"], mapping["r_toes"]]]
    velocities, angular_velocities = local_velocities(rooted.rotations, rooted.positions, config.fps)
    return (rooted.skeleton, rooted.rotations, rooted.positions, velocities, angular_velocities,
            foot_contacts(toes, config.fps, config.contact_speed_m_s, config.contact_height_m))


def local_velocities(rotations: np.ndarray, positions: np.ndarray, fps: float):
    """Forward differences of one clip's local values; the root's are turned into its own frame.

    The last frame repeats its predecessor's rates.
    """
    velocities = np.empty_like(positions)
    angular = np.empty_like(positions)
    velocities[:-1] = (positions[1:] - positions[:-1]) * fps
    angular[:-1] = quat.to_rotation_vector(quat.multiply_inverse(rotations[1:], rotations[:-1])) * fps
    velocities[-1], angular[-1] = velocities[-2], angular[-2]
    velocities[:, 0] = quat.inverse_rotate(rotations[:, 0], velocities[:, 0])
    angular[:, 0] = quat.inverse_rotate(rotations[:, 0], angular[:, 0])
    return velocities, angular


def in_joint_order(motion: Motion, names: tuple[str, ...]) -> Motion:
    """The motion with its joints in the order `names` gives, where it has those joints under the same parents in
    another order (an importer may list a bone's children in another order); else the motion as it is."""
    skeleton = motion.skeleton
    if skeleton.names == names or sorted(skeleton.names) != sorted(names):
        return motion
    order = [skeleton.names.index(name) for name in names]
    parent_names = [skeleton.names[skeleton.parents[j]] if skeleton.parents[j] >= 0 else None for j in order]
    parents = [names.index(name) if name is not None else -1 for name in parent_names]
    if any(parent >= j for j, parent in enumerate(parents)):
        return motion
    end_sites = tuple((order.index(j), offset) for j, offset in skeleton.end_sites)
    reordered = Skeleton(names, np.array(parents), skeleton.offsets[order], end_sites)
    return Motion(reordered, motion.rotations[:, order], motion.positions[:, order], motion.fps, motion.name)


def bone_lengths(motion: Motion) -> np.ndarray:
    """(J,) each joint's distance from its parent, m; NaN for the root and for a joint whose translation moves over
    the clip (Bandai's hips under its static root): what is left are the skeleton's bones."""
    positions = motion.positions
    lengths = np.linalg.norm(np.median(positions, axis=0), axis=-1)
    lengths[np.ptp(positions, axis=0).max(axis=-1) > BONE_TOLERANCE_M] = np.nan
    lengths[0] = np.nan
    return lengths


def skeleton_problem(skeleton: Skeleton, first_skeleton: Skeleton, motion: Motion | None, first: Motion,
                     first_name: str) -> str | None:
    """How a clip's rooted skeleton is not that of the first clip (`first_name` names it): other joints, or (for
    `motion`, None for a mirrored copy) a bone more than BONE_TOLERANCE_M from the first's; else None."""
    if skeleton.names != first_skeleton.names or not np.array_equal(skeleton.parents, first_skeleton.parents):
        return f"its skeleton ({len(skeleton)} joints) differs from {first_name} ({len(first_skeleton)} joints)"
    if motion is None:
        return None
    ours, theirs = bone_lengths(motion), bone_lengths(first)
    gaps = np.nan_to_num(np.abs(ours - theirs), nan=0.0)
    joint = int(np.argmax(gaps))
    if gaps[joint] <= BONE_TOLERANCE_M:
        return None
    names = motion.skeleton.names
    return (f"its bone from {names[motion.skeleton.parents[joint]]} to {names[joint]} is {100 * ours[joint]:.1f} cm "
            f"long against {100 * theirs[joint]:.1f} cm in {first_name}")


def build_database(motions: list[Motion], config: DatabaseConfig = DatabaseConfig(),
                   mapping: dict[str, str] | None = None, sources: list | None = None) -> PoseDatabase:
    """The pose database of the given clips (mirrored copies appended when config.mirror); `mapping` overrides
    the humanoid mapping {canonical joint: joint name} and is kept in the database for the solver; `sources`, the
    file each motion was read from, names a clip that cannot be used (else "clip NAME").

    The first clip long enough gives the database its skeleton; a clip whose joints or bones (BONE_TOLERANCE_M)
    are not that skeleton's is refused."""
    if not motions:
        raise DatabaseError("no clips to build a database from")
    clips = list(motions) + ([m.mirrored() for m in motions] if config.mirror else [])
    parts, names, skeleton, first, skipped = [], [], None, None, []
    joint_names = next((m.skeleton.names for m in clips if m.duration >= config.min_clip_s), ())
    for index, motion in enumerate(clips):
        if motion.duration < config.min_clip_s:
            skipped.append(motion.name or "?")
            continue
        where = clip_source(clips, index, sources)
        ordered = in_joint_order(motion, joint_names)
        part = clip_poses(ordered, config, mapping, where)
        if skeleton is None:
            skeleton, first = part[0], (ordered, first_named(where))
        problem = skeleton_problem(part[0], skeleton, ordered if index < len(motions) else None, *first)
        if problem:
            raise DatabaseError(f"{where}: {problem}, whose skeleton the database takes; one database holds one "
                                "skeleton")
        parts.append(part[1:])
        names.append(motion.name)
    if not parts:
        raise DatabaseError(f"every clip is shorter than {config.min_clip_s} s, too short to match a trajectory "
                            "one second ahead")
    lengths = np.array([len(p[0]) for p in parts])
    stops = np.cumsum(lengths)
    arrays = [np.concatenate([p[i] for p in parts]) for i in range(5)]
    return PoseDatabase(skeleton, *arrays, stops - lengths, stops, tuple(names), config.fps,
                        tuple(config.height_range), {"config": describe(config), "skipped_short_clips": skipped,
                                                     **({"mapping": dict(mapping)} if mapping else {})})


def clip_source(clips: list[Motion], index: int, sources: list | None) -> str:
    """Where clip `index` of `clips` (the motions, then their mirrored copies) came from, for a message: its file
    (a mirrored copy's "FILE, mirrored"), else "clip NAME"."""
    if not sources:
        return f"clip {clips[index].name or '?'}"
    source = str(sources[index % len(sources)])
    return source if index < len(sources) else f"{source}, mirrored"


def first_named(where: str) -> str:
    """The first clip, named from its clip_source: "the first file F" or "the first clip NAME"."""
    return f"the first {where}" if where.startswith("clip ") else f"the first file {where}"


def global_transforms(database: PoseDatabase) -> tuple[np.ndarray, np.ndarray]:
    """Global rotations and positions (N, J, ...) of every pose, with each clip where it was captured."""
    return forward_kinematics(database.skeleton.parents, database.rotations.astype(float),
                              database.positions.astype(float))
