"""Evaluating upper-body IK (Parger et al. §4, Table 1): Parger's IK and FABRIK against mocap.

Each clip is turned into a simulated three-point stream; both solvers then pose the upper body on
the ground-truth torso (hips, spine, chest), and their neck, shoulder (arm anchor) and elbow
positions are compared with the clip's (RMSE, cm). `parger_head_chain` is Parger's chain as the
paper runs it, from the devices alone (neck from the HMD, §3.1). Calibration, per clip, from its
first half second, taken as the user's standing reference pose: arm lengths and neck / shoulder
offsets from the skeleton there, h_0 from the HMD height, device attachments from the joints.
The other joints (neck, shoulders, arms) start every frame from that reference pose, so neither
solver sees the clip's arms.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass

import numpy as np

from ...anim.motion import Motion, forward_kinematics
from ...config import SimulationConfig, UpperBodyIKConfig
from ...devices.attachments import implied_joint_positions
from ...devices.simulate import simulate_stream
from ..mocap_split import read_humanoid
from ...files.mocap import activity
from ...ik.fabrik import FabrikConfig, solve_chain
from ...ik.upper_body_ik import ik_constants, solve_upper_body
from ...ik.upper_body_pose import (ARM_JOINTS, UpperBodyJoints, calibrate_upper_body, neck_frames, pose_upper_body,
                              solved_joints)
from ...math import quat
from ...math.vector import length, unit
from ...rig.humanoid import HumanoidMapping
from ..arguments import add_data_arguments, add_json_argument, evaluation_files, print_progress

CALIBRATION_S = 0.5
REST_UPPER_ARM_DIRECTION = (0.0, -1.0, -0.2)
REST_FOREARM_DIRECTION = (0.0, -1.0, 0.3)
"""FABRIK's start pose in the neck frame (x left, y up, z forward)."""
JOINTS = ("neck", "shoulder", "elbow")
METHODS = ("parger", "fabrik", "parger_head_chain", "parger_fitted")
PAPER_URM = {"parger": {"neck_cm": 3.4, "shoulder_cm": 3.9, "elbow_cm": 4.6},
             "fabrik": {"neck_cm": 4.9, "shoulder_cm": 4.9, "elbow_cm": 15.7}}
"""Parger et al. Table 1, Unity Raw Mocap (standing, slow walking)."""


@dataclass
class Solved:
    """One method's joints on one clip: neck (T, 3), shoulders, elbows, wrists (T, 2, 3)."""

    neck: np.ndarray
    shoulders: np.ndarray
    elbows: np.ndarray
    wrists: np.ndarray


def reference_pose(motion: Motion, mapping: HumanoidMapping, frames: int) -> Motion:
    """The motion with everything above the chest held at its mean over the first `frames` frames."""
    held = solved_joints(mapping)
    rotations = motion.rotations.copy()
    rotations[:, held] = quat.mean(motion.rotations[:frames, held])
    return Motion(motion.skeleton, rotations, motion.positions, motion.fps, motion.name)


