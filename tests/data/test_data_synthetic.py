"""make_two_class_folder: layout, counts, determinism and skipping existing output."""

import numpy as np
import pytest
from PIL import Image

from braze.data import ImageFolder, make_two_class_folder


def pngs(directory):
    return sorted(directory.glob("*.png"))


def test_layout_counts_and_size(tmp_path):
    train, val = make_two_class_folder(tmp_path, n_train=7, n_val=4, size=(16, 24))
    assert (train, val) == (tmp_path / "train", tmp_path / "validation")
    assert [len(pngs(train / c)) for c in ("blobs", "stripes")] == [4, 3]
    assert [len(pngs(val / c)) for c in ("blobs", "stripes")] == [2, 2]
    with Image.open(pngs(train / "blobs")[0]) as img:
        assert img.size == (24, 16) and img.mode == "RGB"  # size is (height, width)
    data = ImageFolder(train, target_size=(16, 24), batch_size=7, shuffle=False)
    assert data.class_indices == {"blobs": 0, "stripes": 1}
    images, labels = next(iter(data))
    assert images.shape == (7, 16, 24, 3) and labels.tolist() == [0, 0, 0, 0, 1, 1, 1]


def test_deterministic_and_splits_differ(tmp_path):
    a, _ = make_two_class_folder(tmp_path / "a", n_train=4, n_val=4, size=(12, 12), seed=3)
    b, b_val = make_two_class_folder(tmp_path / "b", n_train=4, n_val=4, size=(12, 12), seed=3)
    for x, y in zip(pngs(a / "stripes"), pngs(b / "stripes"), strict=True):
        assert x.read_bytes() == y.read_bytes()
    train0 = np.asarray(Image.open(pngs(b / "blobs")[0]))
    val0 = np.asarray(Image.open(pngs(b_val / "blobs")[0]))
    assert not np.array_equal(train0, val0)


def test_existing_folder_is_kept_and_incomplete_one_regenerated(tmp_path):
    train, _ = make_two_class_folder(tmp_path, n_train=4, n_val=2, size=(10, 10))
    stamps = {p: p.stat().st_mtime_ns for p in pngs(train / "blobs")}
    make_two_class_folder(tmp_path, n_train=4, n_val=2, size=(10, 10))
    assert {p: p.stat().st_mtime_ns for p in pngs(train / "blobs")} == stamps
    pngs(train / "stripes")[0].unlink()
    make_two_class_folder(tmp_path, n_train=4, n_val=2, size=(10, 10))
    assert len(pngs(train / "stripes")) == 2
    make_two_class_folder(tmp_path, n_train=2, n_val=2, size=(10, 10))
    assert [len(pngs(train / c)) for c in ("blobs", "stripes")] == [1, 1]


def _coherence(gray: np.ndarray) -> np.ndarray:
    """How much each image's edges share one orientation (1: all parallel, 0: none shared),
    from the structure tensor summed over the image."""
    gy, gx = np.gradient(gray, axis=(1, 2))
    jxx, jyy, jxy = (gx * gx).sum(axis=(1, 2)), (gy * gy).sum(axis=(1, 2)), (gx * gy).sum(axis=(1, 2))
    return np.sqrt((jxx - jyy) ** 2 + 4 * jxy**2) / (jxx + jyy)


def test_classes_differ_in_texture_not_in_brightness(tmp_path):
    train, _ = make_two_class_folder(tmp_path, n_train=60, n_val=2, size=(64, 64))
    images, labels = next(iter(ImageFolder(train, target_size=(64, 64), batch_size=60, shuffle=False)))
    gray = images.mean(axis=-1)
    # Stripes' edges run one way; spots' edges every way.
    coherence = _coherence(gray)
    assert coherence[labels == 1].mean() > 2 * coherence[labels == 0].mean()
    # Brightness tells nothing: the classes' mean brightness differs by less than its spread.
    brightness = gray.mean(axis=(1, 2))
    assert abs(brightness[labels == 1].mean() - brightness[labels == 0].mean()) < brightness.std()


def test_a_folder_of_another_generator_version_is_made_again(tmp_path):
    train, _ = make_two_class_folder(tmp_path, n_train=4, n_val=2, size=(10, 10))
    (train / ".two-class-folder").write_text("version 1\n")
    first = pngs(train / "blobs")[0]
    first.write_bytes(b"stale")
    make_two_class_folder(tmp_path, n_train=4, n_val=2, size=(10, 10))
    with Image.open(first) as img:
        assert img.size == (10, 10)
    make_two_class_folder(tmp_path, n_train=4, n_val=2, size=(10, 10), seed=1)
    assert "seed 1" in (train / ".two-class-folder").read_text()


def test_an_interrupted_run_leaves_no_partial_image(tmp_path, monkeypatch):
    save, calls = Image.Image.save, []

    def save_then_fail(self, fp, *args, **kwargs):
        calls.append(fp)
        if len(calls) == 3:
            fp.write(b"\x89PNG\r\n")  # half an image, then the run is interrupted
            raise KeyboardInterrupt
        return save(self, fp, *args, **kwargs)

    monkeypatch.setattr(Image.Image, "save", save_then_fail)
    with pytest.raises(KeyboardInterrupt):
        make_two_class_folder(tmp_path, n_train=6, n_val=2, size=(8, 8))
    files = sorted(p.name for p in (tmp_path / "train" / "blobs").iterdir())
    assert files == ["blobs_0000.png", "blobs_0001.png"]
    monkeypatch.setattr(Image.Image, "save", save)
    train, _ = make_two_class_folder(tmp_path, n_train=6, n_val=2, size=(8, 8))
    assert len(pngs(train / "blobs")) == 3
