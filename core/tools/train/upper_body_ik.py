"""Refitting Parger et al.'s elbow constants to mocap, as §3.3 says they were found.

"The parameters are retrieved by observation and error minimization on a set of sample arm poses":
the paper's eq. 4 (offset, biases, weights, clamp) and the singularity blend's fixed direction v_f
were fitted by the authors to their own arm poses. This repeats that minimisation on arm poses from
the training split of a mocap set. It starts from the printed constants and runs Nelder-Mead on the
elbow RMSE of `arm_positions`, the same function the solver calls.

Left as printed:
- The singularity radius and the behind-the-shoulder range. They decide how gradually the blend
  comes in, which keeps the elbow continuous, not where it points; a free fit shrinks the behind
  range to a step.
- Eq. 5's thresholds and gains. The Bandai hands hardly turn against the forearm (median 3.6°,
  90th percentile 10°), so a controller's rotation there gives the forearm's direction away. A
  fit of eq. 5 exploits that: 1.6 cm on the training poses, with the elbow following the
  controller's roll. A user's wrist turns freely, so the elbow would follow every wrist flick.

The sample arm poses: each training clip's simulated devices give the wrist targets and controller
rotations. Its true arm anchors, neck frame (from the chest, as the eval and the solver carry it) and
bone lengths give the rest, and the clip's elbows are the answer. Clips that share bone lengths (one
actor) are solved together, so one evaluation of the objective is a few vectorised calls.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import dataclass

import numpy as np

from ...config import SimulationConfig, UpperBodyIKConfig
from ...devices.attachments import implied_joint_positions
from ...devices.simulate import simulate_stream
from ...files.atomic import check_outputs
from ...files.mocap import find_bvh_files
from ..mocap_split import read_humanoid, training_split
from ...ik.upper_body_ik import arm_positions
from ...ik.upper_body_pose import UpperBodyJoints, calibrate_upper_body, neck_frames
from ...math import quat
from ..arguments import add_data_arguments, print_progress
from ..eval.ik import CALIBRATION_S, walking_and_waving
from .nelder_mead import minimize

FITTED_FIELDS = ("elbow_offset_deg", "elbow_biases_deg", "elbow_weights_deg_per_m", "elbow_min_deg", "elbow_max_deg",
                 "elbow_rest_direction")
INITIAL_STEPS = np.array([10.0, 10.0, 10.0, 10.0, 20.0, 20.0, 50.0, 5.0, 10.0, 0.2, 0.2, 0.2])
"""The first simplex's size per coordinate of `constants_vector` (degrees, degrees per metre, unit vector)."""


@dataclass
class ArmPoses:
    """Sample arm poses of clips with the same bone lengths, frames stacked: arm anchors, wrist targets,
    true elbows (N, 2, 3), controller rotations (N, 2, 4), neck frames (N, 3, 3)."""

    shoulders: np.ndarray
    wrists: np.ndarray
    elbows: np.ndarray
    controllers: np.ndarray
    frames: np.ndarray
    upper_arm_m: float
    forearm_m: float

    def elbow_errors(self, config: UpperBodyIKConfig) -> np.ndarray:
        """Squared elbow errors (N, 2), m^2, of `arm_positions` with these constants."""
        elbows, _ = arm_positions(self.shoulders, self.wrists, self.controllers, self.frames, self.upper_arm_m,
                                  self.forearm_m, config)
        return np.sum((elbows - self.elbows) ** 2, axis=-1)


def clip_arm_poses(path, frame_step: int, simulation: SimulationConfig = SimulationConfig()) -> ArmPoses:
    """One clip's arm poses, every `frame_step`-th frame of its simulated 60 Hz stream."""
    sim = simulate_stream(read_humanoid(path), simulation)
    truth, mapping, stream = sim.truth, sim.mapping, sim.stream
    rotations, positions = truth.global_transforms()
    joints = UpperBodyJoints.of(truth.skeleton, mapping)
    _, _, frame_in_chest = calibrate_upper_body(truth, stream, mapping, max(1, int(round(CALIBRATION_S * truth.fps))))
    wrists = implied_joint_positions(stream, simulation.devices)[:, 1:]
    frames = neck_frames(rotations[:, joints.chest], frame_in_chest)
    every = slice(None, None, frame_step)
    return ArmPoses(positions[every, joints.upper_arm], wrists[every], positions[every, joints.forearm],
                    stream.rotations[every, 1:], quat.to_matrix(frames[every]), joints.upper_arm_m, joints.forearm_m)


def group_by_bone_lengths(poses: list[ArmPoses]) -> list[ArmPoses]:
    """Clips with identical arm bone lengths stacked into one, so the objective is a few calls."""
    groups: dict[tuple[float, float], list[ArmPoses]] = {}
    for p in poses:
        groups.setdefault((p.upper_arm_m, p.forearm_m), []).append(p)
    stacked = []
    for (upper, fore), members in groups.items():
        arrays = {f: np.concatenate([getattr(m, f) for m in members])
                  for f in ("shoulders", "wrists", "elbows", "controllers", "frames")}
        stacked.append(ArmPoses(**arrays, upper_arm_m=upper, forearm_m=fore))
    return stacked


def elbow_rmse_cm(poses: list[ArmPoses], config: UpperBodyIKConfig) -> float:
    """Elbow RMSE (cm) pooled over all frames and both arms."""
    errors = np.concatenate([p.elbow_errors(config).ravel() for p in poses])
    return float(np.sqrt(errors.mean()) * 100.0)


