"""Checkpoints in safetensors: read by the safetensors library's own loaders, and PyTorch's
LeNet files read by braze (outputs compared with PyTorch's on the same images)."""

from __future__ import annotations

import errno
import json
import os
import stat

import numpy as np
import pytest

import braze
from braze.models import LeNet, lenet_from_torch, lenet_to_torch
from braze.nn import CheckpointError, Dense, Module, Sequential
from braze.nn.checkpoint import read_checkpoint, write_checkpoint

safetensors_numpy = pytest.importorskip("safetensors.numpy")


def _assert_same_state(actual: dict, expected: dict) -> None:
    assert sorted(actual) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(np.asarray(actual[name]), value, err_msg=name)


def test_safetensors_written_by_braze_load_in_the_numpy_loader(tmp_path):
    model = LeNet(seed=0)
    path = tmp_path / "lenet.safetensors"
    model.save(path)
    _assert_same_state(safetensors_numpy.load_file(path), model.state_dict())
    copy = LeNet(seed=1)
    copy.load(path)
    _assert_same_state(copy.state_dict(), model.state_dict())
    assert [p.name for p in tmp_path.iterdir()] == ["lenet.safetensors"]  # no temporary file left


def test_safetensors_written_by_the_library_load_in_braze(tmp_path):
    model = Sequential(Dense(3, input_dim=4), Dense(2))
    state = {name: value.astype(np.float64) for name, value in model.state_dict().items()}
    path = tmp_path / "doubles.safetensors"
    safetensors_numpy.save_file(state, path, metadata={"format": "np"})
    other = Sequential(Dense(3, input_dim=4, generator=braze.Generator(5)), Dense(2))
    other.load(path)
    _assert_same_state(other.state_dict(), model.state_dict())


def test_bfloat16_and_float16_values_are_widened(tmp_path):
    model = Sequential(Dense(2, input_dim=2))
    kernel = np.array([[1.5, -2.0], [0.25, 3.0]], np.float32)
    path = tmp_path / "half.safetensors"
    safetensors_numpy.save_file(
        {"layers.0.kernel": kernel.astype(np.float16), "layers.0.bias": np.zeros(2, "<f2")}, path
    )
    model.load(path)
    np.testing.assert_array_equal(model.state_dict()["layers.0.kernel"], kernel)
    # bfloat16 is the high half of a float32: written by hand, as NumPy has no such dtype.
    header = b'{"x":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}'
    bits = (np.array([1.5, -2.0], np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
    path.write_bytes(len(header).to_bytes(8, "little") + header + bits)
    np.testing.assert_array_equal(read_checkpoint(path)["x"], [1.5, -2.0])


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ({"layers.0.kernel": np.zeros((4, 3), np.float32)}, r"missing \['layers.0.bias'\]"),
        (
            {"layers.0.kernel": np.zeros((4, 3)), "layers.0.bias": np.zeros(3), "extra": np.zeros(1)},
            r"unexpected \['extra'\]",
        ),
        (
            {"layers.0.kernel": np.zeros((5, 3)), "layers.0.bias": np.zeros(3)},
            r"layers.0.kernel has shape \(5, 3\) in the checkpoint but \(4, 3\) in the model",
        ),
    ],
    ids=["missing", "extra", "shape"],
)
def test_a_checkpoint_that_does_not_fit_names_the_key(tmp_path, state, message):
    path = tmp_path / "bad.safetensors"
    safetensors_numpy.save_file(state, path)
    with pytest.raises(CheckpointError, match=rf"bad.safetensors: checkpoint does not fit Sequential: .*{message}"):
        Sequential(Dense(3, input_dim=4)).load(path)


