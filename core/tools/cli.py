"""Command line `python -m core <group> <command>` (SPEC §4): argument parsing and printing only."""
from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import nullcontext
from pathlib import Path

from ..config import METHODS, CalibrationConfig, DatabaseConfig, DeviceNoise, DeviceOffsets, HybridConfig, \
    N3PConfig, SimulationConfig, SolveConfig, MatchingConfig, StitchConfig, describe
from ..devices.calibration import COMMENT_KEY, calibrate_stream, stored_calibration
from ..devices.openxr_source import OpenXRUnavailable, record
from ..devices.plausibility import check_stream, without_unusable_samples
from ..devices.simulate import simulate_stream
from ..files.atomic import check_outputs, no_empty_folders_left, together
from ..files.bvh import BVHError, guess_units, read_bvh, write_bvh
from ..files.mocap import LOCOMOTION, MocapNotFound, find_bvh_files, locomotion_files
from .mocap_split import read_humanoid, split_by_file
from ..devices.grips import GRIPS, as_openxr_grip
from ..files.stream import DEVICES, copy_with_comment, read_bytes, read_stream, read_stream_and_comments, write_stream
from ..hybrid.solver import LEGS
from ..ik.upper_body_ik import ik_constants
from ..matching.pose_database import build_database
from ..quality.report import write_solution_report
from ..rig.humanoid import HumanoidMappingError, find_mapping
from ..rig.mapping_preset import builtin_presets, mapping_override
from ..retarget.target import SIZE_MODES, bvh_target
from ..retarget.retargeting import on_bvh_skeleton, retarget_solution
from ..solve import load_solver, solve, with_physics
from ..stitch.model import SHIPPED_MODEL as STITCH_MODEL, StitchModel
from . import bench, demo
from .arguments import option_problem, terminal_progress
from .eval import calibration as eval_calibration, characters as eval_characters, ik as eval_ik, matching as eval_matching, methods as eval_full, \
    orientation as eval_orientation, physics_sheet as eval_physics_sheet, stitch as eval_stitch
from .train import n3p as train_n3p, orientation as train_orientation, stitch as train_stitch, \
    upper_body_ik as fit_upper_body_ik

MAPPING_HELP = ("humanoid joint mapping overriding name and structure matching: a JSON preset {canonical joint: "
                "joint name}, a .vrm file's own map, or a built-in preset (" + ", ".join(builtin_presets()) + ")")
USER_ERRORS = (OSError, ValueError)
"""Bad input, missing data, unusable options: every core.errors type is one of these, printed as one line."""
def _warn(warnings) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def _print(result, as_json: bool, lines) -> None:
    if as_json:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for line in lines:
            print(line)


def bvh_info(args) -> int:
    """Joints, frames, rate, duration, units guess and humanoid mapping of each file."""
    reports, failed = [], 0
    for path in find_bvh_files(args.files):
        try:
            raw = read_bvh(path, scale=1.0)
        except BVHError as error:
            failed += 1
            reports.append({"file": str(path), "error": str(error)})
            print(f"error: {error}", file=sys.stderr)
            continue
        scale, units = (args.scale, "given") if args.scale else guess_units(raw)
        report = {"file": str(path), "joints": len(raw.skeleton), "frames": len(raw), "fps": raw.fps,
                  "duration_s": round(raw.duration, 4), "units": units, "metres_per_unit": scale}
        try:
            mapping = find_mapping(raw.skeleton, mapping_override(args.mapping, raw.skeleton.names))
            report["mapping"] = mapping.names(raw.skeleton.names)
            report["convention"] = mapping.convention
            report["guessed"] = list(mapping.guessed)
            report["notes"] = mapping.notes
        except HumanoidMappingError as error:
            report["mapping_error"] = str(error)
        reports.append(report)
        if not args.json:
            print(f"{path}: {report['joints']} joints, {report['frames']} frames at {raw.fps:g} fps "
                  f"({raw.duration:.2f} s), units {units} ({scale:g} m/unit)")
            if "mapping" in report:
                print(f"  humanoid ({report['convention']}): " +
                      ", ".join(f"{k}={v}" + (" (guessed)" if k in mapping.guessed else "")
                                for k, v in report["mapping"].items()))
                if mapping.notes:
                    print(f"  note: {mapping.notes}")
            else:
                print(f"  {report['mapping_error']}")
    if args.json:
        _print({"files": reports}, True, [])
    return 1 if failed else 0


