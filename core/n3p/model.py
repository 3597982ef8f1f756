"""The Neural3Points pose predictor (Ye et al. §4, direct mode) in numpy: G_sig, G_lo and G_up, one frame at a time.

Each sub-predictor is a one-layer encoder (ReLU), three GRU layers and a one-layer decoder; the
hidden sizes are 64 (G_sig), 128 (G_lo) and 128 (G_up), reading §4.1's "64, 128 and 128,
respectively" per network (the issue can be read per layer). Every input and output is normalised
by the training data's mean and deviation; a predictor's own output is fed back as it is. One
step (eq. 2), with h the heading frame and o the world tracker signals:

    z~   = G_sig(inv(h^{t-1}) o^t)                     (the aggregated upper-body state)
    z*, g_lo^t = G_lo(z~, g_lo^{t-1});  h^t = h^{t-1} (x) dh^t,  dh^t in g_lo^t
    o*, g_up^t = G_up(inv(h^t) o^t, g_up^{t-1})

o* (the signals of the next frame, in h^t) stands in for untracked controllers: the HMD-only mode of
§8.2. Dropout is a training matter and does not appear here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..anim.skeleton import Skeleton
from ..assets import asset, read_model, write_model
from ..errors import ModelFileError
from ..anim import heading
from ..nn.gru import gru_step
from .state import CONTACTS, HEADING_CHANGE, LO_SIZE, SIGNAL_SIZE, UP_SIZE, Z_IN_LO, Z_SIZE, OutputSkeleton, \
    signals_into, signals_out_of

HIDDEN = {"sig": 64, "lo": 128, "up": 128}
GRU_LAYERS = 3
SIZES = {"sig": (SIGNAL_SIZE, Z_SIZE), "lo": (Z_SIZE + LO_SIZE, Z_SIZE + LO_SIZE),
         "up": (SIGNAL_SIZE + UP_SIZE, SIGNAL_SIZE + UP_SIZE)}
"""(inputs, outputs) of each sub-predictor."""
SHIPPED_MODEL = asset("n3p.npz")
STANDING_HEAD_RANGE_M = (0.5, 3.0)
"""The standing head heights a model's training skeleton may have."""
N3PModelError = ModelFileError
"""A model file that cannot be read."""


@dataclass
class Normalisation:
    """Mean and deviation of o, z, g_up and g_lo over the training frames."""

    mean: dict[str, np.ndarray]
    std: dict[str, np.ndarray]

    def normalise(self, name: str, x: np.ndarray) -> np.ndarray:
        return (x - self.mean[name]) / self.std[name]

    def restore(self, name: str, x: np.ndarray) -> np.ndarray:
        return x * self.std[name] + self.mean[name]