def test_integer_tensors_are_not_parameters(tmp_path):
    path = tmp_path / "ints.safetensors"
    state = {"layers.0.kernel": np.zeros((4, 3), np.int32), "layers.0.bias": np.zeros(3, np.float32)}
    safetensors_numpy.save_file(state, path)
    with pytest.raises(CheckpointError, match="layers.0.kernel is int32 in the checkpoint but float32 in the model"):
        Sequential(Dense(3, input_dim=4)).load(path)
    path = tmp_path / "bools.safetensors"
    safetensors_numpy.save_file({**state, "layers.0.kernel": np.zeros((4, 3), bool)}, path)
    with pytest.raises(CheckpointError, match="wrong dtype: layers.0.kernel is BOOL"):
        Sequential(Dense(3, input_dim=4)).load(path)


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_an_integer_buffer_round_trips(tmp_path, suffix):
    model = braze.nn.BatchNorm2d(3)
    model(braze.tensor(np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)))
    path = tmp_path / f"bn{suffix}"
    model.save(path)
    loaded = braze.nn.BatchNorm2d(3)
    loaded.load(path)
    for name, value in model.state_dict().items():
        assert loaded.state_dict()[name].dtype == value.dtype
        np.testing.assert_array_equal(loaded.state_dict()[name], value)
    assert int(loaded.num_batches_tracked.numpy()) == 1


class _TorchLeNet:
    """PyTorch's LeNet-5 (as in its tutorials), built only when torch is installed."""

    def __new__(cls):
        torch = pytest.importorskip("torch")
        nn, functional = torch.nn, torch.nn.functional

        class TorchLeNet(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
                self.conv2 = nn.Conv2d(6, 16, 5)
                self.fc1, self.fc2, self.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)

            def forward(self, x):
                x = functional.avg_pool2d(functional.relu(self.conv1(x)), 2)
                x = functional.avg_pool2d(functional.relu(self.conv2(x)), 2)
                x = torch.flatten(x, 1)
                return self.fc3(functional.relu(self.fc2(functional.relu(self.fc1(x)))))

        torch.manual_seed(0)
        return TorchLeNet()


def _outputs(images: np.ndarray, braze_model, torch_model) -> tuple[np.ndarray, np.ndarray]:
    import torch

    with torch.no_grad():
        expected = torch_model(torch.from_numpy(images.transpose(0, 3, 1, 2).copy())).numpy()
    return braze_model(braze.tensor(images)).numpy(), expected


def test_lenet_files_written_by_pytorch_load_in_braze_and_back(tmp_path):
    torch_model = _TorchLeNet()
    safetensors_torch = pytest.importorskip("safetensors.torch")
    path = tmp_path / "torch-lenet.safetensors"
    safetensors_torch.save_file(torch_model.state_dict(), path)
    model = LeNet(seed=3)
    model.load_state_dict(lenet_from_torch(read_checkpoint(path)))
    images = np.random.default_rng(0).standard_normal((4, 28, 28, 1)).astype(np.float32)
    ours, theirs = _outputs(images, model, torch_model)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)

    ours_path = tmp_path / "braze-lenet.safetensors"
    LeNet(seed=4).save(ours_path)
    loaded = safetensors_torch.load_file(ours_path)
    _assert_same_state({k: v.numpy() for k, v in loaded.items()}, read_checkpoint(ours_path))
    torch_model.load_state_dict({k: safetensors_torch.torch.from_numpy(v) for k, v in lenet_to_torch(loaded).items()})
    model.load(ours_path)
    ours, theirs = _outputs(images, model, torch_model)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


def test_layout_conversion_round_trips_and_checks_names():
    state = LeNet(seed=0).state_dict()
    _assert_same_state(lenet_from_torch(lenet_to_torch(state)), state)
    with pytest.raises(CheckpointError, match=r"PyTorch LeNet: missing \['conv1.bias'.*unexpected \['layers.0.bias'"):
        lenet_from_torch(state)


class _Scaled(Module):
    """A layer and a 0-d parameter, under names ``np.savez`` reserves (``file``, ``allow_pickle``)."""

    def __init__(self, seed: int) -> None:
        self.file = Dense(2, input_dim=3, generator=braze.Generator(seed))
        self.allow_pickle = braze.tensor(1.5 + seed, requires_grad=True)

    def forward(self, x: braze.Tensor) -> braze.Tensor:
        return self.file(x) * self.allow_pickle


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_every_parameter_comes_back_with_its_shape_and_name(tmp_path, suffix):
    model = _Scaled(seed=0)
    path = tmp_path / f"scaled{suffix}"
    model.save(path)
    expected = model.state_dict()
    on_disk = dict(np.load(path)) if suffix == ".npz" else safetensors_numpy.load_file(path)
    assert {name: value.shape for name, value in on_disk.items()} == {k: v.shape for k, v in expected.items()}
    _assert_same_state(on_disk, expected)
    copy = _Scaled(seed=1)
    copy.load(path)
    _assert_same_state(copy.state_dict(), expected)


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_a_saved_checkpoint_gets_the_mode_open_gives_a_new_file(tmp_path, suffix):
    previous = os.umask(0o022)
    try:
        LeNet(seed=0).save(tmp_path / f"m{suffix}")
        (tmp_path / "plain").write_bytes(b"")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / f"m{suffix}").stat().st_mode) == stat.S_IMODE((tmp_path / "plain").stat().st_mode)


