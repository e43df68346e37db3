"""Random shear, zoom and horizontal flip, as in Keras ``ImageDataGenerator``.

Small datasets (a few hundred images per class) overfit quickly; random geometric
changes make each epoch see slightly different images. The transform follows Keras
(shear angle in degrees counter-clockwise, zoom factors drawn independently for the
two axes from ``[1 - z, 1 + z]``, bilinear sampling, 'nearest' fill) so results and
hyper-parameters carry over from Keras tutorials. It is written in NumPy, vectorised
over pixels, so no SciPy is needed.
"""

from __future__ import annotations

import numpy as np

from braze.data.errors import DataError


def apply_transform(
    image: np.ndarray,
    shear: float = 0.0,
    zoom: tuple[float, float] = (1.0, 1.0),
    flip: bool = False,
) -> np.ndarray:
    """Shear by ``shear`` degrees, zoom by ``zoom`` = (rows, cols), then optionally flip.

    Deterministic on purpose: :class:`Augment` draws the parameters and this function
    applies them, so tests (and users) can apply an exact transform. ``image`` is
    ``[H, W, C]``; the result is float32 of the same shape. As in Keras, each output
    pixel samples the input at ``A @ (p - centre) + centre`` with
    ``A = [[1, -sin s], [0, cos s]] @ diag(zoom)``; a zoom above 1 shows more of the
    image (zooms out). Samples outside the image take the nearest edge pixel.
    """
    if image.ndim != 3:
        raise DataError(f"apply_transform expects an [H, W, C] image, got shape {image.shape}")
    h, w = image.shape[:2]
    src = image.astype(np.float32, copy=False)
    s = np.deg2rad(shear)
    matrix = np.array([[1.0, -np.sin(s)], [0.0, np.cos(s)]]) @ np.diag(zoom)
    centre = np.array([h / 2 - 0.5, w / 2 - 0.5])
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    out_coords = np.stack([rows.ravel(), cols.ravel()]) - centre[:, None]
    in_r, in_c = matrix @ out_coords + centre[:, None]
    # Clamping the sample point to the image is exactly 'nearest' (edge) fill.
    in_r = np.clip(in_r, 0, h - 1)
    in_c = np.clip(in_c, 0, w - 1)
    # The upper neighbour must stay inside the image, so the lower one stops at size - 2.
    r0 = np.clip(np.floor(in_r).astype(np.intp), 0, max(h - 2, 0))
    c0 = np.clip(np.floor(in_c).astype(np.intp), 0, max(w - 2, 0))
    r1 = np.minimum(r0 + 1, h - 1)
    c1 = np.minimum(c0 + 1, w - 1)
    fr = (in_r - r0).astype(np.float32)[:, None]
    fc = (in_c - c0).astype(np.float32)[:, None]
    top = src[r0, c0] * (1 - fc) + src[r0, c1] * fc
    bottom = src[r1, c0] * (1 - fc) + src[r1, c1] * fc
    out = (top * (1 - fr) + bottom * fr).reshape(h, w, -1)
    return out[:, ::-1] if flip else out


class Augment:
    """Random per-image augmentation drawn from a seeded NumPy generator.

    ``shear_range`` is the largest shear angle in degrees (uniform in
    ``[-shear_range, shear_range]``); ``zoom_range`` is ``z`` for factors in
    ``[1 - z, 1 + z]`` or an explicit ``(low, high)``; ``horizontal_flip`` flips half the
    images. The same ``seed`` gives the same sequence of transforms.
    """

    def __init__(
        self,
        shear_range: float = 0.0,
        zoom_range: float | tuple[float, float] = 0.0,
        horizontal_flip: bool = False,
        seed: int | None = None,
    ) -> None:
        if shear_range < 0:
            raise DataError(f"shear_range must be >= 0, got {shear_range}")
        if isinstance(zoom_range, (tuple, list)):
            low, high = zoom_range
        else:
            low, high = 1.0 - zoom_range, 1.0 + zoom_range
        if not 0 < low <= high:
            raise DataError(f"zoom_range must give 0 < low <= high, got ({low}, {high})")
        self.shear_range = float(shear_range)
        self.zoom_range = (float(low), float(high))
        self.horizontal_flip = horizontal_flip
        self.rng = np.random.default_rng(seed)

    def random_params(self) -> dict:
        """Draw one image's parameters, as keyword arguments for :func:`apply_transform`."""
        return {
            "shear": float(self.rng.uniform(-self.shear_range, self.shear_range)),
            "zoom": tuple(float(z) for z in self.rng.uniform(*self.zoom_range, size=2)),
            "flip": bool(self.horizontal_flip and self.rng.random() < 0.5),
        }

    def __call__(self, image: np.ndarray) -> np.ndarray:
        """Return a randomly transformed float32 copy of the ``[H, W, C]`` image."""
        return apply_transform(image, **self.random_params())
