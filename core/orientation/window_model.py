"""Body orientation from a window of device history: an MLP over the last two seconds of the three devices.

The paper's network (orientation.py, MMVR §4) sees one frame and its own previous answer; the motions it
cannot tell apart (sideways and backward walking, bows) differ in how the devices move over a step or
two. This model sees TAPS frames of the past two seconds at once, each as 12 vectors
(FRAME_VECTORS): where the HMD was against where it is now, each hand against the HMD, the three
devices' velocities and the first two axes of each device's rotation. All of them are turned into the
current frame's HMD frame (the HMD's forward on the floor, as the paper's), so the answer does not
depend on where the scene faces or stands. There is no feedback: the output is the body's yaw against
the hmd_frame, as (cos, sin), for every frame on its own, so the offline driver runs the whole stream in
a few matrix products and the live one keeps a ring of past frames.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..assets import read_model, write_model
from ..files.npz_archive import read_npz
from ..math import quat
from .mmvr import SHIPPED_MODEL, OrientationModel, OrientationModelError

FRAME_VECTORS = ("hmd_position", "left_from_hmd", "right_from_hmd", "hmd_velocity", "left_velocity",
                 "right_velocity", "hmd_x", "hmd_y", "left_x", "left_y", "right_x", "right_y")
"""The 3-vectors of one frame, in world coordinates until a window turns them into its HMD frame."""
VECTOR_COUNT = len(FRAME_VECTORS)
MIRROR_PARTNERS = (0, 2, 1, 3, 5, 4, 6, 7, 10, 11, 8, 9)
"""Each frame vector's partner in the scene mirrored left to right (the hands trade places)."""
MIRROR_SIGNS = np.array([(-1.0, 1.0, 1.0)] * 6 + [(1.0, -1.0, -1.0), (-1.0, 1.0, 1.0)] * 3)
"""(12, 3) signs of a vector's HMD-frame components (lateral, up, forward) in the mirrored scene: the lateral
one flips, except for the devices' x axes, which mirror into minus themselves (their up and forward flip)."""
TAPS = (0, 2, 4, 7, 10, 14, 18, 23, 28, 34, 40, 50, 60, 75, 90, 120)
"""Frames back (at 60 fps) that a window reads: dense over the last step, sparser to two seconds.
Before a stream has that much history the oldest frame stands in for the missing ones."""
HIDDEN_UNITS = (48, 32)
"""Each member's hidden layers (train_orientation_window.MEMBERS of them are summed in the shipped model)."""
CHUNK_FRAMES = 256
"""Frames per batch in the offline driver: its windows (1.2 MB) stay in cache, and memory stays bounded."""


def frame_vectors(positions: np.ndarray, rotations: np.ndarray, fps: float,
                  previous_positions: np.ndarray | None = None) -> np.ndarray:
    """Per-frame vectors (T, 12, 3) in world coordinates, FRAME_VECTORS order, from device poses (T, 3, 3), (T, 3, 4).

    Velocities are backward differences; the first frame's predecessor is `previous_positions` when given
    (live stepping), else the frame itself (zero velocity), so that both drivers see the same numbers.
    """
    vectors = np.empty((len(positions), VECTOR_COUNT, 3))
    vectors[:, 0] = positions[:, 0]
    vectors[:, 1:3] = positions[:, 1:] - positions[:, :1]
    vectors[:, 3:6] = positions
    vectors[1:, 3:6] -= positions[:-1]
    vectors[0, 3:6] -= positions[0] if previous_positions is None else previous_positions
    vectors[:, 3:6] *= fps
    # Each device's x and y columns, as rows.
    vectors[:, 6:] = np.swapaxes(quat.to_matrix(rotations)[..., :2], -1, -2).reshape(len(positions), 6, 3)
    return vectors


