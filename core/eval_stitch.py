"""Evaluating locomotion stitching (Kim et al. §7): plain concatenation, inertialization and the refiner.

Cases follow the paper's validation protocol: stitch pairs (§4) built from the evaluation clips, T = 60
frames of 2 or 3 segments, kept where the phase differs at a seam (the feet's contact state changes
across it). The refiner runs on each 60-frame case as one window, as the paper's validation does.
Per method: foot sliding (§7.5, toe joints under 2 cm, m per frame), MSE to the ground truth in
normalised pose units (§7.3), NPSS, and SPEC §5's foot skating. No foot lock (§7.5: "no post
processing"), except in `rmr_foot_lock`.
Cases come from the validation split of the given files; the others make the KNN reference database.
Long sequences (Figure 9): several clips from different files, 120-240 frames each, stitched with
w = 180 and s = 90; the root's distance from the aligned input is reported per method.
"""
from __future__ import annotations

import json

import numpy as np

from .config import StitchConfig
from .humanoid import find_mapping
from .metrics import foot_skate_cm_s, foot_slide_m, npss
from .mocap import find_bvh_files, locomotion_files, print_progress, split_by_file
from .stitch import FPS, METHODS, StitchError, lock_feet, stitch_vectors
from .stitch_data import StitchPairs, generate_pairs, load_clip, reference_databases
from .stitch_model import SHIPPED_MODEL, StitchModel
from .stitch_pose import PoseLayout, motion_from_vectors, predicted_contacts

LONG_SEQUENCES = 12
LONG_CLIPS = 4


def phase_differs(pairs: StitchPairs, layout: PoseLayout) -> np.ndarray:
    """(N,) whether any seam of a pair joins frames whose feet (heel or toe down, per foot) differ."""
    contacts = np.stack([predicted_contacts(x, layout) for x in pairs.inputs])
    keep = np.zeros(len(pairs.inputs), bool)
    for i, (a, b, _) in enumerate(pairs.splits):
        for seam in (a, a + b) if b else (a,):
            keep[i] |= bool(np.any(contacts[i, seam - 1] != contacts[i, seam]))
    return keep


def toe_positions(vectors: np.ndarray, layout: PoseLayout, skeleton, locked: bool = False) -> np.ndarray:
    """Toe joint positions (T, 2, 3) of the motion that pose vectors describe, from the identity root."""
    motion = motion_from_vectors(vectors, layout, skeleton, FPS, np.zeros(3), 0.0)
    if locked:
        motion = lock_feet(motion, predicted_contacts(vectors, layout))
    mapping = find_mapping(skeleton)
    return motion.global_positions()[:, [mapping["l_toes"], mapping["r_toes"]]]


def method_outputs(pairs: StitchPairs, layout: PoseLayout, model: StitchModel) -> dict[str, np.ndarray]:
    """Pose vectors (N, T, d) per method for every pair (each pair one aligned sequence)."""
    out = {}
    for method in METHODS:
        if method == "rmr":
            out[method] = model.forward(pairs.inputs).astype(float)
        else:
            out[method] = np.stack([stitch_vectors(x.astype(float), [0, a, a + b] if b else [0, a], layout,
                                                   StitchConfig(method))
                                    for x, (a, b, _) in zip(pairs.inputs, pairs.splits)])
    return out


def scores(vectors: np.ndarray, truths: np.ndarray, layout: PoseLayout, skeleton, model: StitchModel,
           locked: bool = False) -> dict[str, float]:
    """§7's figures of pose vectors (N, T, d) against the ground truth; MSE and NPSS in normalised units."""
    mean, std = model.mean, model.std
    pose = slice(0, layout.v.stop)
    error = (vectors[..., pose] - truths[..., pose]) / std[pose]
    toes = np.stack([toe_positions(v, layout, skeleton, locked) for v in vectors])
    return {
        "foot_slide_m": foot_slide_m(toes),
        "mse": float(np.mean(error ** 2)),
        "npss": npss((truths[..., pose] - mean[pose]) / std[pose], (vectors[..., pose] - mean[pose]) / std[pose]),
        "foot_skate_cm_s": float(np.mean([foot_skate_cm_s(t, FPS, 0.0) for t in toes])),
    }


