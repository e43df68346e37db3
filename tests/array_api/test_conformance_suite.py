"""The Array API standard's conformance suite (data-apis/array-api-tests, tag 2026.02.26)
against braze.array_api, eagerly: every test passes but those of the expected-failure
file, each listed with its reason, and every entry there still fails.

The suite is looked for at ``$BRAZE_ARRAY_API_SUITE``, else beside the repository
(``../shared/array-api-tests``); where it is absent the test is skipped. It runs from a
writable copy, at few examples per test so that it takes a few minutes on two cores
(benchmarks/bench_array_api.py runs more, beside NumPy and array-api-strict, and through
the lazy wrapper).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from braze.testing.array_api_suite import read_expected_failures, run

SUITE = Path(
    os.environ.get("BRAZE_ARRAY_API_SUITE") or Path(__file__).resolve().parents[2].parent / "shared" / "array-api-tests"
)
EXPECTED_FAILURES = Path(__file__).with_name("expected_failures.txt")
MAX_EXAMPLES = 5
# Entries beyond the complex-number special cases, which array-api-strict fails as well.
MOST_OWN_FAILURES = 60

pytest.importorskip("pytest_jsonreport", reason="the suite's report needs pytest-json-report (the test extra)")
pytest.importorskip("ndindex", reason="the suite needs ndindex (the test extra)")


@pytest.mark.skipif(
    not (SUITE / "array_api_tests").is_dir(), reason=f"no checkout of data-apis/array-api-tests at {SUITE}"
)
def test_braze_passes_the_conformance_suite_but_its_listed_failures():
    expected = read_expected_failures(EXPECTED_FAILURES)
    assert all(expected.values()), "every expected failure names its reason"
    own = [test for test, reason in expected.items() if not reason.startswith("Special cases of complex arguments")]
    assert len(own) <= MOST_OWN_FAILURES, f"{len(own)} expected failures beyond the complex special cases"

    result = run(SUITE, "braze", max_examples=MAX_EXAMPLES, seed=0, timeout=1500)

    failed = result.with_outcome("failed", "error")
    assert result.count("passed") > 1000, result.output[-3000:]
    unexpected = sorted(failed - set(expected))
    assert not unexpected, f"{len(unexpected)} tests fail that are not expected to:\n" + "\n".join(unexpected)
    missing = sorted(set(expected) - set(result.outcomes))
    assert not missing, "expected failures that name no test of the suite:\n" + "\n".join(missing)
    passing = sorted(t for t in expected if result.outcomes[t] == "passed")
    assert not passing, "expected failures that pass now (remove them from the file):\n" + "\n".join(passing)
