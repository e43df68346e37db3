"""read_idx against IDX files built byte by byte with struct (see conftest)."""

import gzip
import struct
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from braze.data import DataError, read_idx
from braze.data.idx import parse_idx


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_reads_uint8_images_raw_and_gzipped(tmp_path, idx_bytes, write_file, suffix):
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    path = write_file(tmp_path / f"images{suffix}", idx_bytes(images))
    out = read_idx(path)
    assert out.dtype == np.uint8 and out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out, images)
    out[0, 0, 0] = 7  # the result is an ordinary writable array


def test_header_decoded_by_hand(tmp_path):
    # 0x0C = int32, 1 dimension of 3, big-endian values written explicitly.
    raw = struct.pack(">BBBBI", 0, 0, 0x0C, 1, 3) + struct.pack(">3i", 1, -2, 70000)
    (tmp_path / "ints").write_bytes(raw)
    out = read_idx(tmp_path / "ints")
    assert out.dtype == np.int32 and out.dtype.isnative
    assert out.tolist() == [1, -2, 70000]


def test_float32(tmp_path, idx_bytes, write_file):
    values = np.array([[0.5, -1.25]], dtype=np.float32)
    path = write_file(tmp_path / "f.gz", idx_bytes(values))
    np.testing.assert_array_equal(read_idx(path), values)


def test_wrong_magic(tmp_path):
    (tmp_path / "bad").write_bytes(struct.pack(">BBBBI", 8, 3, 0x08, 1, 1) + b"\x00")
    with pytest.raises(DataError, match=r"bad.*magic number 0x08030801"):
        read_idx(tmp_path / "bad")


def test_wrong_dtype_code(tmp_path):
    (tmp_path / "bad").write_bytes(struct.pack(">BBBBI", 0, 0, 0x07, 1, 1) + b"\x00")
    with pytest.raises(DataError, match=r"bad.*dtype code 0x07"):
        read_idx(tmp_path / "bad")


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_truncated_data(tmp_path, idx_bytes, write_file, suffix):
    data = idx_bytes(np.zeros((2, 28, 28), dtype=np.uint8))
    path = write_file(tmp_path / f"short{suffix}", data[:-1])
    with pytest.raises(DataError, match=r"short.*truncated.*\(2, 28, 28\)"):
        read_idx(path)


def test_truncated_header(tmp_path):
    (tmp_path / "h").write_bytes(struct.pack(">BBBBI", 0, 0, 0x08, 3, 2))
    with pytest.raises(DataError, match="truncated IDX header"):
        read_idx(tmp_path / "h")


def test_trailing_bytes(tmp_path, idx_bytes):
    (tmp_path / "long").write_bytes(idx_bytes(np.zeros(4, dtype=np.uint8)) + b"\x01")
    with pytest.raises(DataError, match="1 unexpected trailing bytes"):
        read_idx(tmp_path / "long")


def test_corrupt_gzip(tmp_path, idx_bytes):
    good = gzip.compress(idx_bytes(np.zeros(1000, dtype=np.uint8)))
    (tmp_path / "cut.gz").write_bytes(good[: len(good) // 2])
    with pytest.raises(DataError, match=r"cut\.gz.*gzip"):
        read_idx(tmp_path / "cut.gz")


def test_a_gzip_bomb_is_inflated_no_further_than_its_header_promises(tmp_path, idx_bytes):
    """Ten images of zeros, then 256 MiB more zeros: a 260 KB file."""
    bomb = tmp_path / "bomb.gz"
    with gzip.open(bomb, "wb") as out:
        out.write(idx_bytes(np.zeros((10, 28, 28), dtype=np.uint8)))
        for _ in range(256):
            out.write(bytes(1 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match="unexpected trailing bytes after IDX data of shape"):
            read_idx(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # not the 256 MiB the stream holds


def test_a_header_promising_more_than_gzip_can_hold_is_refused_before_inflating(tmp_path):
    header = struct.pack(">BBBBIII", 0, 0, 0x08, 3, 60000, 2000, 2000)  # 240 GB of images
    (tmp_path / "promise.gz").write_bytes(gzip.compress(header + bytes(1000)))
    with pytest.raises(DataError, match=r"promises 240,000,000,016 bytes, more than .* can hold"):
        read_idx(tmp_path / "promise.gz")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    array=hnp.arrays(
        dtype=st.sampled_from([np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64]),
        shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5),
    )
)
def test_roundtrip_any_supported_array(idx_bytes, array):
    out = parse_idx(idx_bytes(array))
    assert out.dtype == array.dtype and out.shape == array.shape
    np.testing.assert_array_equal(out, array)
