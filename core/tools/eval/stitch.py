"""Evaluating locomotion stitching (Kim et al. §7): plain concatenation, inertialization and the refiner.

Cases follow the paper's validation protocol: stitch pairs (§4) built from the evaluation clips, T = 60
frames of 2 or 3 segments, kept where the phase differs at a seam (the feet's contact state changes
across it). The refiner runs on each 60-frame case as one window, as the paper's validation does.
Per method: foot sliding (§7.5, toe joints under 2 cm, m per frame), MSE to the ground truth in
normalised pose units (§7.3), NPSS, and SPEC §5's foot skating. Every method's vectors are rebuilt
as `stitch` rebuilds them without foot lock: forward kinematics, then leg IK to the feet that p and
v give (§5, StitchConfig.feet_velocity_weight); §7.5 compares "without post processing", so there is
no contact lock, except in `rmr_foot_lock`. `rmr_p` reads the refiner's feet from p alone. `rmr_fk`
is the refiner's rotations by forward kinematics alone, and `inertialization_fk` the blended rotations
likewise: inertialization as an animation system applies it (Bollo), on joint rotations, with the feet
wherever forward kinematics puts them.
Cases come from the validation split of the given files; the others make the KNN reference database.
Long sequences (Figure 9): several clips from different files, 120-240 frames each, stitched with
w = 180 and s = 90; the root's distance from the aligned input is reported per method, and for the
refiner without the trajectory correction (`rmr_paper_runtime`, StitchConfig.keep_trajectory).
"""
from __future__ import annotations

import json

import numpy as np

from ...anim.motion import Motion
from ...config import StitchConfig
from ...files.mocap import find_bvh_files, locomotion_files
from ..mocap_split import read_humanoid, split_by_file
from ...quality.metrics import foot_skate_cm_s, foot_slide_m, npss
from ...rig.humanoid import find_mapping
from ...stitch.data import StitchPairs, generate_pairs, load_clip, reference_databases
from ...stitch.model import SHIPPED_MODEL, StitchModel
from ...stitch.pose import PoseLayout, contact_levels, motion_from_vectors, predicted_contacts, toe_contacts
from ...stitch.stitching import FPS, METHODS, StitchError, place_feet, stitch, stitch_vectors
from ..arguments import add_data_arguments, add_json_argument, print_progress

LONG_SEQUENCES = 12
LONG_CLIPS = 4
READINGS = ("rmr_p", "rmr_fk", "inertialization_fk", "rmr_foot_lock", "ground_truth")
"""The rows `evaluate` adds to METHODS': other readings of the same outputs, and the ground truth."""
CASE_SEEDS = (1, 2, 3)
"""Each seed draws one set of stitch pairs from the evaluation clips (§4's random splits and k); the cases of
all of them are pooled, since one set's foot sliding moves by a few percent from seed to seed."""


def phase_differs(pairs: StitchPairs, layout: PoseLayout) -> np.ndarray:
    """(N,) whether any seam of a pair joins frames whose feet (heel or toe down, per foot) differ."""
    contacts = np.stack([predicted_contacts(x, layout) for x in pairs.inputs])
    keep = np.zeros(len(pairs.inputs), bool)
    for i, (a, b, _) in enumerate(pairs.splits):
        for seam in (a, a + b) if b else (a,):
            keep[i] |= bool(np.any(contacts[i, seam - 1] != contacts[i, seam]))
    return keep


def toe_positions(vectors: np.ndarray, layout: PoseLayout, skeleton, feet: str = "placed") -> np.ndarray:
    """Toe joint positions (T, 2, 3) of the motion that pose vectors describe, from the identity root.

    feet: 'fk' (forward kinematics of the rotations only), 'placed' (IK to the feet that p and v give, as
    `stitch` rebuilds a motion without foot lock), 'p' (IK to p's feet alone) or 'locked' (placed and held
    on the predicted toe contacts)."""
    motion = motion_from_vectors(vectors, layout, skeleton, FPS, np.zeros(3), 0.0)
    if feet != "fk":
        motion = place_feet(motion, vectors, layout, toe_contacts(vectors, layout) if feet == "locked" else None,
                            velocity_weight=0.0 if feet == "p" else StitchConfig().feet_velocity_weight)
    mapping = find_mapping(skeleton)
    return motion.global_positions()[:, [mapping["l_toes"], mapping["r_toes"]]]


