"""Files braze reads are data, never instructions (docs/security.md): a model file that
names another file, a FIFO where a model belongs, weights that are not floats, a step
count that is not a whole number, a config braze never writes, JSON nested past Python's
depth, shapes NumPy cannot hold and a cache size past any disk. Each is one error naming
the file and the problem, never a read of something else, a hang or a raw exception."""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile

import numpy as np
import pytest

import braze
from braze import keras
from braze.data import DataError
from braze.data.idx import parse_idx
from braze.keras import layers
from braze.nn import CheckpointError
from braze.nn.npz import MODEL_WEIGHTS
from braze.nn.safetensors import read_safetensors
from braze.runtime import cachedir, diskcache

DEEP = "[" * 100_000 + "]" * 100_000  # nested past Python's recursion limit


def saved_model(tmp_path, compiled: bool = True) -> tuple[dict, dict[str, np.ndarray]]:
    """A small model saved by braze: its config and its weights' arrays, to be altered."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), layers.Dense(2)])
    if compiled:
        model.compile("adam", "mse")
        model.fit(np.ones((4, 3), np.float32), np.ones((4, 2), np.float32), epochs=1, verbose=0)
    model.save(tmp_path / "good.keras")
    with zipfile.ZipFile(tmp_path / "good.keras") as archive:
        config = json.loads(archive.read("config.json"))
        weights = dict(np.load(io.BytesIO(archive.read(MODEL_WEIGHTS))))
    return config, weights


def write_model(path, config, weights: dict[str, np.ndarray] | None = None, raw_config: str | None = None) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **(weights or {}))
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", raw_config if raw_config is not None else json.dumps(config))
        archive.writestr(MODEL_WEIGHTS, buffer.getvalue())


def test_a_model_file_naming_another_file_as_a_vocabulary_is_refused(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("token\n")
    config = {
        "format": "braze-keras",
        "model": {"class_name": "StringLookup", "config": {"vocabulary": str(secret)}},
    }
    write_model(tmp_path / "m.keras", config)
    with pytest.raises(CheckpointError, match="vocabulary is the file name"):
        keras.models.load_model(tmp_path / "m.keras")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("what", ["model", "gpt"])
def test_a_fifo_in_place_of_a_model_file_is_refused_without_blocking(tmp_path, what):
    from braze.bench.gpt import load_checkpoint

    if what == "model":
        os.mkfifo(tmp_path / "m.keras")
        with pytest.raises(CheckpointError, match="not a regular file"):
            keras.models.load_model(tmp_path / "m.keras")
    else:
        os.mkfifo(tmp_path / "config.json")
        with pytest.raises(CheckpointError, match="not a regular file"):
            load_checkpoint(tmp_path)


@pytest.mark.parametrize("value", [np.array([7, 7], np.int64), np.array([True, False]), np.array(["1.5", "2"])])
def test_weights_that_are_not_floats_are_refused(tmp_path, value):
    config, weights = saved_model(tmp_path, compiled=False)
    bias = next(name for name in weights if "bias" in name)
    write_model(tmp_path / "m.keras", config, {**weights, bias: value})
    # An integer array is a buffer's, refused where the model holds a float (a bool or text never loads).
    with pytest.raises(CheckpointError, match="wrong dtype|int64 in the checkpoint but float32 in the model"):
        keras.models.load_model(tmp_path / "m.keras")


@pytest.mark.parametrize("count", [np.nan, -5.0, 2.9, np.array([0, 1]), 1e30])
def test_a_step_count_that_is_no_whole_number_is_refused(tmp_path, count):
    config, weights = saved_model(tmp_path)
    write_model(tmp_path / "m.keras", config, {**weights, "optimizer/iterations": np.asarray(count)})
    with pytest.raises(CheckpointError, match="step count"):
        keras.models.load_model(tmp_path / "m.keras")


@pytest.mark.parametrize(
    "alter",
    [
        lambda c: [],
        lambda c: {"format": c["format"]},
        lambda c: {**c, "model": {**c["model"], "config": {**c["model"]["config"], "layers": "ab"}}},
        lambda c: {**c, "compile": {**c["compile"], "optimizer": {"class_name": "Dense", "config": {}}}},
    ],
    ids=["a list", "no model", "layers a string", "a layer for an optimizer"],
)
def test_a_config_braze_never_writes_is_one_error_naming_the_file(tmp_path, alter):
    config, weights = saved_model(tmp_path)
    write_model(tmp_path / "m.keras", alter(config), weights)
    with pytest.raises(CheckpointError, match=str(tmp_path / "m.keras")):
        keras.models.load_model(tmp_path / "m.keras")


def test_json_nested_past_pythons_depth_is_refused_everywhere(tmp_path, monkeypatch):
    write_model(tmp_path / "m.keras", None, raw_config=DEEP)
    with pytest.raises(CheckpointError, match="not a model saved by braze"):
        keras.models.load_model(tmp_path / "m.keras")
    header = DEEP.encode()
    (tmp_path / "w.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    with pytest.raises(CheckpointError, match="not one JSON object"):
        read_safetensors(tmp_path / "w.safetensors")
    from braze.bench.gpt import load_checkpoint

    (tmp_path / "gpt").mkdir()
    (tmp_path / "gpt" / "config.json").write_text(DEEP)
    with pytest.raises(CheckpointError, match="not a GPT checkpoint's settings"):
        load_checkpoint(tmp_path / "gpt")
    record = tmp_path / "cache" / "record.json"
    record.parent.mkdir(mode=0o700)
    record.write_text(DEEP)
    record.chmod(0o600)
    with pytest.warns(UserWarning, match="ignoring the cache record"):
        assert cachedir.read_record(record) is None


def test_shapes_numpy_cannot_hold_are_errors_naming_the_file(tmp_path):
    header = json.dumps({"w": {"dtype": "F32", "shape": [1] * 100, "data_offsets": [0, 4]}}).encode()
    (tmp_path / "w.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    with pytest.raises(CheckpointError, match="shape NumPy cannot hold"):
        read_safetensors(tmp_path / "w.safetensors")
    idx = bytes([0, 0, 0x08, 100]) + struct.pack(">100I", *([1] * 100)) + b"\0"
    with pytest.raises(DataError, match="shape .* NumPy cannot hold"):
        parse_idx(idx, "images.idx")


def test_a_cache_size_past_any_disk_is_a_config_error(monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE_MAX_SIZE", "9" * 400)
    with pytest.raises(braze.BrazeError, match="past any size"):
        diskcache.size_limit()


@pytest.mark.parametrize("bias", [False, True])
def test_a_gpt_config_counts_the_parameters_its_model_has(bias):
    from braze.models.gpt_config import GPTConfig, initial_state

    for config in (
        GPTConfig(bias=bias),
        GPTConfig(block_size=8, vocab_size=11, n_layer=3, n_head=2, n_embd=6, bias=bias),
    ):
        assert config.parameter_count() == sum(a.size for a in initial_state(config).values())


def test_gpt_settings_of_a_model_bigger_than_its_weights_are_refused_before_it_is_built(tmp_path, monkeypatch):
    from braze.bench.gpt import load_checkpoint, save_checkpoint
    from braze.data import CharTokenizer
    from braze.models.gpt import GPT
    from braze.models.gpt_config import GPTConfig

    small = GPTConfig(block_size=8, vocab_size=3, n_layer=1, n_head=2, n_embd=8)
    save_checkpoint(tmp_path, GPT(small), CharTokenizer(list("abc")))
    assert load_checkpoint(tmp_path)[0].config == small
    record = json.loads((tmp_path / "config.json").read_text())
    record["model"]["n_embd"] = 8192
    (tmp_path / "config.json").write_text(json.dumps(record))
    monkeypatch.setattr(GPT, "__init__", lambda *a, **k: pytest.fail("the model was built"))
    with pytest.raises(CheckpointError, match="declare a model of 805,421,056 parameters, more than"):
        load_checkpoint(tmp_path)
