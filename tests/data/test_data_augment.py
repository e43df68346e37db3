"""Augment / apply_transform against np.flip, identities and a per-pixel reference."""

import math

import numpy as np
import pytest

from braze.data import Augment, DataError
from braze.data.augment import apply_transform


def reference_transform(image, shear, zoom):
    """Keras' affine map with bilinear sampling and edge fill, one pixel at a time."""
    h, w, _ = image.shape
    s = math.radians(shear)
    cy, cx = h / 2 - 0.5, w / 2 - 0.5
    out = np.zeros(image.shape, dtype=np.float64)
    for r in range(h):
        for c in range(w):
            y = zoom[0] * (r - cy) - math.sin(s) * zoom[1] * (c - cx) + cy
            x = math.cos(s) * zoom[1] * (c - cx) + cx
            y, x = min(max(y, 0), h - 1), min(max(x, 0), w - 1)
            y0, x0 = min(math.floor(y), h - 2), min(math.floor(x), w - 2)
            fy, fx = y - y0, x - x0
            out[r, c] = (
                (1 - fy) * (1 - fx) * image[y0, x0]
                + (1 - fy) * fx * image[y0, x0 + 1]
                + fy * (1 - fx) * image[y0 + 1, x0]
                + fy * fx * image[y0 + 1, x0 + 1]
            )
    return out


@pytest.fixture
def image():
    return np.random.default_rng(0).uniform(0, 255, (7, 9, 3)).astype(np.float32)


def test_identity(image):
    out = apply_transform(image, shear=0.0, zoom=(1.0, 1.0), flip=False)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, image)


def test_flip_is_np_flip(image):
    np.testing.assert_array_equal(apply_transform(image, flip=True), np.flip(image, axis=1))


def test_uint8_input_gives_float32(image):
    out = apply_transform(image.astype(np.uint8))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, image.astype(np.uint8))


def test_zoom_in_samples_between_pixels():
    img = np.arange(25, dtype=np.float32).reshape(5, 5, 1)
    out = apply_transform(img, zoom=(0.5, 0.5))
    # Output pixel p samples the input at centre + 0.5 * (p - centre): even pixels land
    # exactly on input pixels 1..3.
    np.testing.assert_allclose(out[::2, ::2], img[1:4, 1:4])


@pytest.mark.parametrize(
    ("shear", "zoom"), [(20.0, (1.0, 1.0)), (-35.0, (0.8, 1.2)), (0.0, (1.3, 0.7)), (12.0, (1.5, 1.5))]
)
def test_matches_per_pixel_reference(image, shear, zoom):
    np.testing.assert_allclose(
        apply_transform(image, shear=shear, zoom=zoom), reference_transform(image, shear, zoom), rtol=1e-5, atol=1e-3
    )


def test_augment_preserves_shape_and_is_seeded(image):
    a = Augment(shear_range=20, zoom_range=0.2, horizontal_flip=True, seed=3)
    b = Augment(shear_range=20, zoom_range=0.2, horizontal_flip=True, seed=3)
    outs = [a(image) for _ in range(5)]
    assert all(o.shape == image.shape and o.dtype == np.float32 for o in outs)
    for o in outs:
        np.testing.assert_array_equal(o, b(image))


def test_random_params_stay_in_range():
    aug = Augment(shear_range=10, zoom_range=0.2, horizontal_flip=True, seed=0)
    params = [aug.random_params() for _ in range(400)]
    assert all(-10 <= p["shear"] <= 10 for p in params)
    assert all(0.8 <= z <= 1.2 for p in params for z in p["zoom"])
    flips = sum(p["flip"] for p in params)
    assert 150 < flips < 250


def test_flip_only_gives_image_or_mirror(image):
    aug = Augment(horizontal_flip=True, seed=1)
    seen = set()
    for _ in range(20):
        out = aug(image)
        flipped = np.array_equal(out, np.flip(image, axis=1))
        assert flipped or np.array_equal(out, image)
        seen.add(flipped)
    assert seen == {True, False}


def test_defaults_are_identity(image):
    np.testing.assert_array_equal(Augment(seed=0)(image), image)


@pytest.mark.parametrize("kwargs", [{"shear_range": -1}, {"zoom_range": 1.0}, {"zoom_range": (1.2, 0.9)}])
def test_bad_ranges(kwargs):
    with pytest.raises(DataError):
        Augment(**kwargs)
