"""Three-point streams simulated from the fixture walks: device placement, look-around, ground truth."""
import numpy as np
import pytest

from core.math import quat
from core.anim.character import body_yaw
from core.math.angle import wrap_angle
from core.config import DeviceOffsets, SimulationConfig
from core.devices.attachments import device_offsets, implied_joint_positions
from core.devices.simulate import simulate_stream

FORWARD = np.array([0.0, 0.0, -1.0])  # devices look along -Z


def hmd_yaw(stream):
    forward = quat.rotate(stream.rotations[:, 0], FORWARD)
    return np.arctan2(forward[:, 0], forward[:, 2])


@pytest.fixture(scope="module")
def plain(fixture_walk2):
    return simulate_stream(fixture_walk2, SimulationConfig(look_around_deg=0.0))


def test_stream_at_60_fps_with_every_device_tracked(plain, fixture_walk2):
    stream = plain.stream
    assert np.isclose(stream.rate, 60.0) and np.isclose(stream.duration, fixture_walk2.duration)
    assert stream.tracked.all() and np.allclose(np.linalg.norm(stream.rotations, axis=-1), 1.0)
    assert len(plain.truth) == len(stream) and plain.truth.fps == 60.0


def test_devices_sit_where_the_offsets_say(plain):
    positions = plain.truth.global_positions()
    mapping = plain.mapping
    head, left, right = (positions[:, mapping[j]] for j in ("head", "l_hand", "r_hand"))
    stream = plain.stream
    offsets = DeviceOffsets()
    assert np.allclose(np.linalg.norm(stream.positions[:, 1] - left, axis=-1), offsets.grip_from_wrist_m)
    assert np.allclose(np.linalg.norm(stream.positions[:, 2] - right, axis=-1), offsets.grip_from_wrist_m)
    assert np.allclose(np.linalg.norm(stream.positions[:, 0] - head, axis=-1), np.linalg.norm(offsets.hmd_from_head))
    # The implied joints invert the attachments exactly.
    implied = implied_joint_positions(stream)
    assert np.abs(implied - np.stack([head, left, right], axis=1)).max() < 1e-9
    # The HMD is above the head joint, level on average, and sees where the body faces when walking.
    assert np.all(stream.positions[:, 0, 1] > head[:, 1])
    up = quat.rotate(stream.rotations[:, 0], np.array([0.0, 1.0, 0.0]))
    assert up[:, 1].mean() > 0.97
    gap = np.degrees(np.abs(wrap_angle(hmd_yaw(stream) - body_yaw(positions, mapping))))
    assert gap.mean() < 15.0


def test_grip_axes_follow_the_forearm(plain):
    positions = plain.truth.global_positions()
    mapping = plain.mapping
    for d, side in ((1, "l"), (2, "r")):
        forearm = positions[:, mapping[f"{side}_hand"]] - positions[:, mapping[f"{side}_forearm"]]
        forearm /= np.linalg.norm(forearm, axis=-1, keepdims=True)
        back = quat.rotate(plain.stream.rotations[:, d], np.array([0.0, 1.0, 0.0]))
        # +Y of the grip points back along the forearm (up to the wrist's bend).
        assert np.sum(back * -forearm, axis=-1).mean() > 0.8


def test_look_around_turns_the_head_about_the_neck_only(plain, fixture_walk2):
    config = SimulationConfig(look_around_deg=60.0, seed=7)
    turned = simulate_stream(fixture_walk2, config)
    look = turned.look_around
    assert np.abs(look).max() <= np.radians(60.0) + 1e-12 and np.abs(look).max() > np.radians(20.0)
    assert np.abs(np.diff(look)).max() < np.radians(5.0)  # smooth at 60 fps
    extra = wrap_angle(hmd_yaw(turned.stream) - hmd_yaw(plain.stream))
    assert np.abs(extra - look).max() < 1e-9
    # The body below the neck is unchanged; the neck keeps its place.
    mapping = turned.mapping
    moved = [mapping["head"]]
    same = [j for j in range(len(fixture_walk2.skeleton)) if j not in moved]
    assert np.abs(turned.truth.global_positions()[:, same] - plain.truth.global_positions()[:, same]).max() < 1e-9
    # Hands are unaffected.
    assert np.abs(turned.stream.positions[:, 1:] - plain.stream.positions[:, 1:]).max() < 1e-9
    # Same seed, same stream; another seed, another one.
    again = simulate_stream(fixture_walk2, config)
    assert np.array_equal(again.stream.positions, turned.stream.positions)
    other = simulate_stream(fixture_walk2, SimulationConfig(look_around_deg=60.0, seed=8))
    assert not np.allclose(other.look_around, look)


def test_rate_follows_config(fixture_walk1):
    simulated = simulate_stream(fixture_walk1, SimulationConfig(fps=30.0))
    assert len(simulated.stream) == len(fixture_walk1) and np.isclose(simulated.stream.rate, 30.0)


def test_device_offsets_are_made_once_per_set_of_offsets_and_cannot_be_changed():
    """The offsets a live step reads every frame: one read-only array per set of values, whatever types a
    configuration gives them in (tuples, lists, arrays)."""
    given = device_offsets(DeviceOffsets(hmd_from_head=np.array([0.0, 0.06, -0.1]), grip_from_wrist_m=0.09))
    assert given is device_offsets(DeviceOffsets(hmd_from_head=(0.0, 0.06, -0.1), grip_from_wrist_m=0.09))
    np.testing.assert_allclose(given, [[0.0, 0.06, -0.1], [0.0, -0.09, 0.0], [0.0, -0.09, 0.0]], atol=1e-12)
    with pytest.raises(ValueError):
        given[0, 0] = 1.0
    assert device_offsets(DeviceOffsets())[1, 1] == -0.08
