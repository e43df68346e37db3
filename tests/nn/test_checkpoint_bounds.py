"""Checkpoint files made to hurt: safetensors files the safetensors library refuses, .npz
archives that inflate far beyond their size or declare more than they hold, and saves that
were killed or replace a private file."""

from __future__ import annotations

import io
import json
import os
import signal
import stat
import struct
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest
import safetensors.numpy
from safetensors import SafetensorError

from braze.models import LeNet
from braze.nn import CheckpointError, npz
from braze.nn.checkpoint import read_checkpoint, write_checkpoint


def safetensors_file(path, header: dict | None, data: bytes, raw: bytes | None = None):
    text = raw if raw is not None else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return path


def f32(count: int, begin: int) -> dict:
    return {"dtype": "F32", "shape": [count], "data_offsets": [begin, begin + 4 * count]}


DUPLICATE = (
    b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}'
)
HUGE_SHAPE = b'{"a":{"dtype":"F32","shape":[0,1000000000000000000000000000000],"data_offsets":[0,0]}}'
REFUSED = {
    "overlapping": ({"a": f32(2, 0), "b": f32(2, 4)}, bytes(12), None, "overlap"),
    "gapped": ({"a": f32(2, 0), "b": f32(2, 12)}, bytes(20), None, "bytes 8-12 belong to no tensor"),
    "trailing bytes": ({"a": f32(2, 0)}, bytes(12), None, "4 trailing bytes"),
    "duplicate names": (None, bytes(16), DUPLICATE, "the name 'a' appears twice"),
    "non-string metadata": ({"__metadata__": {"epoch": 3}, "a": f32(2, 0)}, bytes(8), None, "map strings to strings"),
    "shape past 64 bits": (None, b"", HUGE_SHAPE, "bad safetensors entry for a"),
    "a header past 100 MB": (None, b"", b"{" + b" " * 100_000_000, "more than the 100,000,000 safetensors allows"),
}


@pytest.mark.parametrize("case", list(REFUSED), ids=list(REFUSED))
def test_a_safetensors_file_the_library_refuses_is_a_checkpoint_error(tmp_path, case):
    header, data, raw, message = REFUSED[case]
    path = safetensors_file(tmp_path / "m.safetensors", header, data, raw)
    with pytest.raises(SafetensorError):  # the reference: the safetensors library itself
        safetensors.numpy.load_file(path)
    with pytest.raises(CheckpointError, match=message):
        read_checkpoint(path)


def test_tensors_in_any_order_that_cover_the_data_load(tmp_path):
    values = np.arange(5, dtype=np.float32)
    path = safetensors_file(
        tmp_path / "m.safetensors",
        {"__metadata__": {"format": "np"}, "late": f32(3, 8), "early": f32(2, 0)},
        values.tobytes(),
    )
    expected = safetensors.numpy.load_file(path)
    got = read_checkpoint(path)
    assert sorted(got) == sorted(expected) == ["early", "late"]
    for name in got:
        np.testing.assert_array_equal(got[name], expected[name])


def npz_bytes(arrays: dict[str, np.ndarray], compression=zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, array)
    return out.getvalue()


def test_compressed_archives_of_numpy_load_as_numpy_loads_them(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "m.npz"
    np.savez_compressed(
        path,
        w=rng.standard_normal((30, 20)).astype(np.float32),
        b=np.zeros(20),
        f=np.asfortranarray(rng.standard_normal((3, 4))),
    )
    got, expected = read_checkpoint(path), dict(np.load(path))
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name])
        assert got[name].flags.writeable and got[name].flags.f_contiguous == expected[name].flags.f_contiguous


def test_an_archive_that_inflates_far_beyond_its_size_is_refused_before_inflating(tmp_path, monkeypatch):
    """The 1 MB archive that inflates to 1 GiB, scaled down: a SLACK of 0 stands in for
    the allowance that lets small archives of zeros through."""
    monkeypatch.setattr(npz, "SLACK", 0)
    path = tmp_path / "bomb.npz"
    path.write_bytes(npz_bytes({"w": np.zeros(4 << 20, np.float32)}))  # 16 MiB of zeros in about 16 KB
    with pytest.raises(CheckpointError, match=r"declare 16,777,344 bytes, .* times the .* \(a decompression bomb\?\)"):
        read_checkpoint(path)


def test_a_member_whose_header_claims_1000_gib_is_refused_without_allocating(tmp_path):
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": (1000, 1000, 1000, 250)}
    )
    path = tmp_path / "claim.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("w.npy", header.getvalue() + bytes(16))
    with pytest.raises(CheckpointError, match=r"shape \[1000, 1000, 1000, 250\] of float32, 1,000,000,000,000 bytes"):
        read_checkpoint(path)