def solve_clip(path, simulation: SimulationConfig, config: UpperBodyIKConfig, fabrik: FabrikConfig,
               fitted: UpperBodyIKConfig | None = None):
    """Truth and the methods' joints for one clip, plus the wrist targets; `parger_fitted` if `fitted` is given."""
    sim = simulate_stream(read_humanoid(path), simulation)
    truth, mapping, stream = sim.truth, sim.mapping, sim.stream
    rotations, positions = truth.global_transforms()
    arm = {j: [mapping[f"{s}_{j}"] for s in "lr"] for j in ARM_JOINTS}
    implied = implied_joint_positions(stream, simulation.devices)
    heads, wrists = implied[:, 0], implied[:, 1:]
    hmd_positions, hmd_rotations, controllers = stream.positions[:, 0], stream.rotations[:, 0], stream.rotations[:, 1:]

    n = max(1, int(round(CALIBRATION_S * truth.fps)))
    calibration, attachments, frame_in_chest = calibrate_upper_body(truth, stream, mapping, n)
    start = reference_pose(truth, mapping, n)

    joints = UpperBodyJoints.of(truth.skeleton, mapping)

    def posed_with(constants: UpperBodyIKConfig) -> Solved:
        posed = pose_upper_body(start, joints, heads, hmd_rotations, wrists, controllers, attachments, frame_in_chest,
                                calibration, constants).global_positions()
        return Solved(posed[:, mapping["neck"]], posed[:, arm["upper_arm"]], posed[:, arm["forearm"]],
                      posed[:, arm["hand"]])

    chain = solve_upper_body(hmd_positions, hmd_rotations, wrists, controllers, calibration, config)
    solved = {
        "parger": posed_with(config),
        "fabrik": solve_fabrik(start, mapping, wrists, neck_frames(rotations[:, mapping["chest"]], frame_in_chest),
                               fabrik),
        "parger_head_chain": Solved(chain.neck, chain.shoulders, chain.elbows, chain.wrists),
    }
    if fitted is not None:
        solved["parger_fitted"] = posed_with(fitted)
    reach = calibration.upper_arm_m + calibration.forearm_m
    truth_joints = Solved(positions[:, mapping["neck"]], positions[:, arm["upper_arm"]],
                          positions[:, arm["forearm"]], positions[:, arm["hand"]])
    return truth_joints, solved, wrists, reach


def solve_fabrik(start: Motion, mapping: HumanoidMapping, wrists, neck_frames, config: FabrikConfig) -> Solved:
    """FABRIK over the true torso, shoulder to wrist per arm (the neck is the torso's).

    Every frame starts from the same relaxed arms: shoulders as in the reference pose, upper arms
    hanging down and a little back, forearms down and a little forward (REST_*_DIRECTION).
    """
    _, positions = forward_kinematics(start.skeleton.parents, start.rotations, start.positions)
    neck = positions[:, mapping["neck"]]
    upper_rest = quat.rotate(neck_frames, unit(np.array(REST_UPPER_ARM_DIRECTION)))
    forearm_rest = quat.rotate(neck_frames, unit(np.array(REST_FOREARM_DIRECTION)))
    chains = []
    for s, target in zip("lr", np.moveaxis(wrists, 1, 0)):
        root, anchor, elbow, wrist = (positions[:, mapping[f"{s}_{j}"]] for j in ARM_JOINTS)
        lengths = [length(anchor - root).mean(), length(elbow - anchor).mean(), length(wrist - elbow).mean()]
        elbow = anchor + lengths[1] * upper_rest
        wrist = elbow + lengths[2] * forearm_rest
        cones = [config.shoulder_cone_deg, config.upper_arm_cone_deg, config.forearm_cone_deg]
        chains.append(solve_chain(root, np.stack([anchor, elbow, wrist], axis=1), lengths, target,
                                  unit(anchor - root), cones, config.iterations))
    joints = np.stack(chains, axis=1)
    return Solved(neck, joints[:, :, 0], joints[:, :, 1], joints[:, :, 2])


def squared_errors(solved: Solved, truth: Solved, wrists: np.ndarray) -> dict[str, np.ndarray]:
    """Per-frame squared joint errors (m^2) per joint group, and hand distances to the targets (m)."""
    errors = {f"{j}_cm": np.sum((getattr(solved, a) - getattr(truth, a)) ** 2, axis=-1).ravel()
              for j, a in zip(JOINTS, ("neck", "shoulders", "elbows"))}
    errors["hand"] = length(solved.wrists - wrists).ravel()
    return errors


def summarise(errors: list[dict[str, np.ndarray]]) -> dict[str, float]:
    """RMSE (cm) per joint group pooled over the clips, and the mean hand distance (cm)."""
    out = {k: round(float(np.sqrt(np.concatenate([e[k] for e in errors]).mean()) * 100.0), 3)
           for k in (f"{j}_cm" for j in JOINTS)}
    out["hand_cm"] = round(float(np.concatenate([e["hand"] for e in errors]).mean() * 100.0), 4)
    return out


def walking_and_waving(names) -> list[int]:
    """Indices of the walking and waving clips among file stems: the issue's target set."""
    return [i for i, name in enumerate(names) if re.match(r"(walk|wave)", activity(name))]


