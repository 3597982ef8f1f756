"""The simulated body: a MuJoCo model built from a solved skeleton, its segments capsules sized from the skeleton
and weighed from an anthropometric table, standing on contact spheres under each heel, ball and toe tip (the floor
and its friction are the tracking's quadratic program's, tracking.py).

Each joint from the hips down is a body at its rest offset (the skeleton's convention: a child's frame is its
parent's turned by the local rotation), so a ball joint's quaternion is the skeleton's local rotation and the
hips' free joint its global pose. +Y is up, as in `core`. Segment masses are de Leva (1996)'s adjustment of
Zatsiorsky-Seluyanov's parameters for men, as shares of the body mass (BMI 22 at the skeleton's height unless
given); each segment's mass is spread over its capsules, whose inertia MuJoCo computes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..anim.motion import Motion
from ..anim.skeleton import Skeleton
from ..config import PhysicsConfig
from ..math import quat
from ..rig.humanoid import find_mapping

RADIUS_M = {"hips": 0.11, "spine": 0.11, "chest": 0.13, "neck": 0.045, "head": 0.085, "shoulder": 0.045,
            "upper_arm": 0.045, "forearm": 0.038, "hand": 0.032, "thigh": 0.07, "shin": 0.052, "foot": 0.042,
            "toes": 0.035}
"""Each segment's capsule radius (metres, for a 1.75 m body) by its canonical joint, sides dropped."""
MASS_SHARE = {"hips": 0.1117, "spine": 0.1633, "chest": 0.1496, "neck": 0.0150, "head": 0.0544, "shoulder": 0.0050,
              "upper_arm": 0.0271, "forearm": 0.0162, "hand": 0.0061, "thigh": 0.1416, "shin": 0.0433,
              "foot": 0.0100, "toes": 0.0037}
"""Segment mass over body mass (de Leva 1996, men): pelvis, abdomen, thorax (less the clavicles), neck and head
(of 6.94 %), each side's clavicle, upper arm, forearm, hand, thigh, shank and foot (of 1.37 %, with its toes)."""
TORQUE_LIMITS_NM = {"hips": 300.0, "spine": 300.0, "chest": 250.0, "neck": 60.0, "head": 40.0, "shoulder": 80.0,
                    "upper_arm": 150.0, "forearm": 90.0, "hand": 25.0, "thigh": 300.0, "shin": 250.0, "foot": 150.0,
                    "toes": 40.0}
"""Largest torque at each joint of a 70 kg body (N m), near the peak isometric torques reported for adults."""
BMI = 22.0
"""Body-mass index of the default mass."""
OTHER = "spine"
"""What a joint the humanoid mapping leaves out (an extra spine bone) is sized and weighed as."""


def canonical_parts(skeleton: Skeleton) -> list[str | None]:
    """Each joint's segment name (the canonical joint without its side), None above the hips."""
    mapping = find_mapping(skeleton)
    by_joint = {index: name.split("_", 1)[1] if name[:2] in ("l_", "r_") else name
                for name, index in mapping.joints.items()}
    hips = mapping["hips"]
    return [by_joint.get(j, OTHER) if skeleton.is_ancestor(hips, j) else None for j in range(len(skeleton))]


@dataclass
class SimulatedBody:
    """A MuJoCo model of the skeleton from the hips down, and where each joint's state sits in it."""

    model: object
    """The mujoco.MjModel."""
    skeleton: Skeleton
    joints: np.ndarray
    """Skeleton index of each simulated joint, the hips first (its free joint), then ball joints."""
    mass_kg: float
    torque_limits: np.ndarray
    """(dofs - 6,) the largest torque on each ball joint's degree of freedom."""
    feet: np.ndarray
    """Skeleton indices of the two feet and two toes (left foot, left toes, right foot, right toes)."""
    radii: np.ndarray
    """(J,) each joint's capsule radius (0 above the hips)."""
    soles: list
    """Geom ids of the contact spheres under the feet (`soles`)."""
    ends: np.ndarray
    """Skeleton indices of the hands, feet and head (left hand, right hand, left foot, right foot, head): the
    tracking's task points."""


HEIGHT_OVER_CHAIN = 1.27
"""A person's height over their leg and trunk lengths end to end (thigh, shank, pelvis to head joint): the ankle's
height, the hip joints below the pelvis and the head above its joint make up the rest."""