def test_a_member_that_declares_more_than_it_stores_is_refused(tmp_path):
    path = tmp_path / "m.npz"
    path.write_bytes(npz_bytes({"w": np.ones(4, np.float32)}, zipfile.ZIP_STORED))
    content = bytearray(path.read_bytes())
    central = content.rindex(b"PK\x01\x02")
    (stored,) = struct.unpack_from("<I", content, central + 24)
    struct.pack_into("<I", content, central + 24, stored + 1000)  # the uncompressed size, beyond what it holds
    path.write_bytes(bytes(content))
    with pytest.raises(CheckpointError, match=r"truncated or corrupt checkpoint \(w declares 1,144 bytes\)"):
        read_checkpoint(path)


def test_a_fifo_named_like_a_checkpoint_is_an_error_not_a_hang(tmp_path):
    os.mkfifo(tmp_path / "m.npz")
    with pytest.raises(CheckpointError, match="m.npz: not a regular file"):
        read_checkpoint(tmp_path / "m.npz")


def test_a_re_save_keeps_the_files_mode(tmp_path):
    for suffix in (".npz", ".safetensors"):
        path = tmp_path / f"m{suffix}"
        LeNet(seed=0).save(path)
        os.chmod(path, 0o600)
        LeNet(seed=1).save(path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


_HANGING_SAVE = """
import sys, time
from braze.nn import checkpoint
def hang(handle, state):
    handle.write(b"x" * 100_000)
    handle.flush()
    print("writing", flush=True)
    time.sleep(600)
checkpoint.write_npz = hang
checkpoint.write_checkpoint(sys.argv[1], {"w": __import__("numpy").ones(3)})
"""


def test_the_next_save_removes_what_a_killed_save_left(tmp_path):
    path = tmp_path / "m.npz"
    write_checkpoint(path, {"w": np.zeros(3)})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    saving = subprocess.Popen([sys.executable, "-c", _HANGING_SAVE, str(path)], stdout=subprocess.PIPE, env=env)
    assert saving.stdout.readline() == b"writing\n"
    saving.send_signal(signal.SIGKILL)
    saving.wait()
    (left,) = [p for p in tmp_path.iterdir() if p.name != path.name]
    assert left.name.startswith(".m.npz.") and left.stat().st_size == 100_000
    np.testing.assert_array_equal(read_checkpoint(path)["w"], np.zeros(3))  # the old one intact
    live = tmp_path / f".m.npz.{os.uname().nodename}.{os.getpid()}.feedbeef.tmp"  # a save still running
    live.write_bytes(b"partial")
    time.sleep(0.01)
    write_checkpoint(path, {"w": np.ones(3)})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, live.name])
    np.testing.assert_array_equal(read_checkpoint(path)["w"], np.ones(3))


def test_a_whole_models_file_is_bounded_by_its_own_size_not_by_its_inflated_weights(tmp_path, monkeypatch):
    """A .keras file whose weights member is a padded archive of a bomb: the arrays it
    declares are measured against the file on disk, for load_weights and load_model alike."""
    from braze import keras

    monkeypatch.setattr(npz, "SLACK", 0)
    # 16 MiB of zeros deflated, behind 1 MB of padding: the inner archive is over 1 MB to measure by.
    padded = bytes(1 << 20) + npz_bytes({"w": np.zeros(4 << 20, np.float32)})
    path = tmp_path / "nested.keras"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("config.json", '{"format": "braze"}')
        archive.writestr("model.weights.npz", padded)
    with pytest.raises(CheckpointError, match="decompression bomb"):
        keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]).load_weights(path)
    with pytest.raises(CheckpointError, match="decompression bomb"):
        keras.models.load_model(path)


def test_an_npz_whose_member_names_an_unknown_compression_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "model.npz"
    write_checkpoint(path, {"w": np.arange(4, dtype=np.float32)})
    data = bytearray(path.read_bytes())
    method = data.index(b"PK\x01\x02") + 10  # the compression method of the member's directory entry
    data[method : method + 2] = (99).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        read_checkpoint(path)


@pytest.mark.parametrize("name", ["x\x00y", "a" * 70_000], ids=["a NUL", "too long"])
def test_an_npz_refuses_names_it_could_not_read_back_and_keeps_the_file(tmp_path, name):
    path = tmp_path / "model.npz"
    write_checkpoint(path, {"good": np.ones(2, np.float32)})
    with pytest.raises(CheckpointError, match="cannot hold this name"):
        write_checkpoint(path, {name: np.ones(2, np.float32)})
    assert list(read_checkpoint(path)) == ["good"]
    assert sorted(os.listdir(tmp_path)) == ["model.npz"]
