"""Keras's image_dataset_from_directory against the images it was given: PNG files of known
pixels come back as written (or as PIL's bilinear resize when enlarged), labelled by their
sub-folder in sorted order, shuffled reproducibly, split without overlap, and a model fits
from the batches through a tf.data map of augmentation layers."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import braze as tf
from braze import keras
from braze.data.errors import DataError

RNG = np.random.default_rng(21)


@pytest.fixture
def folder(tmp_path):
    """Three classes of 6x5 RGB PNGs, the class's index in every pixel's first value."""
    pixels = {}
    for k, name in enumerate(["b_dog", "a_cat", "c_fox"]):
        (tmp_path / name).mkdir()
        for i in range(4 + k):
            image = RNG.integers(0, 256, (6, 5, 3), dtype=np.uint8)
            image[..., 0] = ["b_dog", "a_cat", "c_fox"].index(name) * 100
            Image.fromarray(image).save(tmp_path / name / f"{i}.png")
            pixels[f"{name}/{i}.png"] = image
    (tmp_path / "a_cat" / "notes.txt").write_text("not an image")
    return tmp_path, pixels


def _batches(dataset):
    return [tuple(np.asarray(part) for part in batch) for batch in dataset]


def test_images_come_back_as_written_labelled_by_sorted_sub_folder(folder):
    root, pixels = folder
    dataset = keras.utils.image_dataset_from_directory(root, image_size=(6, 5), batch_size=4, seed=3)
    assert dataset.class_names == ["a_cat", "b_dog", "c_fox"]
    batches = _batches(dataset)
    images = np.concatenate([b[0] for b in batches])
    labels = np.concatenate([b[1] for b in batches])
    assert images.shape == (15, 6, 5, 3) and images.dtype == np.float32 and labels.dtype == np.int32
    written = {tuple(p.ravel()) for p in pixels.values()}
    assert {tuple(i.astype(np.uint8).ravel()) for i in images} == written
    names = {"a_cat": 0, "b_dog": 1, "c_fox": 2}
    first_values = {"a_cat": 100, "b_dog": 0, "c_fox": 200}
    for image, label in zip(images, labels, strict=True):
        assert image[0, 0, 0] == first_values[dataset.class_names[label]]
    assert sorted(labels.tolist()) == sorted([names[k.split("/")[0]] for k in pixels])


def test_enlarged_images_are_pils_bilinear_resize_and_label_modes(folder):
    root, pixels = folder
    dataset = keras.utils.image_dataset_from_directory(
        root, label_mode="categorical", image_size=(12, 9), shuffle=False, batch_size=None
    )
    (image, label), *_ = [(np.asarray(x), np.asarray(y)) for x, y in dataset]
    source = pixels["a_cat/0.png"].astype(np.float32)
    want = np.stack([np.asarray(Image.fromarray(source[..., c]).resize((9, 12), Image.BILINEAR)) for c in range(3)], -1)
    np.testing.assert_allclose(image, want, rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(label, [1.0, 0.0, 0.0])
    gray = tf.keras.preprocessing.image_dataset_from_directory(
        root, color_mode="grayscale", label_mode=None, shuffle=False
    )
    (only_images,) = [np.asarray(b) for b in gray]
    assert only_images.shape == (15, 256, 256, 1)


def test_a_split_is_reproducible_and_disjoint(folder):
    root, _ = folder
    options = {"validation_split": 0.2, "seed": 7, "image_size": (6, 5)}
    train, val = keras.utils.image_dataset_from_directory(root, subset="both", **options)
    again = keras.utils.image_dataset_from_directory(root, subset="validation", **options)
    assert len(val.file_paths) == 3 and len(train.file_paths) == 12
    assert not set(train.file_paths) & set(val.file_paths) and val.file_paths == again.file_paths
    assert len(set(train.file_paths) | set(val.file_paths)) == 15


def test_bad_arguments_and_folders_are_named(folder, tmp_path):
    root, _ = folder
    with pytest.raises(ValueError, match="needs a seed"):
        keras.utils.image_dataset_from_directory(root, validation_split=0.2, subset="training")
    with pytest.raises(ValueError, match="give validation_split with subset"):
        keras.utils.image_dataset_from_directory(root, subset="training", seed=1)
    with pytest.raises(ValueError, match="label_mode 'binary' needs 2 classes, found 3"):
        keras.utils.image_dataset_from_directory(root, label_mode="binary")
    with pytest.raises(DataError, match="is not a directory"):
        keras.utils.image_dataset_from_directory(tmp_path / "missing")


def test_a_model_fits_from_the_batches_through_an_augmenting_map(folder):
    root, _ = folder
    keras.utils.set_random_seed(2)
    train = keras.utils.image_dataset_from_directory(root, image_size=(8, 8), batch_size=5, seed=1)
    augmentation = keras.Sequential([keras.layers.RandomFlip("horizontal"), keras.layers.RandomRotation(0.1)])
    train = train.map(lambda x, y: (augmentation(x), y), num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 3)),
            keras.layers.Rescaling(1.0 / 255),
            keras.layers.SeparableConv2D(4, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(3),
        ]
    )
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
    history = model.fit(train, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all() and len(history.history["loss"]) == 2
