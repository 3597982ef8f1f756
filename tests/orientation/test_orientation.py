"""Body-orientation prediction (MMVR §4): features, numpy/torch agreement, Algorithm 1, the shipped model."""
from pathlib import Path

import numpy as np
import pytest
import torch

from core.math import quat
from core.config import SimulationConfig
from core.quality.metrics import angle_deg
from core.tools.mocap_split import is_validation
from core.orientation.mmvr import IDENTITY_6D, INPUT_SIZE, OrientationModel, OrientationPredictor, device_features, \
    facing_yaw, orthonormalize_6d, predict_body_orientation
from core.devices.attachments import hmd_frame_rotations
from core.devices.simulate import simulate_stream
from core.tools.train.orientation import export, prepare_clips, rollout_loss, train
from conftest import DATASET_2, FIXTURE_WALK_2

ASSETS = Path(__file__).resolve().parents[2] / "assets"


@pytest.fixture(scope="module")
def stream(fixture_walk2):
    """The fixture walk of tests/data with the head looking around, as the devices report it."""
    return simulate_stream(fixture_walk2, SimulationConfig(look_around_deg=60.0, seed=3)).stream


def random_network(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(INPUT_SIZE, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32),
                               torch.nn.ReLU(), torch.nn.Linear(32, 6))


def test_features_are_invariant_to_a_global_yaw_and_shift_of_the_scene(stream):
    features, hmd_frame = device_features(stream.positions, stream.rotations, 60.0)
    turn = quat.from_yaw(np.array(2.1))
    moved, moved_heading = device_features(quat.rotate(turn, stream.positions) + np.array([4.0, 0.0, -2.0]),
                                           quat.multiply(turn, stream.rotations), 60.0)
    assert features.shape == (len(stream), 36)
    assert np.abs(moved - features).max() < 1e-9
    assert np.abs(moved_heading - quat.to_matrix(turn) @ hmd_frame).max() < 1e-9
    np.testing.assert_allclose(hmd_frame, quat.to_matrix(hmd_frame_rotations(stream.rotations[:, 0])), atol=1e-12)


def test_features_follow_the_paper_layout(stream):
    features, hmd_frame = device_features(stream.positions, stream.rotations, 60.0)
    t = 40
    velocity = (stream.positions[t] - stream.positions[t - 1]) * 60.0
    assert np.allclose(features[t, :9].reshape(3, 3), velocity @ hmd_frame[t])
    # The HMD's own rotation in the hmd_frame frame keeps its forward in the hmd_frame frame's YZ plane.
    hmd = quat.from_6d(features[t, 18:24])
    assert abs(quat.rotate(hmd, np.array([0.0, 0.0, -1.0]))[0]) < 1e-9


def test_live_steps_equal_the_offline_driver(stream):
    model = export(random_network(), np.zeros(INPUT_SIZE), np.ones(INPUT_SIZE))
    offline = predict_body_orientation(model, stream.positions, stream.rotations, 60.0)
    live = OrientationPredictor(model)
    steps = [live.step(stream.positions[t], stream.rotations[t], 1.0 / 60.0) for t in range(len(stream))]
    # The offline driver gives frame 0 its successor's rates; from frame 1 on they see the same inputs,
    # and the network forgets the first frame within a few steps.
    assert np.abs(np.array(steps)[30:] - offline[30:]).max() < 1e-6


def test_offline_driver_feeds_back_as_stepping_each_frame_does(stream):
    # The offline driver carries the prediction from frame to frame in hmd_frame coordinates; stepping the
    # shared per-frame pass through world coordinates, frame by frame, must give the same predictions.
    model = export(random_network(2), np.zeros(INPUT_SIZE), np.ones(INPUT_SIZE))
    features, hmd_frame = device_features(stream.positions, stream.rotations, 60.0)
    predictor = OrientationPredictor(model)
    stepped = [predictor.advance(model.feature_activations(features[t]), hmd_frame[t]) for t in range(len(stream))]
    offline = predict_body_orientation(model, stream.positions, stream.rotations, 60.0)
    assert offline.shape == (len(stream), 6)
    assert np.abs(offline - np.array(stepped)).max() < 1e-12
    one = predict_body_orientation(model, stream.positions[:1], stream.rotations[:1], 60.0)
    assert one.shape == (1, 6) and np.all(np.isfinite(one))


def test_numpy_forward_matches_torch(tmp_path):
    network = random_network(1)
    mean, std = np.linspace(-1, 1, INPUT_SIZE), np.linspace(0.5, 2.0, INPUT_SIZE)
    model = export(network, mean, std)
    x = np.random.default_rng(0).normal(size=(100, INPUT_SIZE))
    with torch.no_grad():
        expected = network(torch.from_numpy(((x - mean) / std).astype(np.float32))).numpy()
    assert np.abs(model.forward(x) - expected).max() < 1e-5
    model.info = {"note": "test"}
    model.save(tmp_path / "m.npz")
    loaded = OrientationModel.load(tmp_path / "m.npz")
    assert loaded.info == {"note": "test"} and np.array_equal(loaded.forward(x), model.forward(x))
    (tmp_path / "bad.npz").write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not an orientation model file"):
        OrientationModel.load(tmp_path / "bad.npz")


class AddConstant(torch.nn.Module):
    """f(x) = previous orientation (the last 6 inputs) + c: a network whose rollout is easy to follow."""

    def __init__(self, c):
        super().__init__()
        self.c = torch.tensor(c)

    def forward(self, x):
        return x[:, -6:] + self.c


