"""Every primitive has a lowering in every registered backend, or the backend says why not
(``NotLowered``): a primitive declared without one fails here, naming both; and the
design document's coverage table is the registry's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from braze.runtime.backend import backends, coverage_table, missing_lowerings

DESIGN = Path(__file__).resolve().parent.parent / "docs" / "design.md"


@pytest.mark.parametrize("backend", backends(), ids=lambda b: b.name)
def test_every_primitive_has_a_lowering(backend):
    missing = [p.name for p in missing_lowerings(backend)]
    assert not missing, f"the {backend.name} backend has no lowering for {', '.join(missing)}"


def test_the_design_document_lists_the_coverage():
    table = coverage_table()
    assert table in DESIGN.read_text(), (
        "docs/design.md's lowering table is out of date; replace it with the output of\n"
        "python -c 'import braze; from braze.runtime.backend import coverage_table; print(coverage_table())'\n"
        f"{table}"
    )