def stream_simulate(args) -> int:
    """Simulate a three-point stream (CSV v1) from a BVH clip; optionally write its ground truth."""
    check_outputs([args.output, args.truth], [args.bvh, args.mapping])
    motion = read_humanoid(args.bvh, args.scale, args.mapping)
    config = SimulationConfig(fps=args.fps, look_around_deg=args.look_around, seed=args.seed, devices=DeviceOffsets(),
                              attachment_noise_m=args.attachment_noise[0], attachment_noise_deg=args.attachment_noise[1],
                              calibration_pose_s=args.calibration_pose, calibration_arms=args.calibration_arms,
                              device_noise=DeviceNoise() if args.device_noise else None, body_scale=args.body_scale,
                              grip=args.grip)
    simulated = simulate_stream(motion, config,
                                find_mapping(motion.skeleton, mapping_override(args.mapping, motion.skeleton.names)))
    comments = [f"simulated from {Path(args.bvh).name} by python -m core stream simulate",
                f"config {json.dumps(describe(config))}"]
    write_stream(args.output, simulated.stream, comments)
    if args.truth:
        write_bvh(args.truth, simulated.truth)
    rate = (f"{simulated.stream.rate:.0f} Hz with device noise (latency {simulated.latency_s * 1000:.0f} ms)"
            if args.device_noise else f"{config.fps:g} Hz")
    print(f"wrote {args.output}: {len(simulated.stream)} samples at {rate}, "
          f"look-around up to {config.look_around_deg:g} deg" + (f"; truth {args.truth}" if args.truth else ""),
          file=sys.stderr)
    return 0


def stream_info(args) -> int:
    """Rate, duration, gaps and untracked samples of a stream file."""
    stream = read_stream(args.csv, hmd_only=args.hmd_only)
    _warn(check_stream(stream, args.csv))
    usable = without_unusable_samples(stream)[0].tracked
    devices = DEVICES[:1] if args.hmd_only else DEVICES
    untracked = {d: int((~usable[:, i]).sum()) for i, d in enumerate(devices)}
    gaps = stream.gaps()
    result = {"file": str(args.csv), "samples": len(stream), "rate_hz": round(stream.rate, 4),
              "duration_s": round(stream.duration, 4), "gaps": [{"t": t, "length_s": length} for t, length in gaps],
              "untracked": untracked}
    _print(result, args.json, [
        f"{args.csv}: {len(stream)} samples, {stream.rate:.2f} Hz, {stream.duration:.2f} s",
        f"  gaps longer than 1.5 steps: {len(gaps)}" + "".join(f"\n    at {t:.3f} s: {g * 1000:.1f} ms" for t, g in gaps[:10]),
        "  untracked samples: " + ", ".join(f"{d} {n}" for d, n in untracked.items()),
    ])
    return 0


def stream_calibrate(args) -> int:
    """Estimate height, arm span and each controller's grip-to-wrist offset and tilt from the calibration gesture
    (a T- or A-pose with the wrists circling) in the stream's first minute; -o stores them with the stream."""
    check_outputs([args.output], [args.csv])
    data = read_bytes(args.csv)  # once: a named pipe has no second reading for the copy
    stream = read_stream_and_comments(args.csv, data=data)[0]
    calibration = calibrate_stream(stream, CalibrationConfig(search_s=args.seconds))
    result = d = {"file": str(args.csv), **calibration.describe()}
    if calibration.found:
        lines = [f"{args.csv}: {d['pose']}-pose {d['pose_s'][0]:.2f}-{d['pose_s'][1]:.2f} s; standing HMD height "
                 f"{d['standing_hmd_height_m']:.3f} m, arm span (wrists) {d['arm_span_m']:.3f} m"]
        for side, offset, tilt, turn in zip(("left", "right"), d["grip_offsets_m"], d["grip_tilt_deg"], d["wrist_turn_deg"]):
            where = "not measured (the wrist hardly turned)" if offset is None else \
                "(" + ", ".join(f"{100 * v:.1f}" for v in offset) + ") cm"
            lines.append(f"  {side}: grip from wrist {where}, tilted {tilt:.1f} deg from the assumed grip; "
                         f"wrist turned {turn:.0f} deg RMS")
    else:
        lines = [f"{args.csv}: no calibration gesture (T- or A-pose, wrists circling) in the first {args.seconds:g} s; "
                 "the solver assumes the default grip"]
    if args.output:
        copy_with_comment(args.csv, args.output, COMMENT_KEY, calibration.comment(), data)
        lines.append(f"wrote {args.output} with the calibration as a comment line")
    _print(result, args.json, lines)
    return 0


