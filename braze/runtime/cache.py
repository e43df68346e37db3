"""The in-memory executable cache: one compiled executable per distinct graph.

The key is the graph's structural hash (which covers its parameter types) and the target;
a hit is confirmed by structural equality (with hash-consed nodes, an identity comparison), so a
hash collision can never run the wrong executable. Least recently used entries are
evicted past ``max_size``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from braze.ir.graph import Graph
from braze.runtime import metrics


class ExecutableCache:
    def __init__(self, max_size: int = 256) -> None:
        self.max_size = max_size
        self._entries: OrderedDict[tuple, tuple[Graph, Any]] = OrderedDict()

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
            self._entries.move_to_end(key)
            metrics.count("CacheHit")
            return entry[1], True
        metrics.count("CacheMiss")
        with metrics.timed("CompileTime"):
            executable = compile_fn(graph)
        metrics.count("Compile")
        self._entries[key] = (graph, executable)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_size:
            self._entries.popitem(last=False)
            metrics.count("CacheEvict")
        return executable, False

    def executables(self) -> list[Any]:
        """The cached executables, least recently used first."""
        return [executable for _, executable in self._entries.values()]

    def clear(self) -> None:
        self._entries.clear()
