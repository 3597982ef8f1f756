"""What the physics pass's motion does on the floor (issue 43's figures): how deep the feet go into it, how high
they hover while a foot should be planted, how much they slide, how hard the root's residual pushes, and how
often the centre of mass leaves the support of two planted feet."""
from __future__ import annotations

import numpy as np

from ..anim.contacts import contact_weights, planted
from ..anim.motion import Motion
from ..config import PhysicsConfig
from ..quality.metrics import foot_skate_cm_s
from ..rig.humanoid import find_mapping
from .body import NEAR_FLOOR_M, SOLE_RADIUS_M, SimulatedBody, simulated_body
from .support import outside_support
from .tracking import PhysicsResult, target_poses


def floor_points(motion: Motion, body: SimulatedBody) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One pass over the motion's poses: (the sole points' lowest points (F, S, 3), the whole body's centre of mass
    (F, 3), the height of the body's lowest point (F,) over any body part: every capsule and sphere, the feet by
    their soles, since their capsules carry the feet's mass and are thicker than the soles they stand on)."""
    import mujoco

    model, data = body.model, mujoco.MjData(body.model)
    capsules = model.geom_type == mujoco.mjtGeom.mjGEOM_CAPSULE
    feet = [list(body.joints).index(j) + 1 for j in body.feet]
    counted = ~np.isin(model.geom_bodyid, feet)
    counted[body.soles] = True
    radius, half_length = model.geom_size[:, 0], np.where(capsules, model.geom_size[:, 1], 0.0)
    soles, centres, lowest = [], [], []
    hips_body = 1
    for qpos in target_poses(motion, body):
        data.qpos[:] = qpos
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        soles.append(data.geom_xpos[body.soles] - [0.0, SOLE_RADIUS_M, 0.0])
        centres.append(data.subtree_com[hips_body].copy())
        axis_height = np.abs(data.geom_xmat.reshape(-1, 3, 3)[:, 1, 2])  # each geom's local z, seen on world y
        lowest.append(float((data.geom_xpos[:, 1] - half_length * axis_height - radius)[counted].min()))
    return np.array(soles), np.array(centres), np.array(lowest)


def soles_and_centre(motion: Motion, body: SimulatedBody) -> tuple[np.ndarray, np.ndarray]:
    """(the sole points' lowest points (F, S, 3), the whole body's centre of mass (F, 3)) of the motion's poses."""
    return floor_points(motion, body)[:2]


def toe_positions(motion: Motion) -> np.ndarray:
    """(F, 2, 3) the motion's toes (left, right) in the world."""
    mapping = find_mapping(motion.skeleton)
    return motion.global_positions()[:, [mapping["l_toes"], mapping["r_toes"]]]


def toe_contacts(motion: Motion) -> np.ndarray:
    """(F, 2) where the motion's own toes are planted (left, right), from their height and speed."""
    toes = toe_positions(motion)
    return planted(np.stack([contact_weights(toes[:, k], motion.fps) for k in (0, 1)], axis=1))


def balance_frames(soles: np.ndarray, centres: np.ndarray, planted: np.ndarray) -> float | None:
    """The share of the frames with both feet planted (F, 2) whose centre of mass (F, 3) lies more than 2 cm outside
    the support of the sole points (F, S, 3) within NEAR_FLOOR_M of the floor; None without such frames."""
    outside = [outside_support(centres[t, [0, 2]], soles[t, soles[t, :, 1] < NEAR_FLOOR_M][:, [0, 2]])
               for t in np.flatnonzero(planted.all(axis=1))]
    return round(float(np.mean(outside)), 4) if outside else None


def truth_balance(motion: Motion, config: PhysicsConfig = PhysicsConfig()) -> float | None:
    """`balance_frames` of a motion as captured: its own skeleton's body and soles, its own toe contacts (what the
    person's balance measures by the same rule)."""
    body = simulated_body(motion.skeleton, config, motion)
    soles, centres, _ = floor_points(motion, body)
    return balance_frames(soles, centres, toe_contacts(motion))


def planted_figures(soles: np.ndarray, centres: np.ndarray, planted: np.ndarray) -> dict:
    """`float_cm` (the lowest sole point above the floor, mean over the frames with a foot planted) and
    `balance_frames` of a motion's sole points (F, S, 3) and centres of mass (F, 3), with `planted` (F, 2) saying
    which feet count as planted; and how many frames each is counted over (`float_counted_frames`,
    `balance_counted_frames`)."""
    lowest = soles[:, :, 1].min(axis=1)
    any_planted = planted.any(axis=1)
    return {"float_cm": round(100.0 * float(np.maximum(lowest[any_planted], 0.0).mean()), 3) if any_planted.any()
            else None,
            "balance_frames": balance_frames(soles, centres, planted),
            "float_counted_frames": int(any_planted.sum()), "balance_counted_frames": int(planted.all(axis=1).sum())}


def on_truth_contacts(motion: Motion, body: SimulatedBody, truth: Motion) -> dict:
    """`planted_figures` of a tracked motion counted where the truth has its feet planted (SPEC §5's float: "while
    the truth has a planted foot"), frame for frame: the motion at the truth's rate, from its first frame (a
    resampled stream may end a frame short)."""
    if abs(motion.fps - truth.fps) > 1e-6 or abs(len(motion) - len(truth)) > 1:
        raise ValueError(f"the motion ({len(motion)} frames at {motion.fps:g} fps) is not on the truth's frames "
                         f"({len(truth)} at {truth.fps:g} fps)")
    soles, centres, _ = floor_points(motion, body)
    frames = min(len(motion), len(truth))
    return planted_figures(soles[:frames], centres[:frames], toe_contacts(truth)[:frames])


def physics_figures(result: PhysicsResult, planted: np.ndarray) -> dict:
    """The figures of the tracked motion; `planted` (F, 2): where the solve has each foot planted (an evaluation
    counts float and balance on the truth's instead: `on_truth_contacts`)."""
    soles, centres, lowest_part = floor_points(result.motion, result.body)
    lowest = soles[:, :, 1].min(axis=1)
    toes = toe_positions(result.motion)
    return {"floor_penetration_cm": round(100.0 * float(np.maximum(-lowest, 0.0).mean()), 3),
            "body_penetration_cm": round(100.0 * float(np.maximum(-lowest_part, 0.0).mean()), 3),
            **planted_figures(soles, centres, planted),
            "foot_skate_cm_s": round(foot_skate_cm_s(toes, result.motion.fps), 3),
            "residual_force_n": round(float(result.residual_force_n.mean()), 1),
            "residual_torque_nm": round(float(result.residual_torque_nm.mean()), 1),
            "resets": int(result.resets.sum()),
            "reset_frames": round(float(result.resets[1:].mean()), 4) if len(result.resets) > 1 else 0.0,
            "ms_per_frame": round(result.ms_per_frame, 2)}