def evaluate(files, simulation: SimulationConfig = SimulationConfig(), config: UpperBodyIKConfig = UpperBodyIKConfig(),
             fabrik: FabrikConfig = FabrikConfig(), fitted: UpperBodyIKConfig | None = None, progress=None) -> dict:
    """Metrics per method: overall, per activity (Table 1's rows), per file, and on walking / waving clips.
    `fitted`: constants from `train ik`, evaluated as `parger_fitted` (left out when None)."""
    methods = [m for m in METHODS if fitted is not None or m != "parger_fitted"]
    per_method = {m: [] for m in methods}
    names, reached = [], []
    for i, path in enumerate(files):
        truth, solved, wrists, reach = solve_clip(path, simulation, config, fabrik, fitted)
        names.append(path.stem)
        for m in methods:
            per_method[m].append(squared_errors(solved[m], truth, wrists))
        reachable = length(wrists - solved["parger"].shoulders) < reach - 1e-3
        reached.append(length(solved["parger"].wrists - wrists)[reachable])
        if progress:
            progress(i + 1, len(files), path.stem)
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        groups.setdefault(activity(name), []).append(i)
    walking_waving = walking_and_waving(names)
    summary = {}
    for m in methods:
        errors = per_method[m]
        summary[m] = summarise(errors)
        if walking_waving:
            summary[m]["walk_wave"] = summarise([errors[i] for i in walking_waving])
        summary[m]["activities"] = {a: summarise([errors[i] for i in idx]) for a, idx in sorted(groups.items())}
        summary[m]["files"] = {n: summarise([e]) for n, e in zip(names, errors)}
    hits = np.concatenate(reached)
    summary["parger"]["reachable_hand_max_mm"] = round(float(hits.max() * 1000.0), 6) if hits.size else None
    summary["paper_urm"] = PAPER_URM
    summary["frames"] = int(sum(len(e["hand"]) // 2 for e in per_method["parger"]))
    summary["clips"] = len(names)
    return summary


def table(summary: dict) -> str:
    """The figures laid out like the paper's Table 1: one row per activity and joint, a column per method."""
    methods = [m for m in METHODS if m in summary]
    lines = [f"{'activity':24s} {'joint':9s} " + " ".join(f"{m:>17s}" for m in methods)]
    rows = [("all", {m: summary[m] for m in methods})]
    if "walk_wave" in summary["parger"]:
        rows.append(("walk + wave", {m: summary[m]["walk_wave"] for m in methods}))
    rows += [(a, {m: summary[m]["activities"][a] for m in methods}) for a in summary["parger"]["activities"]]
    for name, figures in rows:
        for joint in (*JOINTS, "hand"):
            lines.append(f"{name if joint == 'neck' else '':24s} {joint:9s} "
                         + " ".join(f"{figures[m][f'{joint}_cm']:17.2f}" for m in methods))
    return "\n".join(lines)


def run(args) -> int:
    """RMSE of neck, shoulder and elbow positions for Parger's IK and FABRIK on simulated streams."""
    files = evaluation_files(args)
    if args.limit:
        files = files[: args.limit]
    print(f"eval ik: {len(files)} files", file=sys.stderr)

    fitted = ik_constants(args.fitted) if args.fitted != "none" else None
    summary = evaluate(files, SimulationConfig(look_around_deg=args.look_around), fitted=fitted,
                       progress=print_progress)
    print(table(summary), file=sys.stderr)
    if args.json:
        print(json.dumps(summary, indent=2))
    return 0


def add_command(eval_group) -> None:
    parser = eval_group.add_parser("ik", help=run.__doc__, description=__doc__)
    add_data_arguments(parser)
    parser.add_argument("--limit", type=int, default=0, help="only the first N files (0: all)")
    parser.add_argument("--look-around", type=float, default=0.0, metavar="DEG",
                        help="look-around added to the simulated streams (default 0, as the paper's mocap)")
    parser.add_argument("--fitted", default="fitted", metavar="FILE",
                        help="elbow constants from `train ik` to evaluate as parger_fitted (default 'fitted': the "
                             "shipped assets/upper_body_ik_fitted.json; 'none' leaves the row out)")
    add_json_argument(parser)
    parser.set_defaults(run=run)
