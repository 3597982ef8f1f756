"""The small motion fixtures of tests/data/mocap, made here so the unit tests run without ../shared.

A procedural humanoid (the 21 canonical joints under a root, named the Unity humanoid way that
core.rig.humanoid reads: Hips, Spine, Chest, ..., UpperLeg_L, Toes_R; +Y up, facing +Z, T-pose rest)
walks a scheduled path: it stands, walks off, turns, walks on and stops. Footsteps are planned on the
path, each foot planted flat on the floor between steps and swung in an arc to the next one; the legs
reach their feet by two-bone IK, the arms swing against the legs, the wrists twist and the head looks
around while standing. Written with core's own BVH writer (centimetres, 30 fps).

    python tests/data/make_fixtures.py     rewrites the files in tests/data/mocap
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from core.anim.motion import Motion, local_from_global  # noqa: E402
from core.anim.skeleton import Skeleton  # noqa: E402
from core.files.bvh import write_bvh  # noqa: E402
from core.math import quat  # noqa: E402

FOLDER = Path(__file__).resolve().parent / "mocap"
FPS = 30.0
ANKLE_HEIGHT = 0.08
STEP_SECONDS, SWING_SECONDS = 0.55, 0.4
"""A step begins every STEP_SECONDS, alternating feet; each foot is in the air for SWING_SECONDS of it."""


@dataclass(frozen=True)
class Walk:
    """One clip: a figure `scale` times the base one, standing `stand` s, walking at `speed` m/s for
    `walk` s (turning by `turn` degrees, left positive, over its middle half), then standing `stand` s."""

    name: str
    scale: float
    speed: float
    walk: float
    turn: float
    stand: float = 1.0


CLIPS = (Walk("dataset-0_walk-turn-left_normal_001", 1.0, 1.0, 6.0, 90.0),
         Walk("dataset-0_walk-turn-right_normal_002", 0.92, 1.15, 5.0, -60.0))
"""The fixture clips: the activity in a file name is read the way core.files.mocap reads Bandai's."""


def humanoid(scale: float) -> Skeleton:
    """The humanoid in T-pose, metres, `scale` times a 1.75 m figure; the left side is +X."""
    joints = [("Root", None, (0, 0, 0)), ("Hips", "Root", (0, 0.95, 0)), ("Spine", "Hips", (0, 0.1, 0)),
              ("Chest", "Spine", (0, 0.16, 0)), ("Neck", "Chest", (0, 0.2, 0)), ("Head", "Neck", (0, 0.1, 0))]
    for side, x in (("L", 1.0), ("R", -1.0)):
        joints += [(f"Shoulder_{side}", "Chest", (0.03 * x, 0.16, 0)), (f"UpperArm_{side}", f"Shoulder_{side}", (0.15 * x, 0, 0)),
                   (f"LowerArm_{side}", f"UpperArm_{side}", (0.28 * x, 0, 0)), (f"Hand_{side}", f"LowerArm_{side}", (0.25 * x, 0, 0))]
    for side, x in (("L", 1.0), ("R", -1.0)):
        joints += [(f"UpperLeg_{side}", "Hips", (0.09 * x, -0.05, 0)), (f"LowerLeg_{side}", f"UpperLeg_{side}", (0, -0.45, 0)),
                   (f"Foot_{side}", f"LowerLeg_{side}", (0, -0.44, 0)),
                   (f"Toes_{side}", f"Foot_{side}", (0, -0.06, 0.13))]
    names = [name for name, _, _ in joints]
    parents = [-1 if parent is None else names.index(parent) for _, parent, _ in joints]
    ends = {"Head": (0, 0.18, 0), "Hand_L": (0.08, 0, 0), "Hand_R": (-0.08, 0, 0), "Toes_L": (0, 0, 0.06),
            "Toes_R": (0, 0, 0.06)}
    end_sites = tuple((names.index(n), tuple(scale * np.array(o, float))) for n, o in ends.items())
    return Skeleton(names, np.array(parents), scale * np.array([o for _, _, o in joints], float), end_sites)


def smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def path(walk: Walk, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The body's floor position (T, 3), yaw (T,) and how much it is walking (T,, 0 standing, 1 walking)."""
    start, stop = walk.stand, walk.stand + walk.walk
    walking = smoothstep((t - start) / 0.6) * smoothstep((stop - t) / 0.6)
    turning = smoothstep((t - start - 0.25 * walk.walk) / (0.5 * walk.walk))
    yaw = np.radians(walk.turn) * turning
    speed = walk.speed * walking
    dt = np.diff(t, prepend=t[0])
    step = speed * dt
    position = np.zeros((len(t), 3))
    position[:, 0] = np.cumsum(step * np.sin(yaw))
    position[:, 2] = np.cumsum(step * np.cos(yaw))
    return position, yaw, walking


def footsteps(walk: Walk, skeleton: Skeleton, t: np.ndarray):
    """Each foot's ankle position (T, 2, 3) and yaw (T, 2): planted between steps, swung in an arc."""
    fine = np.arange(0.0, t[-1] + 2.0, 0.005)
    floor, yaw, _ = path(walk, fine)
    lateral = skeleton.offsets[skeleton.index("UpperLeg_L"), 0]
    lifts = np.arange(walk.stand, walk.stand + walk.walk + STEP_SECONDS, STEP_SECONDS)

    def plant(time, side):
        i = np.searchsorted(fine, time)
        across = np.array([np.cos(yaw[i]), 0.0, -np.sin(yaw[i])]) * side * lateral
        return floor[i] + across + np.array([0.0, ANKLE_HEIGHT, 0.0]), yaw[i]

    ankles, yaws = np.zeros((len(t), 2, 3)), np.zeros((len(t), 2))
    for foot, side in enumerate((1.0, -1.0)):
        own = lifts[foot::2]
        after = plant(0.0, side)
        ankles[:, foot], yaws[:, foot] = after
        for lift in own:
            land = lift + SWING_SECONDS
            before, after = after, plant(land + 0.5 * (STEP_SECONDS * 2 - SWING_SECONDS), side)
            s = smoothstep((t - lift) / SWING_SECONDS)
            moved = t >= lift
            ankles[moved, foot] = before[0] + s[moved, None] * (after[0] - before[0])
            lift_height = 0.1 * min(1.0, np.linalg.norm(after[0] - before[0]) / 0.2)
            ankles[moved, foot, 1] += lift_height * np.sin(np.pi * s[moved]) * (t[moved] < land)
            yaws[moved, foot] = before[1] + s[moved] * (after[1] - before[1])
    return ankles, yaws


def leg_rotations(hip: np.ndarray, ankle: np.ndarray, forward: np.ndarray, thigh: float, shin: float):
    """Global rotations (T, 4) of thigh and shin that put the ankle on its target, the knee bending forward."""
    reach = ankle - hip
    distance = np.linalg.norm(reach, axis=-1)
    d = np.minimum(distance, 0.999 * (thigh + shin))
    down = reach / distance[:, None]
    bend = forward - np.sum(forward * down, axis=-1, keepdims=True) * down
    bend /= np.linalg.norm(bend, axis=-1, keepdims=True)
    along = (thigh ** 2 - shin ** 2 + d ** 2) / (2.0 * d)
    knee = hip + down * along[:, None] + bend * np.sqrt(np.maximum(thigh ** 2 - along ** 2, 0.0))[:, None]
    foot = hip + down * d[:, None]

    def pointing(start, end):
        y = (start - end) / np.linalg.norm(start - end, axis=-1, keepdims=True)  # a leg bone's rest direction is -Y
        z = forward - np.sum(forward * y, axis=-1, keepdims=True) * y
        z /= np.linalg.norm(z, axis=-1, keepdims=True)
        return quat.from_matrix(np.stack([np.cross(y, z), y, z], axis=-1))

    return pointing(hip, knee), pointing(knee, foot)


def make_clip(walk: Walk) -> Motion:
    """The clip `walk` describes, on the humanoid of its scale."""
    skeleton = humanoid(walk.scale)
    t = np.arange(int(round((2 * walk.stand + walk.walk) * FPS))) / FPS
    floor, yaw, walking = path(walk, t)
    index = skeleton.index
    cycle = 2.0 * np.pi * np.maximum(t - walk.stand, 0.0) / (2 * STEP_SECONDS)
    body = quat.from_yaw(yaw)
    hips_yaw = quat.multiply(body, quat.from_yaw(0.12 * walking * np.sin(cycle)))
    rotations = np.repeat(body[:, None], len(skeleton), axis=1)
    rotations[:, index("Root")] = quat.identity()
    rotations[:, index("Hips")] = quat.multiply(hips_yaw, quat.from_axis_rotation("z", 0.04 * walking * np.cos(cycle)))
    rotations[:, index("Chest")] = quat.multiply(body, quat.from_axis_rotation("x", 0.05 * walking))
    look = 0.5 * (1.0 - walking) * np.sin(2.0 * np.pi * t / 2.5)
    rotations[:, index("Neck")] = quat.multiply(body, quat.from_yaw(0.3 * look))
    rotations[:, index("Head")] = quat.multiply(body, quat.multiply(quat.from_yaw(look),
                                                                    quat.from_axis_rotation("x", 0.1 * np.cos(t))))
    for side, x, phase in (("L", 1.0, np.pi), ("R", -1.0, 0.0)):
        swing = 0.35 * walking * np.sin(cycle + phase)
        arm = quat.multiply(quat.from_axis_rotation("x", -swing), quat.from_axis_rotation("z", -x * 1.3))
        rotations[:, index(f"UpperArm_{side}")] = quat.multiply(body, arm)
        elbow = quat.from_axis_rotation("x", -0.5 - 0.3 * walking * (1.0 + np.sin(cycle + phase)))
        rotations[:, index(f"LowerArm_{side}")] = quat.multiply(body, quat.multiply(elbow, quat.from_axis_rotation("z", -x * 1.3)))
        twist = quat.from_axis_rotation("x", x * 0.4 * np.sin(2.0 * np.pi * t / 1.7 + phase))
        rotations[:, index(f"Hand_{side}")] = quat.multiply(rotations[:, index(f"LowerArm_{side}")], twist)
    hips_height = 0.95 * walk.scale - 0.03 * walking + 0.012 * walking * np.cos(2.0 * cycle)
    positions = np.repeat(skeleton.offsets[None], len(t), axis=0)
    positions[:, index("Hips")] = floor + np.stack([np.zeros_like(t), hips_height, np.zeros_like(t)], axis=-1)
    ankles, foot_yaws = footsteps(walk, skeleton, t)
    hips_global = rotations[:, index("Hips")]
    forward = quat.rotate(body, np.array([0.0, 0.0, 1.0]))
    for foot, side in enumerate("LR"):
        hip = positions[:, index("Hips")] + quat.rotate(hips_global, skeleton.offsets[index(f"UpperLeg_{side}")])
        thigh = -skeleton.offsets[index(f"LowerLeg_{side}"), 1]
        shin = -skeleton.offsets[index(f"Foot_{side}"), 1]
        upper, lower = leg_rotations(hip, ankles[:, foot], forward, thigh, shin)
        rotations[:, index(f"UpperLeg_{side}")] = upper
        rotations[:, index(f"LowerLeg_{side}")] = lower
        rotations[:, index(f"Foot_{side}")] = quat.from_yaw(foot_yaws[:, foot])
        rotations[:, index(f"Toes_{side}")] = quat.from_yaw(foot_yaws[:, foot])
    local = local_from_global(skeleton.parents, quat.normalize(rotations))
    return Motion(skeleton, quat.unroll(local), positions, FPS, walk.name)


def make_fixtures(folder: Path = FOLDER) -> list[Path]:
    """Write every fixture clip into `folder`; their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for walk in CLIPS:
        path = folder / f"{walk.name}.bvh"
        write_bvh(path, make_clip(walk), scale=100.0)
        written.append(path)
    return written


if __name__ == "__main__":
    for made in make_fixtures():
        print(f"{made.relative_to(ROOT)}: {made.stat().st_size // 1024} KiB")
