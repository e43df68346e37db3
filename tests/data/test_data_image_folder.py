"""ImageFolder against small folders of solid-colour images written with Pillow."""

import os
import warnings

import numpy as np
import pytest
from PIL import Image

from braze.data import Augment, DataError, ImageFolder, load_img, make_two_class_folder


def solid(path, colour, size=(8, 6)):
    """Write a solid image; ``size`` is Pillow's (width, height)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path)


@pytest.fixture
def folder(tmp_path):
    """Three classes, created out of order; each image's red channel is its own id."""
    root = tmp_path / "images"
    layout = {"zebra": ["z1.png", "z2.JPG"], "ant": ["a1.png", "a2.bmp", "deep/a3.gif"], "moth": ["m1.jpeg", "m2.PPM"]}
    ident = 10
    for cls, files in layout.items():
        for name in files:
            # Lossless except JPEG, whose solid colours still come back within a few levels.
            solid(root / cls / name, (ident, 100, 200))
            ident += 10
    (root / "ant" / "notes.txt").write_text("not an image")
    return root


def ids(images):
    return np.rint(images[:, 0, 0, 0] / 10).astype(int) * 10


def test_class_indices_files_and_counts(folder):
    data = ImageFolder(folder, target_size=(4, 4), class_mode="sparse", shuffle=False)
    assert data.class_indices == {"ant": 0, "moth": 1, "zebra": 2}
    assert data.samples == 7
    assert data.filenames == [
        "ant/a1.png",
        "ant/a2.bmp",
        "ant/deep/a3.gif",
        "moth/m1.jpeg",
        "moth/m2.PPM",
        "zebra/z1.png",
        "zebra/z2.JPG",
    ]
    assert data.classes.tolist() == [0, 0, 0, 1, 1, 2, 2]


def test_sparse_and_categorical_labels(folder):
    sparse = ImageFolder(folder, target_size=(4, 4), class_mode="sparse", batch_size=7, shuffle=False)
    images, labels = next(iter(sparse))
    assert images.dtype == np.float32 and images.shape == (7, 4, 4, 3)
    assert labels.dtype == np.int32 and labels.tolist() == [0, 0, 0, 1, 1, 2, 2]
    assert ids(images).tolist() == [30, 40, 50, 60, 70, 10, 20]
    cat = ImageFolder(folder, target_size=(4, 4), class_mode="categorical", batch_size=7, shuffle=False)
    _, onehot = next(iter(cat))
    assert onehot.dtype == np.float32 and onehot.shape == (7, 3)
    np.testing.assert_array_equal(onehot, np.eye(3, dtype=np.float32)[labels])


def test_binary_labels(tmp_path):
    for i in range(3):
        solid(tmp_path / "dogs" / f"{i}.png", (1, 2, 3))
        solid(tmp_path / "cats" / f"{i}.png", (1, 2, 3))
    data = ImageFolder(tmp_path, target_size=(5, 5), batch_size=6, shuffle=False)
    _, labels = next(iter(data))
    assert labels.dtype == np.float32 and labels.shape == (6,)
    assert labels.tolist() == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    solid(tmp_path / "mice" / "0.png", (1, 2, 3))
    with pytest.raises(DataError, match="exactly 2 class"):
        ImageFolder(tmp_path, class_mode="binary")


def test_target_size_is_height_width(tmp_path):
    img = np.zeros((40, 60, 3), dtype=np.uint8)  # 40 rows, 60 columns
    img[:, :30] = (255, 0, 0)
    img[:, 30:] = (0, 0, 255)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    Image.fromarray(img).save(tmp_path / "a" / "x.png")
    data = ImageFolder(tmp_path, target_size=(20, 30), class_mode="sparse", shuffle=False)
    images, _ = next(iter(data))
    assert images.shape == (1, 20, 30, 3)
    assert (images[0, :, :10, 0] == 255).all() and (images[0, :, -10:, 2] == 255).all()


def test_len_and_last_batch(folder):
    data = ImageFolder(folder, target_size=(4, 4), class_mode="sparse", batch_size=3)
    assert len(data) == 3
    assert [len(labels) for _, labels in data] == [3, 3, 1]


def test_seeded_shuffle(folder):
    def epochs(seed):
        data = ImageFolder(folder, target_size=(4, 4), class_mode="sparse", batch_size=2, seed=seed)
        return [np.concatenate([ids(x) for x, _ in data]).tolist() for _ in range(4)]

    first = epochs(7)
    assert first == epochs(7)
    assert all(sorted(e) == [10, 20, 30, 40, 50, 60, 70] for e in first)
    assert len({tuple(e) for e in first}) > 1  # a new permutation each epoch


def test_rescale(folder):
    data = ImageFolder(folder, target_size=(3, 3), class_mode="sparse", batch_size=7, shuffle=False, rescale=1 / 255)
    images, _ = next(iter(data))
    np.testing.assert_allclose(images[:, 0, 0, 2], 200 / 255, atol=3 / 255)
    assert images.max() <= 1.0


def test_dtype_of_images_and_float_labels(folder):
    data = ImageFolder(folder, (3, 3), "categorical", batch_size=7, shuffle=False, rescale=1 / 255, dtype="float64")
    images, labels = next(iter(data))
    assert images.dtype == labels.dtype == np.float64
    np.testing.assert_allclose(images[:, 0, 0, 2], 200 / 255, atol=3 / 255)
    np.testing.assert_array_equal(labels.sum(axis=1), 1)
    with pytest.raises(DataError, match="dtype must be a float dtype, got int32"):
        ImageFolder(folder, class_mode="sparse", dtype="int32")