def constants_vector(config: UpperBodyIKConfig) -> np.ndarray:
    """The fitted constants as one vector (12,): phi_0, b, w, the clamp and v_f."""
    return np.array([config.elbow_offset_deg, *config.elbow_biases_deg, *config.elbow_weights_deg_per_m,
                     config.elbow_min_deg, config.elbow_max_deg, *config.elbow_rest_direction], dtype=float)


def constants_from_vector(x: np.ndarray, base: UpperBodyIKConfig = UpperBodyIKConfig()) -> UpperBodyIKConfig:
    """The inverse of constants_vector, keeping the paper's forms: the clamp ordered and v_f a unit vector."""
    x = np.asarray(x, dtype=float)
    low, high = sorted((float(x[7]), float(x[8])))
    return dataclasses.replace(
        base, elbow_offset_deg=float(x[0]), elbow_biases_deg=tuple(map(float, x[1:4])),
        elbow_weights_deg_per_m=tuple(map(float, x[4:7])), elbow_min_deg=low, elbow_max_deg=high,
        elbow_rest_direction=tuple(map(float, x[9:12] / max(np.linalg.norm(x[9:12]), 1e-9))))


def fit_constants(poses: list[ArmPoses], start: UpperBodyIKConfig = UpperBodyIKConfig(),
                  max_evaluations: int = 3000, tolerance_cm: float = 1e-3, progress=None):
    """Constants minimising the elbow RMSE over the poses, from `start`: Nelder-Mead, restarted from its
    best point (a fresh simplex) until a restart gains less than `tolerance_cm` or the budget is spent.
    Returns the constants, the RMSE (cm) and the evaluations used."""
    x, value, used = constants_vector(start), float("inf"), 0

    def objective(v: np.ndarray) -> float:
        return elbow_rmse_cm(poses, constants_from_vector(v, start))

    while used < max_evaluations:
        def report(evaluations: int, best: float, before: int = used) -> None:
            if progress:
                progress(before + evaluations, best)

        result = minimize(objective, x, INITIAL_STEPS, max_evaluations - used, tolerance_cm / 10.0, report)
        used += result.evaluations
        gained, x, value = value - result.value, result.x, min(value, result.value)
        if gained < tolerance_cm:
            break
    return constants_from_vector(x, start), value, used


def run(args) -> int:
    """Fit the elbow constants of Parger et al. §3.3 to arm poses from the training split."""
    files = find_bvh_files(args.data)
    check_outputs([args.output], files, make_folders=True)
    training, validation = training_split(files)
    started = time.time()
    print(f"train ik: arm poses from {len(training)} training and {len(validation)} validation files",
          file=sys.stderr)
    train_poses = [clip_arm_poses(p, args.frame_step) for p in training]
    val_poses = [clip_arm_poses(p, args.frame_step) for p in validation]
    val_walk_wave = group_by_bone_lengths([val_poses[i] for i in walking_and_waving([p.stem for p in validation])])
    train_grouped, val_grouped = group_by_bone_lengths(train_poses), group_by_bone_lengths(val_poses)
    paper = UpperBodyIKConfig()

    def report(evaluations: int, value: float) -> None:
        print_progress(min(evaluations, args.evaluations), args.evaluations, f"elbow RMSE {value:.3f} cm")

    fitted, value, evaluations = fit_constants(train_grouped, paper, args.evaluations, progress=report)
    print(file=sys.stderr)
    figures = {
        "training_elbow_cm": {"paper": elbow_rmse_cm(train_grouped, paper), "fitted": value},
        "validation_elbow_cm": {"paper": elbow_rmse_cm(val_grouped, paper), "fitted": elbow_rmse_cm(val_grouped, fitted)},
    }
    if val_walk_wave:
        figures["validation_walk_wave_elbow_cm"] = {"paper": elbow_rmse_cm(val_walk_wave, paper),
                                                    "fitted": elbow_rmse_cm(val_walk_wave, fitted)}
    record = {
        "paper": "Parger et al. 2018 §3.3: eq. 4 and v_f refitted by error minimization on sample arm poses",
        "data": [str(d) for d in args.data],
        "training_files": len(training),
        "validation_files": len(validation),
        "frame_step": args.frame_step,
        "training_frames": int(sum(len(p.elbows) for p in train_poses)),
        "start": "the paper's constants",
        "fitted_fields": list(FITTED_FIELDS),
        "evaluations": evaluations,
        "seconds": round(time.time() - started, 1),
        **{k: {m: round(v, 3) for m, v in f.items()} for k, f in figures.items()},
    }
    fitted.save(args.output, FITTED_FIELDS, record)
    for name, f in figures.items():
        print(f"{name}: paper {f['paper']:.2f} cm, fitted {f['fitted']:.2f} cm", file=sys.stderr)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def add_command(train_group) -> None:
    parser = train_group.add_parser("ik", help=run.__doc__, description=__doc__)
    add_data_arguments(parser, "split by file", split=False)
    parser.add_argument("-o", "--output", required=True, help="constants file to write (.json, read by --ik-constants)")
    parser.add_argument("--evaluations", type=int, default=3000, help="Nelder-Mead's budget of objective evaluations (default 3000)")
    parser.add_argument("--frame-step", type=int, default=4,
                        help="use every N-th frame of the 60 Hz streams (default 4: 15 poses a second)")
    parser.set_defaults(run=run)
