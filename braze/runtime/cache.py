"""The process's caches behind one small interface: a bounded map with one eviction rule.

``BoundedCache`` holds at most ``max_size`` entries; past that, the least recently used
entry goes (with ``recency=False``, the oldest added: its lookups are then plain dict
lookups, for the tracer's per-op cache of shape rules). Every in-memory cache of braze is
one: shape rules (``tensor``), traces (``lazy``), executables, backward programs, jitted
signatures and eager GPU kernels; the kernel cache on disk bounds its bytes the same way
(``diskcache``).

The executable cache keys one compiled executable per distinct graph by the graph's
structural hash (which covers its parameter types) and the backend; a hit is confirmed by
structural equality (with hash-consed nodes, an identity comparison), so a hash collision
can never run the wrong executable.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from braze.ir.graph import Graph
from braze.runtime import metrics

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """At most ``max_size`` entries; ``evicted``: the counter (``braze.metrics``) that
    counts entries pushed out, if any."""

    def __init__(self, max_size: int, recency: bool = True, evicted: str | None = None) -> None:
        if max_size < 1:
            raise ValueError(f"a cache holds at least one entry, not {max_size}")
        self.max_size = max_size
        self.recency = recency
        self.evicted = evicted
        self._entries: dict[K, V] = OrderedDict() if recency else {}
        if not recency:
            self.get = self._entries.get  # type: ignore[method-assign]  # no Python frame per lookup

    def get(self, key: K, default: V | None = None) -> V | None:
        found = self._entries.get(key, default)
        if found is not default:
            self._entries.move_to_end(key)  # type: ignore[attr-defined]
        return found

    def put(self, key: K, value: V) -> V:
        """Store ``value`` under ``key`` (the most recent entry) and return it."""
        self._entries[key] = value
        if self.recency:
            self._entries.move_to_end(key)  # type: ignore[attr-defined]
        while len(self._entries) > self.max_size:
            del self._entries[next(iter(self._entries))]
            if self.evicted:
                metrics.count(self.evicted)
        return value

    def values(self) -> list[V]:
        """The entries, least recently used (or oldest) first."""
        return list(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def clear(self) -> None:
        self._entries.clear()


class ExecutableCache:
    def __init__(self, max_size: int = 256) -> None:
        self._entries: BoundedCache[tuple, tuple[Graph, Any]] = BoundedCache(max_size, evicted="CacheEvict")

    @property
    def max_size(self) -> int:
        return self._entries.max_size

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def key(graph: Graph, target: str) -> tuple:
        return (graph.structural_hash, target)

    def get_or_compile(self, graph: Graph, target: str, compile_fn: Callable[[Graph], Any]) -> tuple[Any, bool]:
        """The executable for ``graph`` and whether it came from the cache."""
        key = self.key(graph, target)
        entry = self._entries.get(key)
        if entry is not None and entry[0].same_structure(graph):
            metrics.count("CacheHit")
            return entry[1], True
        metrics.count("CacheMiss")
        with metrics.timed("CompileTime"):
            executable = compile_fn(graph)
        metrics.count("Compile")
        self._entries.put(key, (graph, executable))
        return executable, False

    def executables(self) -> list[Any]:
        """The cached executables, least recently used first."""
        return [executable for _, executable in self._entries.values()]

    def clear(self) -> None:
        self._entries.clear()
