"""load_mnist: search order, checksums, download fallback and the real data set."""

import gzip
import hashlib
import shutil
import urllib.error

import numpy as np
import pytest

from braze.data import MNIST, DataError, load_mnist
from braze.data import mnist as mnist_module

REAL_DIR = mnist_module.REPO_DIR  # captured before any test moves it
NAMES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]


def test_loads_small_files_without_verification(hermetic, small_mnist):
    small_mnist(hermetic / "d", n_train=6, n_test=4)
    data = load_mnist(hermetic / "d", verify=False)
    assert isinstance(data, MNIST)
    assert data.train_images.shape == (6, 28, 28) and data.train_images.dtype == np.uint8
    assert data.test_images.shape == (4, 28, 28) and data.test_images.dtype == np.uint8
    assert data.train_labels.dtype == np.int32 and data.test_labels.dtype == np.int32
    assert data.train_labels.tolist() == [0, 1, 2, 3, 4, 5]


def test_checksum_mismatch_names_file_and_digests(hermetic, small_mnist):
    small_mnist(hermetic / "d")
    with gzip.open(hermetic / "d" / "train-images-idx3-ubyte.gz") as f:
        actual = hashlib.md5(f.read()).hexdigest()
    with pytest.raises(DataError) as info:
        load_mnist(hermetic / "d")
    message = str(info.value)
    assert "train-images-idx3-ubyte.gz" in message
    assert "6bbc9ace898e44ae57da46a324031adb" in message and actual in message


def test_label_count_must_match_image_count(hermetic, small_mnist):
    small_mnist(hermetic / "d", n_train=6, n_train_labels=5)
    with pytest.raises(DataError, match=r"train-labels.*label count 5.*image count 6"):
        load_mnist(hermetic / "d", verify=False)


def test_explicit_path_beats_braze_data(hermetic, small_mnist, monkeypatch):
    small_mnist(hermetic / "explicit", label_base=1)
    small_mnist(hermetic / "env", label_base=2)
    monkeypatch.setenv("BRAZE_DATA", str(hermetic / "env"))
    assert load_mnist(hermetic / "explicit", verify=False).train_labels[0] == 1
    assert load_mnist(verify=False).train_labels[0] == 2


def test_a_named_directory_is_the_only_source(hermetic, small_mnist, monkeypatch):
    small_mnist(hermetic / "env")
    monkeypatch.setenv("BRAZE_DATA", str(hermetic / "env"))
    missing = hermetic / "nothing-here"
    with pytest.raises(DataError, match=rf"^MNIST directory {missing} does not exist or is not a directory$"):
        load_mnist(missing, verify=False)
    partial = hermetic / "partial"
    partial.mkdir()
    (partial / "train-images-idx3-ubyte").write_bytes(b"")
    with pytest.raises(DataError, match=rf"^MNIST directory {partial} is missing train-labels-idx1-ubyte\[\.gz\], "):
        load_mnist(partial, verify=False)


def test_braze_data_mnist_subfolder_then_repo_then_cache(hermetic, small_mnist, monkeypatch):
    monkeypatch.setenv("BRAZE_DATA", str(hermetic / "env"))
    small_mnist(hermetic / "home" / ".cache" / "braze" / "mnist", label_base=5)
    assert load_mnist(verify=False).train_labels[0] == 5
    small_mnist(mnist_module.REPO_DIR, label_base=4)
    assert load_mnist(verify=False).train_labels[0] == 4
    small_mnist(hermetic / "env" / "mnist", label_base=3)
    assert load_mnist(verify=False).train_labels[0] == 3


def test_the_download_cache_is_in_braze_cache(hermetic, small_mnist, monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE", str(hermetic / "elsewhere"))
    small_mnist(hermetic / "home" / ".cache" / "braze" / "mnist", label_base=5)
    small_mnist(hermetic / "elsewhere" / "mnist", label_base=6)
    assert load_mnist(verify=False).train_labels[0] == 6


def test_offline_error_lists_every_place(hermetic, small_mnist, monkeypatch):
    def offline(url, dest):
        raise urllib.error.URLError("network is unreachable")

    monkeypatch.setattr(mnist_module, "_download", offline)
    monkeypatch.setenv("BRAZE_DATA", str(hermetic / "env"))
    partial = hermetic / "env"
    partial.mkdir()
    (partial / "train-images-idx3-ubyte").write_bytes(b"")
    with pytest.raises(DataError) as info:
        load_mnist()
    message = str(info.value)
    cache = hermetic / "home" / ".cache" / "braze" / "mnist"
    for place in (partial, hermetic / "env" / "mnist", mnist_module.REPO_DIR, cache):
        assert str(place) in message
    assert "network is unreachable" in message and "BRAZE_DATA=" in message
    assert "missing train-labels-idx1-ubyte" in message
    assert list(cache.iterdir()) == []  # no half-written downloads left behind


def test_download_falls_back_to_second_mirror_and_verifies(hermetic, monkeypatch, real_mnist):
    fetched = []

    def fake_download(url, dest):
        fetched.append(url)
        if url.startswith(mnist_module.MIRRORS[0]):
            dest.write_bytes(gzip.compress(b"not the real file"))  # fails the MD5 check
        else:
            shutil.copyfile(REAL_DIR / url.rsplit("/", 1)[1], dest)

    monkeypatch.setattr(mnist_module, "_download", fake_download)
    data = load_mnist()
    cache = hermetic / "home" / ".cache" / "braze" / "mnist"
    assert sorted(p.name for p in cache.iterdir()) == sorted(f"{n}.gz" for n in NAMES)
    assert len(fetched) == 8
    np.testing.assert_array_equal(data.test_labels, real_mnist.test_labels)


def test_real_mnist(real_mnist):
    assert real_mnist.train_images.shape == (60000, 28, 28)
    assert real_mnist.test_images.shape == (10000, 28, 28)
    assert real_mnist.train_images.dtype == np.uint8 and real_mnist.test_images.dtype == np.uint8
    assert real_mnist.train_labels.shape == (60000,) and real_mnist.test_labels.shape == (10000,)
    assert real_mnist.train_labels.dtype == np.int32
    assert real_mnist.train_labels.min() == 0 and real_mnist.train_labels.max() == 9
    assert set(np.unique(real_mnist.test_labels)) == set(range(10))
    assert real_mnist.train_labels[0] == 5