def window_inputs(windows: np.ndarray, hmd_frame: np.ndarray) -> np.ndarray:
    """Network inputs (T, TAPS * 36) from windows of frame vectors (T, K, 12, 3), tap 0 the current frame,
    and the current frames' HMD-frame matrices (T, 3, 3): the HMD's past positions taken from its current one,
    every vector turned into the HMD frame (a row vector times H is H^T v). `windows` is scratch: both
    drivers gather it afresh, and its HMD positions are changed in place."""
    windows[:, :, 0] -= windows[:, :1, 0]
    return (windows.reshape(len(windows), -1, 3) @ hmd_frame).reshape(len(windows), -1)


def hmd_frames(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Heading matrices (T, 3, 3) and yaws (T,) from frame vectors (T, 12, 3): the HMD looks along -Z = -(x × y)
    of its axes, whose floor projection's yaw is atan2 of its x and z components."""
    x, y = vectors[:, 6], vectors[:, 7]
    yaw = np.arctan2(x[:, 2] * y[:, 1] - x[:, 1] * y[:, 2], x[:, 1] * y[:, 0] - x[:, 0] * y[:, 1])
    cos, sin = np.cos(yaw), np.sin(yaw)
    hmd_frame = np.zeros((len(yaw), 3, 3))
    hmd_frame[:, 0, 0] = hmd_frame[:, 2, 2] = cos
    hmd_frame[:, 0, 2], hmd_frame[:, 2, 0], hmd_frame[:, 1, 1] = sin, -sin, 1.0
    return hmd_frame, yaw


def mirror_index(taps) -> tuple[np.ndarray, np.ndarray]:
    """Index and signs (taps * 36,) that turn window inputs into those of the scene mirrored left to right:
    mirrored = inputs[..., index] * signs."""
    columns = np.arange(len(taps))[:, None, None] * VECTOR_COUNT * 3 + \
        np.array(MIRROR_PARTNERS)[None, :, None] * 3 + np.arange(3)[None, None]
    return columns.ravel(), np.broadcast_to(MIRROR_SIGNS, (len(taps), VECTOR_COUNT, 3)).ravel().copy()


def yaw_6d(yaw: np.ndarray) -> np.ndarray:
    """World 6D (..., 6) of yaw-only rotations: columns (cos, 0, -sin) and (0, 1, 0)."""
    yaw = np.asarray(yaw, dtype=float)
    zero = np.zeros_like(yaw)
    return np.stack([np.cos(yaw), zero, -np.sin(yaw), zero, zero + 1.0, zero], axis=-1)


@dataclass
class WindowOrientationModel:
    """The MLP over a window: `layers` are (W (in, out), b (out,)) pairs, ReLU between, output (cos, sin) of the
    body's yaw against the HMD frame; inputs normalised by `input_mean` and `input_std`. With `mirror` the network
    also reads the window mirrored left to right, and the answer is the sum of the two outputs, the mirrored one
    mirrored back (sin negated): the model is then exactly symmetric."""

    layers: list[tuple[np.ndarray, np.ndarray]]
    input_mean: np.ndarray
    input_std: np.ndarray
    taps: np.ndarray = field(default_factory=lambda: np.array(TAPS))
    info: dict = field(default_factory=dict)
    mirror: bool = False

    def __post_init__(self):
        # Normalisation folded into the first layer: ((x - mean) / std) W + b = x (W / std) + (b - (mean / std) W).
        w, b = self.layers[0]
        self._pass = [(w / self.input_std[:, None], b - (self.input_mean / self.input_std) @ w), *self.layers[1:]]
        self.taps = np.asarray(self.taps, dtype=int)
        self.mirrored_columns, self.mirrored_signs = mirror_index(self.taps)
        # The first layer for raw inputs and, beside it, for their mirror images: (P x) W = x (W[index] * signs),
        # the index being its own inverse and a column's sign its partner's.
        w = self._pass[0][0]
        self._both_first = np.concatenate([w, w[self.mirrored_columns] * self.mirrored_signs[:, None]], axis=1)

    def network(self, inputs: np.ndarray) -> np.ndarray:
        """The network's raw outputs (T, 2) for inputs (T, taps * 36)."""
        return self._hidden_to_output(inputs @ self._pass[0][0] + self._pass[0][1])

    def _hidden_to_output(self, h: np.ndarray) -> np.ndarray:
        for w, b in self._pass[1:]:
            h = np.maximum(h, 0.0, out=h) @ w + b
        return h

    def forward(self, inputs: np.ndarray) -> np.ndarray:
        """Outputs (T, 2), whose direction is (cos, sin) of the body's yaw against the HMD frame: the network's, or
        with `mirror` the sum of its outputs for the inputs and, mirrored back, for their mirror image."""
        if not self.mirror:
            return self.network(inputs)
        # One product gives both passes' first layers; rows t and its mirror image then go on side by side.
        first = (inputs @ self._both_first).reshape(2 * len(inputs), -1) + self._pass[0][1]
        both = self._hidden_to_output(first).reshape(len(inputs), 2, 2)
        return both[:, 0] + both[:, 1] * (1.0, -1.0)

    def body_yaw(self, inputs: np.ndarray, hmd_yaw: np.ndarray) -> np.ndarray:
        """World body yaws (T,) from inputs and the HMD frames' yaws (T,)."""
        out = self.forward(inputs)
        return hmd_yaw + np.arctan2(out[:, 1], out[:, 0])

    def predict(self, positions: np.ndarray, rotations: np.ndarray, fps: float) -> np.ndarray:
        """World 6D body orientations (T, 6) of a whole stream (offline driver)."""
        vectors = frame_vectors(positions, rotations, fps)
        hmd_frame, hmd_yaw = hmd_frames(vectors)
        frames = np.arange(len(positions))
        yaw = np.empty(len(positions))
        for start in range(0, len(positions), CHUNK_FRAMES):
            t = frames[start:start + CHUNK_FRAMES]
            windows = vectors[np.maximum(t[:, None] - self.taps[None], 0)]
            yaw[t] = self.body_yaw(window_inputs(windows, hmd_frame[t]), hmd_yaw[t])
        return yaw_6d(yaw)

    def predictor(self) -> "WindowOrientationPredictor":
        return WindowOrientationPredictor(self)

    def save(self, path: str | Path) -> None:
        """The weights in core.assets' one format (float32), with `taps`, `mirror`, the input normalisation and
        the `info` record."""
        parameters = {}
        for i, (w, b) in enumerate(self.layers):
            parameters[f"w{i}"], parameters[f"b{i}"] = w, b
        write_model(path, parameters, self.info, input_mean=self.input_mean.astype(np.float32),
                    input_std=self.input_std.astype(np.float32), taps=self.taps.astype(np.int32),
                    mirror=np.array(self.mirror))

    @classmethod
    def load(cls, path: str | Path) -> "WindowOrientationModel":
        with read_model(path, "an orientation model", np.float64) as (archive, parameters):
            taps = archive.array("taps", ("taps",), kind="i").astype(int)
            layers = [(parameters[f"w{i}"], parameters[f"b{i}"]) for i in range(sum(k[0] == "w" for k in parameters))]
            for i, (w, b) in enumerate(layers):
                archive.check_shape(f"w/w{i}", w.shape, (f"in{i}", f"in{i + 1}"))
                archive.check_shape(f"w/b{i}", b.shape, (f"in{i + 1}",))
            inputs = len(taps) * VECTOR_COUNT * 3
            if not layers or layers[0][0].shape[0] != inputs or layers[-1][0].shape[1] != 2:
                sizes = (layers[0][0].shape[0], layers[-1][0].shape[1]) if layers else (0, 0)
                raise OrientationModelError(f"{path}: window model maps {sizes[0]} inputs to {sizes[1]}, "
                                            f"expected {inputs} ({len(taps)} taps) to 2")
            if taps[0] != 0 or np.any(np.diff(taps) <= 0):
                raise OrientationModelError(f"{path}: taps must start at 0 and increase, not {taps.tolist()}")
            mirror = bool(archive.array("mirror", (), kind="b")) if "mirror" in archive.files else False
            return cls(layers, archive.array("input_mean", ("in0",)).astype(np.float64),
                       archive.deviations("input_std", ("in0",)).astype(np.float64), taps, archive.json("info"), mirror)


def _axes_table() -> np.ndarray:
    """(16, 6): a unit quaternion's outer product with itself (w, x, y, z order) times this is its rotation's x and
    y axes, the first two columns of the rotation matrix."""
    table = np.zeros((4, 4, 6))
    w, x, y, z = range(4)
    for column, terms in enumerate((
            ((w, w, 1), (x, x, 1), (y, y, -1), (z, z, -1)), ((x, y, 2), (w, z, 2)), ((x, z, 2), (w, y, -2)),
            ((x, y, 2), (w, z, -2)), ((w, w, 1), (x, x, -1), (y, y, 1), (z, z, -1)), ((y, z, 2), (w, x, 2)))):
        for a, b, weight in terms:
            table[a, b, column] += weight
    return table.reshape(16, 6)


AXES_TABLE = _axes_table()


class WindowOrientationPredictor:
    """Stateful per-frame prediction (live driver): a ring of the last frames' vectors, the same numbers as
    `predict`, written for one frame at a time (few numpy calls: a step's cost is mostly per call)."""

    def __init__(self, model: WindowOrientationModel):
        self.model = model
        self.length = int(model.taps[-1]) + 1
        # Ring slots of the taps once the window is full, by the frame count modulo the ring's length.
        self.steady_slots = (np.arange(self.length)[:, None] - model.taps[None]) % self.length
        self.reset()

    def reset(self, body_6d: np.ndarray | None = None) -> None:
        """Forget the history (the window starts again from the next frame; `body_6d` is not needed)."""
        self.ring = np.zeros((self.length, VECTOR_COUNT, 3))
        self.count = 0
        self.previous_positions = None

    def step(self, positions: np.ndarray, rotations: np.ndarray, dt: float) -> np.ndarray:
        """World 6D (6,) from one sample of device poses (3, 3) and (3, 4), `dt` seconds after the last."""
        frame = self.ring[self.count % self.length]  # frame_vectors of this sample
        frame[0] = positions[0]
        np.subtract(positions[1:], positions[:1], out=frame[1:3])
        previous = positions if self.previous_positions is None else self.previous_positions
        np.multiply(positions - previous, 1.0 / dt, out=frame[3:6])
        unit = rotations / np.sqrt(np.einsum("ij,ij->i", rotations, rotations))[:, None]
        frame[6:] = ((unit[:, :, None] * unit[:, None, :]).reshape(3, 16) @ AXES_TABLE).reshape(6, 3)
        self.previous_positions = positions
        if self.count >= self.length:
            slots = self.steady_slots[self.count % self.length]
        else:
            slots = np.maximum(self.count - self.model.taps, 0)
        self.count += 1
        (x0, x1, x2), (y0, y1, y2) = frame[6:8].tolist()  # as hmd_frames
        hmd_yaw = math.atan2(x2 * y1 - x1 * y2, x1 * y0 - x0 * y1)
        cos, sin = math.cos(hmd_yaw), math.sin(hmd_yaw)
        hmd_frame = np.array((((cos, 0.0, sin), (0.0, 1.0, 0.0), (-sin, 0.0, cos)),))
        c, s = self.model.forward(window_inputs(self.ring[slots][None], hmd_frame))[0].tolist()
        yaw = hmd_yaw + math.atan2(s, c)
        return np.array([math.cos(yaw), 0.0, -math.sin(yaw), 0.0, 1.0, 0.0])


def load_orientation_model(path: str | Path = SHIPPED_MODEL):
    """An orientation model file of either kind: a window model (it has `taps`) or the paper's network."""
    with read_npz(path, "an orientation model", OrientationModelError) as archive:
        window = "taps" in archive.files
    return WindowOrientationModel.load(path) if window else OrientationModel.load(path)
