"""Keras's image preprocessing and augmentation layers against independent references: a
quarter turn is NumPy's rot90, a whole-pixel shift is NumPy's pad in the matching mode
(symmetric, wrap, edge, constant), a zoom is SciPy's map_coordinates at the points Keras's
definition names, resizing up is PIL's bilinear resize; crops are windows of their images;
flips, contrast and brightness per image; inference passes inputs through; a compiled step
draws anew every call and agrees with the eager draws."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

import braze
from braze import keras

RNG = np.random.default_rng(9)
IMAGES = RNG.standard_normal((4, 8, 4, 2)).astype(np.float32)
DEVICES = [braze.CPU, braze.LAZY_CPU]


def tf_resize_ref(images, height, width):
    """TensorFlow's bilinear resize with half-pixel centres, as its kernel computes it: each
    output centre's source point, its lower and upper neighbours clamped into the image."""
    out = images.astype(np.float64)
    for axis, size in ((1, height), (2, width)):
        length = out.shape[axis]
        point = (np.arange(size) + 0.5) * length / size - 0.5
        lower = np.maximum(np.floor(point), 0).astype(int)
        upper = np.minimum(np.ceil(point), length - 1).astype(int)
        weight = (point - np.floor(point)).reshape([-1 if a == axis else 1 for a in range(4)])
        out = np.take(out, lower, axis=axis) * (1 - weight) + np.take(out, upper, axis=axis) * weight
    return out


@pytest.mark.parametrize("device", DEVICES, ids=["eager", "lazy"])
@pytest.mark.parametrize("fill_mode", ["reflect", "wrap", "nearest", "constant"])
def test_a_quarter_turn_is_rot90(device, fill_mode):
    square = RNG.standard_normal((3, 6, 6, 2)).astype(np.float32)
    layer = keras.layers.RandomRotation((0.25, 0.25), fill_mode=fill_mode)
    got = layer(braze.tensor(square, device=device), training=True).numpy()
    # cos(pi / 2) rounds to -4e-8 in float32: the points miss whole pixels by that much
    np.testing.assert_allclose(got, np.rot90(square, axes=(1, 2)), atol=1e-5)


@pytest.mark.parametrize("device", DEVICES, ids=["eager", "lazy"])
@pytest.mark.parametrize(("fill_mode", "numpy_mode"), [("reflect", "symmetric"), ("wrap", "wrap"), ("nearest", "edge")])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_a_whole_pixel_shift_is_numpys_pad(device, fill_mode, numpy_mode, interpolation):
    layer = keras.layers.RandomTranslation((0.25, 0.25), (-0.25, -0.25), fill_mode, interpolation=interpolation)
    got = layer(braze.tensor(IMAGES, device=device), training=True).numpy()  # 2 rows down, 1 column left
    np.testing.assert_array_equal(got, np.pad(IMAGES, ((0, 0), (2, 0), (0, 1), (0, 0)), numpy_mode)[:, :8, 1:])


def test_constant_fill_uses_the_fill_value():
    layer = keras.layers.RandomTranslation(0.0, (0.5, 0.5), fill_mode="constant", fill_value=-7.0)
    got = layer(braze.tensor(IMAGES), training=True).numpy()
    np.testing.assert_array_equal(got, np.pad(IMAGES, ((0, 0), (0, 0), (2, 0), (0, 0)), constant_values=-7.0)[:, :, :4])