def method_outputs(pairs: StitchPairs, layout: PoseLayout, model: StitchModel) -> dict[str, np.ndarray]:
    """Pose vectors (N, T, d) per method for every pair (each pair one aligned sequence)."""
    return {method: np.stack([stitch_vectors(x.astype(float), [0, a, a + b] if b else [0, a], layout,
                                             StitchConfig(method), model)
                              for x, (a, b, _) in zip(pairs.inputs, pairs.splits)])
            for method in METHODS}


def scores(vectors: np.ndarray, truths: np.ndarray, layout: PoseLayout, skeleton, model: StitchModel,
           splits: np.ndarray, feet: str = "placed") -> dict[str, float]:
    """§7's figures of pose vectors (N, T, d) against the ground truth; MSE and NPSS in normalised units;
    foot sliding also per number of segments (`splits` (N, 3))."""
    mean, std = model.mean, model.std
    pose = slice(0, layout.v.stop)
    error = (vectors[..., pose] - truths[..., pose]) / std[pose]
    toes = np.stack([toe_positions(v, layout, skeleton, feet) for v in vectors])
    return {
        "foot_slide_m": foot_slide_m(toes),
        "foot_slide_m_2_segments": foot_slide_m(toes[splits[:, 1] == 0]),
        "foot_slide_m_3_segments": foot_slide_m(toes[splits[:, 1] > 0]),
        "mse": float(np.mean(error ** 2)),
        "npss": npss((truths[..., pose] - mean[pose]) / std[pose], (vectors[..., pose] - mean[pose]) / std[pose]),
        "foot_skate_cm_s": float(np.mean([foot_skate_cm_s(t, FPS, 0.0) for t in toes])),
    }


def long_sequences(clips, model: StitchModel, seed: int = 0, count: int = LONG_SEQUENCES) -> dict[str, dict]:
    """Figure 9: root distance from the aligned input on sequences of several clips, per method."""
    rng = np.random.default_rng(seed)
    usable = [c for c in clips if len(c.motion) >= 240]
    if len(usable) < LONG_CLIPS:
        return {}
    configs = {m: StitchConfig(m, foot_lock=False) for m in METHODS}
    configs["rmr_paper_runtime"] = StitchConfig("rmr", foot_lock=False, keep_trajectory=False)
    deviations = {m: [] for m in configs}
    frames = []
    for _ in range(count):
        chosen = rng.choice(len(usable), LONG_CLIPS, replace=False)
        parts = []
        for c in chosen:
            motion = usable[c].motion
            length = int(rng.integers(120, 241))
            start = int(rng.integers(0, len(motion) - length + 1))
            parts.append(motion[start:start + length])
        frames.append(sum(len(part) for part in parts))
        for method, config in configs.items():
            deviations[method].append(stitch(parts, config, model).root_deviation())
    return {m: {"root_deviation_long_m": float(np.mean(np.concatenate(d))),
                "root_deviation_long_max_m": float(np.max(np.concatenate(d))),
                "root_deviation_long_end_m": float(np.mean([x[-1] for x in d]))}
            for m, d in deviations.items()} | {"long_sequences": {"count": count, "frames_mean": float(np.mean(frames))}}


