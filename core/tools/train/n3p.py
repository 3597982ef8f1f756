"""Training the Neural3Points pose predictor (Ye et al. §4.1) in torch, exported for numpy inference.

Data: three-point streams simulated at 30 Hz (§3) from mocap with look-around, the ground-truth
states of n3p_state from the clip the stream came from; validation split by file. Episodes of T = 60
steps start at random frames from the ground-truth state and run autoregressively (each predictor
reads its own previous output); batch 32, Adam at 5e-4, dropout 0.1 after the encoder and 0.05
before the decoder. Two stages:
1. each sub-predictor alone, its inputs from the data (the ground-truth heading frames for G_sig's
   and G_up's signals, the ground-truth z for G_lo);
2. the three chained as eq. 2 (heading frames from G_lo's dh), G_up frozen, L = L_sig + L_lo + L_up.
Losses (eq. 3-5): MSE of the normalised outputs against the data (g, and the next input z* or o*),
the heading loss L_h (eq. 6) and the FK loss L_FK:
- L_h: the heading frames accumulated from the predicted dh from the episode's first frame, against
  the data's; squared errors of (p_x, p_z) in metres and of (sin, cos) of the yaw, mean over steps.
  Eq. 6 as printed reads "max_t" of a pair; it is read here as the mean squared error over steps.
- L_FK: positions rebuilt by forward kinematics from the predicted orientations (down each chain
  from the set's first joint, the hips or the spine, at its predicted position, with the clip's
  bone offsets) against the predicted positions, in the same normalised units as the MSE.
w_h and w_FK are not given in the paper; both are 1 here.
Beyond the paper (off by default, `--foot-sliding W`): L_slide, the toes' displacement in the world
between consecutive frames where the data has that foot in contact, in units of FOOT_SLIDE_SCALE_M, for
G_lo (pretraining, with the data's heading frames) and in the chained stage (with the predicted ones).
`--resume MODEL` continues a saved model (its weights, normalisation and references; Adam's moments start
afresh) through the stages `--stages` names, the minutes shared among them in PHASE_SHARES' proportions.
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...anim.motion import Motion
from ...config import SimulationConfig
from ...devices.simulate import simulate_stream
from ...files.atomic import check_outputs, save_figure, write_text
from ..mocap_split import read_humanoid
from ...math import quat
from ...n3p.model import GRU_LAYERS, HIDDEN, SIZES, N3PModel, Normalisation
from ...n3p.state import CONTACTS, FPS, HEADING_CHANGE, J_LO, J_UP, PARENTS, SIGNAL_SIZE, Z_IN_LO, Z_SIZE, BodyStates, \
    OutputSkeleton, body_states, canonical_transforms, reference_orientations, \
    signals_into, tracker_signals
from ...retarget.capture import retarget_motion
from ...rig.humanoid import CANONICAL_JOINTS
from ..arguments import add_data_arguments

EPISODE = 60
"""T of §4.1."""
BATCH_SIZE = 32
LEARNING_RATE = 5e-4
DROPOUT_ENCODER, DROPOUT_DECODER = 0.1, 0.05
W_HEADING, W_FK = 1.0, 1.0
TRAINING_LOOK_AROUND_DEG = 60.0
PHASE_SHARES = {"sig": 0.15, "lo": 0.3, "up": 0.25, "joint": 0.3}
"""Share of the training time per stage (pretraining G_sig, G_lo, G_up; then the joint fine-tuning)."""
BATCHES_PER_EPOCH = 50
FOOT_SLIDE_SCALE_M = 0.01
"""L_slide measures each toe's step between 30 Hz frames in centimetres (a foot sliding at 30 cm/s costs 1)."""
TOES = [J_LO.index("l_toes"), J_LO.index("r_toes")]
"""The joints the contacts are measured on (n3p_state), in the order of the contacts."""


@dataclass
class TrainingClip:
    """One simulated stream with its ground truth: world signals (T, 3, 9) and the states."""

    name: str
    signals: np.ndarray
    states: BodyStates