def stream_record(args) -> int:
    """Record a three-point stream (CSV v1) live from an OpenXR headset and two controllers (needs pyopenxr)."""
    check_outputs([args.output])
    print(f"recording {args.seconds:g} s from OpenXR (Ctrl+C stops early)...", file=sys.stderr)
    try:
        stream, space = record(args.seconds, args.rate)
    except OpenXRUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    floor = "floor at y = 0" if space != "LOCAL" else "y = 0 at the first head height, not the floor"
    write_stream(args.output, stream, ["recorded live from OpenXR by python -m core stream record",
                                       f"reference space {space} ({floor})"])
    untracked = ", ".join(f"{d} {int((~stream.tracked[:, i]).sum())}" for i, d in enumerate(DEVICES))
    print(f"wrote {args.output}: {len(stream)} samples, {stream.duration:.2f} s at {stream.rate:.1f} Hz, "
          f"{space} space; untracked samples: {untracked}", file=sys.stderr)
    return 0


def db_build(args) -> int:
    """Build a pose and feature database (MMVR §5.1-5.2) from BVH files or folders."""
    files = find_bvh_files(args.mocap)
    if args.split != "all":
        files = split_by_file(files)[0 if args.split == "train" else 1]
    if args.locomotion:
        files = locomotion_files(files)
    if not files:
        raise MocapNotFound(f"no BVH files left in {', '.join(args.mocap)} after --split {args.split}"
                            + (" and --locomotion" if args.locomotion else ""))
    check_outputs([args.output], [*files, args.mapping])
    config = DatabaseConfig(fps=args.fps, mirror=args.mirror, height_range=tuple(args.height_range))
    motions = []
    for path in files:
        motions.append(read_humanoid(path, args.scale, args.mapping))
    override = mapping_override(args.mapping, motions[0].skeleton.names) if args.mapping else None
    database = build_database(motions, config, override, sources=files)
    database.save(args.output)
    skipped = database.info["skipped_short_clips"]
    if skipped:
        print(f"skipped {len(skipped)} clip(s) shorter than {config.min_clip_s:g} s: {', '.join(skipped)}", file=sys.stderr)
    result = {"file": str(args.output), "clips": len(database.clip_names), "poses": len(database),
              "fps": database.fps, "joints": len(database.skeleton), "mirror": config.mirror,
              "height_range": list(database.height_range), "skipped_short_clips": skipped,
              "contact_share": [round(float(c), 3) for c in database.contacts.mean(axis=0)]}
    _print(result, args.json, [f"wrote {args.output}: {len(database)} poses from {len(files)} files"
                               f"{' (and their mirrors)' if config.mirror else ''} at {database.fps:g} fps, "
                               f"HMD height ratios {config.height_range[0]:g}-{config.height_range[1]:g}"])
    return 0


