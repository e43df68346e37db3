"""The process's caches behind one small interface: a bounded map with one eviction rule.

``BoundedCache`` holds at most ``max_size`` entries; past that, the least recently used
entry goes. With ``recency=False`` (the tracer's per-op cache of shape rules) a lookup that
hits is a plain dict lookup, and the cache keeps two generations of half the size instead:
new entries go into the newer one; when it is full it becomes the older one and the older
one's entries go, but a lookup that finds an entry in the older generation moves it back
into the newer one. So an entry read at least once per generation stays, as under least
recently used. Eviction by age alone dropped entries that a training step read every time
whenever the step's own new entries pushed them out, and a shape rule's signature (so a
trace's key) then changed between two identical steps. Every in-memory cache of braze is
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
    counts entries pushed out, if any. Without ``recency``, ``get`` takes no default."""

    def __init__(self, max_size: int, recency: bool = True, evicted: str | None = None) -> None:
        least = "one entry" if recency else "two entries (a generation each)"
        if max_size < (1 if recency else 2):
            raise ValueError(f"a cache holds at least {least}, not {max_size}")
        self.max_size = max_size
        self.recency = recency
        self.evicted = evicted
        self._entries: dict[K, V] = OrderedDict() if recency else _Generation()
        if not recency:
            self.get = self._entries.__getitem__  # type: ignore[method-assign]  # no Python frame per hit

    def get(self, key: K, default: V | None = None) -> V | None:
        found = self._entries.get(key, default)
        if found is not default:
            self._entries.move_to_end(key)  # type: ignore[attr-defined]
        return found

    def put(self, key: K, value: V) -> V:
        """Store ``value`` under ``key`` (the most recent entry) and return it."""
        entries = self._entries
        if not self.recency:
            entries.older.pop(key, None)  # a key is in one generation only
            if key not in entries:
                self._make_room(entries)
            entries[key] = value
            return value
        entries[key] = value
        entries.move_to_end(key)  # type: ignore[attr-defined]
        while len(entries) > self.max_size:
            del entries[next(iter(entries))]
            self._count_evictions(1)
        return value

    def _make_room(self, newer: _Generation) -> None:
        """Room for one more entry: a full newer generation becomes the older one (whose
        entries go), else past ``max_size`` the older generation's first entry goes (the
        one put or read longest ago)."""
        older = newer.older
        if len(newer) >= self.max_size // 2:
            self._count_evictions(len(older))
            older = newer.older = dict(newer)
            newer.clear()
        if len(newer) + len(older) >= self.max_size:
            del older[next(iter(older))]
            self._count_evictions(1)

    def _count_evictions(self, n: int) -> None:
        if self.evicted and n > 0:
            metrics.count(self.evicted, n)

    def _older(self) -> dict:
        return getattr(self._entries, "older", {})

    def values(self) -> list[V]:
        """The entries, least recently used (or the older generation) first."""
        return [*self._older().values(), *self._entries.values()]

    def __len__(self) -> int:
        return len(self._entries) + len(self._older())

    def __contains__(self, key: object) -> bool:
        return key in self._entries or key in self._older()

    def clear(self) -> None:
        self._entries.clear()
        self._older().clear()


class _Generation(dict):
    """The newer generation of a cache without recency: a key it lacks is looked up in the
    ``older`` one and moves here when found; ``None`` when neither has it (as ``get``)."""

    __slots__ = ("older",)

    def __init__(self) -> None:
        super().__init__()
        self.older: dict = {}

    def __missing__(self, key: Hashable) -> Any:
        found = self.older.pop(key, _ABSENT)
        if found is _ABSENT:
            return None
        self[key] = found
        return found


_ABSENT = object()


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
