"""Training the Recurrent Motion Refiner (Kim et al. §5.1) in torch, exported for numpy inference.

L = 1.0 L_pose + 1.0 L_trj + 0.5 L_foot + 1.0 L_begin, Adam at 1e-4, batch 32 (§5.1, §7.1):
- L_pose: per-frame L1 norm of the output's r, p, q, v against the ground truth, mean over frames;
- L_trj: L1 between the root trajectories g = (x, theta, z) accumulated from the output's and the
  ground truth's root displacements, each starting at the identity;
- L_foot: L1 between sigmoid of the output's contact logits and the ground-truth contacts;
- L_begin: the output's first T_begin = 5 frames against the input's, weighted by
  sig(t / T_begin) with sig(x) = 1 - 1 / (1 + exp(5 - 10 x)).
L_pose and L_begin are taken on normalised values (each dimension divided by its deviation over the
training data, the values the network reads and writes), L_trj in metres and radians. The paper does
not say which scale its L1 terms use.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...files.atomic import check_outputs, save_figure, write_text
from ...stitch.data import FPS, WINDOW, StitchPairs
from ...stitch.model import GRU_LAYERS, HIDDEN_SIZE, StitchModel
from ...stitch.pose import PoseLayout
from ..arguments import add_data_arguments

LAMBDA_POSE, LAMBDA_TRJ, LAMBDA_FOOT, LAMBDA_BEGIN = 1.0, 1.0, 0.5, 1.0
T_BEGIN = 5
LEARNING_RATE = 1e-4
BATCH_SIZE = 32
DROPOUT = 0.5
"""On the second BGRU layer's input (torch's GRU dropout between layers)."""


def normalisation(pairs: StitchPairs, layout: PoseLayout) -> tuple[np.ndarray, np.ndarray]:
    """Mean and deviation per dimension over the ground-truth training poses; contacts pass unscaled."""
    frames = pairs.truths.reshape(-1, layout.size).astype(np.float64)
    mean, std = frames.mean(axis=0), frames.std(axis=0)
    std = np.where(std < 1e-4, 1.0, std)
    mean[layout.c], std[layout.c] = 0.0, 1.0
    return mean, std


def network(size: int):
    """E, R, D of §5 as one torch module."""
    import torch

    class RecurrentMotionRefiner(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = torch.nn.Sequential(torch.nn.Linear(size, HIDDEN_SIZE), torch.nn.ReLU(),
                                               torch.nn.Linear(HIDDEN_SIZE, HIDDEN_SIZE), torch.nn.ReLU())
            self.refiner = torch.nn.GRU(HIDDEN_SIZE, HIDDEN_SIZE, num_layers=GRU_LAYERS, batch_first=True,
                                        bidirectional=True, dropout=DROPOUT)
            self.decoder = torch.nn.Sequential(torch.nn.Linear(2 * HIDDEN_SIZE, HIDDEN_SIZE), torch.nn.ReLU(),
                                               torch.nn.Linear(HIDDEN_SIZE, size))

        def forward(self, x):
            return self.decoder(self.refiner(self.encoder(x))[0])

    return RecurrentMotionRefiner()


def begin_weights(t_begin: int = T_BEGIN):
    """sig(t / T_begin) for t = 1 .. T_begin: the transformed sigmoid of L_begin."""
    t = np.arange(1, t_begin + 1) / t_begin
    return 1.0 - 1.0 / (1.0 + np.exp(5.0 - 10.0 * t))


def root_trajectory(r):
    """g_t = (x, theta, z) (..., T, 3) accumulated from displacements r (..., T, 3) from the identity at t = 0."""
    import torch

    theta = torch.cat([torch.zeros_like(r[..., :1, 1]), torch.cumsum(r[..., 1:, 1], dim=-1)], dim=-1)
    yaw = theta[..., :-1]
    dx, dz = r[..., 1:, 0], r[..., 1:, 2]
    step_x = dx * torch.cos(yaw) + dz * torch.sin(yaw)
    step_z = -dx * torch.sin(yaw) + dz * torch.cos(yaw)
    zero = torch.zeros_like(r[..., :1, 0])
    x = torch.cat([zero, torch.cumsum(step_x, dim=-1)], dim=-1)
    z = torch.cat([zero, torch.cumsum(step_z, dim=-1)], dim=-1)
    return torch.stack([x, theta, z], dim=-1)


def losses(output, inputs, truths, mean, std, layout: PoseLayout) -> dict:
    """The four loss terms and their weighted sum for normalised tensors (B, T, d)."""
    import torch

    pose = slice(0, layout.v.stop)
    l_pose = (output[..., pose] - truths[..., pose]).abs().sum(-1).mean()
    r_out = output[..., layout.r] * std[layout.r] + mean[layout.r]
    r_true = truths[..., layout.r] * std[layout.r] + mean[layout.r]
    l_trj = (root_trajectory(r_out) - root_trajectory(r_true)).abs().sum(-1).mean()
    l_foot = (torch.sigmoid(output[..., layout.c]) - truths[..., layout.c]).abs().sum(-1).mean()
    weights = torch.as_tensor(begin_weights(), dtype=output.dtype)
    begin = (output[:, :T_BEGIN, pose] - inputs[:, :T_BEGIN, pose]).abs().sum(-1)
    l_begin = (begin * weights).sum(-1).mean() / T_BEGIN
    total = LAMBDA_POSE * l_pose + LAMBDA_TRJ * l_trj + LAMBDA_FOOT * l_foot + LAMBDA_BEGIN * l_begin
    return {"total": total, "pose": l_pose, "trj": l_trj, "foot": l_foot, "begin": l_begin}


def export(module, mean: np.ndarray, std: np.ndarray, layout: PoseLayout, info: dict) -> StitchModel:
    weights = {k: v.detach().cpu().numpy().astype(np.float32).copy() for k, v in module.state_dict().items()}
    return StitchModel(weights, mean.astype(np.float32), std.astype(np.float32),
                       np.arange(layout.c.start, layout.c.stop), dict(info))


def normalised_mse(model: StitchModel, pairs: StitchPairs, layout: PoseLayout) -> float:
    """MSE between the model's output and the ground truth over r, p, q, v in normalised units (§7.3's MSE)."""
    out = model.forward(pairs.inputs)
    pose = slice(0, layout.v.stop)
    error = (out[..., pose] - pairs.truths[..., pose]) / model.std[pose]
    return float(np.mean(error ** 2))


def train(pairs: StitchPairs, validation: StitchPairs, layout: PoseLayout, epochs: int, minutes: float | None = None,
          seed: int = 0, info: dict | None = None, checkpoint: Path | None = None, log=print,
          resume: StitchModel | None = None):
    """Train §5.1 for `epochs` (or until `minutes` run out); returns the numpy model and the per-epoch curve.
    With `checkpoint`, the model so far is saved there after every epoch. `resume` continues a saved
    model: its weights, normalisation and curve (Adam's moments start afresh: the file does not keep them)."""
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    module = network(layout.size)
    info = dict(info or {})
    previous = {}
    if resume is None:
        mean, std = normalisation(pairs, layout)
    else:
        if resume.size != layout.size:
            raise ValueError(f"cannot resume a model of pose size {resume.size} on pose size {layout.size}")
        mean, std = resume.mean.astype(np.float64), resume.std.astype(np.float64)
        module.load_state_dict({k: torch.from_numpy(v) for k, v in resume.weights.items()})
        previous = resume.info
        info["resumed_at_epochs"] = previous.get("resumed_at_epochs", []) + [int(previous.get("epochs_trained", 0))]
    mean_t, std_t = torch.from_numpy(mean.astype(np.float32)), torch.from_numpy(std.astype(np.float32))
    inputs = (torch.from_numpy(pairs.inputs) - mean_t) / std_t
    truths = (torch.from_numpy(pairs.truths) - mean_t) / std_t
    val_inputs = (torch.from_numpy(validation.inputs) - mean_t) / std_t
    val_truths = (torch.from_numpy(validation.truths) - mean_t) / std_t
    optimiser = torch.optim.Adam(module.parameters(), lr=LEARNING_RATE)
    curve = list(previous.get("curve", []))
    first_epoch = int(previous.get("epochs_trained", 0)) + 1
    earlier_s = float(previous.get("training_seconds", 0.0))
    started = time.perf_counter()
    model = export(module, mean, std, layout, info)
    for epoch in range(first_epoch, first_epoch + epochs):
        module.train()
        order = torch.from_numpy(rng.permutation(len(inputs)))
        sums = {}
        batches = 0
        for b in range(0, len(order), BATCH_SIZE):
            rows = order[b:b + BATCH_SIZE]
            terms = losses(module(inputs[rows]), inputs[rows], truths[rows], mean_t, std_t, layout)
            optimiser.zero_grad()
            terms["total"].backward()
            optimiser.step()
            for k, v in terms.items():
                sums[k] = sums.get(k, 0.0) + v.item()
            batches += 1
        module.eval()
        with torch.no_grad():
            val_terms = losses(module(val_inputs), val_inputs, val_truths, mean_t, std_t, layout)
        elapsed = earlier_s + time.perf_counter() - started
        row = {"epoch": epoch, "seconds": round(elapsed, 1),
               **{f"train_{k}": round(v / batches, 5) for k, v in sums.items()},
               **{f"validation_{k}": round(float(v), 5) for k, v in val_terms.items()}}
        curve.append(row)
        log(f"epoch {epoch}: train {row['train_total']:.4f} (pose {row['train_pose']:.3f}, trj {row['train_trj']:.3f},"
            f" foot {row['train_foot']:.3f}, begin {row['train_begin']:.3f}), validation {row['validation_total']:.4f}"
            f" [{elapsed:.0f} s]")
        info.update({"epochs_trained": epoch, "training_seconds": round(elapsed, 1), "curve": curve})
        model = export(module, mean, std, layout, info)
        if checkpoint is not None:
            model.save(checkpoint)
        if minutes is not None and time.perf_counter() - started > 60.0 * minutes:
            break
    return model, curve


def plot_curve(curve: list[dict], path: Path) -> None:
    """Training and validation loss per epoch, with the validation loss's four terms."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = [row["epoch"] for row in curve]
    figure, (total, terms) = plt.subplots(1, 2, figsize=(10, 4))
    total.plot(epochs, [row["train_total"] for row in curve], label="training")
    total.plot(epochs, [row["validation_total"] for row in curve], label="validation")
    total.set_title("RMR loss L (§5.1)")
    for term, weight in (("pose", LAMBDA_POSE), ("trj", LAMBDA_TRJ), ("foot", LAMBDA_FOOT), ("begin", LAMBDA_BEGIN)):
        terms.semilogy(epochs, [weight * row[f"validation_{term}"] for row in curve], label=f"λ L_{term}")
    terms.set_title("validation loss terms (weighted)")
    for axes in (total, terms):
        axes.set_xlabel("epoch")
        axes.grid(alpha=0.3)
        axes.legend()
    figure.tight_layout()
    try:
        save_figure(path, figure, dpi=110)
    finally:
        plt.close(figure)


def run(args) -> int:
    """Generate RMR training pairs from locomotion clips (§4) and train the refiner (§5.1); write the model."""
    import json

    import torch

    from ...files.mocap import find_bvh_files, locomotion_files
    from ..mocap_split import training_split
    from ...stitch.data import generate_pairs, load_clip, reference_databases
    from ..arguments import print_progress

    torch.set_num_threads(max(1, torch.get_num_threads()))
    resume = StitchModel.load(args.resume) if args.resume else None
    files = locomotion_files(find_bvh_files(args.data)) or find_bvh_files(args.data)
    output = Path(args.output)
    check_outputs([output, output.with_suffix(".json"), output.with_name(output.stem + "_curve.png")],
                  files + ([args.resume] if args.resume else []), make_folders=True)
    training_files, validation_files = training_split(files)
    print(f"train stitch: {len(training_files)} training and {len(validation_files)} validation clips",
          file=sys.stderr)
    started = time.perf_counter()
    clips = [load_clip(f) for f in training_files]
    validation_clips = [load_clip(f) for f in validation_files]
    for side, loaded, paths in (("training", clips, training_files), ("validation", validation_clips, validation_files)):
        if all(len(clip.vectors) < WINDOW for clip in loaded):
            raise InputError(f"{', '.join(map(str, paths))}: no {side} clip holds a stitch window, {WINDOW} frames "
                             f"({WINDOW / FPS:g} s) at {FPS:g} fps")
    databases = reference_databases(clips)
    pairs = generate_pairs(clips, databases, clips, seed=args.seed,
                           progress=lambda d, t: print_progress(d, t, clips[d - 1].name))
    validation = generate_pairs(validation_clips, databases, clips, seed=args.seed + 1,
                                progress=lambda d, t: print_progress(d, t, validation_clips[d - 1].name))
    layout = PoseLayout.of(clips[0].motion.skeleton)
    generation_s = round(time.perf_counter() - started, 1)
    print(f"  {len(pairs.inputs)} training and {len(validation.inputs)} validation pairs in {generation_s} s",
          file=sys.stderr)
    info = {
        "paper": "Kim et al., Recurrent Motion Refiner for Locomotion Stitching: §4 data, §5 model",
        "data": [str(p) for p in args.data], "training_clips": len(training_files),
        "validation_clips": len(validation_files), "training_pairs": int(len(pairs.inputs)),
        "validation_pairs": int(len(validation.inputs)), "window_frames": int(pairs.inputs.shape[1]), "fps": 60,
        "pose_size": layout.size, "skeleton": list(clips[0].motion.skeleton.names),
        "batch_size": BATCH_SIZE, "learning_rate": LEARNING_RATE, "optimiser": "Adam", "dropout": DROPOUT,
        "loss_weights": {"pose": LAMBDA_POSE, "trj": LAMBDA_TRJ, "foot": LAMBDA_FOOT, "begin": LAMBDA_BEGIN},
        "t_begin": T_BEGIN, "seed": args.seed, "pair_generation_seconds": generation_s, "torch": torch.__version__,
    }
    model, curve = train(pairs, validation, layout, args.epochs, args.minutes, args.seed, info, checkpoint=output,
                         log=lambda line: print(line, file=sys.stderr), resume=resume)
    model.info["validation_mse"] = normalised_mse(model, validation, layout)
    model.save(output)
    write_text(output.with_suffix(".json"), json.dumps(model.info, indent=1) + "\n")
    plot_curve(curve, output.with_name(output.stem + "_curve.png"))
    print(f"wrote {output}: {model.info['epochs_trained']} epochs, validation MSE "
          f"{model.info['validation_mse']:.4f}", file=sys.stderr)
    return 0


def add_command(train_group) -> None:
    parser = train_group.add_parser("stitch", help=run.__doc__, description=__doc__)
    add_data_arguments(parser, "locomotion clips are used", split=False)
    parser.add_argument("-o", "--output", required=True, help="model file to write (.npz; a .json record beside it)")
    parser.add_argument("--epochs", type=int, default=5000, help="paper: 5000 (4 hours on a GPU)")
    parser.add_argument("--minutes", type=float, default=None, help="stop after the epoch that passes this time")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resume", metavar="MODEL", help="continue training this model (its epochs count on; "
                        "--epochs and --minutes are the additional ones)")
    parser.set_defaults(run=run)