def solve_stream(args) -> int:
    """Solve a three-point stream into a full-body motion (BVH, metres) on the database's or the model's skeleton."""
    stem = Path(args.output).with_suffix("")
    check_outputs([args.output, stem.with_name(stem.name + ".report.json"), stem.with_name(stem.name + ".report.png")],
                  [args.stream, *(args.db or []), args.model, args.avatar, args.mapping,
                   None if args.orientation in ("hmd", "mmvr") else args.orientation,
                   None if args.ik_constants in ("paper", "fitted") else args.ik_constants])
    config = solve_config(args)
    stream, comments = read_stream_and_comments(args.stream, hmd_only=args.hmd_only)
    stream = as_openxr_grip(stream, args.grip)
    _warn(check_stream(stream, args.stream))
    _warn(unused_solve_options(args, config))
    calibration = None if args.no_calibrate else (stored_calibration(args.stream, comments) or CalibrationConfig())
    avatar = target = None
    if args.avatar:  # refused before the solve, not after it
        avatar = read_humanoid(args.avatar, args.avatar_scale, args.mapping, character=True)
        try:
            target = bvh_target(avatar, args.mapping)
        except HumanoidMappingError as error:
            raise HumanoidMappingError(f"{args.avatar}: {error}") from None
    solver = load_solver(config, args.db if config.needs_database else ())
    try:
        solution = solve(stream, solver, calibration, terminal_progress("solving"))
    except ValueError as error:  # what the stream holds (never tracked, a gap too long, a non-finite stretch)
        raise ValueError(f"{args.stream}: {error}") from None
    if args.physics:
        solution = with_physics(solution, progress=terminal_progress("physics pass"))
        print("physics: " + ", ".join(f"{k} {v}" for k, v in solution.physics.items()), file=sys.stderr)
    if solution.calibration is not None and solution.calibration.found:
        found = solution.calibration.describe()
        print(f"calibrated from the {found['pose']}-pose at {found['pose_s'][0]:.2f}-{found['pose_s'][1]:.2f} s: grips tilted "
              f"{found['grip_tilt_deg'][0]:.1f} / {found['grip_tilt_deg'][1]:.1f} deg, arm span {found['arm_span_m']:.3f} m",
              file=sys.stderr)
    if avatar is not None:
        retargeted = retarget_solution(solution, target, solution.motion.fps, size=args.avatar_size)
        write_bvh(args.output, on_bvh_skeleton(retargeted, avatar.skeleton, solution.motion.fps))
    else:
        write_bvh(args.output, solution.motion)
    report = write_solution_report(stem, solution, f"solve {Path(args.stream).name}")
    print(f"wrote {args.output}: {len(solution.motion)} frames at {solution.motion.fps:g} fps; report "
          f"{report['json']}" + (f" and {report['plot']}" if "plot" in report else ""), file=sys.stderr)
    return 0


def solve_config(args) -> SolveConfig:
    """`solve`'s options as the SolveConfig the add-on fills from its panel."""
    foot_lock = not args.no_foot_lock
    return SolveConfig(args.method, HybridConfig(legs=args.legs, foot_lock=foot_lock),
                       MatchingConfig(alpha_m=args.alpha, foot_lock=foot_lock, upper_body=ik_constants(args.ik_constants)),
                       N3PConfig(hmd_only=args.hmd_only, foot_lock=foot_lock), args.model, args.orientation,
                       args.height, args.arm_span)


def unused_solve_options(args, config: SolveConfig) -> list[str]:
    """Warnings for options given to `solve` that the chosen method does not read."""
    unused = []
    if args.db and not config.needs_database:
        unused.append(f"--db is not used by --method {args.method}" + (" (only with --legs matched)" if
                                                                       args.method == "hybrid" else ""))
    if args.method != "mm":
        unused += [f"{option} acts on --method mm only (the {args.method} method's arms reach by its own IK)"
                   for option, given in (("--arm-span", args.arm_span), ("--ik-constants",
                                                                         args.ik_constants != "fitted")) if given]
    return unused


def stitch_clips(args) -> int:
    """Stitch locomotion clips into one (Kim et al.'s Recurrent Motion Refiner); BVH on the first clip's skeleton."""
    from ..stitch.stitching import on_skeleton, stitch

    check_outputs([args.output], [*args.clips, args.model])
    clips = [read_humanoid(path) for path in args.clips]
    config = StitchConfig(args.method, args.window, args.shift, foot_lock=not args.no_foot_lock,
                          feet_velocity_weight=args.feet_velocity_weight)
    result = stitch(clips, config, StitchModel.load(args.model) if config.method == "rmr" else None)
    write_bvh(args.output, on_skeleton(result.motion, clips[0].skeleton))
    deviation = result.root_deviation()
    _print({"output": str(args.output), "frames": len(result.motion), "fps": result.motion.fps,
            "clip_starts": result.aligned.starts.tolist(), "root_deviation_max_m": float(deviation.max())},
           args.json, [f"wrote {args.output}: {len(result.motion)} frames at 60 fps from {len(clips)} clips "
                       f"({args.method}); the root strays at most {deviation.max() * 100:.1f} cm from the aligned clips"])
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The parser of `python -m core`: one subparser per command group, each command's run function its default."""
    parser = argparse.ArgumentParser(prog="python -m core", description="VR Avatar: three-point full-body animation.")
    groups = parser.add_subparsers(dest="group", required=True, metavar="GROUP")
    _add_bvh_commands(groups)
    _add_stream_commands(groups)
    _add_db_commands(groups)
    _add_solve_command(groups)
    _add_stitch_command(groups)
    _add_train_commands(groups)
    _add_eval_commands(groups)
    bench.add_command(groups)
    demo.add_command(groups)
    return parser


