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
    """Skeleton indices of the hands and feet (left hand, right hand, left foot, right foot): the tracking's task
    points."""


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


def soles(motion: Motion, feet: list[int]) -> dict[int, list[np.ndarray]]:
    """Per foot joint (heel: the foot; ball: the toes), the contact points under it in its own frame: straight
    down (the floor's normal as the joint sees it when planted) by its planted height less SOLE_RADIUS_M, and for
    the toes also under the toe tip (its end site)."""
    rotations, positions = motion.global_transforms()
    end_sites = dict(motion.skeleton.end_sites)
    points = {}
    for j in feet:
        height = positions[:, j, 1]
        planted = height <= np.percentile(height, 5) + PLANTED_BAND_M
        down = quat.inverse_rotate(rotations[planted, j], np.array([0.0, -1.0, 0.0])).mean(axis=0)
        down /= np.linalg.norm(down)
        drop = max(float(np.median(height[planted])) - SOLE_RADIUS_M, 0.0)
        points[j] = [down * drop]
        if j in end_sites:
            points[j].append(np.asarray(end_sites[j], dtype=float) + down * drop)
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
    mapping = find_mapping(skeleton)
    feet = [mapping.joints[f"{s}_{j}"] for s in "lr" for j in ("foot", "toes") if f"{s}_{j}" in mapping.joints]
    sole = soles(motion, feet) if motion is not None else {}
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
    ends = np.array([mapping[f"{s}_{j}"] for j in ("hand", "foot") for s in "lr"])
    return SimulatedBody(model, skeleton, np.array(order), mass, limits, feet, radii, soles, ends)
