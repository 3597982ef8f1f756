"""Evaluating calibration (calibration.py) on simulated streams: the estimates against what the simulation held.

Each clip is simulated twice with the devices held differently from DeviceOffsets (random per clip,
SimulationConfig's attachment noise): once starting with the calibration gesture, once without.
With the gesture: how far the estimated grip offsets, tilts and arm span are from the simulated ones
(the standing height is the HMD's during the pose, which the simulation takes from the clip's first frame), and how far the implied wrists are from the true ones over the clip, assumed
grip (`wrist_cm_uncalibrated`) against calibrated (`wrist_cm`). Without: how often a gesture is
wrongly found in plain motion (`false_found`). Figures are means over clips (wrists: over frames).
With `--device-noise` the calibration reads the streams as a real headset writes them (config.DeviceNoise, at the
rates given), and its grips are applied to the exact stream, so the wrist figures are the estimate's error alone.
"""
from __future__ import annotations

import json
import sys
from dataclasses import replace

import numpy as np

from ...config import CalibrationConfig, DeviceNoise, SimulationConfig
from ...devices.attachments import implied_joint_positions, joints_from_devices
from ...devices.calibration import calibrate_stream
from ...devices.simulate import simulate_stream
from ..mocap_split import read_humanoid
from ...files.mocap import activity
from ...math import quat
from ..arguments import add_data_arguments, add_json_argument, add_selection_arguments, print_progress, selected_files
from .matching import LOOK_AROUND_DEG
from .methods import ATTACHMENT_NOISE


def clip_figures(path, simulation: SimulationConfig, config: CalibrationConfig = CalibrationConfig()) -> dict:
    """One clip's figures (module docstring)."""
    motion = read_humanoid(path)
    simulated = simulate_stream(motion, simulation)
    calibration = calibrate_stream(simulated.stream, config)
    stream = simulated.stream if simulated.exact is None else simulated.exact
    clip = slice(simulated.clip_start, None)
    plain = simulate_stream(motion, replace(simulation, calibration_pose_s=0.0)).stream
    figures = {"found": calibration.found, "false_found": calibrate_stream(plain, config).found,
               "frames": len(stream) - simulated.clip_start}
    truth = joints_from_devices(stream.positions, stream.rotations, simulated.offsets)[clip, 1:]
    figures["wrist_cm_uncalibrated"] = 100 * float(np.linalg.norm(implied_joint_positions(stream)[clip, 1:] - truth,
                                                                  axis=-1).mean())
    if not calibration.found:
        return figures
    calibrated = implied_joint_positions(calibration.apply(stream))[clip, 1:]
    figures["wrist_cm"] = 100 * float(np.linalg.norm(calibrated - truth, axis=-1).mean())
    figures["offset_cm"] = 100 * float(np.linalg.norm(calibration.offsets(simulation.devices) - simulated.offsets[1:],
                                                      axis=-1).mean())
    figures["tilt_deg"] = float(np.degrees(quat.angle_between(np.array(calibration.grip_tilts),
                                                              simulated.grip_turns)).mean())
    joints = [simulated.mapping[f"{s}_{j}"] for j in ("hand", "upper_arm") for s in "lr"]
    pose = slice(*(np.searchsorted(stream.times, np.array(calibration.pose_s) - simulated.latency_s)))
    wrists, shoulders = np.split(simulated.truth[pose].global_positions()[:, joints], 2, axis=1)
    span = np.linalg.norm(wrists[:, 0] - wrists[:, 1], axis=-1)
    if simulation.calibration_arms == "A":  # the span level arms would have: shoulder to shoulder, and the arms
        span = np.linalg.norm(shoulders[:, 0] - shoulders[:, 1], axis=-1) + np.linalg.norm(wrists - shoulders,
                                                                                            axis=-1).sum(axis=-1)
    figures["span_cm"] = 100 * abs(calibration.arm_span_m - float(span.mean()))
    return figures


def summarise(rows: list[dict]) -> dict:
    """Means over clips (wrist figures weighted by frames), how many found the gesture, and false finds."""
    found = [r for r in rows if r["found"]]
    frames = np.array([r["frames"] for r in found], dtype=float)
    out = {"clips": len(rows), "found": len(found), "false_found": int(sum(r["false_found"] for r in rows))}
    if found:
        for key in ("wrist_cm", "wrist_cm_uncalibrated"):
            out[key] = round(float(np.average([r[key] for r in found], weights=frames)), 3)
        for key in ("offset_cm", "tilt_deg", "span_cm"):
            values = np.array([r[key] for r in found])
            out[key] = round(float(values.mean()), 3)
            out[key + "_p95"] = round(float(np.percentile(values, 95)), 3)
    return out


def run(args) -> int:
    """Calibration's estimates against the simulated holds, per activity, on streams with and without the gesture."""
    files = selected_files(args)
    noise = None if args.device_noise is None else DeviceNoise(rates_hz=tuple(args.device_noise) or DeviceNoise().rates_hz)
    simulation = SimulationConfig(look_around_deg=args.look_around, calibration_arms=args.arms, device_noise=noise,
                                  **ATTACHMENT_NOISE)
    print(f"eval calibration: {len(files)} clips" + ("" if noise is None else f", device noise at {noise.rates_hz} Hz"),
          file=sys.stderr)
    rows = []
    for i, path in enumerate(files):
        rows.append((path.stem, clip_figures(path, simulation)))
        print_progress(i + 1, len(files), path.stem)
    groups: dict[str, list] = {}
    for name, figures in rows:
        groups.setdefault(activity(name), []).append(figures)
    result = {"calibration": {**summarise([r for _, r in rows]),
                              "activities": {a: summarise(g) for a, g in sorted(groups.items())}}}
    print(" ".join(f"{k}={v}" for k, v in result["calibration"].items() if k != "activities"), file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


def add_command(eval_group) -> None:
    parser = eval_group.add_parser("calibration", help=run.__doc__, description=__doc__)
    add_data_arguments(parser)
    parser.add_argument("--look-around", type=float, default=LOOK_AROUND_DEG, metavar="DEG",
                        help=f"look-around added to the simulated streams (default {LOOK_AROUND_DEG:g})")
    parser.add_argument("--arms", choices=("T", "A"), default="T",
                        help="the gesture's pose: T (arms level, the default) or A (arms 45 degrees down)")
    parser.add_argument("--device-noise", type=float, nargs="*", metavar="HZ",
                        help="read the streams as a real headset writes them (config.DeviceNoise: millisecond "
                             "clocks, jitter, gaps, 1-2 mm noise, quaternions to two decimals), at one of these rates "
                             f"per clip (default {', '.join(f'{r:g}' for r in DeviceNoise().rates_hz)} Hz)")
    add_selection_arguments(parser)
    add_json_argument(parser)
    parser.set_defaults(run=run)
