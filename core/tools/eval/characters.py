"""Solves written onto characters of the person's own skeleton: any studio's BVH, retargeted as `solve --avatar` does.

Each clip becomes a stream (±30° look-around); the default method solves it; the solve is retargeted onto the
clip's own skeleton (the clip as a BVH character: its names, rest pose and proportions) at the solve's rate,
and scored against the clip: MPJPE and hands (SPEC §5, over the canonical joints), and the feet as the person's
own: `toe_lift_ratio`, the 95th percentile of the toes' heights over their floor against the clip's, and
`foot_slide_ratio`, SPEC §5 foot skating against the clip's, each motion's toes over its own floor (the 1st
percentile of its toe heights; characters place their toe joints at the ball of the foot or at its tip), leaving out
the frame steps across a jump of the stream (a teleport, or a capture's first frame placed far from its second): a
body moved there was put, not slid.
`solver_mpjpe_cm` and `solver_foot_slide_ratio` are the same solve on the solver's own skeleton (its sliding over
its own floor, against the clip's). With `--physics` the physics pass follows the solve before it is retargeted, as
`solve --physics --avatar` does. Figures are per clip, per activity and over all clips: frame-weighted means, the
ratios pooled as `eval full` pools `foot_skate_ratio` (the frame-weighted mean of the solve's figure over that of the
truth's), so a clip whose truth barely moves its feet weighs as its frames do. A ratio whose truth's figure is under
its floor (RATIOS: a standing actor's toes neither lift nor slide) is not defined: None.
"""
from __future__ import annotations

import json
import sys

import numpy as np

from ...config import SimulationConfig, SolveConfig
from ...devices.attachments import implied_joint_positions
from ...devices.jumps import crossing, jump_samples
from ...devices.simulate import simulate_stream
from ..mocap_split import read_humanoid
from ...files.mocap import activity
from ...anim.contacts import floor_height
from ...quality.metrics import foot_skate_per_frame, score_motion
from ...rig.humanoid import find_mapping
from ...retarget.target import bvh_target
from ...retarget.retargeting import on_bvh_skeleton, retarget_solution
from ...solve import load_solver, require_physics, solve, with_physics
from ..arguments import (add_data_arguments, add_json_argument, add_selection_arguments, print_progress, scored_clips,
                         selected_files)

LOOK_AROUND_DEG = 30.0
TOE_LIFT_PERCENTILE = 95.0
FIGURES = ("mpjpe_cm", "mpjpe_cm_upper", "mpjpe_cm_lower", "hand_cm", "toe_lift_ratio", "foot_slide_ratio",
           "solver_mpjpe_cm", "solver_foot_slide_ratio")
TOE_LIFT_FLOOR_CM = 0.01
FOOT_SLIDE_FLOOR_CM_S = 0.01
RATIOS = {"toe_lift_ratio": ("toe_lift_cm", "toe_lift_cm_truth", TOE_LIFT_FLOOR_CM),
          "foot_slide_ratio": ("foot_slide_cm_s", "foot_slide_cm_s_truth", FOOT_SLIDE_FLOOR_CM_S),
          "solver_foot_slide_ratio": ("solver_foot_slide_cm_s", "foot_slide_cm_s_truth", FOOT_SLIDE_FLOOR_CM_S)}
"""Each ratio: (the solve's figure, the truth's, the truth's floor): under the floor (0.1 mm of lift, 0.1 mm/s of
sliding: a clip that stands still) the ratio is not defined."""
AVERAGED = tuple(k for k in FIGURES if k not in RATIOS) + tuple(k for parts in RATIOS.values() for k in parts[:2])
"""The figures whose frame-weighted means are taken; the ratios are pooled from theirs."""


def feet(motion, steps: np.ndarray | None = None) -> tuple[float, float]:
    """A motion's toe lift (m, TOE_LIFT_PERCENTILE of its toes' heights over their floor) and foot skating (cm/s),
    over its own floor; `steps` (T - 1,) bool: the frame steps the skating counts (default all)."""
    mapping = find_mapping(motion.skeleton)
    toes = motion.global_positions()[:, [mapping["l_toes"], mapping["r_toes"]]]
    floor = floor_height(toes[..., 1])
    skate = foot_skate_per_frame(toes, motion.fps, floor)
    if steps is not None:
        skate = skate[steps[:len(skate)]]
    return (float(np.percentile(toes[..., 1] - floor, TOE_LIFT_PERCENTILE)),
            float(skate.mean() * 100.0) if skate.size else 0.0)


def steps_without_jumps(stream, fps: float, frames: int) -> np.ndarray:
    """(frames - 1,) bool: the steps between frames at `fps` (from the stream's first time) that cross no jump of
    the stream's (`core.devices.jumps`)."""
    times = stream.times[0] + np.arange(frames) / fps
    return ~crossing(stream.times[jump_samples(stream)], times)[1:]


