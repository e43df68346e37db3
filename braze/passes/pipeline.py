"""The compiler's target-independent pipeline: a readable list of named passes.

``run(graph)`` applies them in order; a backend gives its fusion policy (the hooks of its
code generator's limits) and the alignment its target wants buffers at. With
``verify=True`` (or ``BRAZE_VERIFY=1``) the verifier runs after every pass; with
``BRAZE_DUMP=dir`` the graph after every pass is written as text, numbered in order, with
each pass's notes (fusion refusals, buffers).
"""

from __future__ import annotations

import functools
import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from braze.ir.errors import ConfigError
from braze.ir.graph import Graph
from braze.ir.text import print_graph
from braze.ir.verify import verify as verify_graph
from braze.passes.bfloat16 import normalize_bfloat16
from braze.passes.buffers import assign_buffers
from braze.passes.combine_all_reduce import combine_all_reduce
from braze.passes.cse import cse
from braze.passes.dce import dce
from braze.passes.fold import fold
from braze.passes.fuse import fuse
from braze.passes.fusion_policy import TARGET_INDEPENDENT, FusionPolicy
from braze.passes.simplify import simplify
from braze.passes.transposed_products import transposed_products

Pass = Callable[[Graph], Graph]

# Bytes a buffer starts at where no backend asks for another: a cache line.
ALIGNMENT = 64


def passes(
    policy: FusionPolicy = TARGET_INDEPENDENT, alignment: int = ALIGNMENT, fusion: bool = True
) -> tuple[tuple[str, Pass], ...]:
    """The pipeline for a backend's fusion ``policy`` and buffer ``alignment``
    (``fusion=False``: every op left a kernel of its own)."""
    return (
        ("normalize_bfloat16", functools.partial(normalize_bfloat16, contracts=policy.contracts_bfloat16)),
        ("simplify", simplify),
        ("cse", cse),
        ("fold", fold),
        ("simplify", simplify),
        ("transposed_products", transposed_products),
        ("dce", dce),
        ("combine_all_reduce", combine_all_reduce),
        ("fuse", functools.partial(fuse, enabled=fusion, policy=policy)),
        ("dce", dce),
        ("assign_buffers", functools.partial(assign_buffers, alignment=alignment)),
    )


PIPELINE = passes()

_DUMPS = itertools.count()


@dataclass
class PassLog:
    entries: list[tuple[str, float, int]] = field(default_factory=list)  # (pass, seconds, nodes after)

    def describe(self) -> str:
        return "\n".join(f"{name}: {seconds * 1000:.2f} ms, {nodes} nodes" for name, seconds, nodes in self.entries)


def dump_folder(base: str, name: str) -> Path:
    """``base/name``, made if missing, for the files ``BRAZE_DUMP`` asks for; a ConfigError
    naming the setting where it cannot be made (a file in the way, no permission), rather
    than an OSError from inside a compile."""
    folder = Path(base) / name
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"BRAZE_DUMP={base!r}: cannot make the folder {str(folder)!r} ({error.strerror})") from None
    return folder


def run(
    graph: Graph,
    verify: bool | None = None,
    dump_dir: str | None = None,
    fusion: bool | None = None,
    policy: FusionPolicy = TARGET_INDEPENDENT,
    alignment: int = ALIGNMENT,
) -> tuple[Graph, PassLog]:
    """Optimize ``graph`` for a backend's fusion ``policy`` and buffer ``alignment``; return
    the result and the log of each pass's time and size.

    ``fusion=False`` (or ``BRAZE_FUSION=0``) keeps one kernel per op."""
    fusion = os.environ.get("BRAZE_FUSION", "1") != "0" if fusion is None else fusion
    verify = os.environ.get("BRAZE_VERIFY") == "1" if verify is None else verify
    dump_dir = dump_dir if dump_dir is not None else os.environ.get("BRAZE_DUMP")
    dump = dump_folder(dump_dir, f"graph{next(_DUMPS):04d}") if dump_dir else None
    if dump:
        (dump / "00_input.txt").write_text(print_graph(graph) + "\n")
    log = PassLog()
    for step, (name, apply) in enumerate(passes(policy, alignment, fusion), start=1):
        start = time.perf_counter()
        graph = apply(graph)
        elapsed = time.perf_counter() - start
        if verify:
            verify_graph(graph)
        log.entries.append((name, elapsed, len(graph.nodes())))
        if dump:
            notes = "".join(f"# {note}\n" for note in graph.notes)
            header = f"# after {name} (took {elapsed * 1000:.2f} ms)\n"
            (dump / f"{step:02d}_{name}.txt").write_text(header + notes + print_graph(graph) + "\n")
    return graph, log