def _add_bvh_commands(groups) -> None:
    bvh = groups.add_parser("bvh", help="BVH motion capture files").add_subparsers(dest="command", required=True)
    info = bvh.add_parser("info", help=bvh_info.__doc__, description=bvh_info.__doc__)
    info.add_argument("files", nargs="+", help="BVH files or folders")
    info.add_argument("--scale", type=float, help="metres per file unit (default: guessed from the body size)")
    info.add_argument("--mapping", help=MAPPING_HELP)
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(run=bvh_info)


def _add_stream_commands(groups) -> None:
    stream = groups.add_parser("stream", help="three-point streams (CSV v1)").add_subparsers(dest="command", required=True)
    simulate = stream.add_parser("simulate", help=stream_simulate.__doc__, description=stream_simulate.__doc__)
    simulate.add_argument("bvh", help="source clip")
    simulate.add_argument("-o", "--output", required=True, help="stream CSV to write")
    simulate.add_argument("--look-around", type=float, default=0.0, metavar="DEG",
                          help="largest added head yaw about the neck, degrees (default 0: none)")
    simulate.add_argument("--fps", type=float, default=SimulationConfig.fps, help="stream rate (default 60)")
    simulate.add_argument("--seed", type=int, default=0, help="look-around random seed")
    simulate.add_argument("--attachment-noise", type=float, nargs=2, default=(0.0, 0.0), metavar=("M", "DEG"),
                          help="hold each controller off the assumed grip by a random offset up to M metres and a "
                               "turn up to DEG degrees (default 0 0)")
    simulate.add_argument("--calibration-pose", type=float, default=0.0, metavar="SECONDS",
                          help="start with the calibration gesture held this long (wrists circling; default 0)")
    simulate.add_argument("--calibration-arms", choices=("T", "A"), default="T", help="its arms: T level, A 45° down")
    simulate.add_argument("--device-noise", action="store_true",
                          help="write the stream as a real headset would: its own rate (72, 90 or 120 Hz), jittered "
                               "millisecond timestamps 10-30 ms late, 20-40 ms gaps, 1-2 mm position noise, quaternions "
                               "rounded to two decimals, brief controller dropouts (DeviceNoise)")
    simulate.add_argument("--body-scale", type=float, default=1.0, metavar="S",
                          help="the person is S times the clip's actor's size (default 1)")
    simulate.add_argument("--grip", choices=GRIPS, default="openxr",
                          help="report the controllers as this tool's pose instead of OpenXR's grip (default openxr)")
    simulate.add_argument("--truth", help="also write the ground-truth motion (look-around applied) as BVH")
    simulate.add_argument("--scale", type=float, help="metres per BVH unit (default: guessed)")
    simulate.add_argument("--mapping", help=MAPPING_HELP)
    simulate.set_defaults(run=stream_simulate)
    record_parser = stream.add_parser("record", help=stream_record.__doc__, description=stream_record.__doc__)
    record_parser.add_argument("-o", "--output", required=True, help="stream CSV to write")
    record_parser.add_argument("--seconds", type=float, default=10.0,
                               help="how long to record from the first located frame (default 10)")
    record_parser.add_argument("--rate", type=float, metavar="HZ",
                               help="keep at most this many samples per second (default: every runtime frame)")
    record_parser.set_defaults(run=stream_record)
    calibrate = stream.add_parser("calibrate", help=stream_calibrate.__doc__, description=stream_calibrate.__doc__)
    calibrate.add_argument("csv")
    calibrate.add_argument("-o", "--output", help="write the stream with its calibration as a comment line")
    calibrate.add_argument("--seconds", type=float, default=CalibrationConfig.search_s,
                           help=f"look for the gesture in the first SECONDS (default {CalibrationConfig.search_s:g})")
    calibrate.add_argument("--json", action="store_true", help="print one JSON object")
    calibrate.set_defaults(run=stream_calibrate)
    info = stream.add_parser("info", help=stream_info.__doc__, description=stream_info.__doc__)
    info.add_argument("csv")
    info.add_argument("--hmd-only", action="store_true",
                      help="a headset-only stream: the controllers' columns may be absent and are not counted")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(run=stream_info)