def test_cache_avoids_decoding_again(folder):
    cached = ImageFolder(folder, target_size=(4, 4), class_mode="sparse")
    uncached = ImageFolder(folder, target_size=(4, 4), class_mode="sparse", cache=False)
    list(cached)
    list(uncached)
    (folder / "ant" / "a1.png").unlink()
    assert sum(len(y) for _, y in cached) == 7
    with pytest.raises(DataError, match="a1.png"):
        list(uncached)


def test_grayscale_and_augment(folder):
    data = ImageFolder(
        folder,
        target_size=(6, 5),
        class_mode="sparse",
        color_mode="grayscale",
        augment=Augment(shear_range=20, zoom_range=0.2, horizontal_flip=True, seed=0),
    )
    for images, _ in data:
        assert images.shape[1:] == (6, 5, 1) and images.dtype == np.float32


def test_shards_of_ranks_are_the_rows_of_each_one_process_batch(monkeypatch, tmp_path):
    """Rank r of 3 (the job's rank and size as init() leaves them) gets rows r, r+3, ... of
    each one-process batch of 3x the size, augmented alike, over two shuffled epochs; the
    last batch of 1 image is rank 0's alone, so the others have one batch fewer."""
    train, _ = make_two_class_folder(tmp_path, n_train=7, n_val=2, size=(8, 8))

    def folder(batch_size, shard=False):
        augment = Augment(shear_range=20, zoom_range=0.2, horizontal_flip=True, seed=1)
        return ImageFolder(train, (8, 8), "sparse", batch_size, seed=3, augment=augment, shard=shard)

    one_process = folder(6)
    whole = [batch for _ in range(2) for batch in one_process]
    for rank in range(3):
        monkeypatch.setattr("braze.data.loader.rank_and_size", lambda rank=rank: (rank, 3))
        shard = folder(2, shard=True)
        assert len(shard) == (2 if rank == 0 else 1) and shard.samples == 7
        mine = [batch for _ in range(2) for batch in shard]
        expected = [(images[rank::3], labels[rank::3]) for images, labels in whole if len(labels) > rank]
        assert len(mine) == len(expected) == 2 * len(shard)
        for (images, labels), (want_images, want_labels) in zip(mine, expected, strict=True):
            np.testing.assert_array_equal(images, want_images)
            np.testing.assert_array_equal(labels, want_labels)
    with pytest.raises(DataError, match="needs a seed"):
        ImageFolder(train, (8, 8), shard=True)


def test_corrupt_image_is_named(folder):
    (folder / "moth" / "broken.png").write_bytes(b"\x89PNG garbage, not an image")
    data = ImageFolder(folder, target_size=(4, 4), class_mode="sparse")
    with pytest.raises(DataError, match=r"broken\.png"):
        list(data)


def test_a_fifo_named_like_an_image_is_an_error_not_a_hang(folder):
    os.mkfifo(folder / "moth" / "x.png")
    with pytest.raises(DataError, match=r"x\.png: not a regular file"):
        ImageFolder(folder, target_size=(4, 4), class_mode="sparse")
    with pytest.raises(DataError, match=r"x\.png: not a regular file"):
        load_img(folder / "moth" / "x.png")


def test_an_image_past_pillows_pixel_limit_is_refused_before_decoding(tmp_path, monkeypatch):
    """A 10000x10000 PNG of one colour is 97 KB and decodes to 300 MB: Pillow only warns."""
    from PIL import Image

    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 40 * 30 - 1)  # a small image stands in for the big one
    solid(tmp_path / "big.png", (1, 2, 3), size=(40, 30))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        with pytest.raises(DataError, match=r"big\.png: 40x30 pixels, more than Pillow's limit of 1,199"):
            load_img(tmp_path / "big.png")


def test_empty_folder_errors(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "readme.txt").write_text("no images here")
    with pytest.raises(DataError, match=r"empty image folder.*\.png.*\.jpeg") as info:
        ImageFolder(tmp_path)
    assert str(tmp_path) in str(info.value)
    with pytest.raises(DataError, match="no class sub-folders"):
        ImageFolder(tmp_path / "a")
    with pytest.raises(DataError, match="does not exist"):
        ImageFolder(tmp_path / "missing")


def test_bad_class_mode(folder):
    with pytest.raises(DataError, match="class_mode"):
        ImageFolder(folder, class_mode="input")


def test_save_img_writes_what_array_to_img_scales_and_load_img_reads_back(tmp_path):
    from braze.keras.utils import img_to_array, save_img

    pixels = np.arange(4 * 5 * 3, dtype=np.float32).reshape(4, 5, 3) / 59.0  # 0..1
    save_img(tmp_path / "scaled.png", pixels)
    read = img_to_array(load_img(tmp_path / "scaled.png"))
    np.testing.assert_allclose(read, np.round(pixels * 255.0), atol=1.0)  # stretched to 0..255, rounded to bytes
    save_img(tmp_path / "raw.png", pixels * 100.0, scale=False)
    assert img_to_array(load_img(tmp_path / "raw.png")).max() == 100.0