def test_rollout_loss_is_algorithm_1():
    c = [0.0, 0.0, 0.1, 0.0, 0.0, 0.0]
    r = 2
    features = torch.zeros(1, r, 36)
    headings = torch.eye(3).repeat(1, r, 1, 1)
    previous = torch.tensor([IDENTITY_6D.tolist()])
    target = torch.zeros(1, 6)
    loss = rollout_loss(AddConstant(c), features, headings, previous, target)
    # Step 1: o1 = (1, 0, 0.1, 0, 1, 0), fed back orthonormalised: (1, 0, 0.1)/sqrt(1.01), (0, 1, 0).
    # Step 2: o2 = that + c. Only the last prediction meets the target (zero).
    n = np.sqrt(1.01)
    o2 = np.array([1 / n, 0.0, 0.1 / n + 0.1, 0.0, 1.0, 0.0])
    assert np.isclose(float(loss), np.mean(o2 ** 2), atol=1e-7)
    # With r = 1 the loss sees o1 only.
    one = rollout_loss(AddConstant(c), features[:, :1], headings[:, :1], previous, target)
    assert np.isclose(float(one), (1.0 + 0.01 + 1.0) / 6.0, atol=1e-7)


def test_rollout_loss_re_expresses_the_feedback_in_each_heading_frame():
    """Feedback lives in world space: a quarter-turn hmd_frame turns the network's view of it."""
    quarter = torch.from_numpy(quat.to_matrix(quat.from_yaw(np.array(np.pi / 2))).astype(np.float32))
    headings = torch.stack([torch.eye(3), quarter])[None]
    previous = torch.tensor([IDENTITY_6D.tolist()])
    # Step 1 (identity hmd_frame): o1 = identity. Step 2: the world identity seen from a frame turned
    # +90 deg about Y is a -90 deg turn, whose 6D is (0, 0, 1, 0, 1, 0).
    loss = rollout_loss(AddConstant([0.0] * 6), torch.zeros(1, 2, 36), headings, previous, torch.zeros(1, 6))
    expected = orthonormalize_6d(quat.to_6d(quat.from_yaw(np.array(-np.pi / 2))))
    assert np.allclose(expected, [0, 0, 1, 0, 1, 0], atol=1e-12)
    assert np.isclose(float(loss), np.mean(expected ** 2), atol=1e-6)


def held_back_clip():
    clip = DATASET_2 / "dataset-2_walk-turn-left_active_005.bvh"
    assert is_validation(clip), "the test clip must be one the model never trained on"
    return clip


def test_training_builds_the_hidden_layers_asked_for():
    clips = prepare_clips([FIXTURE_WALK_2], seed=1)
    model, curve = train(clips, [], rollout=5, epochs=2, windows_per_epoch=128, hidden=(8, 4), clip_grad_norm=1.0,
                         log=lambda line: None)
    assert [w.shape for w, _ in model.layers] == [(INPUT_SIZE, 8), (8, 4), (4, 6)]
    assert len(curve) == 2 and curve[1]["loss"] < curve[0]["loss"]
    assert np.all(np.isfinite(predict_body_orientation(model, clips[0].positions, clips[0].rotations, 60.0)))


def test_shipped_model_beats_hmd_forward_on_a_held_back_clip():
    model = OrientationModel.load(ASSETS / "orientation_mmvr.npz")
    assert model.info["rollout"] == 50 and model.info["validation_mean_deg"] < 20.0
    clip = prepare_clips([held_back_clip()], look_around_deg=60.0, seed=123)[0]
    predicted = predict_body_orientation(model, clip.positions, clip.rotations, 60.0)
    network = angle_deg(facing_yaw(predicted), clip.truth_yaw).mean()
    hmd_forward = angle_deg(quat.yaw_of_direction(clip.hmd_frames[:, :, 2]), clip.truth_yaw).mean()
    assert network < 0.6 * hmd_forward, (network, hmd_forward)


def test_a_fresh_predictor_settles_on_its_first_frame_instead_of_starting_from_hmd_forward():
    model = OrientationModel.load(ASSETS / "orientation_mmvr.npz")
    settled, started, hmd = [], [], []
    for seed in range(5):  # look-around draws: the head starts turned from the body by up to 66 degrees
        clip = prepare_clips([held_back_clip()], look_around_deg=60.0, seed=seed)[0]
        hmd_frame_6d = (IDENTITY_6D.reshape(2, 3) @ clip.hmd_frames[0].T).ravel()
        settled.append(predict_body_orientation(model, clip.positions, clip.rotations, 60.0))
        started.append(predict_body_orientation(model, clip.positions, clip.rotations, 60.0, initial=hmd_frame_6d))
        hmd.append(angle_deg(quat.yaw_of_direction(clip.hmd_frames[:30, :, 2]), clip.truth_yaw[:30]))
        settled[-1], started[-1] = (angle_deg(facing_yaw(p[:30]), clip.truth_yaw[:30]) for p in (settled[-1], started[-1]))
    settled, started, hmd = np.array(settled), np.array(started), np.array(hmd)
    # Settled, the very first frame is already the network's answer, far from the HMD's facing.
    assert settled[:, 0].mean() < 0.4 * hmd[:, 0].mean(), (settled[:, 0], hmd[:, 0])
    assert settled[:, 0].mean() < 0.6 * started[:, 0].mean(), (settled[:, 0], started[:, 0])
    assert settled.mean() < 0.9 * started.mean(), (settled.mean(), started.mean())
