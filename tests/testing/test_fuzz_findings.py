"""Every failure the fuzzer found, shrunk, as a regression test on every backend."""

from __future__ import annotations

import pytest

from braze.backends import cpu
from braze.testing.fuzz import available_backends, check_batch
from braze.testing.programs import Input, Program, Step

FINDINGS = {
    # program 64 of seed 0: the gradient of an unused input is a scalar constant 0 returned
    # by the graph, and the unfused plan inlined it into its readers but gave it no kernel
    # (KeyError in fuse).
    "unfused scalar constant result": Program(
        seed=64,
        inputs=(Input((1, 1), "float32", 0), Input((), "float32", 1)),
        steps=(),
        weights=(),
        returned=(),
    ),
    # The first program, in the fuzzer's form: two dots whose epilogues met.
    "epilogues of two dots meet": Program(
        seed=93,
        inputs=(Input((5, 1), "float32", 0), Input((1, 1), "float32", 1)),
        steps=(
            Step("B.reshape({0}, (5,))", (0,)),
            Step("{0} / (B.abs({1}) + 0.5)", (1, 0)),
            Step("{0} + {1}", (2, 3)),
            Step("{0} @ {0}", (1,)),
            Step("{0} @ {0}", (1,)),
        ),
        weights=(0.69, 1.3, 0.77, 1.08, 0.81),
        returned=(6,),
    ),
}


@pytest.mark.parametrize("name", list(FINDINGS))
def test_finding_agrees_on_every_backend(name, tmp_path):
    cache = cpu.DiskCache(tmp_path) if cpu.available() else None
    failures = check_batch([FINDINGS[name]], available_backends(), cache)
    assert not failures, "\n".join(f.describe() for f in failures)
