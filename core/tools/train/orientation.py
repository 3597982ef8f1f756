"""Training the body-orientation network (MMVR §4.2, Algorithm 1) in torch, exported for numpy inference.

Data: three-point streams simulated at 60 fps from mocap with look-around (and mirrored copies),
ground truth the virtual root's facing. Each sample is a window of r frames: the previous
orientation starts at the truth before the window, the network is rolled forward r times
feeding each prediction back, and the loss is the MSE between the last prediction and the truth
at the window's last frame. Batch 64, learning rate 3e-4, weight decay 0.035 (§4.2), with
AdamW's decoupled weight decay where the paper names Adam (docs/methods/orientation_mmvr.md).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from ...anim.character import body_yaw
from ...config import SimulationConfig
from ...devices.simulate import simulate_stream
from ...errors import InputError
from ...files.atomic import check_outputs, write_text
from ..mocap_split import read_humanoid
from ...math import quat
from ...math.angle import wrap_angle
from ...orientation.mmvr import HIDDEN_UNITS, INPUT_SIZE, OrientationModel, device_features, facing_yaw, \
    predict_body_orientation, rotate_6d
from ..arguments import add_data_arguments
from . import orientation_window as train_orientation_window

ROLLOUT = 50
BATCH_SIZE = 64
LEARNING_RATE = 3e-4
WEIGHT_DECAY = 0.035
TRAINING_LOOK_AROUND_DEG = 60.0


@dataclass
class OrientationClip:
    """One simulated stream, prepared: features (T, 36), HMD-frame matrices (T, 3, 3), truth (T, 6) world 6D."""

    name: str
    positions: np.ndarray
    rotations: np.ndarray
    features: np.ndarray
    hmd_frames: np.ndarray
    truth_6d: np.ndarray
    truth_yaw: np.ndarray


def prepare_clips(files, look_around_deg: float = TRAINING_LOOK_AROUND_DEG, seed: int = 0,
                  mirror: bool = False, fps: float = 60.0, progress=None) -> list[OrientationClip]:
    """Simulate streams from BVH files (and their mirror images) and compute features and truth."""
    clips = []
    for i, path in enumerate(files):
        motion = read_humanoid(path)
        variants = [motion, motion.mirrored()] if mirror else [motion]
        for v, variant in enumerate(variants):
            config = SimulationConfig(fps=fps, look_around_deg=look_around_deg, seed=seed * 100003 + 2 * i + v)
            simulated = simulate_stream(variant, config)
            stream = simulated.stream
            yaw = body_yaw(simulated.truth.global_positions(), simulated.mapping)
            features, hmd_frame = device_features(stream.positions, stream.rotations, fps)
            clips.append(OrientationClip(variant.name, stream.positions, stream.rotations, features,
                                         hmd_frame, quat.to_6d(quat.from_yaw(yaw)), yaw))
        if progress:
            progress(i + 1, len(files))
    return clips


def angle_errors_deg(model: OrientationModel, clip: OrientationClip, fps: float = 60.0) -> np.ndarray:
    """Per-frame absolute yaw error of the network on a clip, degrees, the network settled on its first frame."""
    predicted = predict_body_orientation(model, clip.positions, clip.rotations, fps)
    return np.degrees(np.abs(wrap_angle(facing_yaw(predicted) - clip.truth_yaw)))


def rollout_loss(network, features, hmd_frames, previous_world, target_local):
    """Algorithm 1 for a batch: roll r steps feeding predictions back (orthonormalised), MSE of the last one.

    features (B, r, 36), hmd_frames (B, r, 3, 3), previous_world (B, 6): the truth before the
    window, target_local (B, 6): the truth at the window's last frame in its HMD frame.
    """
    import torch

    previous = previous_world
    for j in range(features.shape[1]):
        hmd_frame = hmd_frames[:, j]
        local_previous = _rotate_6d_torch(hmd_frame.transpose(1, 2), previous)
        output = network(torch.cat([features[:, j], local_previous], dim=1))
        previous = _rotate_6d_torch(hmd_frame, _orthonormalize_6d_torch(output))
    return torch.mean((output - target_local) ** 2)


def _orthonormalize_6d_torch(d):
    import torch

    c0 = torch.nn.functional.normalize(d[:, :3], dim=1, eps=1e-9)
    c1 = d[:, 3:] - torch.sum(c0 * d[:, 3:], dim=1, keepdim=True) * c0
    return torch.cat([c0, torch.nn.functional.normalize(c1, dim=1, eps=1e-9)], dim=1)


def _rotate_6d_torch(matrices, d):
    import torch

    return torch.cat([torch.bmm(matrices, d[:, :3, None])[..., 0], torch.bmm(matrices, d[:, 3:, None])[..., 0]], dim=1)


class _Stacked:
    """All clips end to end, with the window starts that stay inside one clip."""

    def __init__(self, clips: list[OrientationClip], rollout: int):
        self.features = np.concatenate([c.features for c in clips]).astype(np.float32)
        self.hmd_frames = np.concatenate([c.hmd_frames for c in clips]).astype(np.float32)
        self.truth_world = np.concatenate([c.truth_6d for c in clips]).astype(np.float32)
        self.truth_local = rotate_6d(np.swapaxes(self.hmd_frames, -1, -2), self.truth_world).astype(np.float32)
        starts, offset = [], 0
        for c in clips:
            # Window [s, s + r) needs the truth at s - 1 from the same clip.
            starts.append(np.arange(offset + 1, offset + len(c.features) - rollout + 1))
            offset += len(c.features)
        self.starts = np.concatenate(starts)


def normalisation(stacked: _Stacked) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature mean and standard deviation over the training frames (the previous-orientation
    part from the truth of the previous frame, which is what a good predictor feeds back)."""
    previous_local = rotate_6d(np.swapaxes(stacked.hmd_frames[1:], -1, -2), stacked.truth_world[:-1])
    inputs = np.concatenate([stacked.features[1:], previous_local], axis=1)
    std = inputs.std(axis=0)
    # A feature (almost) constant in training, such as the upright second column of a yaw-only
    # body orientation, is centred but not scaled: dividing by its tiny spread would blow up any
    # deviation the network feeds back.
    return inputs.mean(axis=0), np.where(std < 1e-2, 1.0, std)