def prepare_clips(files, reference: np.ndarray | None = None, look_around_deg: float = TRAINING_LOOK_AROUND_DEG,
                  seed: int = 0, progress=None, character: Motion | None = None):
    """Simulate 30 Hz streams from BVH files; (clips, reference orientations, output skeleton, standing head height).
    Clips of another skeleton than `character`'s (default: the first file's) are retargeted onto it first (the
    person's size kept): the states measure rotations against that skeleton's rest and reference, which another
    skeleton's joints do not share.

    The reference orientations are measured on these clips unless given.
    """
    transforms, signals, names, skeleton, heads = [], [], [], None, []
    for i, path in enumerate(files):
        motion = read_humanoid(path)
        character = motion if character is None else character
        if motion.skeleton.names != character.skeleton.names:  # another studio's: on the character's skeleton
            motion = retarget_motion(motion, character)
        simulated = simulate_stream(motion, SimulationConfig(fps=FPS, look_around_deg=look_around_deg,
                                                             seed=seed * 100003 + i))
        rotations, positions = canonical_transforms(simulated.truth, simulated.mapping)
        transforms.append((rotations, positions))
        signals.append(tracker_signals(simulated.stream.positions, simulated.stream.rotations))
        names.append(motion.name)
        heads.append(positions[:int(FPS // 2), CANONICAL_JOINTS.index("head"), 1].mean())
        skeleton = skeleton or motion.skeleton
        if progress:
            progress(i + 1, len(files))
    if reference is None:
        reference = reference_orientations(transforms)
    clips = [TrainingClip(n, s, body_states(r, p, reference)) for n, s, (r, p) in zip(names, signals, transforms)]
    return clips, reference, OutputSkeleton.of(skeleton), float(np.median(heads))


@dataclass
class EpisodeData:
    """Every clip's frames laid end to end, and the frames an episode of T + 2 frames may start at."""

    signals: np.ndarray
    headings: np.ndarray
    z: np.ndarray
    up: np.ndarray
    lo: np.ndarray
    o_previous: np.ndarray
    """o^t in h^{t-1} (G_sig's input)."""
    o_current: np.ndarray
    """o^t in h^t (G_up's input)."""
    o_next: np.ndarray
    """o^{t+1} in h^t (G_up's o*)."""
    offsets: np.ndarray
    """(frames, 21, 3): the clip's bone offsets on each of its frames."""
    starts: np.ndarray

    @classmethod
    def of(cls, clips: list[TrainingClip]) -> "EpisodeData":
        parts, starts, at = [], [], 0
        for clip in clips:
            s, h = clip.states, clip.states.heading
            previous = np.concatenate([h[:1], h[:-1]])
            following = np.concatenate([clip.signals[1:], clip.signals[-1:]])
            parts.append((clip.signals, h, s.z, s.g_up, s.g_lo, signals_into(previous, clip.signals),
                          signals_into(h, clip.signals), signals_into(h, following),
                          np.repeat(s.offsets[None], len(h), axis=0)))
            if len(h) >= EPISODE + 2:
                starts.append(at + np.arange(len(h) - EPISODE - 1))
            at += len(h)
        if not starts:
            raise ValueError(f"no clip is longer than {EPISODE + 2} frames at {FPS:g} Hz: nothing to train on")
        arrays = [np.concatenate([p[k] for p in parts]).astype(np.float32) for k in range(9)]
        return cls(*arrays, np.concatenate(starts))

    def normalisation(self) -> Normalisation:
        """Mean and deviation per dimension over all frames (tiny deviations kept at 1)."""
        mean, std = {}, {}
        for name, values in (("o", self.o_current), ("z", self.z), ("up", self.up), ("lo", self.lo)):
            mean[name] = values.mean(axis=0).astype(np.float64)
            deviation = values.std(axis=0).astype(np.float64)
            std[name] = np.where(deviation < 1e-4, 1.0, deviation)
        return Normalisation(mean, std)


def sub_predictor(name: str):
    """One sub-predictor of §4.1 as a torch module stepping one frame: (x, hidden) -> (y, hidden)."""
    import torch

    inputs, outputs = SIZES[name]
    hidden = HIDDEN[name]

    class SubPredictor(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = torch.nn.Linear(inputs, hidden)
            self.gru = torch.nn.GRU(hidden, hidden, num_layers=GRU_LAYERS, batch_first=True)
            self.decoder = torch.nn.Linear(hidden, outputs)
            self.after_encoder = torch.nn.Dropout(DROPOUT_ENCODER)
            self.before_decoder = torch.nn.Dropout(DROPOUT_DECODER)

        def forward(self, x, state=None):
            e = self.after_encoder(torch.relu(self.encoder(x)))
            y, state = self.gru(e[:, None], state)
            return self.decoder(self.before_decoder(y[:, 0])), state

    return SubPredictor()


# -- losses -------------------------------------------------------------------------------------------------------


def compose_headings(h, delta):
    """heading.compose in torch: (B, 3) frames and changes."""
    import torch

    c, s = torch.cos(h[:, 2]), torch.sin(h[:, 2])
    x = h[:, 0] + c * delta[:, 0] + s * delta[:, 1]
    z = h[:, 1] - s * delta[:, 0] + c * delta[:, 1]
    return torch.stack([x, z, h[:, 2] + delta[:, 2]], dim=-1)


def signals_into_torch(h, world):
    """n3p_state.signals_into in torch: (B, 3) frames, (B, 3, 9) world signals -> (B, 27)."""
    import torch

    vectors = world.reshape(len(world), 3, 3, 3).clone()  # (B, tracker, [p, c0, c1], xyz)
    vectors[:, :, 0, 0] = vectors[:, :, 0, 0] - h[:, None, 0]
    vectors[:, :, 0, 2] = vectors[:, :, 0, 2] - h[:, None, 1]
    c, s = torch.cos(h[:, 2])[:, None, None], torch.sin(h[:, 2])[:, None, None]
    x, z = vectors[..., 0], vectors[..., 2]
    turned = torch.stack([c * x - s * z, vectors[..., 1], s * x + c * z], dim=-1)
    return turned.reshape(len(world), -1)


def points_out_of_torch(h, points):
    """heading.points_out_of in torch: (B, T, 3) frames, (B, T, K, 3) points in them -> world points."""
    import torch

    c, s = torch.cos(h[..., 2])[..., None], torch.sin(h[..., 2])[..., None]
    x, z = points[..., 0], points[..., 2]
    return torch.stack([c * x + s * z + h[..., None, 0], points[..., 1], -s * x + c * z + h[..., None, 1]], dim=-1)


def foot_sliding_loss(raw_lo, headings, contacts):
    """L_slide: (B, T, LO_SIZE) raw g_lo in the frames `headings` (B, T, 3); `contacts` (B, T, 2) from the data.

    The mean squared world displacement of each toe from one frame to the next, in FOOT_SLIDE_SCALE_M, where
    the data has that foot in contact on both frames (zero elsewhere)."""
    positions = raw_lo[..., :len(J_LO) * 3].reshape(*raw_lo.shape[:-1], len(J_LO), 3)[..., TOES, :]
    world = points_out_of_torch(headings, positions)
    steps = ((world[:, 1:] - world[:, :-1]) / FOOT_SLIDE_SCALE_M) ** 2
    held = contacts[:, 1:] * contacts[:, :-1]
    return (steps.sum(-1) * held).mean()


def heading_loss(start, deltas, truth):
    """L_h (eq. 6): frames accumulated from `start` (B, 3) by `deltas` (B, T, 3) against `truth` (B, T, 3)."""
    import torch

    h, frames = start, []
    for t in range(deltas.shape[1]):
        h = compose_headings(h, deltas[:, t])
        frames.append(h)
    frames = torch.stack(frames, dim=1)
    position = ((frames[..., :2] - truth[..., :2]) ** 2).sum(-1)
    angle = (torch.sin(frames[..., 2]) - torch.sin(truth[..., 2])) ** 2 + \
        (torch.cos(frames[..., 2]) - torch.cos(truth[..., 2])) ** 2
    return (position + angle).mean()


def rotation_matrices(rotation_vectors):
    """Rodrigues' formula in torch: (..., 3) -> (..., 3, 3)."""
    import torch

    angle = torch.linalg.norm(rotation_vectors, dim=-1, keepdim=True).clamp_min(1e-8)
    axis = rotation_vectors / angle
    x, y, z = axis[..., 0], axis[..., 1], axis[..., 2]
    zero = torch.zeros_like(x)
    k = torch.stack([zero, -z, y, z, zero, -x, -y, x, zero], dim=-1).reshape(*axis.shape[:-1], 3, 3)
    eye = torch.eye(3, dtype=rotation_vectors.dtype).expand_as(k)
    s, c = torch.sin(angle)[..., None], torch.cos(angle)[..., None]
    return eye + s * k + (1.0 - c) * (k @ k)


def chain_parents(joints) -> np.ndarray:
    """Parents of `joints` (canonical names) as indices into `joints`, -1 for the set's first joint."""
    names = list(CANONICAL_JOINTS)
    index = [names.index(j) for j in joints]
    return np.array([index.index(PARENTS[i]) if PARENTS[i] in index else -1 for i in index])


def fk_loss(raw, offsets, joints, reference, position_std):
    """L_FK: (B, T, K * 9) raw joint states, (B, 21, 3) offsets; reference (21, 4) orientations; std (K * 3,)."""
    import torch

    count = len(joints)
    parents = chain_parents(joints)
    canonical = np.array([CANONICAL_JOINTS.index(j) for j in joints])
    p = raw[..., :count * 3].reshape(*raw.shape[:-1], count, 3)
    q = raw[..., count * 6:count * 9].reshape(*raw.shape[:-1], count, 3)
    ref = torch.as_tensor(quat.to_matrix(reference[canonical]), dtype=raw.dtype)
    rotations = rotation_matrices(q) @ ref
    bone = offsets[:, None, canonical]  # (B, 1, K, 3)
    rebuilt = [None] * count
    for k in range(count):
        if parents[k] < 0:
            rebuilt[k] = p[..., k, :]
        else:
            j = parents[k]
            rebuilt[k] = rebuilt[j] + (rotations[..., j, :, :] @ bone[..., k, :, None])[..., 0]
    rebuilt = torch.stack(rebuilt, dim=-2)
    scale = torch.as_tensor(position_std, dtype=raw.dtype).reshape(count, 3)
    children = torch.as_tensor(parents >= 0)
    return (((rebuilt - p) / scale) ** 2)[..., children, :].mean()


class Trainer:
    """The three sub-predictors, their normalisation in torch, and the losses of one episode per stage."""

    def __init__(self, norm: Normalisation, reference: np.ndarray, seed: int = 0, foot_sliding: float = 0.0):
        import torch

        torch.manual_seed(seed)
        self.nets = {name: sub_predictor(name) for name in SIZES}
        self.foot_sliding = foot_sliding
        """W of L_slide (0: the paper's losses alone)."""
        self.norm = norm
        self.mean = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in norm.mean.items()}
        self.std = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in norm.std.items()}
        self.reference = reference

    def tensors(self, data: EpisodeData, starts: np.ndarray) -> dict:
        """A batch of episodes (B, T + 2, ...), normalised where the networks read it."""
        import torch

        frames = starts[:, None] + np.arange(EPISODE + 2)[None]
        batch = {k: torch.from_numpy(getattr(data, k)[frames]) for k in
                 ("signals", "headings", "z", "up", "lo", "o_previous", "o_current", "o_next")}
        batch["offsets"] = torch.from_numpy(data.offsets[starts])
        for key, name in (("z", "z"), ("up", "up"), ("lo", "lo"), ("o_previous", "o"), ("o_current", "o"),
                          ("o_next", "o")):
            batch[key + "_n"] = (batch[key] - self.mean[name]) / self.std[name]
        return batch

    def restore(self, name, x):
        return x * self.std[name] + self.mean[name]

    def normalise(self, name, x):
        return (x - self.mean[name]) / self.std[name]

    def losses(self, batch: dict, stage: str) -> dict:
        """The loss terms of one batch of episodes for a stage: 'sig', 'lo', 'up' or 'joint'."""
        import torch

        mse = torch.nn.functional.mse_loss
        nets, steps = self.nets, range(1, EPISODE + 1)
        h = batch["headings"][:, 0]
        g_lo, g_up = batch["lo_n"][:, 0], batch["up_n"][:, 0]
        states = {name: None for name in nets}
        out = {k: [] for k in ("z", "z_next", "lo", "o_next", "up", "o_next_truth", "h")}
        for t in steps:
            if stage in ("sig", "joint"):
                o = batch["o_previous_n"][:, t] if stage == "sig" else self.normalise(
                    "o", signals_into_torch(h, batch["signals"][:, t]))
                z, states["sig"] = nets["sig"](o, states["sig"])
                out["z"].append(z)
            if stage in ("lo", "joint"):
                z_in = batch["z_n"][:, t] if stage == "lo" else z
                y, states["lo"] = nets["lo"](torch.cat([z_in, g_lo], dim=-1), states["lo"])
                g_lo = y[:, Z_SIZE:]
                out["z_next"].append(y[:, :Z_SIZE])
                out["lo"].append(g_lo)
            if stage == "joint":
                delta = self.restore("lo", g_lo)[:, Z_IN_LO][:, HEADING_CHANGE]
                h = compose_headings(h, delta)
                out["h"].append(h)
            if stage in ("up", "joint"):
                o = batch["o_current_n"][:, t] if stage == "up" else self.normalise(
                    "o", signals_into_torch(h, batch["signals"][:, t]))
                y, states["up"] = nets["up"](torch.cat([o, g_up], dim=-1), states["up"])
                g_up = y[:, SIGNAL_SIZE:]
                out["o_next"].append(y[:, :SIGNAL_SIZE])
                out["up"].append(g_up)
                out["o_next_truth"].append(batch["o_next_n"][:, t] if stage == "up" else self.normalise(
                    "o", signals_into_torch(h, batch["signals"][:, t + 1])).detach())
        terms = {}
        truth_h = batch["headings"][:, 1:EPISODE + 1]
        if out["z"]:
            z = torch.stack(out["z"], dim=1)
            deltas = self.restore("z", z)[..., HEADING_CHANGE]
            terms["sig"] = mse(z, batch["z_n"][:, 1:EPISODE + 1]) + W_HEADING * heading_loss(
                batch["headings"][:, 0], deltas, truth_h)
        if out["lo"]:
            lo = torch.stack(out["lo"], dim=1)
            raw = self.restore("lo", lo)
            terms["lo"] = (mse(lo, batch["lo_n"][:, 1:EPISODE + 1])
                           + mse(torch.stack(out["z_next"], dim=1), batch["z_n"][:, 2:EPISODE + 2])
                           + W_HEADING * heading_loss(batch["headings"][:, 0], raw[:, :, Z_IN_LO][..., HEADING_CHANGE],
                                                      truth_h)
                           + W_FK * fk_loss(raw, batch["offsets"], J_LO, self.reference,
                                            self.norm.std["lo"][:len(J_LO) * 3]))
            if self.foot_sliding > 0:
                frames = torch.stack(out["h"], dim=1) if out["h"] else truth_h
                terms["slide"] = self.foot_sliding * foot_sliding_loss(
                    raw, frames, batch["lo"][:, 1:EPISODE + 1, CONTACTS])
        if out["up"]:
            up = torch.stack(out["up"], dim=1)
            terms["up"] = (mse(up, batch["up_n"][:, 1:EPISODE + 1])
                           + mse(torch.stack(out["o_next"], dim=1), torch.stack(out["o_next_truth"], dim=1))
                           + W_FK * fk_loss(self.restore("up", up), batch["offsets"], J_UP, self.reference,
                                            self.norm.std["up"][:len(J_UP) * 3]))
        return terms

    def export(self, reference, initial_up, initial_lo, output: OutputSkeleton, standing_head_m: float,
               info: dict) -> N3PModel:
        weights = {f"{name}.{k}": v.detach().numpy().astype(np.float64).copy()
                   for name, net in self.nets.items() for k, v in net.state_dict().items()}
        return N3PModel(weights, self.norm, reference, initial_up, initial_lo, output, standing_head_m, info)


def standing_state(clips: list[TrainingClip]) -> tuple[np.ndarray, np.ndarray]:
    """The mean first-frame state over the clips (they begin standing): a new run's starting pose."""
    up = np.mean([c.states.g_up[0] for c in clips], axis=0)
    lo = np.mean([c.states.g_lo[0] for c in clips], axis=0)
    lo[CONTACTS] = 1.0
    return up, lo


def train(clips, validation, reference, minutes: float, seed: int = 0, log=print, checkpoint=None,
          resume: N3PModel | None = None, stages=tuple(PHASE_SHARES), foot_sliding: float = 0.0,
          batches_per_epoch: int = BATCHES_PER_EPOCH):
    """The `stages` within `minutes` (shared in PHASE_SHARES' proportions), the time checked after each epoch of
    `batches_per_epoch` batches; returns (Trainer, curve).

    `checkpoint(trainer, curve)` runs after every epoch; `resume` starts from a saved model's weights and
    normalisation instead of fresh ones."""
    import torch

    data, held = EpisodeData.of(clips), EpisodeData.of(validation)
    trainer = Trainer(resume.norm if resume else data.normalisation(), reference, seed, foot_sliding)
    if resume:
        for name, net in trainer.nets.items():
            net.load_state_dict({k: torch.from_numpy(v.astype(np.float32)) for k, v in resume.networks[name].items()})
    rng = np.random.default_rng(seed)
    validation_starts = np.random.default_rng(1).choice(held.starts, size=min(256, len(held.starts)), replace=False)
    curve = []
    total_share = sum(PHASE_SHARES[stage] for stage in stages)
    for stage in stages:
        share = PHASE_SHARES[stage] / total_share
        trained = ["sig", "lo"] if stage == "joint" else [stage]
        parameters = [p for name in trained for p in trainer.nets[name].parameters()]
        optimiser = torch.optim.Adam(parameters, lr=LEARNING_RATE)
        for name, net in trainer.nets.items():
            net.train(name in trained)
            net.requires_grad_(name in trained)
        deadline = time.perf_counter() + 60.0 * minutes * share
        epoch = 0
        while time.perf_counter() < deadline:
            started, total = time.perf_counter(), 0.0
            for _ in range(batches_per_epoch):
                terms = trainer.losses(trainer.tensors(data, rng.choice(data.starts, BATCH_SIZE)), stage)
                loss = sum(terms.values())
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                total += loss.item()
            epoch += 1
            for net in trainer.nets.values():
                net.eval()
            with torch.no_grad():
                held_terms = {k: 0.0 for k in terms}
                for chunk in np.array_split(validation_starts, 4):
                    for k, v in trainer.losses(trainer.tensors(held, chunk), stage).items():
                        held_terms[k] += v.item() / 4
            for name, net in trainer.nets.items():
                net.train(name in trained)
            curve.append({"stage": stage, "epoch": epoch, "batches": batches_per_epoch,
                          "loss": total / batches_per_epoch,
                          "validation_loss": sum(held_terms.values()),
                          "validation_terms": {k: round(v, 5) for k, v in held_terms.items()},
                          "seconds": round(time.perf_counter() - started, 2)})
            log(f"{stage} epoch {epoch}: loss {total / batches_per_epoch:.4f}, validation "
                f"{curve[-1]['validation_loss']:.4f} ({curve[-1]['seconds']:.1f} s)")
            if checkpoint:
                checkpoint(trainer, curve)
    for net in trainer.nets.values():
        net.eval()
    return trainer, curve


def plot_curve(path: Path, curve: list[dict]) -> None:
    """Validation loss per epoch, one line per stage."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(7, 4))
    for stage in PHASE_SHARES:
        points = [(c.get("batches", BATCHES_PER_EPOCH), c["validation_loss"]) for c in curve if c["stage"] == stage]
        if points:
            batches, losses = zip(*points)
            axes.plot(np.cumsum(batches), losses, label=stage)
    axes.set_xlabel(f"batches of {BATCH_SIZE} episodes (T = {EPISODE})")
    axes.set_ylabel("validation loss")
    axes.set_yscale("log")
    axes.legend(title="stage")
    axes.set_title("Neural3Points pose predictor: training on Bandai (CPU)")
    figure.tight_layout()
    try:
        save_figure(path, figure, dpi=100)
    finally:
        pyplot.close(figure)


def repeated(files: list[Path], repeats: list) -> list[Path]:
    """The training files with those under each (folder, times) of `repeats` listed `times` times (the most any of
    their folders asks): each listing is simulated anew (its own look-around), so a small studio's few clips weigh
    more against a large one's."""
    times = {}
    for folder, count in repeats:
        if not str(count).isdigit() or int(count) < 1:
            raise ValueError(f"--repeat {folder} {count}: TIMES must be a whole number of at least 1")
        count, root = int(count), os.path.abspath(folder)
        ours = [f for f in files if os.path.abspath(f).startswith(root + os.sep)]
        if not ours:
            raise ValueError(f"--repeat {folder}: no training file lies under it")
        times.update({f: max(count, times.get(f, 1)) for f in ours})
    return files + [f for f in files for _ in range(times.get(f, 1) - 1)]


def training_character(data, resume: N3PModel | None) -> Motion:
    """The skeleton the model is trained on, other studios' clips retargeted onto it: the resumed model's (the
    model standing, as live retargeting reads it), else that of the first file of the first `--data`."""
    from ...files.mocap import find_bvh_files
    from ...n3p.solver import N3PSolver

    if resume is not None:
        return N3PSolver(resume).standing_motion()
    return read_humanoid(find_bvh_files([data[0]])[0])


def run(args) -> int:
    """Train the Neural3Points pose predictor on simulated streams; write the model and its record."""
    import torch

    from ...files.mocap import find_bvh_files
    from ..mocap_split import training_split

    files = find_bvh_files(args.data)
    path = Path(args.output)
    check_outputs([path, path.with_suffix(".json"), path.with_name(path.stem + "_curve.png")],
                  files + ([args.resume] if args.resume else []), make_folders=True)
    stages = tuple(args.stages.split(","))
    unknown = [stage for stage in stages if stage not in PHASE_SHARES]
    if unknown:
        raise ValueError(f"--stages {args.stages}: stages are {', '.join(PHASE_SHARES)}, separated by commas")
    resume = N3PModel.load(args.resume) if args.resume else None
    training_files, validation_files = training_split(files)
    if args.limit:
        training_files, validation_files = training_files[:args.limit], validation_files[:max(1, args.limit // 4)]
    training_files = repeated(training_files, args.repeat or [])
    print(f"train n3p: {len(training_files)} training and {len(validation_files)} validation files, "
          f"{args.minutes:g} minutes", file=sys.stderr)

    def progress(done, total):
        if done == total or done % 100 == 0:
            print(f"  simulated {done}/{total} files", file=sys.stderr)

    started = time.perf_counter()
    character = training_character(args.data, resume)
    clips, reference, output, head = prepare_clips(training_files, resume.reference if resume else None,
                                                   args.look_around, args.seed, progress, character)
    validation, _, _, _ = prepare_clips(validation_files, reference, args.look_around, 10_000 + args.seed, progress,
                                        character)
    if resume:  # the model goes on from the standing state and head height it was made with
        initial_up, initial_lo, head = resume.initial_up, resume.initial_lo, resume.standing_head_m
    else:
        initial_up, initial_lo = standing_state(clips)
    earlier = resume.info.get("pieces", [resume.info]) if resume else []

    def record(curve):
        return {
            "paper": "Neural3Points (Ye et al. 2022) §4: decoupled G_sig / G_lo / G_up, 3 GRU layers each",
            "data": [str(p) for p in args.data], "repeat": args.repeat or [], "training_files": len(training_files),
            "validation_files": len(validation_files), "training_frames": int(sum(len(c.signals) for c in clips)),
            "fps": FPS, "look_around_deg": args.look_around, "episode": EPISODE, "batch_size": BATCH_SIZE,
            "learning_rate": LEARNING_RATE, "hidden": HIDDEN, "stage_shares": PHASE_SHARES, "minutes": args.minutes,
            "stages": list(stages), "foot_sliding": args.foot_sliding, "resumed_from": args.resume,
            "seed": args.seed, "torch": torch.__version__,
            "training_seconds": round(time.perf_counter() - started, 1), "curve": curve,
            "total_minutes": round(sum(p.get("minutes", 0) for p in earlier) + args.minutes, 2)}

    def with_pieces(info):
        """The record of this piece, and every earlier piece's without its curve."""
        pieces = [{k: v for k, v in p.items() if k not in ("curve", "pieces")} for p in earlier]
        return {**info, "pieces": pieces + [{k: v for k, v in info.items() if k != "curve"}]} if earlier else info

    def checkpoint(trainer, curve):
        trainer.export(reference, initial_up, initial_lo, output, head, with_pieces(record(curve))).save(path)

    trainer, curve = train(clips, validation, reference, args.minutes, args.seed,
                           lambda line: print(line, file=sys.stderr), checkpoint, resume, stages, args.foot_sliding,
                           args.batches_per_epoch)
    model = trainer.export(reference, initial_up, initial_lo, output, head, with_pieces(record(curve)))
    model.save(path)
    write_text(path.with_suffix(".json"), json.dumps(model.info, indent=2) + "\n")
    try:
        plot_curve(path.with_name(path.stem + "_curve.png"), curve)
    except ImportError as error:
        print(f"no training curve plot: {error}", file=sys.stderr)
    print(f"wrote {path}: {len(curve)} epochs, last validation loss {curve[-1]['validation_loss']:.4f}",
          file=sys.stderr)
    return 0


def add_command(train_group) -> None:
    parser = train_group.add_parser("n3p", help=run.__doc__, description=__doc__)
    add_data_arguments(parser, "split by file", split=False)
    parser.add_argument("-o", "--output", required=True, help="model file to write (.npz; a .json record beside it)")
    parser.add_argument("--minutes", type=float, default=30.0, help="training time over both stages (default 30)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batches-per-epoch", type=int, default=BATCHES_PER_EPOCH, metavar="N",
                        help=f"batches between validations and time checks (default {BATCHES_PER_EPOCH})")
    parser.add_argument("--look-around", type=float, default=TRAINING_LOOK_AROUND_DEG, metavar="DEG",
                        help="look-around augmentation of the simulated streams (default 60)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N training files (0: all)")
    parser.add_argument("--resume", metavar="MODEL", help="continue training this model (its weights, normalisation "
                        "and references); --minutes are the additional ones")
    parser.add_argument("--stages", default=",".join(PHASE_SHARES), metavar="LIST",
                        help=f"stages to run, in order (default {','.join(PHASE_SHARES)}); the minutes are shared "
                        "among them in their default proportions")
    parser.add_argument("--repeat", nargs=2, action="append", metavar=("FOLDER", "TIMES"),
                        help="list the training files under FOLDER (one of --data's) TIMES times, each simulated anew "
                        "(default once); may be given again")
    parser.add_argument("--foot-sliding", type=float, default=0.0, metavar="W",
                        help="weight of the toes' sliding during the data's contacts (default 0: the paper's losses)")
    parser.set_defaults(run=run)
