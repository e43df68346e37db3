"""How every C dialect's sorts compare two elements: the order of ``scans.sort`` (NaN after
every number ascending, before them descending; -0.0 equal to 0.0), written so that the
elements neither comparison puts first are ties, which a stable sort keeps in place."""

from __future__ import annotations

from braze.ir.dtypes import DType


def goes_before(u: str, v: str, dtype: DType, descending: bool) -> str:
    """A C condition: ``u`` is ordered strictly before ``v``."""
    if not dtype.is_float:
        return f"({u} {'>' if descending else '<'} {v})"
    if descending:
        return f"(({u} > {v}) | (({u} != {u}) & ({v} == {v})))"
    return f"(({u} < {v}) | (({v} != {v}) & ({u} == {u})))"
