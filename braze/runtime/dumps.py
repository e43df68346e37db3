"""``BRAZE_DUMP=dir``: every generated source file goes to ``dir/kernels``, named by a
digest of its text, so the same source has the same name in every process and a run that
compiles nothing new writes nothing new (the graphs after each pass go beside it, from the
pass pipeline)."""

from __future__ import annotations

import os
from pathlib import Path

from braze.passes.pipeline import dump_folder
from braze.runtime.diskcache import digest


def dump_source(source: str, suffix: str) -> Path | None:
    """Write ``source`` (a ``.c``, ``.cu`` or ``.cl`` file) where ``BRAZE_DUMP`` says; the
    path, or None when no dump was asked for."""
    dump = os.environ.get("BRAZE_DUMP")
    if not dump:
        return None
    path = dump_folder(dump, "kernels") / f"{digest(source)[:16]}{suffix}"
    path.write_text(source)
    return path
