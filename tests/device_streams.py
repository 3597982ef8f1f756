"""Device streams the device tests feed the code: the calibration gesture with the controllers held off, and any
stream a tool might write (hypothesis)."""
import numpy as np
from hypothesis import strategies as st

from core.config import SimulationConfig
from core.files.stream import ThreePointStream
from core.math import quat

NOISY = SimulationConfig(look_around_deg=45.0, calibration_pose_s=2.0, attachment_noise_m=0.03,
                         attachment_noise_deg=15.0, seed=4)
"""A clip after 2 s of the calibration gesture, the controllers held up to 3 cm and 15 degrees off."""


@st.composite
def device_streams(draw):
    """Any stream a tool might write: 1-200 samples at 30-144 Hz, devices anywhere (NaN where lost), turned any way,
    tracked or not; sometimes a T- or A-like spread of the arms."""
    frames = draw(st.integers(1, 200))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rate = draw(st.floats(30.0, 144.0))
    times = np.cumsum(rng.uniform(0.5, 1.5, frames)) / rate
    positions = rng.normal([0.0, 1.5, 0.0], draw(st.sampled_from([0.01, 0.3, 2.0])), (frames, 3, 3))
    if draw(st.booleans()):  # the arms spread level or down, as in the gestures
        down = draw(st.floats(0.0, 0.8))
        positions[:, 1] = positions[:, 0] + [0.75, -0.25 - down, 0.0]
        positions[:, 2] = positions[:, 0] + [-0.75, -0.25 - down, 0.0]
    rotations = quat.normalize(rng.normal(size=(frames, 3, 4)))
    tracked = rng.uniform(size=(frames, 3)) < draw(st.floats(0.0, 1.0))
    positions[~tracked] = np.nan
    rotations[~tracked] = np.nan
    return ThreePointStream(times, positions, rotations, tracked)


def after_devices_on_a_table(stream: ThreePointStream, seconds: float) -> ThreePointStream:
    """`stream` after `seconds` of the devices lying still on a table at 60 Hz (tracked, spread as a T-pose's
    controllers are, the headset 0.8 m up): a session started before the headset is put on."""
    table = np.arange(0.0, seconds, 1 / 60)
    lying = np.array([[0.0, 0.8, 0.0], [0.3, 0.75, 0.1], [-0.3, 0.75, 0.1]])
    return ThreePointStream(np.concatenate([table, seconds + stream.times - stream.times[0]]),
                            np.concatenate([np.broadcast_to(lying, (len(table), 3, 3)), stream.positions]),
                            np.concatenate([np.broadcast_to(stream.rotations[0], (len(table), 3, 4)),
                                            stream.rotations]),
                            np.concatenate([np.ones((len(table), 3), dtype=bool), stream.tracked]))

