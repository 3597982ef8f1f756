"""Body-orientation prediction (MMVR §4): input features, the numpy network, the stateful predictor, model files.

Input per frame, exactly as MMVR §4.1, x = {x^v, x^w, x^r, x^d} in R^(3*12+6):
velocities (3 per device), angular velocities as rotation vectors (3 per device) and 6D
rotations (6 per device) of HMD, left and right controller, then the previously predicted body
orientation (6D). Everything is expressed in the HMD frame: the HMD's forward direction
projected on the floor, the world up axis and their cross product. Output: the body orientation
(the virtual root's rotation) as 6D in the same frame. The prediction is fed back: it is kept in
world space and re-expressed in the next frame's HMD frame.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..assets import asset, read_model, write_model
from ..errors import ModelFileError
from ..math import quat

DEVICE_COUNT = 3
FEATURE_SIZE = DEVICE_COUNT * 12
INPUT_SIZE = FEATURE_SIZE + 6
HIDDEN_UNITS = (32, 32)
"""MMVR §4.2: two hidden layers of 32 units, ReLU."""
SHIPPED_MODEL = asset("orientation.npz")
"""The default orientation model: the window model (orientation_window.py; load it with
orientation_window.load_orientation_model), trained by the project (assets/orientation.json records how)."""
MMVR_MODEL = asset("orientation_mmvr.npz")
"""This module's network as the paper has it, trained by the project (assets/orientation_mmvr.json records how)."""
# 6D of the identity: the body facing exactly where the HMD frame faces.
IDENTITY_6D = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 0.0])
IDENTITY_ROWS = IDENTITY_6D.reshape(2, 3)
SETTLE_STEPS = 50
"""Network passes over the first frame before its prediction is used (not in the paper, which does not say
how a session starts): the network was trained (Algorithm 1) to run r = 50 steps on its own outputs, so
starting from HMD-forward and feeding it the first frame 50 times lets it reach its own answer for that
frame instead of taking about a second of real frames to recover from the guess."""


def hmd_frame_of_forward(forward: np.ndarray) -> np.ndarray:
    """The HMD frame's rotation matrix (..., 3, 3) for the HMD's view directions (..., 3)."""
    yaw = quat.yaw_of_direction(forward)
    matrices = np.zeros(yaw.shape + (3, 3))
    matrices[..., 0, 0] = matrices[..., 2, 2] = np.cos(yaw)
    matrices[..., 0, 2] = np.sin(yaw)
    matrices[..., 2, 0] = -matrices[..., 0, 2]
    matrices[..., 1, 1] = 1.0
    return matrices


def device_features(positions: np.ndarray, rotations: np.ndarray, fps: float,
                    previous_positions: np.ndarray | None = None,
                    previous_rotations: np.ndarray | None = None):
    """Features (T, 36) in MMVR order {x^v, x^w, x^r} and HMD frames as rotation matrices (T, 3, 3).

    `positions` (T, 3, 3) and `rotations` (T, 3, 4) are device poses in world space, devices in
    stream order (HMD, left, right). Velocities are backward differences; the first frame uses
    `previous_*` when given (live stepping), else its successor's difference.
    """
    offline = previous_positions is None
    if offline:  # the first frame is its own predecessor here; its rates are fixed up below
        previous_positions, previous_rotations = positions[0], rotations[0]
    previous_positions = np.concatenate([previous_positions[None], positions[:-1]])
    previous_rotations = np.concatenate([previous_rotations[None], rotations[:-1]])
    matrices = quat.to_matrix(rotations)
    hmd_frame = hmd_frame_of_forward(-matrices[:, 0, :, 2])  # the HMD looks along its -Z column
    velocity = (positions - previous_positions) * fps
    angular = quat.to_rotation_vector(quat.multiply_inverse(rotations, previous_rotations)) * fps
    axes = np.swapaxes(matrices[..., :2], -1, -2)  # each device's first two columns, as rows
    # Per device: velocity, angular velocity and the 6D's two columns, all turned into the HMD frame
    # at once (a row vector times H is H^T v).
    local = np.concatenate([velocity[:, :, None], angular[:, :, None], axes], axis=2) @ hmd_frame[:, None]
    frames = len(positions)
    if offline and frames > 1:  # the first frame has no predecessor: it takes its successor's rates
        local[0, :, :2] = local[1, :, :2]
    features = np.concatenate([local[:, :, 0].reshape(frames, -1), local[:, :, 1].reshape(frames, -1),
                               local[:, :, 2:].reshape(frames, -1)], axis=1)
    return features, hmd_frame


