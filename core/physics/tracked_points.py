"""The head and hands put back where the solve had them after the simulated body has moved (PhysicsConfig.head_on_solve,
hands_on_solve): the headset and the controllers are tracked, so the avatar's head and hands stay on them while the
body answers to the floor.

The torso of the simulated pose turns about its spine joint to point the neck at the solve's neck, and the neck and
head take the solve's world rotations (the simulated body lags a walk by a few centimetres); then each arm is bent by
two-bone IK (ik/two_bone.py) from its own shoulder so that the wrist reaches the solve's wrist, its elbow turned
where the wrist would break (ik/wrist_swivel.py), and the hand takes the solve's global rotation; the rest of the
pose is the simulation's. The same functions serve the offline pass and the live one, a frame at a time.
"""
from __future__ import annotations

import numpy as np

from dataclasses import dataclass, replace

from ..anim.motion import Motion
from ..config import PhysicsConfig
from ..ik.two_bone import Arms, two_bone_ik
from ..ik.wrist_swivel import elbows_turned
from ..math import quat
from ..math.vector import unit
from ..solution import Progress
from .tracking import PhysicsResult, track


MAX_TORSO_TURN_DEG = 45.0
"""The simulated torso turns toward the solve's neck at most this much: where the body has lost its target farther
(a dance's fast turn: up to 95 degrees on Perfume's A), a torso bent over sideways would be worse than a head off."""


@dataclass(frozen=True)
class Neck:
    """The joints that put the head on the solve's: the spine joint the torso turns about, the neck, the head."""

    pivot: int
    neck: int
    head: int


def tracked_chains(motion: Motion) -> tuple[Neck | None, Arms | None]:
    """The skeleton's neck and arms (one mapping of it; a humanoid has spine, neck and head), each None where the
    skeleton has none to turn or bend."""
    from ..rig.humanoid import find_mapping

    try:
        mapping = find_mapping(motion.skeleton)
    except (KeyError, ValueError):
        return None, None
    neck = Neck(mapping["spine"], mapping["neck"], mapping["head"])
    try:
        arms = Arms.of(motion.skeleton, mapping)
    except (KeyError, ValueError):
        arms = None
    return neck, arms


def head_on_solve(simulated: Motion, solved: Motion, wanted, neck: Neck | None) -> Motion:
    """`simulated` with the torso turned about the spine joint toward the solve's neck and the neck and head at the
    solve's world rotations (module docstring); frames (T,) of both motions on one skeleton, `wanted` the solve's
    global rotations and positions."""
    if neck is None:
        return simulated
    parents = simulated.skeleton.parents
    rotations, positions = simulated.global_transforms()
    wanted_rotations, wanted_positions = wanted
    pivot = positions[:, neck.pivot]
    turn = quat.at_most(quat.between(positions[:, neck.neck] - pivot, wanted_positions[:, neck.neck] - pivot),
                        np.radians(MAX_TORSO_TURN_DEG))
    local = simulated.rotations.copy()
    parent = parents[neck.pivot]
    turned = quat.multiply(turn, rotations[:, neck.pivot])
    local[:, neck.pivot] = turned if parent < 0 else quat.inverse_multiply(rotations[:, parent], turned)
    above = quat.multiply(turn, rotations[:, parents[neck.neck]])  # the neck's parent after the turn
    local[:, neck.neck] = quat.inverse_multiply(above, wanted_rotations[:, neck.neck])
    if parents[neck.head] == neck.neck:
        local[:, neck.head] = solved.rotations[:, neck.head]
    local = quat.nearest_sign(quat.normalize(local), simulated.rotations)
    return Motion(simulated.skeleton, local, simulated.positions, simulated.fps, simulated.name)


def hands_on_solve(simulated: Motion, wanted, arms: Arms | None) -> Motion:
    """`simulated` with each arm bent so that its wrist and hand are the solve's (module docstring), `wanted` the
    solve's global rotations and positions, frame by frame on the same skeleton."""
    if arms is None:
        return simulated
    rotations, positions = simulated.global_transforms()
    wanted_rotations, wanted_positions = wanted
    chains = arms.chains
    upper, fore = two_bone_ik(positions[:, chains[:, 1]], positions[:, chains[:, 2]], positions[:, chains[:, 3]],
                              wanted_positions[:, chains[:, 3]], rotations[:, chains[:, 1]],
                              rotations[:, chains[:, 2]], swung=True)
    hands = wanted_rotations[:, chains[:, 3]]
    upper, fore = elbows_turned(rotations[:, chains], positions[:, chains], upper, fore, hands,
                                np.ones((len(simulated), 2), dtype=bool), unit(simulated.skeleton.offsets[chains[:, 3]]))
    chain_rotations = rotations[:, chains].copy()
    chain_rotations[:, :, 3] = hands
    local = simulated.rotations.copy()
    arms.set(local, chain_rotations, upper, fore, np.ones((len(simulated), 2), dtype=bool))
    return Motion(simulated.skeleton, quat.normalize(local), simulated.positions, simulated.fps, simulated.name)


def track_to_the_devices(motion: Motion, config: PhysicsConfig = PhysicsConfig(), planted: np.ndarray | None = None,
                         progress: Progress | None = None) -> PhysicsResult:
    """The offline physics pass over a solved motion (tracking.track, `planted` (F, 2) the solver's contacts if it
    has them, `progress` told the share simulated), its head and hands then put back on the motion's
    (`on_the_devices`)."""
    result = track(motion, config, planted, progress)
    return replace(result, motion=on_the_devices(result.motion, motion, config, *tracked_chains(motion)))


def on_the_devices(simulated: Motion, solved: Motion, config: PhysicsConfig, neck: Neck | None,
                   arms: Arms | None) -> Motion:
    """`simulated` with its head (`config.head_on_solve`) and then its hands (`config.hands_on_solve`) put back on
    the solve's (`tracked_chains`: `neck`, `arms`)."""
    if not (config.head_on_solve or config.hands_on_solve):
        return simulated
    wanted = solved.global_transforms()
    if config.head_on_solve:
        simulated = head_on_solve(simulated, solved, wanted, neck)
    if config.hands_on_solve:
        simulated = hands_on_solve(simulated, wanted, arms)
    return simulated
