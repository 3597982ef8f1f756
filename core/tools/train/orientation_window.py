"""Training the window orientation model (orientation_window.py) in torch, exported for numpy inference.

Data: three-point streams simulated at 60 fps from mocap with look-around, every training file in
several copies (Augmentation: every other one mirrored), each with its own playback speed, body size,
arm proportions, device attachment errors, controller latency and look-around. Each sample is one
frame, the ambiguous activities drawn more often (EMPHASISED): its window of past frames is gathered
and turned into the frame's HMD frame as the numpy model does, and the loss is the chord between
the unit output and the truth's (cos, sin) against the HMD frame, about the angle itself, so the mean
angle error is what is minimised. AdamW, cosine-decayed rate, noise on the normalised inputs.
Training is resumable: a checkpoint beside the output after every epoch, `--minutes` to stop early.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from ...anim.character import body_yaw
from ...anim.motion import Motion
from ...config import SimulationConfig
from ...devices.simulate import simulate_stream
from ..mocap_split import read_humanoid
from ...files.mocap import activity
from ...math import quat
from ...orientation.window_model import HIDDEN_UNITS, TAPS, VECTOR_COUNT, WindowOrientationModel, frame_vectors, \
    hmd_frames, mirror_index, window_inputs

BATCH_SIZE = 256
LEARNING_RATE = 1e-3
WEIGHT_DECAY = 1e-4
TRAINING_LOOK_AROUND_DEG = 60.0
EMPHASISED = {"walk-left": 3.0, "walk-right": 3.0, "walk-back": 3.0, "bow": 2.0, "call": 2.0}
"""Activities whose frames are drawn this many times as often: the motions one frame does not tell apart."""
MEMBERS = 3
"""Networks in the shipped ensemble (`merged`): their errors differ enough that the sum beats each."""
INPUT_NOISE = 0.05
"""Standard deviation of the noise added to the normalised inputs while training (a regulariser)."""


@dataclass(frozen=True)
class Augmentation:
    """Ranges of the per-copy augmentation (uniform draws; zero disables one)."""

    copies: int = 8
    """Copies of every training file, every other one mirrored, each with its own draws and look-around."""

    speed: tuple[float, float] = (0.8, 1.25)
    """Playback speed of the clip."""
    size: tuple[float, float] = (0.85, 1.15)
    """Scale of the whole body (every position)."""
    arm: tuple[float, float] = (0.85, 1.15)
    """Scale of the hands' offsets from the HMD (arm length and shoulder width against height)."""
    attachment_deg: float = 6.0
    """Standard deviation of each device's fixed rotation error about each axis."""
    attachment_m: float = 0.015
    """Standard deviation of each device's fixed position error along each axis (in its own frame)."""
    latency_frames: int = 2
    """The controllers lag the HMD by 0 to this many frames."""


@dataclass
class WindowClip:
    """One simulated stream: device poses, frame vectors (T, 12, 3), HMD frames (T, 3, 3) and yaws, truth yaw."""

    name: str
    positions: np.ndarray
    rotations: np.ndarray
    vectors: np.ndarray
    hmd_frames: np.ndarray
    hmd_yaw: np.ndarray
    truth_yaw: np.ndarray


def augmented_devices(positions, rotations, rng, augmentation: Augmentation):
    """Device poses with the arm scale, attachment errors and controller latency of one random draw."""
    positions, rotations = positions.copy(), rotations.copy()
    arm = rng.uniform(*augmentation.arm)
    positions[:, 1:] = positions[:, :1] + arm * (positions[:, 1:] - positions[:, :1])
    error = quat.from_rotation_vector(rng.normal(0.0, np.radians(augmentation.attachment_deg), (3, 3)))
    shift = rng.normal(0.0, augmentation.attachment_m, (3, 3))
    positions = positions + quat.rotate(rotations, shift)
    rotations = quat.multiply(rotations, error)
    lag = rng.integers(0, augmentation.latency_frames + 1)
    if lag:
        for array in (positions, rotations):
            array[lag:, 1:] = array[:-lag, 1:].copy()
            array[:lag, 1:] = array[lag, 1:]
    return positions, rotations


def window_clip(name, positions, rotations, truth_yaw, fps: float = 60.0) -> WindowClip:
    vectors = frame_vectors(positions, rotations, fps)
    hmd_frame, hmd_yaw = hmd_frames(vectors)
    return WindowClip(name, positions, rotations, vectors.astype(np.float32), hmd_frame.astype(np.float32), hmd_yaw,
                      truth_yaw)


