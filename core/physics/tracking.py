"""Tracking a solved motion with the simulated body, one step at a time (live and offline share `PhysicsTracker`).

Each step solves one quadratic program (DAQP) over the generalised accelerations q̈, the contact forces and the
root's residual force r, as PhysCap and PIP do:
- minimise |q̈ − q̈*|² (q̈*: back onto the target, critically damped: PhysicsConfig stiffness and damping on
  MuJoCo's `mj_differentiatePos` error) + task_weight·|the hands' and feet's joints accelerate toward the
  target's places|² + slide_weight·|sole points on the floor (within LANDING_M), or near it where their foot
  stands (the solver has it planted, or its target stands still on the floor), stop sliding|² +
  PLANTED_DOWN_WEIGHT·|sole points held in place stay down|² + small |r|², |f|² (a foot the target swings just
  above the floor swings on);
- subject to the equations of motion's root rows, M_r q̈ + c_r = (Jᵀf)_r + r (the root has no motor: only the
  floor and the bounded residual move it); the joint torques τ = (M q̈ + c − Jᵀf)_joints within their limits;
  each contact force a non-negative sum of its friction pyramid's edges (unilateral, within friction), at the
  sole points within NEAR_FLOOR_M of the floor; a sole point within LANDING_M of the floor or under it does not
  accelerate into it harder than a spring on its height allows, nor, where the solver has its foot planted, slide
  along it (HOLD_BAND_M_S2; let go where its target drags it LET_GO_M away); |r| within PhysicsConfig's bounds.
The body then moves by q̈ (semi-implicit Euler, `mj_integratePos`), and a sole point left under the floor lifts the
body out (`out_of_the_floor`). The target's lowest sole is first put on the floor where it is near it (`grounded`).
MuJoCo gives the model's inertia, bias forces and Jacobians; the floor is the QP's. A target root that jumps farther
than `teleport_m`, or from its last frame's faster than any body moves or turns (devices/jumps.py: a teleport or a
recentring the solve followed), a frame longer than LONGEST_FRAME_S (or of no finite length), or a step the QP finds
no answer for within its bounds and ITERATION_LIMIT, resets the simulation onto the target (reported per frame).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..anim.motion import Motion
from ..config import PhysicsConfig
from ..devices.jumps import jumped, turn_limit, vertical_turns
from ..math import quat
from ..solution import Progress, with_progress
from .body import NEAR_FLOOR_M, SOLE_RADIUS_M, SimulatedBody, simulated_body

PYRAMID = np.array([[1.0, 1.0, 0.0], [-1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [0.0, 1.0, -1.0]])
"""The friction pyramid's edges (x, up, z), their horizontal parts times the friction coefficient."""
FLOOR_STIFFNESS, FLOOR_DAMPING = 400.0, 40.0
"""A sole point at the floor accelerates down no harder than a critically damped spring on its height allows
(1/s², 1/s): it lands and stops, and one under the floor comes back up."""
LANDING_M = 0.005
"""... from this height up to the floor; from this height down, a sole point is on the floor."""
STILL_M_S = 0.2
"""A target sole point on the floor moving slower than this stands there: its simulated one, near the floor, is
held."""
UNITS = {"force": 100.0, "residual": 10.0}
"""The QP's contact forces and residual are solved for in these units (N, N and N·m): with the forces' small weight
in newtons the program is ill-conditioned (quadprog's active-set method cycled without end on it)."""
INFINITE, EQUALITY = 1e30, 5
"""DAQP's unbounded side, and its sense flag for a row held with equality."""
ITERATION_LIMIT = 1000
"""Active-set iterations a step may take; a step that needs more is reset onto its target (reported)."""
HOLD_BAND_M_S2 = 0.1
"""A sole point of a planted foot on the floor is held in place along it: its acceleration along the floor within
this of stopping it in one step (m/s²)."""
LET_GO_M = 0.1
"""... until its target is this far from it along the floor (the solver's contact is wrong, or its target drags the
foot away): then it is only asked to stop sliding, as other held points are, until it is back within CAUGHT_M of
its target or off the floor."""
CAUGHT_M = 0.02
"""A let-go sole point whose target is back within this of it along the floor is held in place again."""
PLANTED_DOWN_WEIGHT = 300.0
"""How hard a sole point held in place is asked to stay on the floor: its upward acceleration against the floor's
spring, a cost (as a bound it made the program infeasible wherever a heel rose against it)."""
SHORTEST_STEP_S = 1e-3
"""A frame's time is simulated in equal steps no longer than 1/sim_hz, and at least this long (a stream that
repeats a timestamp still moves the body a millisecond)."""
LONGEST_FRAME_S = 0.25
"""A frame longer than this (tracking lost, the stream paused) resets the body onto its target, as a teleport does,
rather than simulating the gap in up to sim_hz steps a second."""
HEAD_TASK_SHARE = 0.3
"""The head follows its target with this share of the hands' and feet's task weight: enough to keep it near the
headset the solve put it at, not so much that a target dragged along the floor pulls planted feet after it."""
ACCELERATION_LIMIT = 1e4
"""A QP answer with a generalised acceleration beyond this (m/s², rad/s²) is a numerical failure, not a motion."""
REGULARISATION = {"force": 1e-6, "residual": 1e-2, "root_acceleration": 10.0}
"""Weights of the QP's small terms: contact forces, the residual, and the root's acceleration error over the
joints' (the root follows its target ten times as hard)."""