def clip_figures(motion, solver, seconds: float = 0.0, physics: bool = False) -> dict:
    """One clip's figures (module docstring); `seconds` > 0 keeps only its first seconds; `physics`: the physics pass
    after the solve."""
    if seconds > 0:
        motion = motion[:max(2, int(seconds * motion.fps))]
    simulated = simulate_stream(motion, SimulationConfig(look_around_deg=LOOK_AROUND_DEG))
    solution = solve(simulated.stream, solver, None)
    if physics:
        solution = with_physics(solution)
    implied = implied_joint_positions(simulated.stream)[:, 1:]
    retargeted = retarget_solution(solution, bvh_target(motion), solution.motion.fps)
    character = on_bvh_skeleton(retargeted, motion.skeleton, solution.motion.fps).resampled(motion.fps)
    truth = simulated.truth
    frames = min(len(character), len(truth))
    character, truth = character[:frames], truth[:frames]
    figures = {k: v for k, v in score_motion(character, truth, implied).items() if k in FIGURES}
    figures["solver_mpjpe_cm"] = score_motion(solution.motion, truth, implied)["mpjpe_cm"]
    steps = steps_without_jumps(simulated.stream, motion.fps, frames)
    (lift, slide), (true_lift, true_slide) = feet(character, steps), feet(truth, steps)
    solver_slide = feet(solution.motion.resampled(motion.fps)[:frames], steps)[1]
    figures.update(toe_lift_cm=100 * lift, toe_lift_cm_truth=100 * true_lift, foot_slide_cm_s=slide,
                   foot_slide_cm_s_truth=true_slide, solver_foot_slide_cm_s=solver_slide, frames=frames)
    return with_ratios(figures)


def ratio(ours: float, truth: float, floor: float) -> float | None:
    """`ours` over `truth`; None where `truth` is under `floor`."""
    return ours / truth if truth >= floor else None


def with_ratios(figures: dict) -> dict:
    """The figures with their RATIOS."""
    return dict(figures, **{k: ratio(figures[ours], figures[truth], floor)
                            for k, (ours, truth, floor) in RATIOS.items()})


def pooled(rows: list[dict]) -> dict:
    """Clips' figures together: frame-weighted means, the ratios pooled from the means of their parts."""
    frames = np.array([r["frames"] for r in rows], dtype=float)
    means = {k: float(np.average([r[k] for r in rows], weights=frames)) for k in AVERAGED}
    return with_ratios(dict(means, frames=frames.sum()))


def rounded(figures: dict) -> dict:
    return {k: None if v is None else round(float(v), 3) for k, v in figures.items()}


def shown(figures: dict) -> str:
    """FIGURES as a text line's `key=value` words, '-' for a ratio not defined."""
    return " ".join(f"{k}={'-' if figures[k] is None else figures[k]}" for k in FIGURES)


def run(args) -> int:
    """The default method's solves on characters of each clip's own skeleton, scored against the clips."""
    if args.physics:
        require_physics()
    files = scored_clips(selected_files(args))
    solver = load_solver(SolveConfig(model=args.model))
    print(f"eval characters: {len(files)} clips", file=sys.stderr)
    rows = {}
    for i, path in enumerate(files):
        rows[path.stem] = clip_figures(read_humanoid(path), solver, args.clip_seconds, args.physics)
        print_progress(i + 1, len(files), path.stem)
    groups: dict[str, list] = {}
    for name, figures in rows.items():
        groups.setdefault(activity(name), []).append(figures)
    result = {"mean": rounded(pooled(list(rows.values()))),
              "activities": {a: rounded(pooled(g)) for a, g in sorted(groups.items())},
              "clips": {name: rounded(figures) for name, figures in rows.items()}}
    for name, figures in result["clips"].items():
        print(f"{name[:32]:32s} {shown(figures)}", file=sys.stderr)
    print(f"{'mean':32s} {shown(result['mean'])}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


def add_command(eval_group) -> None:
    parser = eval_group.add_parser("characters", help=run.__doc__, description=__doc__)
    add_data_arguments(parser)
    parser.add_argument("--clip-seconds", type=float, default=0.0,
                        help="only each clip's first SECONDS (default 0: all of it)", metavar="SECONDS")
    parser.add_argument("--model", help="the predictor's model file (default: the shipped assets/n3p.npz)")
    parser.add_argument("--physics", action="store_true",
                        help="the physics pass after the solve, before retargeting (solve --physics --avatar)")
    add_selection_arguments(parser)
    add_json_argument(parser)
    parser.set_defaults(run=run)