def test_big_endian_floats_are_written_little_endian(tmp_path):
    path = tmp_path / "big.safetensors"
    values = np.array([[1.5, -2.25], [3.0, 1e-3]], ">f8")
    write_checkpoint(path, {"w": values})
    loaded = safetensors_numpy.load_file(path)["w"]
    assert loaded.dtype == np.float64
    np.testing.assert_array_equal(loaded, values)


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
@pytest.mark.parametrize(
    ("state", "message"),
    [
        ({"w": np.zeros(2, np.float32), "steps": np.zeros(2, bool)}, "steps: cannot save bool"),
        ({"__metadata__": np.zeros(2, np.float32)}, "__metadata__: safetensors reserves this name"),
    ],
    ids=["booleans", "metadata"],
)
def test_what_could_not_be_read_back_is_not_written(tmp_path, suffix, state, message):
    path = tmp_path / f"m{suffix}"
    write_checkpoint(path, {"w": np.ones(2, np.float32)})
    before = path.read_bytes()
    if "__metadata__" in state and suffix == ".npz":  # only safetensors reserves the name
        write_checkpoint(path, state)
        _assert_same_state(read_checkpoint(path), state)
        return
    with pytest.raises(CheckpointError, match=message):
        write_checkpoint(path, state)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.parametrize(
    "entry",
    [
        {"dtype": "F32", "shape": [2], "data_offsets": ["0", "8"]},
        {"dtype": "F32", "shape": [2], "data_offsets": [0.0, 8.0]},
        {"dtype": "F32", "shape": [-1, -2], "data_offsets": [0, 8]},
        {"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]},
        {"dtype": "F32", "shape": "ab", "data_offsets": [0, 8]},
        {"dtype": ["F32"], "shape": [2], "data_offsets": [0, 8]},
    ],
    ids=["string-offsets", "float-offsets", "negative-shape", "float-shape", "string-shape", "list-dtype"],
)
def test_a_malformed_header_entry_is_a_checkpoint_error_naming_the_file(tmp_path, entry):
    path = tmp_path / "bad.safetensors"
    header = json.dumps({"x": entry}).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + bytes(8))
    with pytest.raises(CheckpointError, match=r"bad.safetensors: not a checkpoint: bad safetensors entry for x"):
        read_checkpoint(path)


@pytest.mark.skipif(os.name != "posix" or not os.path.isdir("/proc/self/fd"), reason="needs POSIX and /proc")
def test_the_file_and_then_its_folder_reach_the_disk(tmp_path, monkeypatch):
    """The rename that publishes a checkpoint is durable only once its folder is synced:
    the file's bytes first, then the folder holding its new name."""
    synced = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    path = tmp_path / "models" / "lenet.safetensors"
    LeNet(seed=0).save(path)
    assert len(synced) == 2
    assert os.path.dirname(synced[0]) == str(path.parent)  # the temporary file, before its rename
    assert synced[1] == str(path.parent)


@pytest.mark.skipif(os.name != "posix", reason="folders are synced on POSIX only")
def test_a_folder_that_cannot_be_synced_still_gets_the_checkpoint(tmp_path, monkeypatch):
    """Some network and FUSE filesystems refuse fsync on a folder (EINVAL): the file is
    already in place by then, so the save succeeds."""
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    model = LeNet(seed=0)
    model.save(tmp_path / "lenet.npz")
    copy = LeNet(seed=1)
    copy.load(tmp_path / "lenet.npz")
    _assert_same_state(copy.state_dict(), model.state_dict())