def body_height(skeleton: Skeleton) -> float:
    """About the height of a person with this skeleton (HEIGHT_OVER_CHAIN)."""
    mapping = find_mapping(skeleton)
    chain = ("l_shin", "l_foot", "spine", "chest", "neck", "head")
    return HEIGHT_OVER_CHAIN * float(sum(np.linalg.norm(skeleton.offsets[mapping[j]]) for j in chain if j in
                                         mapping.joints))


SOLE_RADIUS_M = 0.015
"""Radius of the contact spheres under each heel, ball and toe tip."""
NEAR_FLOOR_M = 0.02
"""A sole point this near the floor may push on it in the tracking's quadratic program."""
PLANTED_BAND_M = 0.01
"""A foot joint within this of its lowest heights (5th percentile) counts as planted when its sole is measured."""
BALL_BREADTH = 0.055
"""The foot's breadth across the ball, over body height (Drillis and Contini 1966's foot breadth)."""
HEEL_BREADTH = 0.04
"""The heel's breadth over body height (about 7 cm at 1.75 m: some 70 % of the ball's, as adults' feet are)."""
TOE_LENGTH = 0.03
"""How far past the ball the toe tip's sphere sits, over body height, where the skeleton gives its toes no end:
the toes are about a quarter of a foot length of 0.152 (Drillis and Contini), less the sphere's radius."""


def planted_frames(heights: np.ndarray) -> np.ndarray:
    """Where a joint at `heights` (F,) counts as planted: within PLANTED_BAND_M of its lowest heights."""
    return heights <= np.percentile(heights, 5) + PLANTED_BAND_M


