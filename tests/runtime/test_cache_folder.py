"""The cache folder: what braze trusts there (folders and files of the user's own that nobody
else can write), what it does when it cannot trust or write it (one warning, then a private
temporary folder, or no persisting), records that are not what braze wrote, the size cap,
and ``braze cache``."""

from __future__ import annotations

import errno
import json
import os
import stat
import warnings

import pytest
from second_user import as_other_user, owned_by_other_user, requires_root, shared_folder

from braze.cli import main
from braze.runtime import cachedir
from braze.runtime.cachedir import CacheWarning
from braze.runtime.diskcache import DiskCache, size_limit


@pytest.fixture(autouse=True)
def fresh_process_state(monkeypatch):
    """Every test starts as a new process would: no folder checked, no warning given."""
    monkeypatch.setattr(cachedir, "_ROOTS", {})
    monkeypatch.setattr(cachedir, "_WARNED", set())


def cache_warnings(action) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    return [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


def test_a_new_cache_folder_is_made_private(tmp_path):
    root = tmp_path / "home" / ".cache" / "braze"
    cache = DiskCache(root)
    assert cache.base == root and cache.root == root / "kernels"
    assert stat.S_IMODE(root.stat().st_mode) == stat.S_IMODE(cache.root.stat().st_mode) == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_a_folder_others_can_write_is_not_used(tmp_path, mode):
    root = tmp_path / "shared"
    root.mkdir()
    os.chmod(root, mode)
    caches = []
    messages = cache_warnings(lambda: caches.extend([DiskCache(root), DiskCache(root)]))
    assert len(messages) == 1, messages  # once per process
    assert f"not using the cache folder {root}: it is writable by" in messages[0]
    for cache in caches:
        assert root not in cache.base.parents and cache.base != root
        assert stat.S_IMODE(cache.base.stat().st_mode) == 0o700 and cache.base.stat().st_uid == os.getuid()
    assert caches[0].base == caches[1].base  # one private folder for the process
    assert not (root / "kernels").exists()


@requires_root
def test_a_folder_or_sub_folder_of_another_user_is_not_used(tmp_path):
    root = tmp_path / "theirs"
    root.mkdir(mode=0o700)
    owned_by_other_user(root)
    (message,) = cache_warnings(lambda: DiskCache(root))
    assert "is owned by another user (uid 65534)" in message
    mine = tmp_path / "mine"
    (mine / "kernels").mkdir(parents=True, mode=0o700)
    owned_by_other_user(mine / "kernels")
    messages = cache_warnings(lambda: DiskCache(mine))
    assert (
        len(messages) == 1 and f"not using the cache folder {mine / 'kernels'}: it is owned by another" in messages[0]
    )


@requires_root
def test_a_sub_folder_that_is_another_users_link_is_not_followed(neighbourhood):
    root = shared_folder(neighbourhood / "victim")
    elsewhere = shared_folder(neighbourhood / "attacker")
    as_other_user(f"ln -s {elsewhere} {root}/kernels")
    os.chmod(root, 0o700)  # the victim makes the folder private later; the neighbour's link stays
    assert (root / "kernels").lstat().st_uid == 65534
    cache = []
    (message,) = cache_warnings(lambda: cache.append(DiskCache(root)))
    assert "kernels: it is a symbolic link" in message
    cache[0].store("k" * 64, b"library")
    assert list(elsewhere.iterdir()) == []


def test_a_cache_that_cannot_be_made_only_warns(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = []
    messages = cache_warnings(lambda: cache.append(DiskCache(blocker / "cache")))
    assert len(messages) == 1 and "cannot write to the cache" in messages[0]
    assert cache[0].lookup("0" * 64) is None
    assert cache_warnings(lambda: cache[0].store("0" * 64, b"x")) == []  # said once already


@pytest.mark.parametrize(
    ("failing", "code"),
    [("mkstemp", errno.EROFS), ("fsync", errno.ENOSPC)],
    ids=["read-only", "full"],
)
def test_a_cache_that_cannot_be_written_warns_once_and_the_build_is_used(tmp_path, monkeypatch, failing, code):
    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    cache = DiskCache(tmp_path)
    target = cachedir.tempfile if failing == "mkstemp" else cachedir.os
    monkeypatch.setattr(target, failing, refuse)
    built = []

    def build(folder):
        (folder / "lib.so").write_bytes(b"built %d" % len(built))
        built.append(1)
        return folder / "lib.so"

    results = []
    messages = cache_warnings(lambda: results.extend(cache.get_or_build(k * 64, build) for k in "ab"))
    assert results == [(b"built 0", False), (b"built 1", False)]
    assert len(messages) == 1 and os.strerror(code) in messages[0] and "this run goes on" in messages[0]
    assert list(cache.root.iterdir()) == []  # no half-written file either


def test_an_entry_is_read_once_and_its_bytes_are_what_was_checked(tmp_path):
    cache = DiskCache(tmp_path)
    cache.store("k" * 64, b"the library")
    assert cache.lookup("k" * 64) == b"the library"
    library, _ = cache.paths("k" * 64)
    os.chmod(library, 0o722)
    (message,) = cache_warnings(lambda: cache.lookup("k" * 64))
    assert "is writable by group and others" in message


@pytest.mark.parametrize("kind", ["symlink", "fifo", "folder"])
def test_an_entry_that_is_not_a_regular_file_is_refused_without_waiting(tmp_path, kind):
    cache = DiskCache(tmp_path)
    library, checksum = cache.paths("k" * 64)
    checksum.write_text("0" * 64)
    if kind == "symlink":
        (tmp_path / "elsewhere.so").write_bytes(b"planted")
        library.symlink_to(tmp_path / "elsewhere.so")
    elif kind == "fifo":
        os.mkfifo(library)  # a reader that waited for a writer would hang here
    else:
        library.mkdir()
    (message,) = cache_warnings(lambda: cache.lookup("k" * 64))
    assert ("is a symbolic link" if kind == "symlink" else "is not a regular file") in message


def test_the_least_recently_used_entries_go_past_the_size_cap(tmp_path, monkeypatch):
    cache = DiskCache(tmp_path, max_bytes=3 * (1000 + 64))
    for k, key in enumerate("abcd"):
        cache.store(key * 64, bytes(1000))
        os.utime(cache.paths(key * 64)[0], (k, k))  # stored in this order, a second apart
    assert sorted(p.stem[0] for p in cache.root.glob("*.so")) == ["b", "c", "d"]
    assert cache.lookup("b" * 64) is not None  # used now: the most recent
    cache.store("e" * 64, bytes(1000))
    assert sorted(p.stem[0] for p in cache.root.glob("*.so")) == ["b", "d", "e"]
    assert sorted(p.stem[0] for p in cache.root.glob("*.sha256")) == ["b", "d", "e"]
    assert cache.size() <= cache.max_bytes


def test_the_size_cap_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE_MAX_SIZE", "500M")
    assert size_limit() == 500 << 20
    monkeypatch.setenv("BRAZE_CACHE_MAX_SIZE", "12345")
    assert size_limit() == 12345
    monkeypatch.setenv("BRAZE_CACHE_MAX_SIZE", "lots")
    with pytest.raises(ValueError, match="BRAZE_CACHE_MAX_SIZE='LOTS' is not a size"):
        size_limit()


@pytest.mark.parametrize("text", ["[]", "null", '"x"', "{", "\xff\xfe"])
def test_a_record_that_is_not_a_json_object_is_ignored_with_one_warning(tmp_path, text):
    record = tmp_path / "compilers.json"
    record.write_bytes(text.encode("latin-1"))
    messages = cache_warnings(lambda: [cachedir.read_record(record), cachedir.read_record(record)])
    assert len(messages) == 1 and f"ignoring the cache record {record}" in messages[0]
    assert cachedir.read_record(record) is None
    assert cachedir.write_record(record, {"ok": 1}) and cachedir.read_record(record) == {"ok": 1}


def test_braze_cache_info_and_clear(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    cache = DiskCache()
    cache.store("a" * 64, bytes(3000))
    (tmp_path / "compilers.json").write_text(json.dumps({}))
    (tmp_path / "data" / "two-class-8").mkdir(parents=True)
    (tmp_path / "data" / "two-class-8" / "x.png").write_bytes(bytes(100))
    (tmp_path / "mine.txt").write_text("not braze's")
    assert main(["cache", "info"]) == 0
    shown = capsys.readouterr().out
    assert f"cache folder {tmp_path} (private to you)" in shown
    assert "compiled kernels:           2 files" in shown and "generated data sets:        1 files" in shown
    assert main(["cache", "clear"]) == 0
    assert f"removed 4 files (0.0 MiB) from {tmp_path}" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]  # only what braze keeps there


def test_braze_cache_clear_refuses_a_folder_others_can_write(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    os.chmod(tmp_path, 0o777)
    assert main(["cache", "clear"]) == 1
    assert "not clearing the cache folder" in capsys.readouterr().err
    assert main(["cache", "info"]) == 0
    assert "NOT USED: it is writable by group and others" in capsys.readouterr().out
