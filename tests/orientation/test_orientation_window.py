"""The window orientation model: torch and numpy agree, yaw invariance, live equals offline, the shipped model."""
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from core.math import quat
from core.config import SimulationConfig
from core.quality.metrics import angle_deg
from core.tools.mocap_split import is_validation
from core.devices.attachments import hmd_forward
from core.orientation.mmvr import MMVR_MODEL, SHIPPED_MODEL, OrientationModel, OrientationModelError, facing_yaw, \
    hmd_frame_of_forward
from core.orientation.window_model import TAPS, VECTOR_COUNT, WindowOrientationModel, frame_vectors, hmd_frames, \
    load_orientation_model, mirror_index, window_inputs
from core.devices.simulate import simulate_stream
from core.tools.train.orientation_window import Augmentation, StackedFrames, augmented_devices, build_network, \
    chord_loss, export, merged, prepare_window_clips, symmetric_normalisation, symmetric_output, \
    torch_window_inputs, train, window_clip
from conftest import DATA, FIXTURE_WALK_1, FIXTURE_WALK_2

INPUTS = len(TAPS) * VECTOR_COUNT * 3


@pytest.fixture(scope="module")
def stream(fixture_walk2):
    """The fixture walk of tests/data with the head looking around, as the devices report it."""
    return simulate_stream(fixture_walk2, SimulationConfig(look_around_deg=60.0, seed=3)).stream


def random_model(seed=0):
    torch.manual_seed(seed)
    network = build_network(INPUTS, (24, 16))
    rng = np.random.default_rng(seed)
    mean, std = rng.normal(0.0, 0.3, INPUTS), rng.uniform(0.5, 2.0, INPUTS)
    return network, mean, std, export(network, mean, std, TAPS)


def test_numpy_equals_torch_over_a_sequence(stream):
    network, mean, std, model = random_model(1)
    clip = window_clip("walk", stream.positions, stream.rotations, np.zeros(len(stream)))
    data = StackedFrames([clip])
    index = torch.from_numpy(data.window_index(np.arange(len(stream)), np.array(TAPS)))
    with torch.no_grad():
        inputs = torch_window_inputs(torch.from_numpy(data.vectors), torch.from_numpy(data.hmd_frames), index)
        output = network((inputs - torch.from_numpy(mean.astype(np.float32))) /
                         torch.from_numpy(std.astype(np.float32))).numpy()
    hmd_frame, hmd_yaw = hmd_frames(frame_vectors(stream.positions, stream.rotations, 60.0))
    forward = hmd_forward(stream.rotations[:, 0])
    assert np.abs(hmd_frame - hmd_frame_of_forward(forward)).max() < 1e-12
    assert np.abs(hmd_yaw - quat.yaw_of_direction(forward)).max() < 1e-12
    torch_yaw = hmd_yaw + np.arctan2(output[:, 1], output[:, 0])
    predicted = model.predict(stream.positions, stream.rotations, 60.0)
    assert predicted.shape == (len(stream), 6)
    assert np.abs(angle_deg(facing_yaw(predicted), torch_yaw)).max() < np.degrees(1e-5)
    windows = data.vectors[data.window_index(np.arange(len(stream)), np.array(TAPS))].astype(np.float64)
    numpy_output = model.forward(window_inputs(windows, data.hmd_frames.astype(np.float64)))
    assert np.abs(numpy_output - output).max() < 1e-5


def mirrored_scene(positions, rotations):
    """The devices reflected through the YZ plane (x -> -x), the controllers trading hands: a device's rotation R
    becomes M R M (its x axis mirrors into minus itself), which as a quaternion negates y and z."""
    return positions[:, [0, 2, 1]] * [-1.0, 1.0, 1.0], rotations[:, [0, 2, 1]] * [1.0, 1.0, -1.0, -1.0]


