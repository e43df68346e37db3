"""The bounded map every in-memory cache is: at most ``max_size`` entries, the least
recently used going first (or, without recency, the oldest added), each eviction counted
where asked."""

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


def test_without_recency_the_oldest_goes_whatever_was_read():
    cache = BoundedCache(2, recency=False)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1
    cache.put("c", 3)
    assert "a" not in cache and cache.get("b") == 2 and cache.get("missing") is None
    cache.clear()
    assert len(cache) == 0 and cache.get("b") is None  # clearing keeps the lookups working


def test_a_cache_holds_at_least_one_entry():
    with pytest.raises(ValueError, match="at least one entry"):
        BoundedCache(0)
