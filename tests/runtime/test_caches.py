"""The bounded map every in-memory cache is: at most ``max_size`` entries, the least
recently used going first (or, without recency, what was not read for a generation), each
eviction counted where asked."""

from __future__ import annotations

import pytest

from braze.runtime import metrics
from braze.runtime.cache import BoundedCache


def test_a_hit_keeps_an_entry_and_the_least_recently_used_goes():
    cache = BoundedCache(2, evicted="TestEvict")
    before = metrics.counter("TestEvict")
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recent
    cache.put("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3
    assert metrics.counter("TestEvict") == before + 1
    assert cache.values() == [1, 3] and len(cache) == 2


def test_without_recency_an_entry_read_every_round_outlives_any_number_of_new_ones():
    """Two generations: a read finds an entry in either and keeps it; what nobody read for a
    generation goes. By age alone the entries read every round were the first to go."""
    cache = BoundedCache(8, recency=False, evicted="TestEvict")
    before = metrics.counter("TestEvict")
    for key in ("a", "b", *range(100, 106)):
        cache.put(key, str(key))
    for round_ in range(20):
        assert cache.get("a") == "a" and cache.get("b") == "b", round_
        for k in range(3):
            cache.put((round_, k), k)
        assert len(cache) <= 8
    assert cache.get(100) is None and cache.get((0, 0)) is None and cache.get((19, 2)) == 2
    assert metrics.counter("TestEvict") == before + 8 + 20 * 3 - len(cache)  # every entry put and gone
    cache.clear()
    assert len(cache) == 0 and cache.get("a") is None  # clearing keeps the lookups working


def test_without_recency_the_cache_stays_bounded_when_every_entry_is_read():
    cache = BoundedCache(3, recency=False)
    for n in range(50):
        cache.put(n, n + 1)
        for k in range(n + 1):
            cache.get(k)
        assert len(cache) <= 3 and cache.get(n) == n + 1 and set(cache.values()) <= {k + 1 for k in range(n + 1)}


def test_a_cache_holds_at_least_one_entry():
    with pytest.raises(ValueError, match="at least one entry"):
        BoundedCache(0)
    with pytest.raises(ValueError, match="at least two entries"):
        BoundedCache(1, recency=False)


def test_without_recency_a_key_put_again_or_holding_none_is_one_entry():
    cache = BoundedCache(4, recency=False)
    for key in "abc":
        cache.put(key, key)  # "a" and "b" fill the newer generation, "c" moves them to the older
    cache.put("a", "again")
    assert cache.get("a") == "again" and len(cache) == 3 and sorted(cache.values()) == ["again", "b", "c"]
    for key in ("n", "d", "e"):  # "n" and "d" move to the older generation
        cache.put(key, None if key == "n" else key)
    assert cache.get("n") is None and "n" in cache and len(cache) == 3  # read, it moved back, not away