def test_a_mirror_model_answers_the_mirrored_scene_with_its_answer_mirrored(stream):
    _, _, _, model = random_model(4)
    mirrored = mirrored_scene(stream.positions, stream.rotations)
    plain = facing_yaw(model.predict(stream.positions, stream.rotations, 60.0))
    assert np.abs(angle_deg(facing_yaw(model.predict(*mirrored, 60.0)), -plain)).max() > 1.0  # no symmetry by itself
    model.mirror = True
    yaw = facing_yaw(model.predict(stream.positions, stream.rotations, 60.0))
    assert np.abs(angle_deg(facing_yaw(model.predict(*mirrored, 60.0)), -yaw)).max() < 1e-9
    index, signs = mirror_index(TAPS)
    assert np.array_equal(index[index], np.arange(INPUTS)) and np.all(signs * signs[index] == 1.0)  # an involution


def test_numpy_equals_torch_with_the_mirror(stream, tmp_path):
    network, mean, std, _ = random_model(5)
    mean, std = symmetric_normalisation(mean, std, TAPS)
    model = export(network, mean, std, TAPS, mirror=True)
    model.save(tmp_path / "mirror.npz")
    assert load_orientation_model(tmp_path / "mirror.npz").mirror
    clip = window_clip("walk", stream.positions, stream.rotations, np.zeros(len(stream)))
    data = StackedFrames([clip])
    index = torch.from_numpy(data.window_index(np.arange(len(stream)), np.array(TAPS)))
    columns, signs = mirror_index(TAPS)
    with torch.no_grad():
        inputs = torch_window_inputs(torch.from_numpy(data.vectors), torch.from_numpy(data.hmd_frames), index)
        inputs = (inputs - torch.from_numpy(mean.astype(np.float32))) / torch.from_numpy(std.astype(np.float32))
        output = symmetric_output(network, inputs, torch.from_numpy(columns),
                                  torch.from_numpy(signs.astype(np.float32))).numpy()
    windows = data.vectors[data.window_index(np.arange(len(stream)), np.array(TAPS))].astype(np.float64)
    assert np.abs(model.forward(window_inputs(windows, data.hmd_frames.astype(np.float64))) - output).max() < 1e-5
    torch_yaw = clip.hmd_yaw + np.arctan2(output[:, 1], output[:, 0])
    predicted = facing_yaw(model.predict(stream.positions, stream.rotations, 60.0))
    assert np.abs(angle_deg(predicted, torch_yaw)).max() < np.degrees(1e-5)


@pytest.mark.parametrize("mirror", [False, True])
def test_merged_members_answer_the_sum_of_their_outputs(mirror):
    members = [random_model(seed)[3] for seed in (6, 7, 8)]  # each with its own normalisation
    for member in members:
        member.mirror = mirror
    model = merged(members)
    assert [w.shape for w, _ in model.layers] == [(INPUTS, 72), (72, 48), (48, 2)] and model.mirror == mirror
    x = np.random.default_rng(1).normal(0.0, 2.0, (40, INPUTS))
    assert np.abs(model.forward(x) - sum(m.forward(x) for m in members)).max() < 1e-10


def test_prediction_is_invariant_to_a_global_yaw_and_shift_of_the_scene(stream):
    model = load_orientation_model()
    turn = quat.from_yaw(np.array(2.1))
    predicted = facing_yaw(model.predict(stream.positions, stream.rotations, 60.0))
    moved = facing_yaw(model.predict(quat.rotate(turn, stream.positions) + np.array([4.0, 0.0, -2.0]),
                                     quat.multiply(turn, stream.rotations), 60.0))
    assert np.abs(angle_deg(moved, predicted + 2.1)).max() < 1e-7


@pytest.mark.parametrize("mirror", [False, True])
def test_live_steps_equal_the_offline_driver_and_reset_starts_over(stream, mirror):
    _, _, _, model = random_model(2)
    model.mirror = mirror
    offline = model.predict(stream.positions, stream.rotations, 60.0)
    live = model.predictor()
    steps = np.array([live.step(stream.positions[t], stream.rotations[t], 1.0 / 60.0) for t in range(len(stream))])
    assert np.abs(steps - offline).max() < 1e-12
    live.reset()
    again = [live.step(stream.positions[t], stream.rotations[t], 1.0 / 60.0) for t in range(5)]
    assert np.abs(np.array(again) - offline[:5]).max() < 1e-12


