"""Compiled GPU modules in the persistent kernel cache, with the CPU cache's safety rules
(private folder; a binary opened once, without following links, its owner, mode and
checksum checked on the open file, and those same bytes handed to the driver).

A binary is keyed by its source and by the device and compiler it was built for (the
runtime, the device's name and architecture, the compiler's version and flags), so a cubin
for sm_90 or one NVRTC version is never loaded for another. A source that does not compile
is kept in the cache's ``failed`` folder and the error names it beside the compiler's log.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from braze.backends.gpu.target import GpuError
from braze.runtime import metrics
from braze.runtime.diskcache import DiskCache, digest


def cached_binary(
    cache: DiskCache, source: str, built_for: Sequence[str], compile_source: Callable[[str], bytes], suffix: str
) -> bytes:
    """The binary of ``source`` built for ``built_for`` (what identifies the device and the
    compiler), from ``cache`` or from ``compile_source``, which raises a GpuError holding
    the compiler's log when the source does not compile (the source is then kept, named
    with ``suffix``, ``.cu`` or ``.cl``)."""
    key = digest(source, *built_for)

    def build(folder: Path) -> Path:
        try:
            binary = compile_source(source)
        except GpuError as error:
            kept = cache.keep_failed_source(key, source, suffix)
            raise GpuError(f"{error}\n(the source is {kept})") from None
        path = folder / "module.bin"
        path.write_bytes(binary)
        return path

    binary, hit = cache.get_or_build(key, build)
    metrics.count("DiskCacheHit" if hit else "DiskCacheMiss")
    return binary