@dataclass
class PhysicsStep:
    """What one output frame's steps did."""

    qpos: np.ndarray
    residual_force_n: float
    """Mean norm of the root's residual force over the frame's steps."""
    residual_torque_nm: float
    reset: bool
    """The target jumped (teleport) and the simulation was put onto it."""


def tracking_qp(inertia, bias, wanted, contacts, torque_limits, config: PhysicsConfig, velocity, dt, tasks=()):
    """(q̈ (nv,), residual (6,), contact forces' generalised force (nv,)) of one step (module docstring), or None
    where DAQP finds no solution within the bounds (or gives up: a cycle, ITERATION_LIMIT). `contacts`: (height,
    Jacobian (3, nv), held) of each sole point near the floor, held where its foot stands (PhysicsTracker.step);
    (pinned: held in place, `PhysicsTracker.held_in_place`); `tasks`: (Jacobian (3, nv), wanted acceleration
    (3,), weight) of each point asked to follow its target.
    Solved by DAQP (Arnström's dual active-set method, with an iteration limit): the program is small and dense."""
    import daqp

    nv, edges = len(wanted), PYRAMID * [config.friction, 1.0, config.friction]
    nl = 4 * len(contacts)
    n = nv + nl + 6
    weights = np.ones(nv)
    weights[:6] = REGULARISATION["root_acceleration"]
    hessian = np.zeros((n, n))
    gradient = np.zeros(n)
    hessian[:nv, :nv] = np.diag(weights)
    gradient[:nv] = -weights * wanted
    hessian[nv:nv + nl, nv:nv + nl] = REGULARISATION["force"] * np.eye(nl)
    hessian[nv + nl:, nv + nl:] = REGULARISATION["residual"] * np.eye(6)
    for jacobian, acceleration, weight in tasks:
        hessian[:nv, :nv] += weight * jacobian.T @ jacobian
        gradient[:nv] -= weight * jacobian.T @ acceleration
    pushes = np.zeros((nv, nl))
    bands = []  # (Jacobian row, lowest and highest acceleration allowed)
    for k, (height, jacobian, held, pinned) in enumerate(contacts):
        pushes[:, 4 * k:4 * k + 4] = jacobian.T @ edges.T
        if held or height <= LANDING_M:
            across = jacobian[[0, 2]]
            hessian[:nv, :nv] += config.slide_weight * across.T @ across
            gradient[:nv] += config.slide_weight * across.T @ (across @ velocity) / dt
        if height <= LANDING_M:
            spring = -(FLOOR_STIFFNESS * height + FLOOR_DAMPING * (jacobian[1] @ velocity))
            bands.append((jacobian[1], spring, INFINITE))
            if pinned:
                hessian[:nv, :nv] += PLANTED_DOWN_WEIGHT * np.outer(jacobian[1], jacobian[1])
                gradient[:nv] -= PLANTED_DOWN_WEIGHT * spring * jacobian[1]
                stops = -(jacobian[[0, 2]] @ velocity) / dt
                bands.extend((jacobian[axis], stop - HOLD_BAND_M_S2, stop + HOLD_BAND_M_S2)
                             for axis, stop in zip((0, 2), stops))
    motion_rows = np.concatenate([inertia, -pushes, np.zeros((nv, 6))], axis=1)
    motion_rows[:6, nv + nl:] = -np.eye(6)
    residual = np.array([config.residual_force_n] * 3 + [config.residual_torque_nm] * 3)
    units = np.concatenate([np.ones(nv), np.full(nl, UNITS["force"]), np.full(6, UNITS["residual"])])
    # Bounds on x / units first (accelerations free, forces' pyramid weights >= 0, the residual within its bounds),
    # then rows: the root's equations of motion (equalities), the joint torques within their limits, the landing
    # springs and the planted soles' holds.
    band_rows = np.zeros((len(bands), n))
    band_rows[:, :nv] = [row for row, _, _ in bands] if bands else np.zeros((0, nv))
    rows = np.concatenate([motion_rows, band_rows]) * units
    free = np.full(nv, INFINITE)
    lower = np.concatenate([-free, np.zeros(nl), -residual / UNITS["residual"], -bias[:6],
                            -torque_limits - bias[6:], [low for _, low, _ in bands]])
    upper = np.concatenate([free, np.full(nl, INFINITE), residual / UNITS["residual"], -bias[:6],
                            torque_limits - bias[6:], [high for _, _, high in bands]])
    sense = np.zeros(len(lower), dtype=np.intc)
    sense[n:n + 6] = EQUALITY
    sense[nv + nl:n][residual <= 0.0] = EQUALITY
    x, _, exit_flag, _ = daqp.solve(units[:, None] * hessian * units, units * gradient, rows, upper, lower, sense,
                                    iter_limit=ITERATION_LIMIT)
    if exit_flag < 1:  # no answer within the bounds, or none found within the iterations
        return None
    x = units * np.asarray(x)
    if not np.isfinite(x).all() or np.abs(x[:nv]).max() > ACCELERATION_LIMIT:
        return None
    return x[:nv], x[nv + nl:], pushes @ x[nv:nv + nl]