def prepare_window_clips(files, look_around_deg: float = TRAINING_LOOK_AROUND_DEG, seed: int = 0,
                         augmentation: Augmentation | None = None, fps: float = 60.0, progress=None):
    """Simulated streams of BVH files: as recorded only, or (with `augmentation`) its copies, every other one
    mirrored, each with its own random speed, size, arm scale, attachment errors, latency and look-around."""
    clips = []
    for i, path in enumerate(files):
        motion = read_humanoid(path)
        mirrored = motion.mirrored() if augmentation else None
        variants = [mirrored if v % 2 else motion for v in range(augmentation.copies)] if augmentation else [motion]
        for v, variant in enumerate(variants):
            rng = np.random.default_rng([seed, i, v])
            if augmentation:
                speed = rng.uniform(*augmentation.speed)
                variant = Motion(variant.skeleton, variant.rotations, variant.positions, variant.fps * speed,
                                 variant.name).scaled(rng.uniform(*augmentation.size))
            config = SimulationConfig(fps=fps, look_around_deg=look_around_deg,
                                      seed=seed * 100003 + 2 * i + v if v < 2 else int(rng.integers(2 ** 31)))
            simulated = simulate_stream(variant, config)
            positions, rotations = simulated.stream.positions, simulated.stream.rotations
            if augmentation:
                positions, rotations = augmented_devices(positions, rotations, rng, augmentation)
            yaw = body_yaw(simulated.truth.global_positions(), simulated.mapping)
            clips.append(window_clip(variant.name, positions, rotations, yaw, fps))
        if progress:
            progress(i + 1, len(files))
    return clips


def angle_errors_deg(model, clip, fps: float = 60.0) -> np.ndarray:
    """Per-frame absolute yaw error (degrees) of any orientation model (`predict` gives world 6D) on a clip."""
    from ...orientation.mmvr import facing_yaw

    predicted = facing_yaw(model.predict(clip.positions, clip.rotations, fps))
    return np.degrees(np.abs((predicted - clip.truth_yaw + np.pi) % (2 * np.pi) - np.pi))


class StackedFrames:
    """All clips end to end: vectors, HMD frames, targets (cos, sin of the truth against the HMD frame), clip starts."""

    def __init__(self, clips: list[WindowClip]):
        self.vectors = np.concatenate([c.vectors for c in clips])
        self.hmd_frames = np.concatenate([c.hmd_frames for c in clips])
        relative = np.concatenate([c.truth_yaw - c.hmd_yaw for c in clips])
        self.targets = np.stack([np.cos(relative), np.sin(relative)], axis=1).astype(np.float32)
        self.starts = np.concatenate([np.full(len(c.vectors), s) for c, s in
                                      zip(clips, np.cumsum([0] + [len(c.vectors) for c in clips[:-1]]))])
        weights = np.concatenate([np.full(len(c.vectors), EMPHASISED.get(activity(c.name.removesuffix("_mirror")), 1.0))
                                  for c in clips])
        self.cumulative = np.cumsum(weights) / weights.sum()

    def draw(self, rng, count: int) -> np.ndarray:
        """Random frames, those of EMPHASISED activities as often as their weight says."""
        return np.minimum(np.searchsorted(self.cumulative, rng.random(count), side="right"), len(self.cumulative) - 1)

    def window_index(self, frames: np.ndarray, taps: np.ndarray) -> np.ndarray:
        """(B, K) frame indices of each frame's taps, the clip's first frame standing in before it."""
        return np.maximum(frames[:, None] - taps[None], self.starts[frames][:, None])


def torch_window_inputs(vectors, hmd_frames, index):
    """window_inputs in torch: vectors (N, 12, 3), hmd_frames (N, 3, 3), index (B, K) with column 0 the frames."""
    import torch

    windows = vectors[index]
    windows = torch.cat([windows[:, :, :1] - windows[:, :1, :1], windows[:, :, 1:]], dim=2)
    batch = windows.shape[0]
    return torch.bmm(windows.reshape(batch, -1, 3), hmd_frames[index[:, 0]]).reshape(batch, -1)


