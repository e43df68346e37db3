"""The generated two-class folder of `braze train cnn` without --data: in the user's cache
folder, private, and never written through a link, whoever planted one."""

from __future__ import annotations

import os
import stat
import warnings

import pytest
from second_user import as_other_user, requires_root, shared_folder

from braze.bench.cnn import image_folders
from braze.data import DataError, make_two_class_folder
from braze.runtime import cachedir
from braze.runtime.cachedir import CacheWarning

SIZE = 12


@pytest.fixture(autouse=True)
def fresh_process_state(monkeypatch):
    monkeypatch.setattr(cachedir, "_ROOTS", {})
    monkeypatch.setattr(cachedir, "_WARNED", set())


@pytest.fixture
def small_split(monkeypatch):
    """Four training and two validation images, so a test makes the folder in a moment."""
    real = make_two_class_folder
    monkeypatch.setattr("braze.bench.cnn.make_two_class_folder", lambda root, size: real(root, 4, 2, size))


def test_the_generated_folder_is_in_the_users_cache_folder_and_private(tmp_path, monkeypatch, small_split):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path / "cache"))
    train, validation = image_folders(None, SIZE)
    folder = tmp_path / "cache" / "data" / f"two-class-{SIZE}"
    assert train == folder / "train" and validation == folder / "validation"
    for path in (tmp_path / "cache" / "data", folder):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700 and path.stat().st_uid == os.getuid()
    assert len(list((train / "blobs").glob("*.png"))) == 2


def test_a_link_in_the_generated_folder_is_an_error_not_written_through(tmp_path, monkeypatch, small_split):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "data" / f"two-class-{SIZE}"
    folder.mkdir(parents=True)
    mine = tmp_path / "my-files"
    mine.mkdir()
    (mine / "thesis.txt").write_text("years of work")
    (folder / "train").symlink_to(mine)
    with pytest.raises(DataError, match="train is not a folder .a link..: not writing generated images through it"):
        image_folders(None, SIZE)
    assert [p.name for p in mine.iterdir()] == ["thesis.txt"] and (mine / "thesis.txt").read_text() == "years of work"


def test_images_that_are_links_are_replaced_not_followed(tmp_path, small_split, monkeypatch):
    """A stamp says the split is made, but its images are links: the split is made again."""
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path / "cache"))
    train, _ = image_folders(None, SIZE)
    victim = tmp_path / "victim.png"
    victim.write_bytes(b"not to be overwritten")
    for image in (train / "blobs").glob("*.png"):
        image.unlink()
        image.symlink_to(victim)
    train, _ = image_folders(None, SIZE)
    assert victim.read_bytes() == b"not to be overwritten"
    assert all(not p.is_symlink() and p.stat().st_size > 100 for p in (train / "blobs").glob("*.png"))


@requires_root
def test_another_users_links_in_a_shared_cache_folder_are_never_written_through(
    neighbourhood, monkeypatch, small_split
):
    root = shared_folder(neighbourhood / "shared")
    mine = neighbourhood / "victim"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    as_other_user(
        f"mkdir -p {root}/data/two-class-{SIZE} && ln -s {mine} {root}/data/two-class-{SIZE}/train && "
        f"ln -s {mine} {root}/data/two-class-{SIZE}/validation"
    )
    monkeypatch.setenv("BRAZE_CACHE", str(root))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train, _ = image_folders(None, SIZE)
    assert any("not using the cache folder" in str(w.message) for w in caught if w.category is CacheWarning)
    assert root not in train.parents and train.is_dir() and not train.is_symlink()
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