@dataclass
class N3PModel:
    """Weights (torch state-dict names under 'sig.', 'lo.', 'up.'), normalisation, pose references and record."""

    weights: dict[str, np.ndarray]
    norm: Normalisation
    reference: np.ndarray
    """(21, 4) the joints' reference orientations in the heading frame (n3p_state)."""
    initial_up: np.ndarray
    initial_lo: np.ndarray
    """A standing state (raw) that a new run starts from."""
    output: OutputSkeleton
    standing_head_m: float
    """Height of the head joint in the training data's standing poses (for scaling users)."""
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        self.networks = {name: {k[len(name) + 1:]: v for k, v in self.weights.items() if k.startswith(name + ".")}
                         for name in SIZES}
        def single(*arrays):  # the trained precision: half the memory a step reads
            return tuple(np.ascontiguousarray(a, dtype=np.float32) for a in arrays)

        self._layers = {name: ([single(w[f"gru.weight_ih_l{layer}"].T, w[f"gru.bias_ih_l{layer}"],
                                       w[f"gru.weight_hh_l{layer}"].T, w[f"gru.bias_hh_l{layer}"])
                                for layer in range(GRU_LAYERS)],
                               single(w["encoder.weight"].T, w["encoder.bias"]),
                               single(w["decoder.weight"].T, w["decoder.bias"]))
                        for name, w in self.networks.items()}

    def run(self, name: str, x: np.ndarray, hidden: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One step of sub-predictor `name`: normalised input (..., in) and hidden states (3, ..., H) -> output, states."""
        layers, (encoder, encoder_bias), (decoder, decoder_bias) = self._layers[name]
        e = np.maximum(x.astype(np.float32) @ encoder + encoder_bias, 0.0)
        states = np.empty(hidden.shape, np.float32)
        for layer, (w_ih, b_ih, w_hh, b_hh) in enumerate(layers):
            e = states[layer] = gru_step(e @ w_ih + b_ih, hidden[layer], w_hh, b_hh)
        return (e @ decoder + decoder_bias).astype(float), states

    def zero_state(self, name: str, batch: tuple = ()) -> np.ndarray:
        return np.zeros((GRU_LAYERS, *batch, HIDDEN[name]), np.float32)

    def save(self, path: str | Path) -> None:
        arrays = {f"mean/{k}": v for k, v in self.norm.mean.items()}
        arrays.update({f"std/{k}": v for k, v in self.norm.std.items()})
        skeleton = self.output.skeleton
        write_model(path, self.weights, self.info, reference=self.reference, initial_up=self.initial_up,
                    initial_lo=self.initial_lo, names=np.array(skeleton.names), parents=skeleton.parents,
                    offsets=skeleton.offsets, standing_head_m=self.standing_head_m, **arrays)

    @classmethod
    def load(cls, path: str | Path = SHIPPED_MODEL) -> "N3PModel":
        """A model file as `save` writes it; N3PModelError names the file and what is wrong in it."""
        with read_model(path, "a Neural3Points model", np.float64) as (archive, weights):
            files = sorted(archive.files)
            missing = [f"{n}.decoder.weight" for n in SIZES if f"{n}.decoder.weight" not in weights]
            if missing:
                raise N3PModelError(f"{path}: not a Neural3Points model (no {', '.join(missing)})")
            norm = Normalisation({k[5:]: archive.array(k) for k in files if k.startswith("mean/")},
                                 {k[4:]: archive.deviations(k) for k in files if k.startswith("std/")})
            skeleton = Skeleton(tuple(str(n) for n in archive.array("names", ("J",), "U")),
                                archive.array("parents", ("J",), "i"), archive.array("offsets", ("J", 3)))
            model = cls(weights, norm, archive.array("reference", (21, 4)), archive.array("initial_up", (UP_SIZE,)),
                        archive.array("initial_lo", (LO_SIZE,)), OutputSkeleton.of(skeleton),
                        float(archive.array("standing_head_m", ())), archive.json("info"))
            if not STANDING_HEAD_RANGE_M[0] <= model.standing_head_m <= STANDING_HEAD_RANGE_M[1]:
                raise N3PModelError(f"{path}: standing head height {model.standing_head_m:g} m is not a person's "
                                    f"({STANDING_HEAD_RANGE_M[0]:g}-{STANDING_HEAD_RANGE_M[1]:g} m)")
            for name, (inputs, outputs) in SIZES.items():  # every weight and normalisation shape, in one step each
                out, _ = model.run(name, np.zeros(inputs), model.zero_state(name))
                if out.shape != (outputs,) or not np.isfinite(out).all():
                    raise N3PModelError(f"{path}: sub-predictor {name!r} gives {out.shape[0]} outputs, expected {outputs}")
            model.norm.restore("lo", model.norm.normalise("lo", model.initial_lo))
            model.norm.restore("up", model.norm.normalise("up", model.initial_up))
            signals_out_of(np.zeros(3), model.norm.mean["o"])
            return model


@dataclass
class PredictorState:
    """What the predictor carries from one frame to the next."""

    heading: np.ndarray
    g_up: np.ndarray
    g_lo: np.ndarray
    """Normalised, as the networks read them."""
    hidden: dict[str, np.ndarray]
    next_signals: np.ndarray
    """o* of the last step in the world (3, 9); at first the training data's mean signals."""


class N3PPredictor:
    """The stateful pose predictor: `step(world signals, tracked)` -> (g_up, g_lo raw, heading) per frame."""

    def __init__(self, model: N3PModel):
        self.model = model
        self.state: PredictorState | None = None

    def reset(self, start: np.ndarray, g_up: np.ndarray | None = None, g_lo: np.ndarray | None = None) -> None:
        """Begin at heading frame `start` (3,) in the model's standing state (or the given raw states)."""
        model = self.model
        self.state = PredictorState(
            np.asarray(start, float).copy(),
            model.norm.normalise("up", model.initial_up if g_up is None else g_up),
            model.norm.normalise("lo", model.initial_lo if g_lo is None else g_lo),
            {name: model.zero_state(name) for name in HIDDEN},
            signals_out_of(np.asarray(start, float), model.norm.mean["o"]))

    def rescale(self, ratio: float) -> None:
        """The world's signals are scaled by `ratio` from now on (the user measured anew): the heading frame's place
        on the floor scales with them, so that the body stays where the user is, and the held signals (the body's
        own, in the model's size) move with it."""
        moved = (ratio - 1.0) * self.state.heading[:2]
        self.state.heading[:2] += moved
        self.state.next_signals[:, [0, 2]] += moved

    def move(self, before: np.ndarray, after: np.ndarray) -> None:
        """The user went from heading frame `before` (3,) to `after` in one step (a teleport, a recentring, the
        headset found again elsewhere): the predictor's world goes with them, rigidly (`moved_with`)."""
        self.state.heading = moved_with(self.state.heading, before, after)
        self.state.next_signals = signals_out_of(after, signals_into(before, self.state.next_signals))

    def step(self, signals: np.ndarray, tracked: np.ndarray | None = None):
        """One frame from world signals (3, 9); controllers not tracked take the last o* (§8.2).

        Returns (g_up, g_lo) raw, in the new heading frame, and that frame (3,).
        """
        model, state = self.model, self.state
        if state is None:
            raise RuntimeError("reset the predictor at a heading frame before stepping it")
        signals = np.asarray(signals, float).copy()
        if tracked is not None:
            hands = ~np.asarray(tracked, bool)
            hands[0] = False
            signals[hands] = state.next_signals[hands]
        norm = model.norm
        z, state.hidden["sig"] = model.run("sig", norm.normalise("o", signals_into(state.heading, signals)),
                                           state.hidden["sig"])
        out, state.hidden["lo"] = model.run("lo", np.concatenate([z, state.g_lo]), state.hidden["lo"])
        state.g_lo = out[Z_SIZE:]
        g_lo = norm.restore("lo", state.g_lo)
        state.heading = heading.compose(state.heading, g_lo[Z_IN_LO][HEADING_CHANGE])
        o = norm.normalise("o", signals_into(state.heading, signals))
        out, state.hidden["up"] = model.run("up", np.concatenate([o, state.g_up]), state.hidden["up"])
        state.g_up = out[SIGNAL_SIZE:]
        state.next_signals = signals_out_of(state.heading, norm.restore("o", out[:SIGNAL_SIZE]))
        return norm.restore("up", state.g_up), g_lo, state.heading.copy()


def moved_with(h: np.ndarray, before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Heading frames h (..., 3) carried along as the frame `before` (3,) goes to `after`: as h is from `before`,
    so it is from `after`."""
    return heading.compose(after, heading.relative(before, h))


def contacts_of(g_lo: np.ndarray) -> np.ndarray:
    """The feet's contact flags (..., 2) of raw lower-body states."""
    return g_lo[..., CONTACTS] > 0.5