def build_network(inputs: int, hidden=HIDDEN_UNITS):
    import torch

    layers, width = [], inputs
    for units in hidden:
        layers += [torch.nn.Linear(width, units), torch.nn.ReLU()]
        width = units
    layers.append(torch.nn.Linear(width, 2))
    return torch.nn.Sequential(*layers)


def symmetric_output(body, inputs, index, signs):
    """WindowOrientationModel.forward with `mirror` in torch: the sum of the outputs for the inputs and, sin
    negated, for their mirror image (`inputs[:, index] * signs`)."""
    import torch

    both = body(torch.cat([inputs, inputs[:, index] * signs]))
    return both[:len(inputs)] + both[len(inputs):] * torch.tensor([1.0, -1.0])


def chord_loss(output, target):
    """Mean distance between the unit output and the unit target: 2 sin(angle / 2), about the angle itself."""
    import torch

    unit = torch.nn.functional.normalize(output, dim=1, eps=1e-6)
    return torch.mean(torch.sqrt(torch.sum((unit - target) ** 2, dim=1) + 1e-8))


def normalisation(data: StackedFrames, taps: np.ndarray, rng, samples: int = 60000):
    """Per-input mean and standard deviation over random training frames (tiny spreads left unscaled)."""
    frames = rng.choice(len(data.vectors), min(samples, len(data.vectors)), replace=False)
    index = data.window_index(frames, taps)
    inputs = window_inputs(data.vectors[index].astype(np.float64), data.hmd_frames[frames].astype(np.float64))
    std = inputs.std(axis=0)
    return inputs.mean(axis=0), np.where(std < 1e-3, 1.0, std)


def symmetric_normalisation(mean: np.ndarray, std: np.ndarray, taps) -> tuple[np.ndarray, np.ndarray]:
    """Mean and spread averaged with their mirror images, so that normalising commutes with mirroring: the torch
    pass mirrors normalised inputs, the numpy one (WindowOrientationModel.forward) raw ones."""
    index, signs = mirror_index(taps)
    return 0.5 * (mean + mean[index] * signs), 0.5 * (std + std[index])


def export(body, mean: np.ndarray, std: np.ndarray, taps, mirror: bool = False) -> WindowOrientationModel:
    linear = [m for m in body if hasattr(m, "weight")]
    layers = [(m.weight.detach().numpy().T.astype(np.float64).copy(), m.bias.detach().numpy().astype(np.float64).copy())
              for m in linear]
    return WindowOrientationModel(layers, mean.astype(np.float64), std.astype(np.float64), np.array(taps), mirror=mirror)


def merged(models: list[WindowOrientationModel]) -> WindowOrientationModel:
    """One MLP whose output is the sum of the members' (an ensemble in the same file format): first layers side by
    side, the others block-diagonal, the last ones stacked. Every member's input normalisation is re-expressed in
    the first's: ((x - m) / s) W + b = ((x - m0) / s0) (s0 / s W) + b + ((m0 - m) / s) W."""
    if len(models) == 1:
        return models[0]
    first = models[0]
    mean, std = first.input_mean, first.input_std
    layers = []
    for depth in range(len(first.layers)):
        weights, biases = [], []
        for model in models:
            w, b = model.layers[depth]
            if depth == 0:
                w, b = w * (std / model.input_std)[:, None], b + ((mean - model.input_mean) / model.input_std) @ w
            weights.append(w)
            biases.append(b)
        if depth == 0:
            layers.append((np.concatenate(weights, axis=1), np.concatenate(biases)))
        elif depth < len(first.layers) - 1:
            block = np.zeros((sum(w.shape[0] for w in weights), sum(w.shape[1] for w in weights)))
            rows = np.cumsum([0] + [w.shape[0] for w in weights])
            columns = np.cumsum([0] + [w.shape[1] for w in weights])
            for k, w in enumerate(weights):
                block[rows[k]:rows[k + 1], columns[k]:columns[k + 1]] = w
            layers.append((block, np.concatenate(biases)))
        else:
            layers.append((np.concatenate(weights, axis=0), np.sum(biases, axis=0)))
    return WindowOrientationModel(layers, mean, std, first.taps, mirror=first.mirror)