def sole_frame(rotations: np.ndarray, positions: np.ndarray, joint: int, ahead: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(down: the floor's normal as `joint` sees it while planted; the foot's forward along the floor and its
    across, unit vectors, or zeros where `ahead` gives no forward) in the joint's own frame, from a motion's global
    rotations and positions (F, J, ...); `ahead` (F, 3): the foot's heel-to-ball direction in the world."""
    planted = planted_frames(positions[:, joint, 1])
    down = quat.inverse_rotate(rotations[planted, joint], np.array([0.0, -1.0, 0.0])).mean(axis=0)
    down /= np.linalg.norm(down)
    forward = quat.inverse_rotate(rotations[planted, joint], ahead[planted]).mean(axis=0)
    forward -= (forward @ down) * down
    length = float(np.linalg.norm(forward))
    if length < 1e-6:
        return down, np.zeros(3), np.zeros(3)
    forward /= length
    return down, forward, np.cross(down, forward)


def on_the_sole(rotations: np.ndarray, positions: np.ndarray, joint: int, point: np.ndarray, down: np.ndarray,
                lowest: float = 0.0) -> np.ndarray:
    """`point` (3,) in `joint`'s frame moved along `down` so that a contact sphere there rests on the floor while
    the joint is planted: by the point's median height over those frames less SOLE_RADIUS_M, at least `lowest`."""
    planted = planted_frames(positions[:, joint, 1])
    heights = positions[planted, joint, 1] + quat.rotate(rotations[planted, joint], point)[:, 1]
    return point + down * max(float(np.median(heights)) - SOLE_RADIUS_M, lowest)


def soles(motion: Motion, body_height_m: float) -> dict[int, list[np.ndarray]]:
    """Per foot joint, the contact points under it in its own frame, each resting on the floor while planted
    (`on_the_sole`): under the heel (the foot joint) and the ball (the toes joint) a pair across the foot's breadth
    (HEEL_BREADTH, BALL_BREADTH), and one under the toe tip (the toes' end site, or TOE_LENGTH past the ball); a
    foot without toes, or whose toes sit on it, stands on one point under it and one under its end site, if it
    has one."""
    mapping = find_mapping(motion.skeleton)
    pose = motion.global_transforms()
    positions = pose[1]
    end_sites = dict(motion.skeleton.end_sites)
    origin = np.zeros(3)
    points = {}
    for side in "lr":
        foot, toes = mapping[f"{side}_foot"], mapping.joints.get(f"{side}_toes")
        ahead = positions[:, toes] - positions[:, foot] if toes is not None else np.zeros_like(positions[:, foot])
        down, forward, across = sole_frame(*pose, foot, ahead)
        if toes is None or not forward.any():
            below = on_the_sole(*pose, foot, origin, down)
            points[foot] = [below] + [on_the_sole(*pose, foot, np.asarray(end_sites[foot], dtype=float), down,
                                                  -np.inf)] * (foot in end_sites)
            continue
        for joint, breadth in ((foot, HEEL_BREADTH), (toes, BALL_BREADTH)):
            if joint == toes:
                down, forward, across = sole_frame(*pose, toes, ahead)
            below = on_the_sole(*pose, joint, origin, down)
            half = max(breadth * body_height_m / 2.0 - SOLE_RADIUS_M, 0.0)
            points[joint] = [below - half * across, below + half * across]
        tip = np.asarray(end_sites.get(toes, origin), dtype=float)
        points[toes].append(on_the_sole(*pose, toes, tip, down, -np.inf) if np.linalg.norm(tip) >= SOLE_RADIUS_M
                            else below + TOE_LENGTH * body_height_m * forward)
    return points


def body_xml(skeleton: Skeleton, config: PhysicsConfig, motion: Motion | None = None
             ) -> tuple[str, list[int], float, np.ndarray]:
    """(MJCF text, simulated joints (skeleton indices, hips first), body mass, radii per joint); with `motion`,
    each foot stands on contact spheres where its planted sole is (`soles`)."""
    parts = canonical_parts(skeleton)
    height = body_height(skeleton)
    mass = config.body_mass_kg or BMI * height ** 2
    size = height / 1.75
    children = {j: [c for c in range(len(skeleton)) if skeleton.parents[c] == j] for j in range(len(skeleton))}
    end_sites = dict(skeleton.end_sites)
    radii = np.array([RADIUS_M[p] * size if p else 0.0 for p in parts])
    sole = soles(motion, height) if motion is not None else {}
    order: list[int] = []

    def body(j: int, depth: int) -> str:
        order.append(j)
        pad = "  " * depth
        pos = "0 0 0" if not order[1:] else " ".join(f"{v:.6f}" for v in skeleton.offsets[j])
        joint = "<freejoint/>" if len(order) == 1 else f'<joint name="j{j}" type="ball" damping="1"/>'
        ends = [skeleton.offsets[c] for c in children[j]] or [np.asarray(end_sites.get(j, (0.0, 0.0, 0.0)))]
        share = mass * MASS_SHARE[parts[j]] / len(ends)
        geoms = []
        for end in ends:
            if np.linalg.norm(end) < 1e-3:
                geoms.append(f'<geom type="sphere" size="{radii[j]:.4f}" mass="{share:.4f}"/>')
            else:
                fromto = "0 0 0 " + " ".join(f"{v:.6f}" for v in end)
                geoms.append(f'<geom type="capsule" fromto="{fromto}" size="{radii[j]:.4f}" mass="{share:.4f}"/>')
        for k, point in enumerate(sole.get(j, ())):
            where = " ".join(f"{v:.6f}" for v in point)
            geoms.append(f'<geom name="sole{j}_{k}" type="sphere" pos="{where}" size="{SOLE_RADIUS_M}" mass="0.01"/>')
        inner = "".join(body(c, depth + 1) for c in children[j] if parts[c] is not None)
        return f'{pad}<body name="b{j}" pos="{pos}">{joint}{"".join(geoms)}\n{inner}{pad}</body>\n'

    hips = parts.index("hips")
    bodies = body(hips, 2)
    xml = f"""<mujoco model="avatar">
  <option gravity="0 -9.81 0" timestep="{1.0 / config.sim_hz:.8f}"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
{bodies}  </worldbody>
</mujoco>"""
    return xml, order, mass, radii


def simulated_body(skeleton: Skeleton, config: PhysicsConfig = PhysicsConfig(), motion: Motion | None = None
                   ) -> SimulatedBody:
    """The skeleton as a MuJoCo model (module docstring); `motion` on it places the soles."""
    import mujoco

    xml, order, mass, radii = body_xml(skeleton, config, motion)
    model = mujoco.MjModel.from_xml_string(xml)
    parts = canonical_parts(skeleton)
    limits = np.repeat([TORQUE_LIMITS_NM[parts[j]] * config.torque_scale * mass / 70.0 for j in order[1:]], 3)
    mapping = find_mapping(skeleton)
    feet = np.array([mapping.joints.get(f"{s}_{j}", mapping[f"{s}_foot"]) for s in "lr" for j in ("foot", "toes")])
    soles = [g for g in range(model.ngeom) if (model.geom(g).name or "").startswith("sole")]
    ends = np.array([*(mapping[f"{s}_{j}"] for j in ("hand", "foot") for s in "lr"), mapping["head"]])
    return SimulatedBody(model, skeleton, np.array(order), mass, limits, feet, radii, soles, ends)
