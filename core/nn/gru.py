"""The GRU cell in numpy, with torch's weight layout and gate equations (what `train_*` export).

Gates are stacked (reset r, update z, candidate n) in weight_ih / weight_hh (3H, ...):
r = s(W_ir x + b_ir + W_hr h + b_hr), z = s(W_iz x + b_iz + W_hz h + b_hz),
n = tanh(W_in x + b_in + r (W_hn h + b_hn)), h' = (1 - z) n + z h.
"""
from __future__ import annotations

import numpy as np


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def gru_step(input_gates: np.ndarray, h: np.ndarray, w_hh_t: np.ndarray, b_hh: np.ndarray) -> np.ndarray:
    """The next hidden state (..., H) from the input's gate terms W_ih x + b_ih (..., 3H), the state h and
    weight_hh transposed (H, 3H)."""
    size = h.shape[-1]
    hidden_gates = h @ w_hh_t + b_hh
    reset_update = sigmoid(input_gates[..., :2 * size] + hidden_gates[..., :2 * size])
    candidate = np.tanh(input_gates[..., 2 * size:] + reset_update[..., :size] * hidden_gates[..., 2 * size:])
    return candidate + reset_update[..., size:] * (h - candidate)
