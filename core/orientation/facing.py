"""The body's facing from the devices, frame by frame: an orientation model's prediction (MMVR §4) or the HMD's.

What every solver that turns the body asks of the orientation models: one yaw (radians about +Y) per frame
of held device poses (devices/held.py), the model's history forgotten at a teleport. Without a model
the body faces where the HMD looks."""
from __future__ import annotations

import numpy as np

from ..devices.attachments import hmd_forward
from ..math import quat
from .mmvr import MMVR_MODEL, SHIPPED_MODEL, OrientationModel, facing_yaw
from .window_model import WindowOrientationModel, load_orientation_model


class BodyFacing:
    """The live facing: a stateful orientation predictor over held device poses, or the HMD's forward."""

    def __init__(self, model: WindowOrientationModel | OrientationModel | None):
        self.model = model
        self.reset()

    def reset(self) -> None:
        """Forget the history: the next frame starts a new one."""
        self.predictor = self.model.predictor() if self.model is not None else None

    def step(self, positions: np.ndarray, rotations: np.ndarray, dt: float, teleported: bool = False) -> float:
        """The body's yaw for device poses (3, 3), (3, 4) `dt` seconds after the last; a teleport restarts the model."""
        if self.predictor is None:
            return float(quat.yaw_of_direction(hmd_forward(rotations[0])))
        if teleported:
            self.predictor.reset()
        return float(facing_yaw(self.predictor.step(positions, rotations, dt)))


def load_facing_model(orientation: str | None):
    """The orientation model a solver's facing uses: None for the shipped window model, 'mmvr' for the paper's
    network, a model file, or 'hmd' (no model: the HMD's forward; returns None)."""
    if orientation == "hmd":
        return None
    return load_orientation_model(MMVR_MODEL if orientation == "mmvr" else orientation or SHIPPED_MODEL)