class PhysicsTracker:
    """One simulated body following target poses (MuJoCo qpos) given at a frame rate."""

    def __init__(self, body: SimulatedBody, config: PhysicsConfig = PhysicsConfig()):
        import mujoco

        self.mujoco, self.body, self.config = mujoco, body, config
        self.data, self.target_data = mujoco.MjData(body.model), mujoco.MjData(body.model)
        self.previous: np.ndarray | None = None
        self.speed_unknown = True
        """Whether the body was put on a target without a speed, to take the target's on the next step."""
        simulated = list(body.joints)
        self.task_bodies = [simulated.index(j) + 1 for j in body.ends]
        """MuJoCo bodies of the hands, feet and head (task points at their joints)."""
        self.task_weights = config.task_weight * np.array([1.0, 1.0, 1.0, 1.0, HEAD_TASK_SHARE])
        """Each task point's weight, in `body.ends`' order: the head's HEAD_TASK_SHARE of the others'."""
        self.previous_ends: np.ndarray | None = None
        self.previous_soles: np.ndarray | None = None
        self.let_go = np.zeros(len(body.soles), dtype=bool)
        """(S,) sole points of a planted foot let go (`held_in_place`)."""
        left = {simulated.index(j) + 1 for j in body.feet[:2]}
        self.sole_sides = np.array([0 if body.model.geom_bodyid[g] in left else 1 for g in body.soles])
        """(S,) each sole point's foot: 0 left, 1 right."""

    def reset(self, qpos: np.ndarray, qvel: np.ndarray | None = None) -> None:
        """The body put at `qpos` moving at `qvel`; without it, at the target's speed from the next step on (the
        first frame, a teleport, a long gap: the speed is not known until the target moves again)."""
        self.data.qpos[:] = qpos
        self.data.qvel[:] = 0.0 if qvel is None else qvel
        self.speed_unknown = qvel is None
        self.let_go[:] = False
        self.mujoco.mj_forward(self.body.model, self.data)
        self.previous = np.array(qpos, dtype=float)
        self.previous_ends = self.ends_at(qpos)

    def go_on_from(self, earlier: "PhysicsTracker") -> None:
        """Carry on from another tracker's state (a body rebuilt with other bone lengths): its pose and speed, and
        the last target it followed, so that the next step's target velocity and held soles are as they would
        have been."""
        self.reset(earlier.data.qpos.copy(), earlier.data.qvel.copy())
        if earlier.previous is not None:
            self.previous = earlier.previous.copy()
            self.previous_ends = self.ends_at(self.previous)
        self.previous_soles = None if earlier.previous_soles is None else earlier.previous_soles.copy()
        self.let_go = earlier.let_go.copy()
        self.speed_unknown = earlier.speed_unknown

    def velocity(self, start: np.ndarray, end: np.ndarray, dt: float) -> np.ndarray:
        """The generalised velocity that moves `start` to `end` in `dt` seconds."""
        out = np.zeros(self.body.model.nv)
        self.mujoco.mj_differentiatePos(self.body.model, out, dt, start, end)
        return out

    def held_in_place(self, planted: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """(S,) the sole points held in place this step (HOLD_BAND_M_S2): those of the feet the solver has planted
        (`planted` (S,)), but for those let go, whose target `targets` (S, 3) has gone LET_GO_M from them along the
        floor and not yet come back within CAUGHT_M, nor left the floor."""
        self.mujoco.mj_kinematics(self.body.model, self.data)
        now = self.data.geom_xpos[self.body.soles] - [0.0, SOLE_RADIUS_M, 0.0]
        apart = np.linalg.norm((now - targets)[:, [0, 2]], axis=1)
        caught = (now[:, 1] > NEAR_FLOOR_M) | (apart < CAUGHT_M)
        self.let_go = planted & ~caught & (self.let_go | (apart > LET_GO_M))
        return planted & ~self.let_go

    def contacts(self, standing: np.ndarray, pinned: np.ndarray) -> list:
        """(height, Jacobian (3, nv), held, pinned) of each sole point within NEAR_FLOOR_M of the floor; held where
        `standing` (S,) says its foot stands, pinned where `pinned` (S,) holds it in place."""
        model, data = self.body.model, self.data
        found = []
        for geom, stands, pin in zip(self.body.soles, standing, pinned):
            point = data.geom_xpos[geom] - [0.0, SOLE_RADIUS_M, 0.0]
            if point[1] < NEAR_FLOOR_M:
                jacobian = np.zeros((3, model.nv))
                self.mujoco.mj_jac(model, data, jacobian, None, point, model.geom_bodyid[geom])
                found.append((float(point[1]), jacobian, bool(stands), bool(pin)))
        return found

    def ends_at(self, qpos: np.ndarray) -> np.ndarray:
        """(K, 3) where the hands' and feet's joints are in the pose `qpos` (none without task_weight)."""
        if self.config.task_weight <= 0.0:
            return np.zeros((0, 3))
        self.target_data.qpos[:] = qpos
        self.mujoco.mj_kinematics(self.body.model, self.target_data)
        return self.target_ends()

    def target_ends(self) -> np.ndarray:
        """(K, 3) the hands' and feet's joints in the pose `target_data` was last posed in (none without
        task_weight)."""
        return self.target_data.xpos[self.task_bodies].copy() if self.config.task_weight > 0.0 else np.zeros((0, 3))

    def tasks(self, ends: np.ndarray, end_velocities: np.ndarray) -> list:
        """(Jacobian (3, nv), wanted acceleration (3,), weight) of each hand, foot and head joint toward its target
        place `ends` (K, 3) moving at `end_velocities`, critically damped with the joints' gains; the head's weight
        HEAD_TASK_SHARE of the others' (task_weight)."""
        model, data, config = self.body.model, self.data, self.config
        found = []
        for body, place, speed, weight in zip(self.task_bodies, ends, end_velocities, self.task_weights):
            jacobian = np.zeros((3, model.nv))
            self.mujoco.mj_jacBody(model, data, jacobian, None, body)
            wanted = config.stiffness * (place - data.xpos[body]) + config.damping * (speed - jacobian @ data.qvel)
            found.append((jacobian, wanted, weight))
        return found

    def grounded(self, target: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the target pose lowered or raised so that its lowest sole point stands on the floor where it is under
        it or within `grounding_m` above it, the correction fading out from there to twice that height (a step or
        jump's flight is left as it is); its sole points (S, 3); its hands' and feet's joints (K, 3), as `ends_at`),
        from one kinematics pass. The solve plants its feet on its own skeleton's
        soles, which stand a little above or below this body's at times; tracked as they are, the body would float
        on a contact it never reaches."""
        self.target_data.qpos[:] = target
        self.mujoco.mj_kinematics(self.body.model, self.target_data)
        places = self.target_data.geom_xpos[self.body.soles] - [0.0, SOLE_RADIUS_M, 0.0]
        heights = places[:, 1]
        band, lowest = self.config.grounding_m, float(heights.min())
        shift = lowest * float(np.clip(2.0 - lowest / band, 0.0, 1.0)) if band > 0.0 else 0.0
        grounded = np.array(target, dtype=float)
        grounded[1] -= shift
        return grounded, places - [0.0, shift, 0.0], self.target_ends() - [0.0, shift, 0.0]

    def out_of_the_floor(self) -> None:
        """Where a sole point has gone under the floor, the body lifted out of it and its fall stopped (the floor
        is rigid: a position-level projection after the step)."""
        self.mujoco.mj_kinematics(self.body.model, self.data)
        depth = -float((self.data.geom_xpos[self.body.soles, 1] - SOLE_RADIUS_M).min())
        if depth > 0.0:
            self.data.qpos[1] += depth
            self.data.qvel[1] = max(float(self.data.qvel[1]), 0.0)

    def step(self, target: np.ndarray, dt: float, planted: np.ndarray | None = None) -> PhysicsStep:
        """Simulate `dt` seconds toward the target pose `target` (qpos); the first call puts the body on it.
        `planted` (2,): where the solver has each foot (left, right) planted, if it says; a planted foot's soles
        near the floor are held, as are those whose target stands still on it, and those on it held in place."""
        lowered = float(target[1])
        target, soles, ends = self.grounded(target)
        lowered -= float(target[1])
        standing = np.zeros(len(soles), dtype=bool) if self.previous_soles is None else \
            (np.linalg.norm((soles - self.previous_soles)[:, [0, 2]], axis=1) < STILL_M_S * dt) & (
                soles[:, 1] <= LANDING_M)
        self.previous_soles = soles
        planted_soles = np.zeros(len(soles), dtype=bool) if planted is None else \
            np.asarray(planted, dtype=bool)[self.sole_sides]
        standing |= planted_soles
        if self.previous is None or not np.isfinite(dt) or dt > LONGEST_FRAME_S or \
                np.linalg.norm(target[:3] - self.data.qpos[:3]) > self.config.teleport_m or \
                self.target_jumped(target, dt):
            self.reset(target)
            return PhysicsStep(self.data.qpos.copy(), 0.0, 0.0, True)
        pinned = self.held_in_place(planted_soles, soles)
        model, data, config = self.body.model, self.data, self.config
        target_velocity = self.velocity(self.previous, target, max(dt, 1e-6))
        if self.speed_unknown:
            data.qvel[:] = target_velocity
            self.speed_unknown = False
        end_velocities = (ends - self.previous_ends) / max(dt, 1e-6)
        self.previous, self.previous_ends = np.array(target, dtype=float), ends
        places = swinging_feet_kept_up(ends, planted, lowered)
        steps = max(1, int(np.ceil(dt * config.sim_hz - 1e-6)))
        h = max(dt, SHORTEST_STEP_S) / steps
        forces, torques = [], []
        for _ in range(steps):
            self.mujoco.mj_forward(model, data)
            inertia = np.zeros((model.nv, model.nv))
            self.mujoco.mj_fullM(model, data, inertia)
            wanted = (config.stiffness * self.velocity(data.qpos, target, 1.0)
                      + config.damping * (target_velocity - data.qvel))
            solved = tracking_qp(inertia, data.qfrc_bias.copy(), wanted, self.contacts(standing, pinned),
                                 self.body.torque_limits,
                                 config, data.qvel.copy(), h, self.tasks(places, end_velocities))
            if solved is None:  # no step within the bounds: back onto the target, as after a teleport
                self.reset(target, target_velocity)
                return PhysicsStep(data.qpos.copy(), 0.0, 0.0, True)
            acceleration, residual, _ = solved
            data.qvel[:] = data.qvel + h * acceleration
            self.mujoco.mj_integratePos(model, data.qpos, data.qvel, h)
            self.out_of_the_floor()
            forces.append(np.linalg.norm(residual[:3]))
            torques.append(np.linalg.norm(residual[3:]))
        return PhysicsStep(data.qpos.copy(), float(np.mean(forces)), float(np.mean(torques)), False)


    def target_jumped(self, target: np.ndarray, dt: float) -> bool:
        """Whether the target's root moved along the floor or turned about the vertical, since the last frame's,
        faster than a body can (devices/jumps.py)."""
        turn = abs(float(vertical_turns(self.previous[3:7], target[3:7])))
        return jumped(target[:3] - self.previous[:3], dt) or \
            turn >= turn_limit(dt)


def swinging_feet_kept_up(ends: np.ndarray, planted: np.ndarray | None, lowered_m: float) -> np.ndarray:
    """The task places (`ends`, K, 3: left hand, right hand, left foot, right foot, head) with a foot the
    solver swings over its planted one put back up by what the grounding lowered the target (`lowered_m`): the
    target is lowered onto its planted sole, and a swinging foot lowered with it would come down early, its toe
    sweeping along the floor before the solve's lands. With neither foot planted both are lowered, onto the floor
    where the solve's stance is late or early."""
    if planted is None or len(ends) < 4 or lowered_m <= 0.0:
        return ends
    planted = np.asarray(planted, dtype=bool)
    places = ends.copy()
    places[2:4, 1] += np.where(~planted & planted[::-1], lowered_m, 0.0)
    return places


def held_frames(targets: np.ndarray, fps: float) -> np.ndarray:
    """(F,) the frames of a run of identical target poses (F, nq) past its first LONGEST_FRAME_S: a pose held through
    a gap in the stream (solve.LongGaps), where the body is left as it was and put back on its target after."""
    same = np.concatenate([[False], np.all(targets[1:] == targets[:-1], axis=1)])
    run = np.zeros(len(targets), int)
    for k in np.flatnonzero(same):
        run[k] = run[k - 1] + 1
    return run > LONGEST_FRAME_S * fps


def target_poses(motion: Motion, body: SimulatedBody) -> np.ndarray:
    """(F, nq) the motion's poses as the body's qpos: the hips' global pose, then each ball joint's local rotation."""
    rotations, positions = motion.global_transforms()
    hips = body.joints[0]
    return np.concatenate([positions[:, hips], rotations[:, hips], motion.rotations[:, body.joints[1:]].reshape(
        len(motion), -1)], axis=1)


def motion_of(qpos: np.ndarray, motion: Motion, body: SimulatedBody) -> Motion:
    """The motion with the simulated joints' rotations and the hips' place taken from qpos (F, nq)."""
    rotations, positions = motion.rotations.copy(), motion.positions.copy()
    hips = body.joints[0]
    parent = motion.skeleton.parents[hips]
    hips_rotation, hips_position = qpos[:, 3:7], qpos[:, :3]
    if parent >= 0:
        parent_rotations, parent_positions = (a[:, parent] for a in motion.global_transforms())
        hips_position = quat.inverse_rotate(parent_rotations, hips_position - parent_positions)
        hips_rotation = quat.inverse_multiply(parent_rotations, hips_rotation)
    rotations[:, hips], positions[:, hips] = hips_rotation, hips_position
    rotations[:, body.joints[1:]] = qpos[:, 7:].reshape(len(qpos), -1, 4)
    return Motion(motion.skeleton, rotations, positions, motion.fps, motion.name)


@dataclass
class PhysicsResult:
    """The physics pass over a whole motion."""

    motion: Motion
    residual_force_n: np.ndarray
    """(F,) the root's residual force each frame (mean over its steps)."""
    residual_torque_nm: np.ndarray
    resets: np.ndarray
    """(F,) frames where the simulation was put onto a jumping target."""
    ms_per_frame: float
    body: SimulatedBody


def track(motion: Motion, config: PhysicsConfig = PhysicsConfig(), planted: np.ndarray | None = None,
          progress: Progress | None = None) -> PhysicsResult:
    """The motion as the simulated body follows it, frame by frame at the motion's rate (module docstring);
    `planted` (F, 2): where the solver has each foot planted, if it says; `progress` told the share of frames done."""
    body = simulated_body(motion.skeleton, config, motion)
    tracker = PhysicsTracker(body, config)
    started = time.perf_counter()
    targets = target_poses(motion, body)
    held = held_frames(targets, motion.fps)
    steps, dt = [], 1.0 / motion.fps
    for k in with_progress(range(len(targets)), progress):
        target = targets[k]
        if held[k]:  # a pose held past LONGEST_FRAME_S (a gap the solve skipped) is not simulated
            steps.append(PhysicsStep(steps[-1].qpos, 0.0, 0.0, False))
            continue
        steps.append(tracker.step(target, dt if k == 0 or not held[k - 1] else np.inf,
                                  None if planted is None else planted[k]))
    elapsed = time.perf_counter() - started
    return PhysicsResult(motion_of(np.array([s.qpos for s in steps]), motion, body),
                         np.array([s.residual_force_n for s in steps]), np.array([s.residual_torque_nm for s in steps]),
                         np.array([s.reset for s in steps]), 1000.0 * elapsed / max(len(steps), 1), body)
