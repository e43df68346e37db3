"""The vectorized exp, log, tanh, logistic, pow and erf of generated kernels (backends/cpu/vmath)
against correctly rounded values, in ulps, over the whole float range: every 4096th float32
bit pattern with the specials, denormals and overflow thresholds, and float64 from the
smallest denormal to the largest finite value of both signs. Each function is compiled
through braze's pipeline and native backend, for every x86-64 level this host runs."""

from __future__ import annotations

import ctypes
import math
import subprocess

import numpy as np
import pytest
from cpu_targets import runnable_targets

import braze
from braze.backends import cpu
from braze.backends.cpu.compiler import find_compiler
from braze.backends.cpu.vmath import VECTOR_MATH
from braze.lazy import EXECUTOR, build_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")

# The bounds measured on gcc 12 at every level (vmath.py's table); the reference is rounded
# once from float64 (float32) or long double (float64), so it is within half an ulp itself.
MAX_ULPS = {"exp": 1, "log": 1, "tanh": 1, "sigmoid": 2, "power": 1, "erf": 1}
UNARY = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "sigmoid": None, "erf": None}


def _float32_inputs() -> np.ndarray:
    sweep = np.arange(0, 1 << 32, 4096, dtype=np.uint64).astype(np.uint32).view(np.float32)
    denormals = np.arange(1, 1 << 23, 4099, dtype=np.uint32).view(np.float32)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, -1e-45, 2.0**-126, 3.4028235e38, -3.4028235e38]
    thresholds = [88.72283, 88.722839, 88.72284, -87.33655, -103.97207, -103.97208, -104.0, 0.625, -0.625, 9.02]
    return np.concatenate([sweep, denormals, np.array(specials + thresholds, np.float32)])


def _float64_inputs() -> np.ndarray:
    magnitudes = np.concatenate([np.logspace(-323.3, 308.25, 200_001), np.linspace(0, 40, 100_001)])
    big = np.finfo(np.float64).max
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.0**-1022, big, -big]
    thresholds = [709.782712893384, 709.7827128933841, -745.1332191019411, -745.1332191019412, -746.0, 0.625]
    return np.concatenate([magnitudes, -magnitudes, specials, thresholds])


def _exponents(size: int) -> np.ndarray:
    """Exponents for pow: C99's special ones, small integers of both parities, halves, and
    random values of every size."""
    rng = np.random.default_rng(0)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2**24, 2**23 + 1, -(2**23 + 1), 1e30]
    drawn = np.concatenate([special, np.arange(-10, 11), rng.uniform(-50, 50, 200), 10 ** rng.uniform(-8, 8, 200)])
    return rng.choice(drawn.astype(np.float32), size)


