"""Before/after text cases for every simplification rule, CSE, DCE, folding and each kind of
fusion; each case also checks that the reference interpreter agrees before and after."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from filecheck import check, split_case
from random_graphs import random_args

from braze.backends.cpu.fusion import CPU_FUSION
from braze.backends.reference.interpreter import evaluate
from braze.ir.text import parse_graph, print_graph
from braze.ir.verify import verify
from braze.passes.combine_all_reduce import combine_all_reduce
from braze.passes.cse import cse
from braze.passes.dce import dce
from braze.passes.fold import fold
from braze.passes.fuse import fuse
from braze.passes.simplify import RULES, simplify
from braze.passes.transposed_products import transposed_products

PASSES = {
    "combine_all_reduce": combine_all_reduce,
    "simplify": simplify,
    "cse": cse,
    "dce": dce,
    "fold": fold,
    "transposed_products": transposed_products,
    "fuse": fuse,
    "fuse_cpu": functools.partial(fuse, policy=CPU_FUSION),  # with the CPU's row kernels
}
CASES = sorted((Path(__file__).parent / "cases").glob("*.txt"))


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_pass_case(path):
    passes, directives, text = split_case(path.read_text())
    before = parse_graph(text)
    after = before
    for name in passes:
        after = verify(PASSES[name](after))
    notes = "".join(f"# {note}\n" for note in after.notes)
    check(notes + print_graph(after), directives)
    args = random_args(before)
    for expected, got in zip(evaluate(before, args), evaluate(after, args), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_every_simplification_rule_has_a_case():
    """Each rule is exercised by a case whose input has an op the rule rewrites away or changes."""
    names = " ".join(p.stem for p in CASES if p.stem.startswith("simplify"))
    for rule in RULES:
        assert rule.name in names or rule.name.split("_")[0] in names, f"rule {rule.name} has no before/after case"