def train(clips: list[OrientationClip], validation: list[OrientationClip], rollout: int = ROLLOUT,
          epochs: int = 20, windows_per_epoch: int = 25600, seed: int = 0, hidden: tuple[int, ...] = HIDDEN_UNITS,
          clip_grad_norm: float | None = None, log=print) -> tuple[OrientationModel, list]:
    """Train per Algorithm 1; return the numpy model and the per-epoch curve (loss, validation degrees).

    `hidden` and `clip_grad_norm` exist for capacity studies (docs/decisions.md): the paper's network is HIDDEN_UNITS
    without clipping; wider ones diverge under the 50-step rollout at §4.2's learning rate unless the
    gradient's norm is clipped."""
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    data = _Stacked(clips, rollout)
    if not len(data.starts):
        raise InputError(f"no training clip is longer than the rollout, {rollout} frames at 60 fps: nothing to train "
                         "on (--rollout sets it)")
    mean, std = normalisation(data)
    layers, width = [], INPUT_SIZE
    for units in hidden:
        layers += [torch.nn.Linear(width, units), torch.nn.ReLU()]
        width = units
    layers.append(torch.nn.Linear(width, 6))
    body = torch.nn.Sequential(*layers)
    mean_t, std_t = torch.from_numpy(mean.astype(np.float32)), torch.from_numpy(std.astype(np.float32))

    def network(x):
        return body((x - mean_t) / std_t)

    # Decoupled weight decay (AdamW): as an L2 penalty inside Adam, 0.035 held the network at about
    # the HMD-forward level (18.0 against 9.3 degrees on a subset run, docs/decisions.md).
    optimiser = torch.optim.AdamW(body.parameters(), lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY)
    features = torch.from_numpy(data.features)
    hmd_frames = torch.from_numpy(data.hmd_frames)
    truth_world = torch.from_numpy(data.truth_world)
    truth_local = torch.from_numpy(data.truth_local)
    steps = torch.arange(rollout)
    curve = []
    batches = max(1, min(windows_per_epoch, len(data.starts)) // BATCH_SIZE)
    for epoch in range(1, epochs + 1):
        started = time.perf_counter()
        order = torch.from_numpy(rng.permutation(data.starts)[: batches * BATCH_SIZE])
        total = 0.0
        for b in range(batches):
            start = order[b * BATCH_SIZE:(b + 1) * BATCH_SIZE]
            window = start[:, None] + steps[None]
            loss = rollout_loss(network, features[window], hmd_frames[window], truth_world[start - 1],
                                truth_local[start + rollout - 1])
            optimiser.zero_grad()
            loss.backward()
            if clip_grad_norm:
                torch.nn.utils.clip_grad_norm_(body.parameters(), clip_grad_norm)
            optimiser.step()
            total += loss.item()
            train_orientation_window.progress_bar(epoch, epochs, b + 1, batches, total / (b + 1))
        model = export(body, mean, std)
        errors = np.concatenate([angle_errors_deg(model, c) for c in validation]) if validation else np.array([np.nan])
        curve.append({"epoch": epoch, "loss": total / batches, "validation_mean_deg": float(errors.mean()),
                      "seconds": round(time.perf_counter() - started, 2)})
        log(f"epoch {epoch}/{epochs}: loss {total / batches:.5f}, validation {errors.mean():.2f} deg "
            f"({curve[-1]['seconds']:.1f} s)")
    return export(body, mean, std), curve


def export(body, mean: np.ndarray, std: np.ndarray) -> OrientationModel:
    """The torch MLP as numpy weights (W as (in, out))."""
    linear = [m for m in body if hasattr(m, "weight")]
    layers = [(m.weight.detach().numpy().T.astype(np.float64).copy(), m.bias.detach().numpy().astype(np.float64).copy())
              for m in linear]
    return OrientationModel(layers, mean.astype(np.float64), std.astype(np.float64))


def run(args) -> int:
    """Train a body-orientation model on simulated streams (the window model, or --architecture mmvr)."""
    if args.architecture == "window":
        args.epochs = args.epochs or 20
        args.hidden = args.hidden or list(train_orientation_window.HIDDEN_UNITS)
        return train_orientation_window.run(args)
    args.epochs = args.epochs or 40
    args.hidden = args.hidden or list(HIDDEN_UNITS)
    return run_mmvr(args)


def run_mmvr(args) -> int:
    """Train the paper's network (MMVR §4) on simulated streams; write the model and its record."""
    import json
    from pathlib import Path

    import torch

    from ...files.mocap import find_bvh_files
    from ..mocap_split import training_split

    torch.set_num_threads(max(1, torch.get_num_threads()))
    files = find_bvh_files(args.data)
    output = Path(args.output)
    check_outputs([output, output.with_suffix(".json")], files, make_folders=True)
    training_files, validation_files = training_split(files)

    def progress(done, total):
        if done == total or done % 50 == 0:
            print(f"  simulated {done}/{total} files", file=sys.stderr)

    print(f"train orientation: {len(training_files)} training and {len(validation_files)} validation files",
          file=sys.stderr)
    started = time.perf_counter()
    clips = prepare_clips(training_files, args.look_around, args.seed, mirror=not args.no_mirror, progress=progress)
    validation = prepare_clips(validation_files, args.look_around, seed=10_000 + args.seed, progress=progress)
    model, curve = train(clips, validation, rollout=args.rollout, epochs=args.epochs,
                         windows_per_epoch=args.windows_per_epoch, seed=args.seed, hidden=tuple(args.hidden),
                         clip_grad_norm=args.clip_grad_norm, log=lambda line: print(line, file=sys.stderr))
    errors = np.concatenate([angle_errors_deg(model, c) for c in validation])
    model.info = {
        "paper": "MMVR (Ponton et al. 2022) §4: 2x32 ReLU MLP, Algorithm 1 rollout",
        "hidden_units": list(args.hidden), "clip_grad_norm": args.clip_grad_norm,
        "data": [str(p) for p in args.data], "training_files": len(training_files),
        "validation_files": len(validation_files), "mirrored": not args.no_mirror,
        "training_frames": int(sum(len(c.features) for c in clips)), "look_around_deg": args.look_around,
        "fps": 60, "rollout": args.rollout, "epochs": args.epochs, "windows_per_epoch": args.windows_per_epoch,
        "batch_size": BATCH_SIZE, "learning_rate": LEARNING_RATE,
        "optimiser": "AdamW", "weight_decay": WEIGHT_DECAY, "seed": args.seed,
        "validation_mean_deg": float(errors.mean()), "validation_std_deg": float(errors.std()),
        "training_seconds": round(time.perf_counter() - started, 1), "torch": torch.__version__,
        "curve": curve,
    }
    model.save(output)
    write_text(output.with_suffix(".json"), json.dumps(model.info, indent=2) + "\n")
    print(f"wrote {output}: validation {errors.mean():.2f} ± {errors.std():.2f} deg", file=sys.stderr)
    return 0


def add_command(train_group) -> None:
    parser = train_group.add_parser("orientation", help=run.__doc__, description=__doc__)
    add_data_arguments(parser, "split by file", split=False)
    parser.add_argument("-o", "--output", required=True, help="model file to write (.npz; a .json record beside it)")
    parser.add_argument("--architecture", choices=("window", "mmvr"), default="window",
                        help="window: the MLP over two seconds of device history (default, orientation_window.py); "
                             "mmvr: the paper's network (orientation.py)")
    parser.add_argument("--epochs", type=int, default=None, help="default 20 (window) or 40 (mmvr)")
    parser.add_argument("--rollout", type=int, default=ROLLOUT, help="mmvr: r of Algorithm 1 (paper: 50)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--windows-per-epoch", type=int, default=25600,
                        help="mmvr: training windows drawn at random per epoch (default 25600 = 400 batches)")
    parser.add_argument("--look-around", type=float, default=TRAINING_LOOK_AROUND_DEG, metavar="DEG",
                        help="look-around augmentation of the simulated streams (default 60)")
    parser.add_argument("--no-mirror", action="store_true", help="mmvr: do not add mirrored copies of the clips")
    parser.add_argument("--hidden", type=int, nargs="+", default=None, metavar="UNITS",
                        help="hidden layer widths (window: 48 32 per member; mmvr, the paper: 32 32, wider ones need "
                             "--clip-grad-norm)")
    parser.add_argument("--clip-grad-norm", type=float, default=None, metavar="NORM",
                        help="mmvr: clip the gradient's norm before each step (the paper does not; default off)")
    train_orientation_window.add_arguments(parser)
    parser.set_defaults(run=run)