def evaluate(files, model: StitchModel, seeds=CASE_SEEDS, progress=None) -> dict:
    """Figures per method (METHODS, then READINGS) on cases from `files`, pooled over the pair seeds."""
    training, validation = split_by_file(files)
    if not validation:
        raise StitchError("no evaluation clips: the validation split of the given files is empty")
    reference = [load_clip(f) for f in (training or validation)]
    cases_from = [load_clip(f) for f in validation]
    layout = PoseLayout.of(reference[0].motion.skeleton)
    model.check_layout(layout)
    databases = reference_databases(reference)
    drawn = [generate_pairs(cases_from, databases, reference, seed=seed, progress=progress) for seed in seeds]
    keep = [phase_differs(pairs, layout) for pairs in drawn]
    pairs = StitchPairs(np.concatenate([p.inputs[k] for p, k in zip(drawn, keep)]),
                        np.concatenate([p.truths[k] for p, k in zip(drawn, keep)]),
                        np.concatenate([p.splits[k] for p, k in zip(drawn, keep)]),
                        [s for p, k in zip(drawn, keep) for s, kept in zip(p.sources, k) if kept])
    skeleton = reference[0].motion.skeleton
    truths = pairs.truths.astype(float)
    outputs = method_outputs(pairs, layout, model)
    splits = pairs.splits
    result = {m: scores(v, truths, layout, skeleton, model, splits) for m, v in outputs.items()}
    result["rmr_p"] = scores(outputs["rmr"], truths, layout, skeleton, model, splits, feet="p")
    for method in ("rmr", "inertialization"):
        result[f"{method}_fk"] = scores(outputs[method], truths, layout, skeleton, model, splits, feet="fk")
    result["rmr_foot_lock"] = scores(outputs["rmr"], truths, layout, skeleton, model, splits, feet="locked")
    result["ground_truth"] = scores(truths, truths, layout, skeleton, model, splits)
    long = long_sequences(cases_from, model)
    for m in METHODS:
        result[m].update(long.get(m, {}))
    result["rmr_paper_runtime"] = long.get("rmr_paper_runtime", {})
    result["cases"] = {"total": int(len(pairs.inputs)), "two_segments": int(np.sum(pairs.splits[:, 1] == 0)),
                       "three_segments": int(np.sum(pairs.splits[:, 1] > 0)), "window_frames": int(truths.shape[1]),
                       "reference_clips": len(reference), "evaluation_clips": len(cases_from),
                       "seeds": list(seeds),
                       "long_sequences": long.get("long_sequences", {})}
    return result


def refine_solution(solution, solver, model: StitchModel, config: StitchConfig = StitchConfig()) -> Motion:
    """A solved stream's motion through the stitcher's refiner, its floor kept, its arms posed again by the
    solver's upper-body IK toward the same devices (so the refiner cannot pull the hands away)."""
    rooted = solution.motion
    floor = contact_levels(rooted, PoseLayout.of(rooted.skeleton))[1]
    refined = stitch([rooted], config, model).motion
    positions = refined.positions.copy()
    positions[:, 1, 1] += floor
    refined = Motion(refined.skeleton, refined.rotations, positions, refined.fps, rooted.name)
    stream = solution.stream
    return solver.pose_arms(refined, stream.positions, stream.rotations,
                            solver.upper_body_calibration(solution.standing_height_m))


