"""A contact sheet of a clip with and without the physics pass: the mocap truth, the default method's solve of the
stream simulated from it, and that solve tracked by the simulated body (core/physics/), seen from the side at
evenly spaced frames over a few seconds; under them the lowest sole's height over the floor and the root's
residual force, frame by frame. Sole points within 1 cm of the floor are green, under it red."""
from __future__ import annotations

import json
import sys

import numpy as np

from ...anim.motion import Motion
from ...config import PhysicsConfig, SimulationConfig, SolveConfig
from ...devices.simulate import simulate_stream
from ...files.atomic import check_outputs, save_figure
from ...files.bvh import read_bvh
from ...physics.body import simulated_body
from ...physics.metrics import soles_and_centre
from ...physics.tracked_points import track_to_the_devices
from ...rig.humanoid import find_mapping
from ...solve import load_solver, solve, solver_contacts
from ..arguments import add_json_argument

ROWS = ("mocap truth", "default solve", "+physics")
COLOURS = {"mocap truth": "0.45", "default solve": "tab:blue", "+physics": "tab:orange"}
ON_FLOOR_M = 0.01
"""A sole point this close to the floor is drawn as touching it."""


def side_view(positions: np.ndarray, heading: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """(..., 2) points seen from the body's right: distance along `heading` (3,) from `origin`, and height."""
    return np.stack([(positions - origin) @ heading, positions[..., 1]], axis=-1)


def sheet_series(clip: Motion, start_s: float, seconds: float, physics: PhysicsConfig = PhysicsConfig()) -> dict:
    """The three motions over the window (same frames, the stream's rate), their soles and the residual force."""
    window = clip[int(round(start_s * clip.fps)): int(round((start_s + seconds) * clip.fps))]
    if len(window) < 2:
        raise ValueError(f"{clip.name}: no frames from {start_s:g} s for {seconds:g} s")
    simulated = simulate_stream(window, SimulationConfig())
    solution = solve(simulated.stream, load_solver(SolveConfig()))
    result = track_to_the_devices(solution.motion, physics, solver_contacts(solution))
    truth = simulated.truth.resampled(solution.motion.fps) if simulated.truth.fps != solution.motion.fps \
        else simulated.truth
    frames = min(len(truth), len(solution.motion))
    motions = {"mocap truth": truth[:frames], "default solve": solution.motion[:frames],
               "+physics": result.motion[:frames]}
    bodies = {"mocap truth": simulated_body(truth.skeleton, physics, truth)}  # the truth's own skeleton and feet
    return {"motions": motions,
            "soles": {name: soles_and_centre(m, bodies.get(name, result.body))[0] for name, m in motions.items()},
            "residual_force_n": result.residual_force_n[:frames], "fps": solution.motion.fps,
            "name": clip.name}


def draw_sheet(series: dict, path: str, columns: int = 8) -> dict:
    """The contact sheet (module docstring) written to `path` as a PNG; the figures it shows."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    motions, soles = series["motions"], series["soles"]
    hips = find_mapping(motions["mocap truth"].skeleton)["hips"]
    truth_root = motions["mocap truth"].global_positions()[:, hips]
    travel = truth_root[-1] - truth_root[0]
    travel[1] = 0.0
    heading = travel / max(np.linalg.norm(travel), 1e-9) if np.linalg.norm(travel) > 0.05 else np.array([0, 0, 1.0])
    picks = np.linspace(0, len(truth_root) - 1, columns).round().astype(int)
    figure = pyplot.figure(figsize=(2.0 * columns, 9.5))
    grid = figure.add_gridspec(len(ROWS) + 2, columns, height_ratios=[3] * len(ROWS) + [1.6, 1.6])
    parents = motions["mocap truth"].skeleton.parents
    for row, name in enumerate(ROWS):
        joints = motions[name].global_positions()
        for column, frame in enumerate(picks):
            axes = figure.add_subplot(grid[row, column])
            origin = truth_root[frame] * [1.0, 0.0, 1.0]
            points = side_view(joints[frame], heading, origin)
            for joint, parent in enumerate(parents):
                if parent >= hips:  # the bones from the hips out (not a root joint under them on the floor)
                    axes.plot(*points[[parent, joint]].T, color=COLOURS[name], linewidth=2)
            sole = side_view(soles[name][frame], heading, origin)
            height = soles[name][frame][:, 1]
            axes.scatter(*sole.T, s=9, zorder=3,
                         c=np.where(height < 0.0, "red", np.where(height < ON_FLOOR_M, "green", "0.6")))
            axes.axhline(0.0, color="black", linewidth=1)
            axes.set_xlim(-0.9, 0.9)
            axes.set_ylim(-0.1, 1.9)
            axes.set_aspect("equal")
            axes.set_xticks([])
            axes.set_yticks([])
            if column == 0:
                axes.set_ylabel(name)
            if row == 0:
                axes.set_title(f"{frame / series['fps']:.2f} s", fontsize="small")
    times = np.arange(len(truth_root)) / series["fps"]
    lowest = figure.add_subplot(grid[len(ROWS), :])
    for name in ROWS:
        lowest.plot(times, 100.0 * soles[name][:, :, 1].min(axis=1), color=COLOURS[name], label=name)
    lowest.axhline(0.0, color="black", linewidth=0.8)
    lowest.set_ylabel("lowest sole (cm)")
    lowest.legend(fontsize="small", ncol=3, loc="upper right")
    residual = figure.add_subplot(grid[len(ROWS) + 1, :], sharex=lowest)
    residual.plot(times, series["residual_force_n"], color=COLOURS["+physics"])
    residual.set_ylabel("root residual (N)")
    residual.set_xlabel("seconds")
    figure.suptitle(f"{series['name']}: the mocap, the default solve, and the solve tracked by the simulated body")
    figure.tight_layout()
    try:
        save_figure(path, figure, dpi=80)
    finally:
        pyplot.close(figure)
    return {name: {"under_floor_cm": round(100.0 * float(np.maximum(-soles[name][:, :, 1].min(axis=1), 0).mean()), 3),
                   "lowest_sole_cm": round(100.0 * float(soles[name][:, :, 1].min(axis=1).mean()), 3)}
            for name in ROWS} | {"residual_force_n": round(float(series["residual_force_n"].mean()), 1)}


def run(args) -> int:
    """Draw the contact sheet of a clip solved with and without the physics pass."""
    check_outputs([args.output], [args.bvh])
    series = sheet_series(read_bvh(args.bvh), args.start, args.seconds)
    figures = {"file": args.bvh, "sheet": args.output, **draw_sheet(series, args.output, args.columns)}
    print(f"eval physics-sheet: wrote {args.output}", file=sys.stderr)
    if args.json:
        print(json.dumps(figures, indent=2))
    return 0


def add_command(eval_group) -> None:
    parser = eval_group.add_parser("physics-sheet", help=run.__doc__, description=__doc__)
    parser.add_argument("bvh", help="a clip (BVH) of a humanoid")
    parser.add_argument("-o", "--output", required=True, help="the contact sheet (PNG)")
    parser.add_argument("--start", type=float, default=0.0, metavar="SECONDS", help="window start (default 0)")
    parser.add_argument("--seconds", type=float, default=3.0, help="window length (default 3)")
    parser.add_argument("--columns", type=int, default=8, help="frames drawn (default 8)")
    add_json_argument(parser)
    parser.set_defaults(run=run)