def long_sequences(clips, model: StitchModel, seed: int = 0, count: int = LONG_SEQUENCES) -> dict[str, dict]:
    """Figure 9: root distance from the aligned input on sequences of several clips, per method."""
    from .stitch import align_clips, stitch

    rng = np.random.default_rng(seed)
    usable = [c for c in clips if len(c.motion) >= 240]
    if len(usable) < LONG_CLIPS:
        return {}
    deviations = {m: [] for m in METHODS}
    frames = []
    for _ in range(count):
        chosen = rng.choice(len(usable), LONG_CLIPS, replace=False)
        parts = []
        for c in chosen:
            motion = usable[c].motion
            length = int(rng.integers(120, 241))
            start = int(rng.integers(0, len(motion) - length + 1))
            parts.append(motion[start:start + length])
        frames.append(len(align_clips(parts).motion))
        for method in METHODS:
            result = stitch(parts, StitchConfig(method, foot_lock=False), model)
            deviations[method].append(result.root_deviation())
    return {m: {"root_deviation_long_m": float(np.mean(np.concatenate(d))),
                "root_deviation_long_max_m": float(np.max(np.concatenate(d))),
                "root_deviation_long_end_m": float(np.mean([x[-1] for x in d]))}
            for m, d in deviations.items()} | {"long_sequences": {"count": count, "frames_mean": float(np.mean(frames))}}


def evaluate(files, model: StitchModel, seed: int = 1, progress=None) -> dict:
    """Figures per method (METHODS, plus rmr_foot_lock and ground_truth) on cases from `files`."""
    training, validation = split_by_file(files)
    if not validation:
        raise StitchError("no evaluation clips: the validation split of the given files is empty")
    reference = [load_clip(f) for f in (training or validation)]
    cases_from = [load_clip(f) for f in validation]
    layout = PoseLayout.of(reference[0].motion.skeleton)
    model.check_layout(layout)
    databases = reference_databases(reference)
    pairs = generate_pairs(cases_from, databases, reference, seed=seed, progress=progress)
    keep = phase_differs(pairs, layout)
    pairs = StitchPairs(pairs.inputs[keep], pairs.truths[keep], pairs.splits[keep],
                        [s for s, k in zip(pairs.sources, keep) if k])
    skeleton = reference[0].motion.skeleton
    truths = pairs.truths.astype(float)
    outputs = method_outputs(pairs, layout, model)
    result = {m: scores(v, truths, layout, skeleton, model) for m, v in outputs.items()}
    result["rmr_foot_lock"] = scores(outputs["rmr"], truths, layout, skeleton, model, locked=True)
    result["ground_truth"] = scores(truths, truths, layout, skeleton, model)
    for segments, rows in (("2", pairs.splits[:, 1] == 0), ("3", pairs.splits[:, 1] > 0)):
        for m, v in outputs.items():
            toes = np.stack([toe_positions(x, layout, skeleton) for x in v[rows]])
            result[m][f"foot_slide_m_{segments}_segments"] = foot_slide_m(toes)
    long = long_sequences(cases_from, model)
    for m in METHODS:
        result[m].update(long.get(m, {}))
    result["cases"] = {"total": int(len(pairs.inputs)), "two_segments": int(np.sum(pairs.splits[:, 1] == 0)),
                       "three_segments": int(np.sum(pairs.splits[:, 1] > 0)), "window_frames": int(truths.shape[1]),
                       "reference_clips": len(reference), "evaluation_clips": len(cases_from),
                       "long_sequences": long.get("long_sequences", {})}
    return result


def table(result: dict) -> str:
    lines = [f"{'method':18s} {'foot slide (m)':>15s} {'MSE':>8s} {'NPSS':>7s} {'root dev long (m)':>18s}"]
    for m in (*METHODS, "rmr_foot_lock", "ground_truth"):
        r = result[m]
        lines.append(f"{m:18s} {r['foot_slide_m']:15.4f} {r['mse']:8.4f} {r['npss']:7.4f} "
                     f"{r.get('root_deviation_long_m', float('nan')):18.3f}")
    c = result["cases"]
    lines.append(f"{c['total']} cases ({c['two_segments']} of 2 segments, {c['three_segments']} of 3), "
                 f"{c['window_frames']} frames each")
    return "\n".join(lines)


def run(args) -> int:
    """Foot sliding, MSE and NPSS of concatenation, inertialization and the refiner on stitch cases (§7)."""
    files = locomotion_files(find_bvh_files(args.data)) or find_bvh_files(args.data)
    model = StitchModel.load(args.model)
    result = evaluate(files, model, progress=lambda d, t: print_progress(d, t, f"case clips {d}"))
    result["model"] = str(args.model)
    print(json.dumps(result, indent=1) if args.json else table(result))
    return 0


def add_command(eval_group) -> None:
    parser = eval_group.add_parser("stitch", help=run.__doc__, description=__doc__)
    parser.add_argument("--data", nargs="+", required=True, help="BVH files or folders (locomotion clips are used)")
    parser.add_argument("--model", default=str(SHIPPED_MODEL), help="stitch model (default: the shipped one)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(run=run)
