"""Running the Array API standard's conformance suite (data-apis/array-api-tests) against
an array namespace: ``braze.array_api`` eagerly, the same through a wrapper that puts
every array on the lazy CPU, or a reference library (NumPy, array-api-strict) in the same
configuration.

The configuration is braze's: the dtypes braze lacks are skipped
(``ARRAY_API_TESTS_SKIP_DTYPES``), the ``fft`` and ``linalg`` extensions are disabled, the
standard's version is 2024.12, Hypothesis draws ``max_examples`` examples per test from one
seed with its example database off, and no test has a deadline nor Hypothesis' health
checks (braze's lazy devices compile on first use, a loaded machine is slow to draw
examples, and tests never assert timings). The suite runs from a writable copy
of its folder, in a process of its own; its JSON report gives every test's outcome.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

SKIPPED_DTYPES = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "complex64", "complex128")
API_VERSION = "2024.12"
MODULES = {
    "braze": "braze.array_api",
    "braze-lazy": "exec('import braze; braze.set_default_device(\"cpu:0:lazy\"); import braze.array_api as xp')",
    "numpy": "numpy",
    "array-api-strict": "array_api_strict",
}
# Loaded before the suite's conftest registers its profile, which inherits these settings.
_SETTINGS = """\
from hypothesis import HealthCheck, settings

settings.register_profile("braze", database=None, suppress_health_check=list(HealthCheck))
settings.load_profile("braze")
"""
_REPOSITORY = Path(__file__).resolve().parents[2]


@dataclass
class SuiteRun:
    """One run of the suite: each test's outcome by id, and how long the run took."""

    library: str
    outcomes: dict[str, str]
    seconds: float
    returncode: int
    output: str = field(repr=False, default="")

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes.values() if o == outcome)

    def with_outcome(self, *outcomes: str) -> set[str]:
        return {test for test, o in self.outcomes.items() if o in outcomes}

    def summary(self) -> Counter:
        return Counter(self.outcomes.values())


def writable_copy(suite: Path, into: Path) -> Path:
    """A copy of the suite's folder under ``into`` that pytest may write to."""
    target = into / "array-api-tests"
    shutil.copytree(suite, target, ignore=shutil.ignore_patterns(".hypothesis", "__pycache__", ".pytest_cache"))
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target


def run(
    suite: Path,
    library: str,
    max_examples: int,
    seed: int = 0,
    xfails: Path | None = None,
    tests: tuple[str, ...] = (),
    timeout: float | None = None,
) -> SuiteRun:
    """Run the suite at ``suite`` (a checkout of data-apis/array-api-tests with its
    submodule) against ``library`` (a key of ``MODULES``), from a writable copy; tests
    listed in ``xfails`` are expected to fail."""
    with tempfile.TemporaryDirectory(prefix="braze-array-api-") as scratch:
        work = Path(scratch)
        copy = writable_copy(Path(suite), work)
        (work / "braze_hypothesis_settings.py").write_text(_SETTINGS)
        report = work / "report.json"
        env = dict(os.environ)
        env.update(
            ARRAY_API_TESTS_MODULE=MODULES[library],
            ARRAY_API_TESTS_SKIP_DTYPES=",".join(SKIPPED_DTYPES),
            ARRAY_API_TESTS_VERSION=API_VERSION,
            ARRAY_API_STRICT_API_VERSION=API_VERSION,
            PYTHONPATH=os.pathsep.join(p for p in (str(work), str(_REPOSITORY), env.get("PYTHONPATH")) if p),
        )
        env.pop("ARRAY_API_TESTS_XFAIL_MARK", None)
        command = [sys.executable, "-m", "pytest", *(tests or ("array_api_tests/",))]
        command += ["-p", "braze_hypothesis_settings", "-p", "no:cacheprovider", "-o", "addopts=", "-q"]
        command += ["--disable-extension", "fft", "linalg", "--disable-deadline"]
        command += ["--max-examples", str(max_examples), "--hypothesis-seed", str(seed)]
        command += ["--json-report", f"--json-report-file={report}"]
        if xfails is not None:
            command += ["--xfails-file", str(Path(xfails).resolve())]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)
        seconds = time.perf_counter() - start
        if not report.exists():
            output = done.stdout[-3000:] + done.stderr
            raise RuntimeError(f"the suite wrote no report (exit {done.returncode}):\n{output}")
        results = json.loads(report.read_text())
    outcomes = {test["nodeid"]: test["outcome"] for test in results["tests"]}
    return SuiteRun(library, outcomes, seconds, done.returncode, done.stdout + done.stderr)


def read_expected_failures(path: Path) -> dict[str, str]:
    """The expected-failure file's entries (one test id a line), each with its reason: the
    block of comment lines right above its group of entries."""
    entries: dict[str, str] = {}
    reason: list[str] = []
    in_comment = False
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if text.startswith("#"):
            if not in_comment:
                reason = []
            reason.append(text.lstrip("#").strip())
        elif text:
            entries[text] = " ".join(reason)
        in_comment = text.startswith("#")
    return entries
