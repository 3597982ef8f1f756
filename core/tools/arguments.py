"""The command line's shared options, declared once: the data a command reads and which of its files,
`--mocap`, `--json`; the bounds every option's value keeps; and the progress line an evaluation prints.

Every command module adds its parser with one hook, `add_command(group)`, on its group's subparsers
(`train`, `eval`, or the top level for `bench` and `demo`).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

from ..devices.calibration import STORED_LIMITS
from ..devices.plausibility import HEAD_HEIGHT_RANGE_M
from ..errors import InputError
from ..files.mocap import activity, find_bvh_files
from ..rig.humanoid import find_mapping
from .mocap_split import read_humanoid, split_by_file

POSITIVE_OPTIONS = ("fps", "alpha", "height", "arm_span", "scale", "avatar_scale", "body_scale", "seconds", "rate",
                    "window", "shift", "minutes",
                    "epochs", "rollout", "windows_per_epoch", "batches_per_epoch", "evaluations", "frame_step", "clip_grad_norm")
"""Options whose value must be a positive number (when given)."""
NON_NEGATIVE_OPTIONS = ("two_handed", "clip_seconds", "look_around", "limit", "solved", "calibration_pose")
UPPER_LIMITS = {"fps": 1000.0, "rate": 1000.0, "calibration_pose": 60.0, "body_scale": 10.0, "seconds": 86400.0}
"""Options with a largest sensible value: rates in Hz (devices run at 30-144), seconds, a body's scale."""
BODY_SIZES_M = {"height": ("the standing HMD height (the headset's, at eye level; not the body's height)",
                           HEAD_HEIGHT_RANGE_M),
                "arm_span": ("the T-pose wrist-to-wrist span", STORED_LIMITS["arm_span_m"])}
"""Options that give a person's size in metres: what each is, and the range a stream's measured standing HMD height
(`check_stream`) or a stored calibration's arm span is accepted in."""


def option_problem(args) -> str | None:
    """What is wrong with the parsed options' values (non-positive, NaN, a reversed range), or None."""
    for names, test, wanted in ((POSITIVE_OPTIONS, lambda v: v > 0, "a positive number"),
                                (NON_NEGATIVE_OPTIONS, lambda v: v >= 0, "zero or a positive number")):
        for name in names:
            value = getattr(args, name, None)
            if value is not None and not (test(value) and math.isfinite(value)):
                return f"--{name.replace('_', '-')} must be {wanted}, not {value}"
    for name, limit in UPPER_LIMITS.items():
        value = getattr(args, name, None)
        if value is not None and value > limit:
            return f"--{name.replace('_', '-')} must be at most {limit:g}, not {value:g}"
    rates = getattr(args, "device_noise", None)
    if isinstance(rates, list) and not all(0 < r <= UPPER_LIMITS["rate"] for r in rates):
        return f"--device-noise takes rates in Hz, each above 0 and at most {UPPER_LIMITS['rate']:g}, not {rates}"
    low_high = getattr(args, "height_range", None)
    if low_high is not None and not 0 <= low_high[0] <= low_high[1]:
        return (f"--height-range {low_high[0]:g} {low_high[1]:g}: give LO then HI, 0 <= LO <= HI "
                "(HMD height ratios, e.g. 0 0.9)")
    return body_size_problem(args)


def body_size_problem(args) -> str | None:
    """What is wrong with a body size given in metres (BODY_SIZES_M) outside its range, or None."""
    for name, (what, (low, high)) in BODY_SIZES_M.items():
        value = getattr(args, name, None)
        if value is not None and not low <= value <= high:
            option = f"--{name.replace('_', '-')}"
            return f"{option} is {what} in metres, {low:g}-{high:g} m, not {value:g}{_metres_hint(option, value, low, high)}"
    return None


def _metres_hint(option: str, value: float, low: float, high: float) -> str:
    """What a size outside its range in metres suggests: centimetres or millimetres, with the value in metres."""
    for factor, unit, symbol in ((100.0, "centimetres", "cm"), (1000.0, "millimetres", "mm")):
        if low <= value / factor <= high:
            return f": {value:g} looks like {unit}; give metres ({value:g} {symbol} is {option} {value / factor:g})"
    return ""


def add_data_arguments(parser, use: str | None = None, split: bool = True) -> None:
    """`--data` (BVH files or folders; `use` says which of them a command reads) and, for evaluations, `--split`."""
    parser.add_argument("--data", nargs="+", required=True,
                        help="BVH files or folders" + (f" ({use})" if use else ""))
    if split:
        parser.add_argument("--split", choices=("validation", "all"), default="validation",
                            help="evaluate the validation files of the data (default) or all of them")


def add_selection_arguments(parser) -> None:
    """The `--activities` and `--limit` options that `selected_files` reads."""
    parser.add_argument("--activities", nargs="+", help="only clips of these activities (e.g. walk run)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N clips (0: all)")


def add_mocap_argument(parser) -> None:
    """`--mocap`: the folder the built-in default data comes from."""
    parser.add_argument("--mocap", help="folder of BVH files (default: $VR_AVATAR_MOCAP or ../shared/data/bandai)")


def add_json_argument(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def evaluation_files(args) -> list[Path]:
    """The BVH files that `--data` and `--split` select; an error if the split leaves none."""
    files = find_bvh_files(args.data)
    if args.split == "all":
        return files
    validation = split_by_file(files)[1]
    if not validation:
        raise InputError(f"{', '.join(map(str, args.data))}: no file of the {len(files)} is in the validation split (by "
                         "file name); --split all evaluates them all")
    return validation


def selected_files(args) -> list[Path]:
    """The evaluation files, narrowed by `--activities` and `--limit`; an error if none is left."""
    files = evaluation_files(args)
    if args.activities:
        files = [f for f in files if activity(f.stem) in args.activities]
    if args.limit:
        files = files[: args.limit]
    if not files:
        raise ValueError("no clips to evaluate (check --data, --split and --activities)")
    return files


def scored_clips(files) -> list[Path]:
    """`files`, each read up front: a clip that does not map, is not +Y up or whose skeleton has no toe joints (the
    scores' feet are the toes) is named before any clip is solved."""
    for path in files:
        if not {"l_toes", "r_toes"} <= set(find_mapping(read_humanoid(path).skeleton).joints):
            raise InputError(f"{path}: its skeleton has no toe joints; an evaluation scores the feet by the toes "
                             "(foot skating, toe lift)")
    return files


def print_progress(done: int, total: int, name: str) -> None:
    """One overwritten line on stderr per file an evaluation has finished."""
    print(f"\r  {done}/{total} {name[:50]:50s}", end="" if done < total else "\n", file=sys.stderr)


def terminal_progress(what: str, out=None):
    """A solve's progress for a terminal: "what: N %" rewritten in place on `out` (standard error), ended with a new
    line when done; None where `out` is not a terminal (a log or a pipe gets no progress)."""
    out = out or sys.stderr
    if not out.isatty():
        return None
    shown = [-1]

    def progress(share: float) -> None:
        percent = int(100 * share)
        if percent != shown[0]:
            shown[0] = percent
            out.write(f"\r{what}: {percent} %" + ("\n" if percent >= 100 else ""))
            out.flush()
    return progress