def _add_db_commands(groups) -> None:
    db = groups.add_parser("db", help="motion-matching databases").add_subparsers(dest="command", required=True)
    build = db.add_parser("build", help=db_build.__doc__, description=db_build.__doc__)
    build.add_argument("mocap", nargs="+", help="BVH files or folders")
    build.add_argument("-o", "--output", required=True, help="database file to write (.npz)")
    build.add_argument("--fps", type=float, default=DatabaseConfig.fps, help="runtime rate (default 60)")
    build.add_argument("--mirror", action="store_true", help="add left-right mirrored copies of every clip")
    build.add_argument("--height-range", type=float, nargs=2, default=DatabaseConfig.height_range, metavar=("LO", "HI"),
                       help="HMD height ratios (current / standing) this database serves (default: all)")
    build.add_argument("--split", choices=("all", "train", "validation"), default="all",
                       help="use all files (default) or only the training / validation split of the data")
    build.add_argument("--locomotion", action="store_true",
                       help="only locomotion clips (Bandai activities " + ", ".join(LOCOMOTION) + ")")
    build.add_argument("--scale", type=float, help="metres per BVH unit (default: guessed)")
    build.add_argument("--mapping", help=MAPPING_HELP + "; kept in the database for the solver")
    build.add_argument("--json", action="store_true", help="print one JSON object")
    build.set_defaults(run=db_build)


def _add_solve_command(groups) -> None:
    solve_parser = groups.add_parser("solve", help=solve_stream.__doc__, description=solve_stream.__doc__)
    solve_parser.add_argument("stream", help="three-point stream, CSV v1")
    solve_parser.add_argument("--db", nargs="+", help="pose database(s) for --method mm and --legs matched; several for "
                                                      "height ranges")
    solve_parser.add_argument("-o", "--output", required=True, help="BVH to write; the report goes beside it")
    solve_parser.add_argument("--method", choices=METHODS, default=SolveConfig.method,
                              help="solver: hybrid (default, needs no --db) the Neural3Points predictor's body with "
                                   "MMVR's body facing and foot lock; mm motion matching (MMVR, needs --db); n3p the "
                                   "predictor alone")
    solve_parser.add_argument("--legs", choices=LEGS, default=HybridConfig.legs,
                              help="hybrid: the predictor's own legs (default) or motion matching's steps over --db")
    solve_parser.add_argument("--model", help="n3p, hybrid: predictor model file (default: the shipped assets/n3p.npz)")
    solve_parser.add_argument("--hmd-only", action="store_true",
                              help="n3p: ignore the controllers (the stream may lack their columns)")
    solve_parser.add_argument("--alpha", type=float, default=MatchingConfig.alpha_m,
                              help="position accuracy in metres (default 0.3; 0.1 for self-avatars)")
    solve_parser.add_argument("--orientation", help="orientation model file, 'mmvr' (the paper's network) or 'hmd' "
                                                           "(default: the shipped window model)")
    solve_parser.add_argument("--height", type=float, help="standing HMD height in metres, 0.8-2.5: the headset's "
                                                           "(eye level), not the body's height (default: measured, the "
                                                           "first half second's, raised if the user stands up later)")
    solve_parser.add_argument("--arm-span", type=float, help="mm: T-pose wrist-to-wrist span in metres, 0.3-3.5 "
                                                                "(default: the avatar's arms)")
    solve_parser.add_argument("--grip", choices=GRIPS, default="openxr",
                              help="the pose the stream's controllers report: OpenXR's grip (default), or SteamVR's "
                                   "device pose of an Index, Touch or Vive wand controller (index-openvr, ...)")
    solve_parser.add_argument("--no-foot-lock", action="store_true", help="leave the feet as the solver returns them")
    solve_parser.add_argument("--physics", action="store_true",
                              help="after the method, a simulated body tracks the solve (MuJoCo, one quadratic program "
                                   "a step): no floating, sinking or sliding beyond a bounded root residual; needs "
                                   "mujoco and daqp")
    solve_parser.add_argument("--no-calibrate", action="store_true",
                              help="take the controllers as held the default way (default: a calibration stored with "
                                   "the stream, else one from the gesture in its first minute, `stream calibrate`)")
    solve_parser.add_argument("--ik-constants", default="fitted", metavar="CHOICE",
                              help="mm: the arm IK's elbow constants: 'fitted' (default, Parger et al.'s heuristics "
                                   "refitted to mocap), 'paper' (as printed) or a file from `train ik`")
    solve_parser.add_argument("--avatar", help="BVH character to write the motion on (its skeleton, proportions and "
                                               "rest pose) instead of the solver's skeleton")
    solve_parser.add_argument("--avatar-size", choices=SIZE_MODES, default="fit",
                              help="with --avatar: 'fit' (default) scales the character so its head meets the "
                                   "headset; 'keep' keeps its size and scales the solve to it")
    solve_parser.add_argument("--avatar-scale", type=float, metavar="SCALE",
                              help="with --avatar: metres per unit of the character's file (default: guessed from its "
                                   "size, which a child's or a small figure's may defeat)")
    solve_parser.add_argument("--mapping", help="with --avatar: " + MAPPING_HELP)
    solve_parser.set_defaults(run=solve_stream)


