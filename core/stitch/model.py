"""The Recurrent Motion Refiner network (Kim et al. §5) in numpy: encoder, two bidirectional GRU layers, decoder.

E: two fully connected layers with ReLU (d -> 256 -> 256); R: two bidirectional GRU layers of 256
units each way, the second reading the first's concatenated states; D: two fully connected layers
(512 -> 256 -> d), ReLU after the first only. Poses are normalised by the training data's mean and
deviation on the way in and restored on the way out; the contact part of the output is a logit,
turned into a probability here. Weights are torch's (`train_stitch` exports them); the cell is gru.py's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..assets import asset, read_model, write_model
from ..errors import ModelFileError
from ..nn.gru import gru_step, sigmoid
from .pose import PoseLayout

HIDDEN_SIZE = 256
"""hs of §5, for every hidden layer."""
GRU_LAYERS = 2
SHIPPED_MODEL = asset("stitch.npz")
StitchModelError = ModelFileError
"""A model file that cannot be read or does not fit the skeleton."""


def gru_direction(x: np.ndarray, w_ih, w_hh, b_ih, b_hh, reverse: bool) -> np.ndarray:
    """Hidden states (N, T, H) of one GRU direction over inputs (N, T, in), starting from zero."""
    n, frames, _ = x.shape
    gates_in = x @ w_ih.T + b_ih
    w_hh_t = w_hh.T
    h = np.zeros((n, w_hh.shape[1]), dtype=x.dtype)
    out = np.empty((n, frames, w_hh.shape[1]), dtype=x.dtype)
    for t in (range(frames - 1, -1, -1) if reverse else range(frames)):
        h = out[:, t] = gru_step(gates_in[:, t], h, w_hh_t, b_hh)
    return out


@dataclass
class StitchModel:
    """Weights (torch state-dict names), the normalisation and the training record."""

    weights: dict[str, np.ndarray]
    mean: np.ndarray
    std: np.ndarray
    contact_dims: np.ndarray
    """Indices of c_t in the pose vector: the output there is a logit."""
    info: dict = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.mean)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Refined poses (N, T, d) or (T, d) for inputs of the same shape; contacts as probabilities."""
        single = x.ndim == 2
        batch = (x[None] if single else x).astype(np.float32)
        w = self.weights
        h = (batch - self.mean) / self.std
        h = np.maximum(h @ w["encoder.0.weight"].T + w["encoder.0.bias"], 0.0)
        h = np.maximum(h @ w["encoder.2.weight"].T + w["encoder.2.bias"], 0.0)
        for layer in range(GRU_LAYERS):
            h = np.concatenate([
                gru_direction(h, w[f"refiner.weight_ih_l{layer}{s}"], w[f"refiner.weight_hh_l{layer}{s}"],
                              w[f"refiner.bias_ih_l{layer}{s}"], w[f"refiner.bias_hh_l{layer}{s}"], reverse=bool(s))
                for s in ("", "_reverse")], axis=-1)
        h = np.maximum(h @ w["decoder.0.weight"].T + w["decoder.0.bias"], 0.0)
        out = (h @ w["decoder.2.weight"].T + w["decoder.2.bias"]) * self.std + self.mean
        out[..., self.contact_dims] = sigmoid(out[..., self.contact_dims])
        return out[0] if single else out

    def check_layout(self, layout: PoseLayout) -> None:
        if layout.size != self.size:
            raise StitchModelError(f"the stitch model was trained on poses of {self.size} numbers, this skeleton "
                                   f"gives {layout.size} ({layout.joints} joints): retrain it on this skeleton")

    def save(self, path: str | Path) -> None:
        write_model(path, self.weights, self.info, mean=self.mean.astype(np.float32), std=self.std.astype(np.float32),
                    contact_dims=self.contact_dims)

    @classmethod
    def load(cls, path: str | Path = SHIPPED_MODEL) -> "StitchModel":
        """A model file as `save` writes it; StitchModelError names the file and what is wrong in it."""
        with read_model(path, "a stitch model", np.float32) as (archive, weights):
            missing = [k for k in ("encoder.0.weight", "decoder.2.weight", "refiner.weight_hh_l1_reverse")
                       if k not in weights]
            if missing:
                raise StitchModelError(f"{path}: not a stitch model (no {', '.join(missing)})")
            model = cls(weights, archive.array("mean", ("d",)).astype(np.float32),
                        archive.deviations("std", ("d",)).astype(np.float32),
                        archive.array("contact_dims", ("c",), "i").astype(int), archive.json("info"))
            if (model.contact_dims < 0).any() or (model.contact_dims >= model.size).any():
                raise StitchModelError(f"{path}: contact indices outside the pose vector of {model.size}")
            if not np.isfinite(model.forward(np.zeros((2, model.size), np.float32))).all():
                raise StitchModelError(f"{path}: the model's output is not finite")
            return model