def orthonormalize_6d(d: np.ndarray) -> np.ndarray:
    """The 6D (6,) of the nearest rotation by Gram-Schmidt (Zhou et al.): unit first column, second made orthogonal.

    The prediction is fed back in this form so that a long rollout stays bounded (MMVR feeds the
    prediction back; how it conditions it is not said). One frame at a time, with dot products:
    on 3-vectors np.sum costs more than the arithmetic.
    """
    c0 = d[:3] / np.sqrt(d[:3] @ d[:3] + 1e-18)
    c1 = d[3:] - (c0 @ d[3:]) * c0
    return np.concatenate([c0, c1 / np.sqrt(c1 @ c1 + 1e-18)])


def rotate_6d(matrices: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Both columns of 6D rotations (..., 6) turned by rotation matrices (..., 3, 3): the 6D of M R."""
    return np.concatenate([np.einsum("...ij,...j->...i", matrices, d[..., :3]),
                           np.einsum("...ij,...j->...i", matrices, d[..., 3:])], axis=-1)


OrientationModelError = ModelFileError
"""An orientation model file that cannot be read; the message names the file."""


@dataclass
class OrientationModel:
    """A small MLP with input normalisation: `layers` are (W (in, out), b (out,)) pairs, ReLU between."""

    layers: list[tuple[np.ndarray, np.ndarray]]
    input_mean: np.ndarray
    input_std: np.ndarray
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        # Normalisation folded into the first layer: ((x - mean) / std) W + b = x (W / std) + (b - (mean / std) W),
        # whose rows split into the device features' part and the previous orientation's.
        w, b = self.layers[0]
        w = w / self.input_std[:, None]
        self._first_features, self._first_previous = w[:FEATURE_SIZE], w[FEATURE_SIZE:]
        self._first_bias = b - (self.input_mean / self.input_std) @ self.layers[0][0]

    def feature_activations(self, features: np.ndarray) -> np.ndarray:
        """The first layer's sum (..., its width) over the device features (..., 36), bias included: the part
        of the network that does not wait for the previous prediction, so a whole stream's comes in one call."""
        return features @ self._first_features + self._first_bias

    def forward_from(self, activations: np.ndarray, previous_6d: np.ndarray) -> np.ndarray:
        """Raw 6D outputs (..., 6) from feature_activations and the previous orientation (..., 6)."""
        h = np.maximum(activations + previous_6d @ self._first_previous, 0.0)
        for i, (w, b) in enumerate(self.layers[1:], start=2):
            h = h @ w + b
            if i < len(self.layers):
                h = np.maximum(h, 0.0)
        return h

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Raw 6D outputs (..., 6) for inputs (..., 42)."""
        return self.forward_from(self.feature_activations(x[..., :FEATURE_SIZE]), x[..., FEATURE_SIZE:])

    def predict(self, positions: np.ndarray, rotations: np.ndarray, fps: float) -> np.ndarray:
        """World 6D body orientations (T, 6) of a whole stream (predict_body_orientation, settled start)."""
        return predict_body_orientation(self, positions, rotations, fps)

    def predictor(self) -> "OrientationPredictor":
        return OrientationPredictor(self)

    def save(self, path: str | Path) -> None:
        parameters = {}
        for i, (w, b) in enumerate(self.layers):
            parameters[f"w{i}"], parameters[f"b{i}"] = w, b
        write_model(path, parameters, self.info, input_mean=self.input_mean, input_std=self.input_std)

    @classmethod
    def load(cls, path: str | Path) -> "OrientationModel":
        """A model file as `save` writes it; OrientationModelError names the file and what is wrong in it."""
        with read_model(path, "an orientation model", np.float64) as (archive, parameters):
            layers = [(parameters[f"w{i}"], parameters[f"b{i}"]) for i in range(sum(k[0] == "w" for k in parameters))]
            for i, (w, b) in enumerate(layers):
                archive.check_shape(f"w/w{i}", w.shape, (f"in{i}", f"in{i + 1}"))
                archive.check_shape(f"w/b{i}", b.shape, (f"in{i + 1}",))
            if not layers or layers[0][0].shape[0] != INPUT_SIZE or layers[-1][0].shape[1] != 6:
                sizes = (layers[0][0].shape[0], layers[-1][0].shape[1]) if layers else (0, 0)
                raise OrientationModelError(f"{path}: model maps {sizes[0]} inputs to {sizes[1]}, "
                                            f"expected {INPUT_SIZE} to 6")
            return cls(layers, archive.array("input_mean", ("in0",)).astype(np.float64),
                       archive.deviations("input_std", ("in0",)).astype(np.float64), archive.json("info"))


def next_prediction(model: OrientationModel, activations: np.ndarray, previous_rows: np.ndarray) -> np.ndarray:
    """One pass of the network: the prediction (2, 3) from a frame's feature activations and the previous
    prediction (2, 3), both as the rows c0^T, c1^T in this frame's HMD-frame coordinates; orthonormalised, as it
    is fed back."""
    return orthonormalize_6d(model.forward_from(activations, previous_rows.ravel())).reshape(2, 3)


def predict_body_orientation(model: OrientationModel, positions: np.ndarray, rotations: np.ndarray, fps: float,
                             initial: np.ndarray | None = None) -> np.ndarray:
    """Raw predicted body orientations, world 6D (T, 6), for a whole stream (offline driver).

    `initial` is the world 6D orientation before the first frame; by default the network settles on the
    first frame from the HMD's frame (SETTLE_STEPS).
    """
    features, hmd_frame = device_features(positions, rotations, fps)
    activations = model.feature_activations(features)
    predictor = OrientationPredictor(model)
    predictor.reset(initial)
    # The prediction is carried in each frame's HMD-frame coordinates, c^T H_t: from one frame's to the
    # next's is the product with H_{t-1}^T H_t, one (3, 3) per frame computed for all frames at once.
    turns = np.swapaxes(hmd_frame[:-1], -1, -2) @ hmd_frame[1:]
    fed = np.empty((len(features), 2, 3))
    fed[0] = predictor.advance(activations[0], hmd_frame[0]).reshape(2, 3) @ hmd_frame[0]
    for t in range(1, len(features)):
        fed[t] = next_prediction(model, activations[t], fed[t - 1] @ turns[t - 1])
    return (fed @ np.swapaxes(hmd_frame, -1, -2)).reshape(-1, 6)


class OrientationPredictor:
    """Stateful per-frame prediction (live driver): carries the previous pose and prediction."""

    def __init__(self, model: OrientationModel):
        self.model = model
        self.reset()

    def reset(self, body_6d: np.ndarray | None = None) -> None:
        """Forget the history; `body_6d` (world) seeds the previous prediction, else the HMD frame is used."""
        self.previous_6d = None if body_6d is None else np.asarray(body_6d, dtype=float)
        self.previous_pose = None

    def advance(self, activations: np.ndarray, hmd_frame_matrix: np.ndarray) -> np.ndarray:
        """One frame from its feature activations (32,) and HMD-frame matrix (3, 3); returns world 6D (orthonormal).

        Without a previous prediction (after an unseeded reset) the body starts facing the HMD frame and the
        network settles on this frame for SETTLE_STEPS passes."""
        # 6D as two row vectors: the HMD frame's view of a world column c is c^T H, and back c^T H^T.
        passes = 1
        if self.previous_6d is None:
            self.previous_6d = (IDENTITY_ROWS @ hmd_frame_matrix.T).ravel()
            passes = SETTLE_STEPS
        for _ in range(passes):
            fed = next_prediction(self.model, activations, self.previous_6d.reshape(2, 3) @ hmd_frame_matrix)
            self.previous_6d = (fed @ hmd_frame_matrix.T).ravel()
        return self.previous_6d

    def step(self, positions: np.ndarray, rotations: np.ndarray, dt: float) -> np.ndarray:
        """Predict from one sample of device poses (3, 3) and (3, 4), `dt` seconds after the last."""
        previous = self.previous_pose or (positions, rotations)
        features, hmd_frame = device_features(positions[None], rotations[None], 1.0 / dt, *previous)
        self.previous_pose = (positions, rotations)
        return self.advance(self.model.feature_activations(features[0]), hmd_frame[0])


def facing_yaw(body_6d: np.ndarray) -> np.ndarray:
    """Yaw (radians) of the facing (+Z of the body rotation) projected on the floor.

    +Z is the rotation's third column, c0 x c1 of the 6D's two columns; Gram-Schmidt on c1 would
    only scale it, which leaves its yaw as it is.
    """
    return quat.yaw_of_direction(quat.cross(body_6d[..., :3], body_6d[..., 3:]))
