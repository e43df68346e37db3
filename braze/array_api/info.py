"""``__array_namespace_info__()``: what braze.array_api supports, for code that asks."""

from __future__ import annotations

from typing import Any

from braze.array_api.dtypes import DTYPES, kinds
from braze.ir.dtypes import DEFAULT_FLOAT, DEFAULT_INT, DType
from braze.runtime.device import CPU, LAZY_CPU, Device, default_device, gpu_available


class Info:
    """The inspection functions of the standard's namespace info object."""

    def capabilities(self) -> dict[str, Any]:
        """Boolean indexing and data-dependent shapes are supported (they read values: a
        barrier on lazy devices, an error under ``@jit``); any number of dimensions."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": None}

    def default_device(self) -> Device:
        return default_device()

    def default_dtypes(self, *, device: Any = None) -> dict[str, DType | None]:
        return {
            "real floating": DEFAULT_FLOAT,
            "complex floating": None,
            "integral": DEFAULT_INT,
            "indexing": DEFAULT_INT,
        }

    def devices(self) -> list[Device]:
        """The CPU, eager and lazy, and the GPU, eager and lazy, where one is available."""
        found = [CPU, LAZY_CPU]
        if gpu_available():
            found += [Device("GPU", 0, "EAGER"), Device("GPU", 0, "LAZY")]
        return found

    def dtypes(self, *, device: Any = None, kind: str | tuple[str, ...] | None = None) -> dict[str, DType]:
        """braze's dtypes of the standard's ``kind`` (all of them when None)."""
        if kind is None:
            return dict(DTYPES)
        wanted = (kind,) if isinstance(kind, str) else tuple(kind)
        table = kinds()
        unknown = [k for k in wanted if k not in table]
        if unknown:
            raise ValueError(f"dtypes: unknown kind {unknown[0]!r}; the kinds are {', '.join(table)}")
        return {d.name: d for d in DTYPES.values() if any(d in table[k] for k in wanted)}


def __array_namespace_info__() -> Info:  # noqa: N807 - the standard's name
    return Info()