def solved_streams(files, database_files, model: StitchModel, progress=None) -> dict:
    """The paper's suggestion tried: motion matching's output (`mm`) against the same refined (`mm_rmr`).

    Each clip becomes a simulated stream with look-around, is solved by the default solver over a
    database of `database_files`, refined, and scored with SPEC §5 against the clip.
    """
    from ...config import DatabaseConfig, SimulationConfig, MatchingConfig
    from ...devices.attachments import implied_joint_positions
    from ...devices.simulate import simulate_stream
    from ...matching.pose_database import build_database
    from ...matching.solver import MatchingDatabase, MotionMatchingSolver
    from ...solve import solve
    from ...orientation.window_model import load_orientation_model
    from ...quality.metrics import score_motion
    from .matching import LOOK_AROUND_DEG

    config = MatchingConfig()
    database = build_database([read_humanoid(f) for f in database_files], DatabaseConfig())
    solver = MotionMatchingSolver([MatchingDatabase.prepare(database, config)], config, load_orientation_model())
    simulation = SimulationConfig(look_around_deg=LOOK_AROUND_DEG)
    rows = {"mm": [], "mm_rmr": []}
    for i, path in enumerate(files):
        simulated = simulate_stream(read_humanoid(path), simulation)
        implied = implied_joint_positions(simulated.stream, simulation.devices)[:, 1:]
        solution = solve(simulated.stream, solver)
        for name, motion in (("mm", solution.motion), ("mm_rmr", refine_solution(solution, solver, model))):
            figures = score_motion(motion, simulated.truth, implied, simulated.stream.tracked[:, 1:])
            rows[name].append((len(motion), figures))
        if progress:
            progress(i + 1, len(files))
    keys = ("root_cm", "hand_cm", "foot_skate_cm_s", "foot_skate_cm_s_truth", "mpjpe_cm_lower", "jitter")
    return {name: {k: float(np.average([f[k] for _, f in r], weights=[n for n, _ in r])) for k in keys}
            | {"clips": len(r)} for name, r in rows.items()}


def table(result: dict) -> str:
    lines = [f"{'method':18s} {'foot slide (m)':>15s} {'MSE':>8s} {'NPSS':>7s} {'root dev long (m)':>18s}"]
    for m in (*METHODS, *READINGS):
        r = result[m]
        lines.append(f"{m:18s} {r['foot_slide_m']:15.4f} {r['mse']:8.4f} {r['npss']:7.4f} "
                     f"{r.get('root_deviation_long_m', float('nan')):18.3f}")
    c = result["cases"]
    if result.get("rmr_paper_runtime"):
        lines.append(f"{'rmr_paper_runtime':18s} {'':15s} {'':8s} {'':7s} "
                     f"{result['rmr_paper_runtime']['root_deviation_long_m']:18.3f}")
    lines.append(f"{c['total']} cases ({c['two_segments']} of 2 segments, {c['three_segments']} of 3), "
                 f"{c['window_frames']} frames each")
    for name in ("mm", "mm_rmr"):
        if name in result:
            r = result[name]
            lines.append(f"{name:8s} root {r['root_cm']:.2f} cm, hands {r['hand_cm']:.2f} cm, foot skate "
                         f"{r['foot_skate_cm_s']:.2f} cm/s (truth {r['foot_skate_cm_s_truth']:.2f}), {r['clips']} clips")
    return "\n".join(lines)


def run(args) -> int:
    """Foot sliding, MSE and NPSS of concatenation, inertialization and the refiner on stitch cases (§7)."""
    files = locomotion_files(find_bvh_files(args.data)) or find_bvh_files(args.data)
    model = StitchModel.load(args.model)
    result = evaluate(files, model, args.seeds, progress=lambda d, t: print_progress(d, t, f"case clips {d}"))
    result["model"] = str(args.model)
    if args.solved:
        training, validation = split_by_file(files)
        result |= solved_streams(validation[:args.solved], training or validation, model,
                                 progress=lambda d, t: print_progress(d, t, f"solved streams {d}"))
    print(json.dumps(result, indent=1) if args.json else table(result))
    return 0


def add_command(eval_group) -> None:
    parser = eval_group.add_parser("stitch", help=run.__doc__, description=__doc__)
    add_data_arguments(parser, "locomotion clips are used", split=False)
    parser.add_argument("--model", default=str(SHIPPED_MODEL), help="stitch model (default: the shipped one)")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(CASE_SEEDS),
                        help="seeds of the stitch pairs drawn from the clips; their cases are pooled (default 1 2 3)")
    parser.add_argument("--solved", type=int, default=0, metavar="N",
                        help="also solve N validation clips' simulated streams with motion matching and report "
                             "root, hand and foot-skate figures before (mm) and after the refiner (mm_rmr)")
    add_json_argument(parser)
    parser.set_defaults(run=run)
