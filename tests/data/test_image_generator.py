"""Keras's ImageDataGenerator and load_img spellings of braze's ImageFolder and Augment."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from braze.data import (
    Augment,
    DataError,
    ImageDataGenerator,
    ImageFolder,
    img_to_array,
    load_img,
    make_two_class_folder,
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    train, _ = make_two_class_folder(tmp_path_factory.mktemp("two-class"), n_train=6, n_val=2, size=(20, 30))
    return train


def test_flow_from_directory_reads_the_folder_as_keras_does(folder, capsys):
    flow = ImageDataGenerator(rescale=1.0 / 255).flow_from_directory(
        folder, target_size=(12, 16), batch_size=4, class_mode="binary", shuffle=False
    )
    assert capsys.readouterr().out == "Found 6 images belonging to 2 classes.\n"
    assert flow.class_indices == {"blobs": 0, "stripes": 1} and len(flow) == 2
    images, labels = zip(*flow, strict=True)
    files = sorted((folder / "blobs").glob("*.png")) + sorted((folder / "stripes").glob("*.png"))
    expected = [
        np.asarray(Image.open(f).convert("RGB").resize((16, 12), Image.Resampling.NEAREST), np.float32) / 255
        for f in files
    ]
    np.testing.assert_allclose(np.concatenate(images), np.stack(expected), rtol=1e-6)
    np.testing.assert_array_equal(np.concatenate(labels), [0, 0, 0, 1, 1, 1])


def test_augmenting_flow_is_an_image_folder_with_augment(folder, capsys):
    settings = {"shear_range": 0.2, "zoom_range": 0.2, "horizontal_flip": True}
    flow = ImageDataGenerator(rescale=1.0 / 255, **settings).flow_from_directory(
        folder, target_size=(12, 16), batch_size=4, class_mode="binary", seed=3
    )
    same = ImageFolder(
        folder,
        (12, 16),
        "binary",
        4,
        seed=3,
        augment=Augment(**settings, seed=3),
        rescale=1.0 / 255,
        interpolation="nearest",
    )
    for (x, y), (x_same, y_same) in zip(flow, same, strict=True):
        np.testing.assert_array_equal(x, x_same)
        np.testing.assert_array_equal(y, y_same)


def test_keras_defaults_are_categorical_labels(folder, capsys):
    _, labels = next(iter(ImageDataGenerator().flow_from_directory(folder, target_size=(8, 8), shuffle=False)))
    np.testing.assert_array_equal(labels, np.eye(2)[[0, 0, 0, 1, 1, 1]])


def test_load_img_and_img_to_array(folder, tmp_path):
    path = sorted((folder / "blobs").glob("*.png"))[0]
    image = load_img(path, target_size=(10, 7))
    assert image.size == (7, 10) and image.mode == "RGB"
    array = img_to_array(load_img(path, color_mode="grayscale"))
    assert array.shape == (20, 30, 1) and array.dtype == np.float32
    np.testing.assert_array_equal(array[..., 0], np.asarray(Image.open(path).convert("L"), np.float32))
    (tmp_path / "bad.png").write_bytes(b"not an image")
    with pytest.raises(DataError, match="bad.png: image does not decode"):
        load_img(tmp_path / "bad.png")
    with pytest.raises(DataError, match="interpolation must be one of"):
        load_img(path, interpolation="cubic")


def test_unseeded_flows_follow_numpys_global_seed_as_in_keras(folder, capsys):
    generator = ImageDataGenerator(shear_range=10, zoom_range=0.3, horizontal_flip=True)
    runs = []
    for _ in range(2):
        np.random.seed(5)
        flow = generator.flow_from_directory(folder, target_size=(12, 16), batch_size=6)
        runs.append(next(iter(flow)))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
