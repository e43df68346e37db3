"""``tf.image`` under ``import braze as tf``: resizing against PIL's bilinear resize and
NumPy's nearest pixels, flips and quarter turns against NumPy, standardization, contrast
and brightness against their formulas, random flips per image, in a tf.data pipeline."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import braze as tf
from braze import keras

RNG = np.random.default_rng(13)
IMAGES = RNG.standard_normal((3, 5, 4, 2)).astype(np.float32)


def test_resize_up_is_pils_bilinear_and_nearest_reads_the_pixel_under_each_centre():
    got = tf.image.resize(IMAGES, (11, 7)).numpy()
    for n in range(3):
        for c in range(2):
            want = np.asarray(Image.fromarray(IMAGES[n, :, :, c]).resize((7, 11), Image.BILINEAR))
            np.testing.assert_allclose(got[n, :, :, c], want, rtol=1e-5, atol=1e-5)
    nearest = tf.image.resize(IMAGES[0], (2, 6), method="nearest").numpy()
    rows, cols = ((np.arange(2) + 0.5) * 5 / 2).astype(int), ((np.arange(6) + 0.5) * 4 / 6).astype(int)
    np.testing.assert_array_equal(nearest, IMAGES[0][rows][:, cols])
    with pytest.raises(NotImplementedError, match="method='bicubic'"):
        tf.image.resize(IMAGES, (2, 2), method="bicubic")


def test_upsampling_bilinearly_is_pils_enlargement():
    got = keras.layers.UpSampling2D((2, 3), interpolation="bilinear")(tf.constant(IMAGES)).numpy()
    want = np.asarray(Image.fromarray(IMAGES[1, :, :, 0]).resize((12, 10), Image.BILINEAR))
    np.testing.assert_allclose(got[1, :, :, 0], want, rtol=1e-5, atol=1e-5)


def test_integer_images_keep_their_type_through_nearest_and_are_refused_where_their_range_matters():
    pixels = RNG.integers(0, 256, (5, 4, 3)).astype(np.uint8)
    nearest = tf.image.resize(pixels, (10, 8), method="nearest")
    assert nearest.dtype == tf.int32
    np.testing.assert_array_equal(nearest.numpy(), pixels.repeat(2, axis=0).repeat(2, axis=1))
    with pytest.raises(TypeError, match="adjust_brightness: images of int32 .* tf.cast\\(image, tf.float32\\) / 255"):
        tf.image.adjust_brightness(pixels, 0.1)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_flips_and_quarter_turns_are_numpys(k):
    np.testing.assert_array_equal(tf.image.rot90(IMAGES, k).numpy(), np.rot90(IMAGES, k, axes=(1, 2)))
    np.testing.assert_array_equal(tf.image.rot90(IMAGES[0], k).numpy(), np.rot90(IMAGES[0], k))
    np.testing.assert_array_equal(tf.image.flip_left_right(IMAGES).numpy(), IMAGES[:, :, ::-1])
    np.testing.assert_array_equal(tf.image.flip_up_down(IMAGES[0]).numpy(), IMAGES[0, ::-1])


def test_standardization_contrast_and_brightness():
    x = IMAGES.astype(np.float64)
    centred = x - x.mean(axis=(1, 2, 3), keepdims=True)
    want = centred / np.maximum(centred.std(axis=(1, 2, 3), keepdims=True), 1 / np.sqrt(40))
    np.testing.assert_allclose(tf.image.per_image_standardization(IMAGES).numpy(), want, rtol=1e-5, atol=1e-6)
    mean = x.mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(tf.image.adjust_contrast(IMAGES, 2.0).numpy(), (x - mean) * 2 + mean, atol=1e-5)
    np.testing.assert_allclose(tf.image.adjust_brightness(IMAGES, 0.5).numpy(), IMAGES + 0.5)


@pytest.mark.parametrize("batched", [True, False], ids=["batches", "images"])
def test_seeded_random_flips_draw_anew_per_image_and_call_in_a_data_pipeline(batched):
    images = RNG.standard_normal((32, 3, 4, 1)).astype(np.float32)
    dataset = tf.data.Dataset.from_tensor_slices(images)
    dataset = (dataset.batch(32) if batched else dataset).map(lambda x: tf.image.random_flip_left_right(x, 5))
    flipped = np.concatenate([np.asarray(b).reshape(-1, 3, 4, 1) for b in dataset])
    kinds = [
        0 if np.array_equal(o, i) else 1 if np.array_equal(o, i[:, ::-1]) else None
        for i, o in zip(images, flipped, strict=True)
    ]
    assert None not in kinds and set(kinds) == {0, 1}


def test_keras_ops_image_extracts_patches_row_by_row_and_resizes():
    images = RNG.standard_normal((2, 7, 6, 3)).astype(np.float32)
    patches = keras.ops.image.extract_patches(images, size=3).numpy()
    assert patches.shape == (2, 2, 2, 27)  # the seventh row is past the last whole patch
    np.testing.assert_array_equal(patches[1, 1, 0], images[1, 3:6, 0:3].ravel())
    symbolic = keras.ops.image.extract_patches(keras.Input((7, 6, 3)), size=(3, 2))
    assert tuple(symbolic.shape) == (None, 2, 3, 18)
    np.testing.assert_array_equal(keras.ops.image.resize(images, (7, 6)).numpy(), images)


def patches_by_hand(x, size, strides, rates, padding):
    """Each patch cut out pixel by pixel (TensorFlow's SAME: padding split, the larger half after)."""
    (kh, kw), (sh, sw), (rh, rw) = size, strides, rates
    span_h, span_w = (kh - 1) * rh + 1, (kw - 1) * rw + 1
    height, width = x.shape[1:3]
    if padding == "SAME":
        rows, cols = -(-height // sh), -(-width // sw)
        extra_h, extra_w = max((rows - 1) * sh + span_h - height, 0), max((cols - 1) * sw + span_w - width, 0)
        x = np.pad(x, [(0, 0), (extra_h // 2, extra_h - extra_h // 2), (extra_w // 2, extra_w - extra_w // 2), (0, 0)])
    else:
        rows, cols = (height - span_h) // sh + 1, (width - span_w) // sw + 1
    out = np.zeros((x.shape[0], rows, cols, kh * kw * x.shape[3]), np.float32)
    for a in range(rows):
        for b in range(cols):
            out[:, a, b] = x[:, a * sh : a * sh + span_h : rh, b * sw : b * sw + span_w : rw].reshape(x.shape[0], -1)
    return out


@pytest.mark.parametrize(
    ("size", "strides", "rates", "padding"),
    [
        ((3, 3), (1, 1), (1, 1), "SAME"),
        ((3, 3), (1, 1), (1, 1), "VALID"),
        ((2, 3), (2, 1), (1, 2), "VALID"),
        ((3, 2), (2, 3), (2, 1), "SAME"),
    ],
)
def test_overlapping_patches_match_patches_cut_by_hand(size, strides, rates, padding):
    images = RNG.standard_normal((2, 7, 6, 3)).astype(np.float32)
    expected = patches_by_hand(images, size, strides, rates, padding)
    got = tf.image.extract_patches(images, [1, *size, 1], [1, *strides, 1], [1, *rates, 1], padding)
    np.testing.assert_array_equal(got.numpy(), expected)
    keras_patches = keras.ops.image.extract_patches(images, size, strides, rates, padding.lower())
    np.testing.assert_array_equal(keras_patches.numpy(), expected)


def test_area_resize_averages_each_block_of_pixels():
    x = np.random.default_rng(1).random((2, 6, 9, 3)).astype(np.float32)
    expected = x.reshape(2, 2, 3, 3, 3, 3).mean(axis=(2, 4))
    np.testing.assert_allclose(tf.image.resize(x, (2, 3), method="area").numpy(), expected, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="only to sizes that divide"):
        tf.image.resize(x, (4, 3), method="area")


def test_yuv_is_bt601_and_goes_back_to_rgb_and_psnr_follows_its_formula():
    rgb = np.random.default_rng(2).random((4, 5, 3)).astype(np.float32)
    yuv = tf.image.rgb_to_yuv(rgb).numpy()
    luma = 0.299 * rgb[..., 0] + 0.587 * rgb[..., 1] + 0.114 * rgb[..., 2]  # BT.601's Y
    np.testing.assert_allclose(yuv[..., 0], luma, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tf.image.yuv_to_rgb(yuv).numpy(), rgb, atol=1e-5)
    noisy = np.clip(rgb + 0.05, 0, 1)
    mse = np.mean((rgb.astype(np.float64) - noisy) ** 2)
    np.testing.assert_allclose(tf.image.psnr(rgb, noisy, max_val=1.0).numpy(), 10 * np.log10(1.0 / mse), rtol=1e-5)


def test_tf_io_reads_and_decodes_image_files_as_tensorflow_does(tmp_path):
    from braze.keras.utils import save_img

    pixels = (np.arange(4 * 5 * 3).reshape(4, 5, 3) * 4).astype(np.uint8)
    save_img(tmp_path / "p.png", pixels, scale=False)
    contents = tf.io.read_file(str(tmp_path / "p.png"))
    assert isinstance(contents, bytes)
    decoded = tf.io.decode_png(contents)
    assert decoded.dtype == np.uint8 and np.array_equal(decoded, pixels)
    gray = tf.io.decode_image(contents, channels=1)
    assert gray.shape == (4, 5, 1)
    floats = tf.image.convert_image_dtype(decoded, tf.float32)  # uint8 pixels over 255, as TensorFlow's
    np.testing.assert_allclose(floats.numpy(), pixels / 255.0, rtol=1e-6)
    assert tf.image.convert_image_dtype(tf.tensor([0.0, 1.0]), "int32").tolist() == [0, 2**31 - 1]
    files = tf.data.Dataset.from_tensor_slices(np.array([str(tmp_path / "p.png")]))
    loaded = files.map(lambda path: tf.image.convert_image_dtype(tf.io.decode_png(tf.io.read_file(path)), tf.float32))
    np.testing.assert_allclose(next(iter(loaded)), pixels / 255.0, rtol=1e-6)
    with pytest.raises(tf.data.DataError, match="no image"):
        tf.io.decode_image(b"not an image")