def _add_stitch_command(groups) -> None:
    stitch_parser = groups.add_parser("stitch", help=stitch_clips.__doc__, description=stitch_clips.__doc__)
    stitch_parser.add_argument("clips", nargs="+", help="BVH clips in order (one skeleton)")
    stitch_parser.add_argument("-o", "--output", required=True, help="BVH to write (60 fps)")
    stitch_parser.add_argument("--method", choices=("rmr", "inertialization", "concat"), default=StitchConfig.method,
                               help="rmr (default): the refiner; inertialization: blend each seam over 30 frames; "
                                    "concat: aligned, no blending")
    stitch_parser.add_argument("--model", default=str(STITCH_MODEL), help="stitch model (default: the shipped one)")
    stitch_parser.add_argument("--window", type=int, default=StitchConfig.window,
                               help="w: frames per refined window (default 180)")
    stitch_parser.add_argument("--shift", type=int, default=StitchConfig.shift, help="s: frames the window moves (default 90)")
    stitch_parser.add_argument("--no-foot-lock", action="store_true", help="skip the foot lock on predicted contacts")
    stitch_parser.add_argument("--feet-velocity-weight", type=float, default=StitchConfig.feet_velocity_weight,
                               metavar="W", help="the feet follow the least-squares path between the output's positions "
                                                 "(p) and its velocities (v), W on v's steps (default 32; 0: p alone)")
    stitch_parser.add_argument("--json", action="store_true", help="print one JSON object")
    stitch_parser.set_defaults(run=stitch_clips)


def _add_train_commands(groups) -> None:
    train = groups.add_parser("train", help="train the project's networks and fit the arm IK's constants").add_subparsers(dest="command", required=True)
    train_orientation.add_command(train)
    train_stitch.add_command(train)
    train_n3p.add_command(train)
    fit_upper_body_ik.add_command(train)


def _add_eval_commands(groups) -> None:
    evaluate = groups.add_parser("eval", help="evaluate against mocap ground truth").add_subparsers(dest="command", required=True)
    for command in (eval_orientation, eval_ik, eval_matching, eval_stitch, eval_full, eval_calibration, eval_characters,
                    eval_physics_sheet):
        command.add_command(evaluate)


WRITTEN_TOGETHER = (stream_simulate, db_build, solve_stream, stitch_clips)
"""Commands whose outputs (a solve's BVH and report; a stream and its truth) replace the earlier ones together,
or not at all."""


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    problem = option_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    try:
        with no_empty_folders_left(), together() if args.run in WRITTEN_TOGETHER else nullcontext():
            return args.run(args)
    except BrokenPipeError:  # the reader stopped (`bvh info DIR | head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except USER_ERRORS as error:
        print(f"error: {_one_line(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted; each output is either complete or as it was", file=sys.stderr)
        return 130


def _one_line(error: Exception) -> str:
    """The message of a user error on one line; an OSError names its file."""
    if isinstance(error, OSError) and error.filename and error.strerror:
        return f"{error.filename}: {error.strerror}"
    return " ".join(str(error).split("\n"))