def train(clips, validation, epochs: int = 20, samples_per_epoch: int = 400_000, seed: int = 0,
          hidden=HIDDEN_UNITS, taps=TAPS, checkpoint=None, resume: dict | None = None, minutes: float | None = None,
          average: float = 0.0, mirror: bool = False, log=print):
    """Train; returns (numpy model, per-epoch curve, finished). `checkpoint(state)` is called after every
    epoch with what `resume` takes back; `minutes` stops after the epoch that passes that much time.
    With `average` > 0 the exported weights are an exponential moving average of the trained ones
    (that decay per batch). With `mirror` the model reads every window mirrored too (WindowOrientationModel.mirror),
    in training as in use."""
    import torch

    torch.manual_seed(seed)
    taps = np.asarray(taps)
    data = StackedFrames(clips)
    if resume:
        mean, std = resume["mean"], resume["std"]
    else:
        mean, std = normalisation(data, taps, np.random.default_rng(seed))
        if mirror:
            mean, std = symmetric_normalisation(mean, std, taps)
    body = build_network(len(taps) * VECTOR_COUNT * 3, hidden)
    mean_t, std_t = torch.from_numpy(mean.astype(np.float32)), torch.from_numpy(std.astype(np.float32))
    optimiser = torch.optim.AdamW(body.parameters(), lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY)
    batches = max(1, samples_per_epoch // BATCH_SIZE)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=epochs * batches, eta_min=LEARNING_RATE / 30)
    curve, first_epoch = [], 1
    rng = np.random.default_rng(seed)
    averaged = torch.optim.swa_utils.AveragedModel(
        body, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(average)) if average else None
    if resume:
        body.load_state_dict(resume["network"])
        if averaged is not None:
            averaged.load_state_dict(resume["averaged"])
        optimiser.load_state_dict(resume["optimiser"])
        schedule.load_state_dict(resume["schedule"])
        rng.bit_generator.state = resume["rng"]
        curve, first_epoch = list(resume["curve"]), resume["epoch"] + 1
    vectors, hmd_frames = torch.from_numpy(data.vectors), torch.from_numpy(data.hmd_frames)
    targets = torch.from_numpy(data.targets)
    index_m, signs_m = mirror_index(taps)
    index_m, signs_m = torch.from_numpy(index_m), torch.from_numpy(signs_m.astype(np.float32))
    started = time.perf_counter()
    for epoch in range(first_epoch, epochs + 1):
        epoch_started = time.perf_counter()
        total = 0.0
        for b in range(batches):
            index = torch.from_numpy(data.window_index(data.draw(rng, BATCH_SIZE), taps))
            inputs = (torch_window_inputs(vectors, hmd_frames, index) - mean_t) / std_t
            inputs = inputs + INPUT_NOISE * torch.randn_like(inputs)
            output = symmetric_output(body, inputs, index_m, signs_m) if mirror else body(inputs)
            loss = chord_loss(output, targets[index[:, 0]])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            if averaged is not None:
                averaged.update_parameters(body)
            total += loss.item()
            progress_bar(epoch, epochs, b + 1, batches, total / (b + 1))
        model = export(body if averaged is None else averaged.module, mean, std, taps, mirror)
        errors = np.concatenate([angle_errors_deg(model, c) for c in validation]) if validation else np.array([np.nan])
        curve.append({"epoch": epoch, "loss": total / batches, "validation_mean_deg": float(errors.mean()),
                      "seconds": round(time.perf_counter() - epoch_started, 2)})
        log(f"epoch {epoch}/{epochs}: loss {total / batches:.5f}, validation {errors.mean():.2f} deg "
            f"({curve[-1]['seconds']:.1f} s)")
        if checkpoint:
            checkpoint({"network": body.state_dict(), "optimiser": optimiser.state_dict(),
                        "schedule": schedule.state_dict(), "rng": rng.bit_generator.state, "curve": list(curve),
                        "epoch": epoch, "mean": mean, "std": std,
                        "averaged": None if averaged is None else averaged.state_dict()})
        if minutes is not None and time.perf_counter() - started > 60.0 * minutes and epoch < epochs:
            return model, curve, False
    return export(body if averaged is None else averaged.module, mean, std, taps, mirror), curve, True


def progress_bar(epoch: int, epochs: int, done: int, total: int, loss: float) -> None:
    """One line of training progress on stderr, redrawn in a terminal, written once per epoch otherwise."""
    if not sys.stderr.isatty() and done != total:
        return
    filled = int(30 * done / total)
    sys.stderr.write(f"\repoch {epoch}/{epochs} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total} loss {loss:.5f}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


ARRAY_FIELDS = ("mean", "std", "members_done")
"""The checkpoint's fields that hold numpy arrays: saved as tensors, so that loading never unpickles code."""


def as_tensors(value):
    """`value` with every numpy array in it (through dicts, lists and tuples) a torch tensor."""
    import torch

    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, dict):
        return {k: as_tensors(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(as_tensors(v) for v in value)
    return value


def as_arrays(value):
    """`value` with every torch tensor in it a numpy array (as_tensors' inverse)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, dict):
        return {k: as_arrays(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(as_arrays(v) for v in value)
    return value


def load_checkpoint(path) -> dict:
    """A training checkpoint, loaded with torch's weights-only unpickler (tensors and plain data, never code);
    CheckpointError naming the file otherwise."""
    import pickle

    import torch

    try:
        state = torch.load(path, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as error:
        raise CheckpointError(f"{path}: not a checkpoint of this trainer ({' '.join(str(error).split())[:200]})") \
            from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: not a checkpoint of this trainer (a {type(state).__name__})")
    return {k: as_arrays(v) if k in ARRAY_FIELDS else v for k, v in state.items()}


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed from; the message names the file."""


def run(args) -> int:
    """Train the window orientation model (the default); write the model, its record and a checkpoint."""
    import json
    from pathlib import Path

    import torch

    from ...files.atomic import check_outputs, write_bytes, write_text
    from ...files.mocap import find_bvh_files
    from ..mocap_split import training_split

    torch.set_num_threads(max(1, min(2, args.threads)))
    files = find_bvh_files(args.data)
    output = Path(args.output)
    checkpoint_path = output.with_suffix(".checkpoint.pt")
    check_outputs([output, output.with_suffix(".json"), checkpoint_path], files, make_folders=True)
    resume = None
    if args.resume:
        if not checkpoint_path.is_file():
            raise FileNotFoundError(f"{checkpoint_path}: no checkpoint to resume from")
        resume = load_checkpoint(checkpoint_path)
    training_files, validation_files = training_split(files)
    print(f"train orientation: window model, {len(training_files)} training and {len(validation_files)} "
          f"validation files", file=sys.stderr)
    started = time.perf_counter()
    augmentation, clips, validation = _simulated_clips(args, training_files, validation_files)
    preparing_s = time.perf_counter() - started
    training_started = time.perf_counter()

    done = [WindowOrientationModel(m["layers"], m["mean"], m["std"], np.array(args.taps), mirror=m["mirror"])
            for m in (resume or {}).get("members_done", [])]
    curve = list((resume or {}).get("curves_done", []))

    def save_checkpoint(state):
        """The finished members, and (from `train`) the state of the one in training."""
        import io

        state["seconds"] = (resume or {}).get("seconds", 0.0) + time.perf_counter() - started
        state["members_done"] = [{"layers": m.layers, "mean": m.input_mean, "std": m.input_std, "mirror": m.mirror}
                                 for m in done]
        state["curves_done"] = list(curve)
        for key in ARRAY_FIELDS:
            if key in state:
                state[key] = as_tensors(state[key])
        buffer = io.BytesIO()
        torch.save(state, buffer)
        write_bytes(checkpoint_path, buffer.getvalue())

    finished, in_training = True, resume if resume and "network" in resume else None
    model = merged(done) if done else None
    for member in range(len(done), args.members):
        minutes = None if args.minutes is None else max(0.0, args.minutes - (time.perf_counter() - training_started) / 60.0)
        print(f"member {member + 1} of {args.members} (seed {args.seed + member})", file=sys.stderr)
        model, member_curve, finished = train(
            clips, validation, args.epochs, args.samples_per_epoch, args.seed + member, tuple(args.hidden), args.taps,
            save_checkpoint, in_training, minutes, mirror=not args.single_pass,
            log=lambda line: print(line, file=sys.stderr))
        in_training = None
        curve += [dict(c, member=member) for c in member_curve]
        if not finished:
            model = merged(done + [model])
            break
        done.append(model)
        save_checkpoint({})
        model = merged(done)
    errors = np.concatenate([angle_errors_deg(model, c) for c in validation])
    training_s = (resume or {}).get("seconds", 0.0) + time.perf_counter() - started
    model.info = _model_record(args, model, (training_files, validation_files), augmentation, clips, curve, finished,
                               len(done), errors, (training_s, preparing_s))
    model.save(output)
    write_text(output.with_suffix(".json"), json.dumps(model.info, indent=2) + "\n")
    state = "" if finished else \
        f" (stopped after member {len(done) + 1}'s epoch {curve[-1]['epoch']}; --resume to go on)"
    print(f"wrote {output}: validation {errors.mean():.2f} ± {errors.std():.2f} deg{state}", file=sys.stderr)
    return 0


def _simulated_clips(args, training_files, validation_files):
    """The augmentation (None with --no-augment), the training clips and the validation clips, simulated."""
    def progress(done, total):
        if done == total or done % 100 == 0:
            print(f"  simulated {done}/{total} files", file=sys.stderr)

    augmentation = None if args.no_augment else Augmentation(copies=args.copies)
    clips = prepare_window_clips(training_files, args.look_around, args.seed, augmentation, progress=progress)
    validation = prepare_window_clips(validation_files, args.look_around, 10_000 + args.seed, progress=progress)
    return augmentation, clips, validation


def _model_record(args, model, files, augmentation, clips, curve: list, finished: bool, members_done: int,
                  errors: np.ndarray, seconds: tuple[float, float]) -> dict:
    """The model's record (its `info`, written beside it as JSON): how it was trained, how it validates; `files`
    are the training and validation files, `seconds` the training time in all and this run's preparing time."""
    import torch

    training_files, validation_files = files
    training_s, preparing_s = seconds
    return {
        "architecture": f"window MLP: {len(args.taps)} taps over {args.taps[-1] / 60:g} s of 12 device vectors each, "
                        f"ReLU hidden layers; {args.members} member(s) summed"
                        f"{'' if args.single_pass else ', each reading the window as it is and mirrored'}",
        "hidden_units": list(args.hidden), "taps": list(args.taps), "mirror_pass": model.mirror,
        "data": [str(p) for p in args.data], "training_files": len(training_files),
        "validation_files": len(validation_files),
        "augmentation": None if augmentation is None else {k: v for k, v in augmentation.__dict__.items()},
        "training_frames": int(sum(len(c.vectors) for c in clips)), "look_around_deg": args.look_around,
        "fps": 60, "epochs": args.epochs, "epochs_done": curve[-1]["epoch"], "finished": finished,
        "members": args.members, "members_done": members_done,
        "samples_per_epoch": args.samples_per_epoch, "batch_size": BATCH_SIZE, "learning_rate": LEARNING_RATE,
        "schedule": "cosine to 1/30", "optimiser": "AdamW", "weight_decay": WEIGHT_DECAY,
        "loss": "chord between unit output and truth (cos, sin)", "seed": args.seed,
        "emphasised_activities": EMPHASISED, "input_noise": INPUT_NOISE,
        "validation_mean_deg": float(errors.mean()), "validation_std_deg": float(errors.std()),
        "training_seconds": round(training_s, 1),
        "preparing_seconds_this_run": round(preparing_s, 1), "torch": torch.__version__, "curve": curve,
    }


def add_arguments(parser) -> None:
    """The window model's options of `train orientation`."""
    parser.add_argument("--samples-per-epoch", type=int, default=400_000,
                        help="window model: frames drawn at random per epoch (default 400000)")
    parser.add_argument("--minutes", type=float, default=None,
                        help="window model: stop after the epoch that passes this many minutes (checkpoint kept)")
    parser.add_argument("--resume", action="store_true",
                        help="window model: go on from the checkpoint beside the output (FILE.checkpoint.pt)")
    parser.add_argument("--no-augment", action="store_true",
                        help="window model: no mirrored copies, speed, size, arm, attachment or latency draws")
    parser.add_argument("--copies", type=int, default=Augmentation.copies,
                        help=f"window model: augmented copies of every training file (default {Augmentation.copies})")
    parser.add_argument("--members", type=int, default=MEMBERS,
                        help=f"window model: networks trained one after another (seeds SEED, SEED + 1, ...) and "
                             f"merged into one whose output is their sum (default {MEMBERS})")
    parser.add_argument("--single-pass", action="store_true",
                        help="window model: no mirror pass (the window is read as it is only, not mirrored too)")
    parser.add_argument("--taps", type=int, nargs="+", default=list(TAPS), metavar="FRAMES",
                        help="window model: frames back that a window reads, from 0 up (default: orientation_window.TAPS)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (1 or 2; default 2)")