def test_frame_vectors_hold_positions_velocities_and_axes(stream):
    vectors = frame_vectors(stream.positions, stream.rotations, 60.0)
    t = 40
    assert vectors.shape == (len(stream), VECTOR_COUNT, 3)
    assert np.allclose(vectors[t, 1], stream.positions[t, 1] - stream.positions[t, 0])
    assert np.allclose(vectors[t, 5], (stream.positions[t, 2] - stream.positions[t - 1, 2]) * 60.0)
    assert np.allclose(vectors[t, 6:8], quat.to_matrix(stream.rotations[t, 0])[:, :2].T)
    assert np.all(vectors[0, 3:6] == 0.0)  # no predecessor, no velocity: the live driver's first frame too


def test_save_load_round_trip_and_refusals(tmp_path):
    _, _, _, model = random_model(3)
    model.info = {"note": "test"}
    model.save(tmp_path / "m.npz")
    loaded = load_orientation_model(tmp_path / "m.npz")
    assert isinstance(loaded, WindowOrientationModel) and loaded.info == {"note": "test"}
    x = np.random.default_rng(0).normal(size=(20, INPUTS))
    assert np.abs(loaded.forward(x) - model.forward(x)).max() < 1e-4  # float32 on disk
    assert isinstance(load_orientation_model(MMVR_MODEL), OrientationModel)
    bad = dict(np.load(tmp_path / "m.npz"))
    bad["taps"] = bad["taps"][::-1].copy()
    np.savez(tmp_path / "bad.npz", **bad)
    with pytest.raises(OrientationModelError, match="taps must start at 0"):
        load_orientation_model(tmp_path / "bad.npz")
    bad["taps"] = bad["taps"][:-1][::-1].copy()
    np.savez(tmp_path / "short.npz", **bad)
    with pytest.raises(OrientationModelError, match="short.npz: window model maps 576 inputs to 2"):
        load_orientation_model(tmp_path / "short.npz")


def test_augmentation_scales_the_arms_and_delays_the_controllers(stream):
    rng = np.random.default_rng(0)
    plain = Augmentation(arm=(1.2, 1.2), attachment_deg=0.0, attachment_m=0.0, latency_frames=0)
    positions, rotations = augmented_devices(stream.positions, stream.rotations, rng, plain)
    assert np.allclose(positions[:, 0], stream.positions[:, 0]) and np.allclose(rotations, stream.rotations)
    assert np.allclose(positions[:, 1:] - positions[:, :1], 1.2 * (stream.positions[:, 1:] - stream.positions[:, :1]))
    lagged = Augmentation(arm=(1.0, 1.0), attachment_deg=0.0, attachment_m=0.0, latency_frames=2)
    lags = set()
    for seed in range(8):
        positions, _ = augmented_devices(stream.positions, stream.rotations, np.random.default_rng(seed), lagged)
        lag = next(k for k in range(3) if np.allclose(positions[10:, 1], stream.positions[10 - k:len(stream) - k, 1]))
        assert np.allclose(positions[:, 0], stream.positions[:, 0])
        lags.add(lag)
    assert lags == {0, 1, 2}


def test_training_lowers_the_loss_and_resumes_from_its_checkpoint():
    clips = prepare_window_clips([FIXTURE_WALK_1], seed=1,
                                 augmentation=Augmentation(copies=3))
    assert [c.name.endswith("_mirror") for c in clips] == [False, True, False]
    states = []
    model, curve, finished = train(clips, [], epochs=3, samples_per_epoch=2048, hidden=(16,),
                                   checkpoint=states.append, log=lambda line: None)
    assert finished and len(curve) == 3 and curve[2]["loss"] < curve[0]["loss"]
    resumed, resumed_curve, _ = train(clips, [], epochs=4, samples_per_epoch=2048, hidden=(16,), resume=states[1],
                                      log=lambda line: None)
    assert [c["epoch"] for c in resumed_curve] == [1, 2, 3, 4]
    assert np.all(np.isfinite(resumed.predict(clips[0].positions, clips[0].rotations, 60.0)))
    stopped = train(clips, [], epochs=3, samples_per_epoch=2048, hidden=(16,), minutes=0.0, log=lambda line: None)
    assert stopped[2] is False and len(stopped[1]) == 1