@pytest.mark.parametrize("device", DEVICES, ids=["eager", "lazy"])
def test_a_zoom_reads_bilinearly_at_keras_points(device):
    layer = keras.layers.RandomZoom((-0.4, -0.4), (0.3, 0.3))  # 40% in vertically, 30% out horizontally
    got = layer(braze.tensor(IMAGES, device=device), training=True).numpy()
    rows, cols = np.meshgrid(np.arange(8.0), np.arange(4.0), indexing="ij")
    points = [(rows - 3.5) * 0.6 + 3.5, (cols - 1.5) * 1.3 + 1.5]
    want = np.stack(
        [
            np.stack([ndimage.map_coordinates(image[..., c], points, order=1, mode="reflect") for c in range(2)], -1)
            for image in IMAGES.astype(np.float64)
        ]
    )
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_flips_are_drawn_per_image():
    images = RNG.standard_normal((64, 3, 5, 1)).astype(np.float32)
    got = keras.layers.RandomFlip(seed=3)(braze.tensor(images), training=True).numpy()
    turned = [np.array_equal(o, i[::-1, ::-1]) for i, o in zip(images, got, strict=True)]
    kept = [np.array_equal(o, i) for i, o in zip(images, got, strict=True)]
    assert all(t != k for t, k in zip(turned, kept, strict=True)) and any(turned) and any(kept)  # Keras 3: one draw
    horizontal = keras.layers.RandomFlip("horizontal", seed=3)(braze.tensor(images), training=True).numpy()
    mirrored = [np.array_equal(o, i[:, ::-1]) for i, o in zip(images, horizontal, strict=True)]
    assert all(m or np.array_equal(o, i) for m, i, o in zip(mirrored, images, horizontal, strict=True))
    assert any(mirrored) and not all(mirrored)


def test_contrast_scales_each_image_about_its_mean_and_clips():
    images = RNG.uniform(100.0, 150.0, (16, 4, 4, 3)).astype(np.float32)
    got = keras.layers.RandomContrast((0.5, 0.25))(braze.tensor(images), training=True).numpy()
    mean = images.astype(np.float64).mean(axis=(1, 2), keepdims=True)
    centred = images - mean
    scale = np.einsum("nhwc,nhwc->n", got - mean, centred) / (np.einsum("nhwc,nhwc->n", centred, centred))
    np.testing.assert_allclose(got, mean + scale[:, None, None, None] * centred, atol=1e-3)  # one factor per image
    assert scale.min() >= 0.5 and scale.max() <= 1.25
    clipped = keras.layers.RandomContrast(0.0, value_range=(0, 120))(braze.tensor(images), training=True).numpy()
    np.testing.assert_allclose(clipped, np.minimum(images, 120.0), rtol=1e-6)


@pytest.mark.parametrize(
    "layer",
    [
        keras.layers.RandomFlip(),
        keras.layers.RandomRotation(0.2),
        keras.layers.RandomZoom(0.2),
        keras.layers.RandomTranslation(0.1, 0.1),
        keras.layers.RandomContrast(0.2),
        keras.layers.RandomBrightness(0.2),
    ],
    ids=lambda layer: type(layer).__name__,
)
def test_inference_passes_inputs_through_and_one_image_works(layer):
    x = braze.tensor(IMAGES)
    assert layer(x, training=False) is x
    assert layer(x[0], training=True).shape == IMAGES.shape[1:]
    pixels = braze.tensor(np.arange(2 * 8 * 4 * 2).reshape(2, 8, 4, 2) % 256)
    assert layer(pixels, training=False).dtype == layer(pixels, training=True).dtype == braze.float32


def test_bfloat16_images_are_read_at_float32_points():
    """Points past 256 are not whole numbers in bfloat16: the sampler computes them in float32."""
    images = RNG.standard_normal((2, 40, 40, 1)).astype(np.float32)
    shifted = keras.layers.RandomTranslation((0.1, 0.1), (0.1, 0.1))  # 4 pixels down and right
    got = shifted(braze.tensor(images).astype("bfloat16"), training=True)
    assert got.dtype == braze.bfloat16
    want = np.pad(images, ((0, 0), (4, 0), (4, 0), (0, 0)), "symmetric")[:, :40, :40]
    rounded = braze.tensor(want).astype("bfloat16").astype("float32").numpy()
    np.testing.assert_array_equal(got.astype("float32").numpy(), rounded)
    resized = keras.layers.Resizing(20, 20)(braze.tensor(images).astype("bfloat16"))
    np.testing.assert_allclose(resized.astype("float32").numpy(), tf_resize_ref(images, 20, 20), atol=0.05)