def _correct(name: str, x: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    """The correctly rounded result (but for a double rounding, at most half an ulp more)."""
    wide = np.float64 if x.dtype == np.float32 else np.longdouble
    with np.errstate(all="ignore"):  # signalling nans among the bit patterns
        w = x.astype(wide)
        if name == "power":
            exact = np.power(w, y.astype(wide))
        elif name == "erf":  # math.erf in float64 (float32 inputs: rounded once more)
            exact = np.fromiter(map(math.erf, x.astype(np.float64).tolist()), np.float64, x.size)
        elif name == "sigmoid":
            e = np.exp(-np.abs(w))
            exact = np.where(w < 0, e, 1) / (1 + e)
        else:
            exact = UNARY[name](w)
        return exact.astype(x.dtype)


def _ordered(a: np.ndarray) -> np.ndarray:
    """Float bits mapped to unsigned integers in the floats' order: neighbours differ by 1
    (so the largest finite value is 1 ulp from inf)."""
    bits = a.view(np.uint32 if a.dtype == np.float32 else np.uint64).astype(np.uint64)
    sign = np.uint64(1 << (8 * a.dtype.itemsize - 1))
    middle = np.uint64(1 << 63)
    magnitude = bits & (sign - np.uint64(1))
    return np.where(bits & sign, middle - magnitude, middle + magnitude)


def ulp_errors(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in ulps (nan matches nan; -0 and +0 are 0 apart)."""
    a, b = _ordered(got), _ordered(want)
    distance = np.where(a > b, a - b, b - a)
    return np.where(np.isnan(got) & np.isnan(want), 0, distance)


def _lazy(array: np.ndarray):
    return braze.tensor(array, device=braze.LAZY_CPU)


LEVELS = runnable_targets()


@pytest.fixture(scope="module", params=LEVELS)
def results(request, tmp_path_factory):
    """{(function, dtype): (inputs, native results)} for one target."""
    level = request.param
    inputs = {"float32": _float32_inputs(), "float64": _float64_inputs()}
    names, roots, arguments = [], [], {}
    for dtype, x in inputs.items():
        for name in UNARY:
            names.append((name, dtype))
            roots.append(getattr(braze, name)(_lazy(x)))
            arguments[(name, dtype)] = (x,)
    x = inputs["float32"]
    y = _exponents(x.size)
    names.append(("power", "float32"))
    roots.append(braze.power(_lazy(x), _lazy(y)))
    arguments[("power", "float32")] = (x, y)
    traces = [build_graph([root._value]) for root in roots]
    EXECUTOR._live.clear()
    graphs = [cpu.optimize(t.graph, verify=True) for t in traces]
    executables = cpu.compile_graphs(graphs, cpu.DiskCache(tmp_path_factory.mktemp(f"cache-{level}")), level)
    return {
        key: (arguments[key], executable(trace.args)[0])
        for key, trace, executable in zip(names, traces, executables, strict=True)
    }


CASES = [(name, dtype) for dtype in ("float32", "float64") for name in UNARY] + [("power", "float32")]


@pytest.mark.parametrize(("name", "dtype"), CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_within_ulps_of_correctly_rounded(results, name, dtype):
    args, got = results[(name, dtype)]
    want = _correct(name, *args)
    assert got.dtype == want.dtype == np.dtype(dtype)
    errors = ulp_errors(got, want)
    worst = int(np.argmax(errors))
    at = ", ".join(repr(a[worst]) for a in args)
    assert errors[worst] <= MAX_ULPS[name], f"{name}({at}) = {got[worst]!r}, correctly rounded {want[worst]!r}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_values(results, dtype):
    """C99 Annex F's values (NumPy's), the sign of a zero included."""
    inf, nan = np.inf, np.nan
    big, tiny = np.finfo(dtype).max, np.finfo(dtype).smallest_subnormal
    x = [0.0, -0.0, inf, -inf, nan, tiny, -tiny, big, -big]
    expected = {
        "exp": [1, 1, inf, 0, nan, 1, 1, inf, 0],
        "log": [-inf, -inf, inf, nan, nan, np.log(np.float64(tiny)), nan, np.log(big), nan],
        "tanh": [0.0, -0.0, 1, -1, nan, tiny, -tiny, 1, -1],
        "sigmoid": [0.5, 0.5, 1, 0, nan, 0.5, 0.5, 1, 0],
        "erf": [0.0, -0.0, 1, -1, nan, math.erf(float(tiny)), -math.erf(float(tiny)), 1, -1],
    }
    for name, values in expected.items():
        (inputs,), got = results[(name, dtype)]
        for value, want in zip(np.array(x, dtype), np.array(values, dtype), strict=True):
            same = (inputs == value) & (np.signbit(inputs) == np.signbit(value))
            result = got[np.flatnonzero(same | (np.isnan(inputs) & np.isnan(value)))[0]]
            message = f"{name}({value!r}) = {result!r}, want {want!r}"
            assert ulp_errors(np.array([result]), np.array([want]))[0] <= 1, message
            assert result != 0 or np.signbit(result) == np.signbit(want), message


@pytest.mark.parametrize("level", LEVELS)
def test_a_loop_calling_each_function_vectorizes(level, tmp_path):
    """The reason the functions exist: GCC reports every loop as vectorized."""
    compiler = find_compiler(level)
    if "gcc" not in compiler.version.lower():
        pytest.skip(f"-fopt-info is gcc's; the compiler is {compiler.version}")
    functions = [f"braze_{name}{suffix}" for name in ("exp", "log", "tanh", "logistic") for suffix in ("f", "")]
    loops = [
        f"void loop_{function}(const {t}* restrict x, {t}* restrict y, long n) "
        f"{{ for (long i = 0; i < n; i++) y[i] = {function}(x[i]); }}"
        for function in functions
        for t in ["float" if function.endswith("f") else "double"]
    ]
    functions.append("braze_erff")  # float64 erf is libm's
    loops.append(
        "void loop_braze_erff(const float* restrict x, float* restrict y, long n) "
        "{ for (long i = 0; i < n; i++) y[i] = braze_erff(x[i]); }"
    )
    loops.append(
        "void loop_braze_powf(const float* restrict x, const float* restrict y, float* restrict z, long n) "
        "{ for (long i = 0; i < n; i++) z[i] = braze_powf(x[i], y[i]); }"
    )
    header = "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n" + VECTOR_MATH
    source = tmp_path / "loops.c"
    source.write_text(header + "\n".join(loops) + "\n")
    first = header.count("\n") + 1  # the line of the first loop
    command = [compiler.path, *compiler.flags, "-fopt-info-vec-optimized", "-c", "-o", str(tmp_path / "loops.o")]
    report = subprocess.run([*command, str(source)], capture_output=True, text=True, check=True).stderr
    vectorized = {int(line.split(":")[1]) for line in report.splitlines() if "loop vectorized" in line}
    missed = [name for line, name in enumerate([*functions, "braze_powf"], first) if line not in vectorized]
    assert not missed, f"not vectorized at {level}: {missed}\n{report}"


@pytest.mark.parametrize("level", LEVELS)
def test_the_exp_without_clamps_gives_the_general_exps_bits_where_erf_calls_it(level, tmp_path):
    """erf's e^(-x^2), x clamped at 4, is taken by braze_expf_normal: no clamps, one scaling.
    On its whole range [-87, 0] (every third float32) it must give braze_expf's bits, the
    function the ulp bounds above were measured for."""
    compiler = find_compiler(level)
    loop = r"""
long braze_mismatches(void) {
  long mismatches = 0;
  const uint32_t last = braze_bits32(-87.0f);
  for (uint32_t bits = 0x80000000u; bits <= last; bits += 3) {
    const float x = braze_from_bits32(bits);
    mismatches += braze_bits32(braze_expf_normal(x)) != braze_bits32(braze_expf(x));
  }
  return mismatches;
}
"""
    source = tmp_path / "exp.c"
    source.write_text("#include <math.h>\n#include <stdint.h>\n#include <string.h>\n" + VECTOR_MATH + loop)
    library = tmp_path / "exp.so"
    subprocess.run([compiler.path, *compiler.flags, "-o", str(library), str(source)], check=True, capture_output=True)
    mismatches = ctypes.CDLL(str(library)).braze_mismatches
    mismatches.restype = ctypes.c_long
    assert mismatches() == 0