def test_chord_loss_is_about_the_angle():
    target = torch.tensor([[1.0, 0.0]])
    for degrees in (1.0, 10.0, 40.0):
        a = np.radians(degrees)
        output = torch.tensor([[3.0 * np.cos(a), 3.0 * np.sin(a)]])  # the output's length does not count
        assert abs(float(chord_loss(output, target)) - 2.0 * np.sin(a / 2.0)) < 1e-4


def test_shipped_model_beats_the_papers_network_on_held_back_sideways_walking():
    clip_path = DATA / "Bandai-Namco-Research-Motiondataset-1" / "dataset-1_walk-left_childish_001.bvh"
    assert is_validation(clip_path), "the test clip must be one neither model trained on"
    info = json.loads(Path(SHIPPED_MODEL).with_suffix(".json").read_text())
    assert info["validation_files"] > 0 and info["taps"] == list(TAPS)
    window, mmvr = load_orientation_model(), load_orientation_model(MMVR_MODEL)
    errors = {"window": [], "mmvr": [], "hmd": []}
    for seed in range(3):
        clip = prepare_window_clips([clip_path], look_around_deg=60.0, seed=seed)[0]
        for name, model in (("window", window), ("mmvr", mmvr)):
            errors[name].append(angle_deg(facing_yaw(model.predict(clip.positions, clip.rotations, 60.0)),
                                          clip.truth_yaw).mean())
        errors["hmd"].append(angle_deg(clip.hmd_yaw, clip.truth_yaw).mean())
    window_deg, mmvr_deg, hmd_deg = (np.mean(errors[k]) for k in ("window", "mmvr", "hmd"))
    assert window_deg < 0.7 * mmvr_deg and window_deg < 0.5 * hmd_deg, errors


def test_train_resume_and_eval_from_the_command_line(tmp_path):
    from conftest import core

    files = [FIXTURE_WALK_1, FIXTURE_WALK_2]  # the second is in the validation split
    model = tmp_path / "window.npz"
    common = ["train", "orientation", "--data", *files, "-o", model, "--samples-per-epoch", 1024, "--threads", 1,
              "--members", 2, "--copies", 2]
    core(*common, "--epochs", 2, "--minutes", 0.0001)
    record = json.loads(model.with_suffix(".json").read_text())
    assert record["epochs_done"] == 1 and record["finished"] is False
    assert record["training_files"] == 1 and record["validation_files"] == 1
    core(*common, "--epochs", 2, "--resume")
    record = json.loads(model.with_suffix(".json").read_text())
    assert record["finished"] is True and record["members_done"] == 2
    assert [(c["member"], c["epoch"]) for c in record["curve"]] == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert isinstance(load_orientation_model(model), WindowOrientationModel)
    done = core("eval", "orientation", "--data", *files, "--model", model, "--plot", tmp_path / "error.png", "--json")
    result = json.loads(done.stdout)
    assert {"network", "mmvr", "hmd_forward", "r1"} <= set(result)
    assert set(result["activities"]) == {"walk-turn-right"} and result["activities"]["walk-turn-right"]["frames"] == result["frames"]
    assert (tmp_path / "error.png").stat().st_size > 0
    refused = core("train", "orientation", "--data", *files, "-o", tmp_path / "none.npz", "--resume", check=False)
    assert "no checkpoint to resume from" in refused.stderr


class _Planted:
    """What a pickle planted beside an output could do when unpickled: here, leave a file behind."""

    def __init__(self, witness):
        self.witness = witness

    def __reduce__(self):
        return (open, (str(self.witness), "w"))


def test_a_planted_pickle_in_a_checkpoint_is_refused_and_never_run(tmp_path):
    """`train orientation --resume` reads its checkpoint with torch's weights-only unpickler: a pickle that would
    run code when loaded is refused in one line naming the file, and its code does not run."""
    import torch
    from conftest import core

    witness = tmp_path / "ran"
    model = tmp_path / "window.npz"
    torch.save({"network": _Planted(witness)}, model.with_suffix(".checkpoint.pt"))
    refused = core("train", "orientation", "--data", FIXTURE_WALK_1, FIXTURE_WALK_2, "-o", model, "--resume",
                   "--threads", 1, check=False)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"{model.with_suffix('.checkpoint.pt')}: not a checkpoint of this trainer" in refused.stderr
    assert not witness.exists() and not model.exists()