def test_a_compiled_step_draws_anew_every_call_and_as_eager_draws():
    def augment(layer, x):
        return layer(x, training=True)

    images = RNG.standard_normal((16, 6, 6, 1)).astype(np.float32)
    eager_layer, jit_layer = keras.layers.RandomRotation(0.2, seed=4), keras.layers.RandomRotation(0.2, seed=4)
    step = braze.jit(augment)
    for _ in range(2):
        compiled = step(jit_layer, braze.tensor(images)).numpy()
        # The same draws; compiled sin and cos are a few ulp from NumPy's, which moves a point
        # by ~1e-6 pixels and a bilinear read by that times a neighbour difference (< 10 here).
        np.testing.assert_allclose(compiled, augment(eager_layer, braze.tensor(images)).numpy(), rtol=1e-4, atol=1e-4)
    assert not np.allclose(compiled, step(jit_layer, braze.tensor(images)).numpy())


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="RandomFlip: mode must be one of"):
        keras.layers.RandomFlip("diagonal")
    with pytest.raises(NotImplementedError, match="fill_mode='mirror'"):
        keras.layers.RandomRotation(0.1, fill_mode="mirror")
    with pytest.raises(NotImplementedError, match="interpolation='bicubic'"):
        keras.layers.RandomZoom(0.1, interpolation="bicubic")
    with pytest.raises(ValueError, match="height_factor must be a number f >= 0 or a pair lower <= upper, within"):
        keras.layers.RandomZoom((-1.5, 0.0))
    with pytest.raises(ValueError, match="RandomRotation: factor must be a number f >= 0"):
        keras.layers.RandomRotation(-0.1)
    with pytest.raises(ValueError, match="width_factor must be .* within \\[-1.0, 1.0\\]"):
        keras.layers.RandomTranslation(0.1, 1.5)
    with pytest.raises(ValueError, match="RandomContrast: factor must be in"):
        keras.layers.RandomContrast(1.5)


def test_resizing_up_is_pils_bilinear_and_nearest_reads_the_pixel_under_each_centre():
    image = RNG.standard_normal((5, 4)).astype(np.float32)
    got = keras.layers.Resizing(11, 7)(braze.tensor(image[None, :, :, None])).numpy()[0, :, :, 0]
    want = np.asarray(Image.fromarray(image).resize((7, 11), Image.BILINEAR))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    nearest = keras.layers.Resizing(3, 6, interpolation="nearest")(braze.tensor(IMAGES)).numpy()
    rows, cols = ((np.arange(3) + 0.5) * 8 / 3).astype(int), ((np.arange(6) + 0.5) * 4 / 6).astype(int)
    np.testing.assert_array_equal(nearest, IMAGES[:, rows][:, :, cols])


def test_crops_take_the_centre_or_a_window_of_the_target_aspect_ratio():
    np.testing.assert_array_equal(keras.layers.CenterCrop(4, 2)(braze.tensor(IMAGES)).numpy(), IMAGES[:, 2:6, 1:3])
    square = keras.layers.Resizing(3, 3, crop_to_aspect_ratio=True)(braze.tensor(IMAGES)).numpy()
    np.testing.assert_allclose(square, tf_resize_ref(IMAGES[:, 2:6], 3, 3), rtol=1e-5, atol=1e-6)
    grown = keras.layers.CenterCrop(10, 10)(braze.tensor(IMAGES)).numpy()  # smaller images are resized
    np.testing.assert_allclose(grown, tf_resize_ref(IMAGES[:, 2:6], 10, 10), rtol=1e-5, atol=1e-6)


