"""The Array API standard's conformance suite (data-apis/array-api-tests, tag 2026.02.26)
against ``braze.array_api``, eagerly and through a wrapper that makes every array on the
lazy CPU, beside NumPy and array-api-strict (the standard's reference implementation) in
the same configuration and the same run: braze's dtypes, no ``fft`` or ``linalg``, one
``--max-examples`` and one seed (see ``braze.testing.array_api_suite``).

    python benchmarks/bench_array_api.py --suite PATH [--max-examples N] [--seed S]
        [--libraries braze braze-lazy numpy array-api-strict] [--json out.json]

``PATH`` is a checkout of data-apis/array-api-tests at tag 2026.02.26 with its
``array-api`` submodule. Prints each library's passes, failures and skips, braze's passes
as a share of array-api-strict's, and the tests that fail through the lazy wrapper but
pass eagerly (there should be none).
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

from bench_chain import cpu_model

from braze.testing.array_api_suite import MODULES, run

DEFAULT_SUITE = Path(__file__).resolve().parents[1].parent / "shared" / "array-api-tests"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", type=Path, default=DEFAULT_SUITE, help="a checkout of data-apis/array-api-tests")
    parser.add_argument("--max-examples", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--libraries", nargs="+", default=list(MODULES), choices=list(MODULES))
    parser.add_argument("--json", type=Path, help="write every test's outcome per library here")
    args = parser.parse_args()
    if not (args.suite / "array_api_tests").is_dir():
        parser.error(f"{args.suite} is not a checkout of data-apis/array-api-tests (give --suite)")
    print(f"{datetime.date.today()} · {cpu_model()} · --max-examples {args.max_examples} --hypothesis-seed {args.seed}")
    runs = {}
    for library in args.libraries:
        result = run(args.suite, library, args.max_examples, args.seed)
        runs[library] = result
        counts = result.summary()
        print(
            f"{library:>17}: {counts['passed']:5d} passed {counts['failed']:4d} failed "
            f"{counts['skipped']:4d} skipped  ({result.seconds:.0f} s)"
        )
    strict = runs.get("array-api-strict")
    for library in ("braze", "braze-lazy"):
        if strict is not None and library in runs:
            share = runs[library].count("passed") / strict.count("passed")
            print(f"{library} passes {share:.1%} as many tests as array-api-strict")
    if strict is not None and "braze" in runs:
        own = sorted(runs["braze"].with_outcome("failed") - strict.with_outcome("failed"))
        print(f"failing for braze but not for array-api-strict ({len(own)}):")
        for test in own:
            print(f"  {test}")
    if "braze" in runs and "braze-lazy" in runs:
        lazy_only = sorted(runs["braze-lazy"].with_outcome("failed") - runs["braze"].with_outcome("failed"))
        print(f"failing through the lazy wrapper but passing eagerly ({len(lazy_only)}):")
        for test in lazy_only:
            print(f"  {test}")
    if args.json:
        args.json.write_text(json.dumps({name: r.outcomes for name, r in runs.items()}, indent=1))


if __name__ == "__main__":
    main()
