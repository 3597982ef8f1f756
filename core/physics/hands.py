"""The hands put back where the solve had them after the simulated body has moved (PhysicsConfig.hands_on_solve):
the controllers are tracked, so the avatar's hands stay on them while the body answers to the floor.

Each arm of the simulated pose is bent by two-bone IK (ik/two_bone.py) from its own shoulder so that the wrist
reaches the solve's wrist, its elbow turned where the wrist would break (ik/wrist_swivel.py), and the hand takes
the solve's global rotation; the rest of the pose is the simulation's. The same function serves the offline pass and the live one, a frame at a time.
"""
from __future__ import annotations

import numpy as np

from dataclasses import replace

from ..anim.motion import Motion
from ..config import PhysicsConfig
from ..ik.two_bone import Arms, two_bone_ik
from ..ik.wrist_swivel import elbows_turned
from ..math import quat
from ..math.vector import unit
from ..solution import Progress
from .tracking import PhysicsResult, track


def arm_chains(motion: Motion) -> Arms | None:
    """The skeleton's arms as IK chains, or None where it has no arm chain to bend."""
    from ..rig.humanoid import find_mapping

    try:
        return Arms.of(motion.skeleton, find_mapping(motion.skeleton))
    except (KeyError, ValueError):
        return None


def hands_on_solve(simulated: Motion, solved: Motion, arms: Arms | None) -> Motion:
    """`simulated` with each arm bent so that its wrist and hand are the solve's (module docstring); frames (T,)
    of both motions on one skeleton."""
    if arms is None:
        return simulated
    rotations, positions = simulated.global_transforms()
    wanted_rotations, wanted_positions = solved.global_transforms()
    chains = arms.chains
    upper, fore = two_bone_ik(positions[:, chains[:, 1]], positions[:, chains[:, 2]], positions[:, chains[:, 3]],
                              wanted_positions[:, chains[:, 3]], rotations[:, chains[:, 1]],
                              rotations[:, chains[:, 2]])
    hands = wanted_rotations[:, chains[:, 3]]
    upper, fore = elbows_turned(rotations[:, chains], positions[:, chains], upper, fore, hands,
                                np.ones((len(simulated), 2), dtype=bool), unit(simulated.skeleton.offsets[chains[:, 3]]))
    chain_rotations = rotations[:, chains].copy()
    chain_rotations[:, :, 3] = hands
    local = simulated.rotations.copy()
    arms.set(local, chain_rotations, upper, fore, np.ones((len(simulated), 2), dtype=bool))
    return Motion(simulated.skeleton, quat.normalize(local), simulated.positions, simulated.fps, simulated.name)


def track_to_the_hands(motion: Motion, config: PhysicsConfig = PhysicsConfig(), planted: np.ndarray | None = None,
                       progress: Progress | None = None) -> PhysicsResult:
    """The offline physics pass over a solved motion (tracking.track, `planted` (F, 2) the solver's contacts if it
    has them, `progress` told the share simulated), its hands then put back on the motion's where
    `config.hands_on_solve`."""
    result = track(motion, config, planted, progress)
    if not config.hands_on_solve:
        return result
    return replace(result, motion=hands_on_solve(result.motion, motion, arm_chains(motion)))