def test_resizing_down_follows_tensorflows_formula():
    images = RNG.standard_normal((2, 7, 9, 3)).astype(np.float32)
    got = keras.layers.Resizing(3, 4)(braze.tensor(images)).numpy()
    np.testing.assert_allclose(got, tf_resize_ref(images, 3, 4), rtol=1e-5, atol=1e-6)


def test_random_crops_take_one_window_per_batch_and_the_centre_in_inference():
    images = RNG.standard_normal((16, 8, 7, 1)).astype(np.float32)
    layer = keras.layers.RandomCrop(5, 3, seed=2)
    places = set()
    for _ in range(6):
        got = layer(braze.tensor(images), training=True).numpy()
        found = [(t, c) for t in range(4) for c in range(5) if np.array_equal(images[:, t : t + 5, c : c + 3], got)]
        assert len(found) == 1, "the batch is not one window of its images"
        places.add(found[0])
    assert len(places) > 1
    inference = layer(braze.tensor(images), training=False).numpy()
    # The largest centred window of aspect 5:3 is 8 x 4 (columns 1..4), resized to 5 x 3.
    np.testing.assert_allclose(inference, tf_resize_ref(images[:, :, 1:5], 5, 3), rtol=1e-5, atol=1e-6)


def test_brightness_shifts_each_image_by_one_amount_and_clips():
    images = RNG.uniform(50.0, 200.0, (16, 4, 4, 3)).astype(np.float32)
    got = keras.layers.RandomBrightness((-0.1, 0.1))(braze.tensor(images), training=True).numpy()
    shift = (got - images).reshape(16, -1)
    np.testing.assert_allclose(shift, np.repeat(shift[:, :1], 48, axis=1), atol=1e-4)
    assert np.abs(shift).max() <= 25.5 + 1e-4 and np.ptp(shift[:, 0]) > 0
    clipped = keras.layers.RandomBrightness((1.0, 1.0))(braze.tensor(images), training=True).numpy()
    np.testing.assert_array_equal(clipped, np.full_like(images, 255.0))


def test_augmentation_trains_unless_a_caller_says_otherwise_as_in_keras():
    """Keras's rule: training passed, else the enclosing call's stated value, else the
    call's own default, which is True for augmentation layers and False for Dropout."""
    images = RNG.standard_normal((16, 6, 6, 1)).astype(np.float32)
    inputs = keras.Input((6, 6, 1))
    outputs = keras.layers.Dropout(0.5)(keras.layers.RandomFlip("horizontal", seed=1)(inputs))
    model = keras.Model(inputs, outputs)  # a functional model called directly runs in inference mode
    flipped = model(braze.tensor(images)).numpy()
    assert not np.array_equal(flipped, images)  # yet the flip, whose call defaults to training, flips
    assert np.count_nonzero(flipped == 0) == 0  # and Dropout, whose call does not, keeps everything
    np.testing.assert_array_equal(model(braze.tensor(images), training=False).numpy(), images)
    model = keras.Sequential([keras.Input((6, 6, 1)), keras.layers.RandomFlip(seed=1), keras.layers.Flatten()])
    np.testing.assert_array_equal(model.predict(images, verbose=0), images.reshape(16, -1))


def test_keras_positional_arguments():
    assert keras.layers.RandomContrast(0.2, (0, 1)).value_range == (0.0, 1.0)
    rotation = keras.layers.RandomRotation(0.1, "constant", "nearest", 3, -1.0)
    assert (rotation.fill_mode, rotation.interpolation, rotation.fill_value) == ("constant", "nearest", -1.0)
    zoom = keras.layers.RandomZoom(0.1, None, "wrap", "nearest", 3, 2.0)
    translation = keras.layers.RandomTranslation(0.1, 0.2, "nearest", "bilinear", 3, 5.0)
    assert (zoom.fill_mode, zoom.fill_value, translation.fill_mode, translation.fill_value) == (
        "wrap",
        2.0,
        "nearest",
        5.0,
    )
