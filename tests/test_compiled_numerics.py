"""Compiled code (``braze.jit``, the lazy device: generated C) computes what eager mode
computes at the values where a compiler's liberties show: a product fused into the sum
after it, a float sum accumulated in float, a scan's accumulator, the sign of a zero picked
by a maximum whose operands CSE swapped, a float attribute or guard compared with ``==``
(which takes -0.0 for 0.0), and a module's attribute read only at the first call."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import braze
from braze.backends import cpu
from braze.backends.cpu.compiler import find_compiler
from braze.backends.reference.interpreter import evaluate
from braze.ir.dtypes import float32
from braze.ir.graph import Node, parameter
from braze.ir.primitive import Aval
from braze.ir.prims.structural import pad
from braze.lazy import EXECUTOR, build_graph

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")
f32 = np.float32


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Equal values, NaN where NaN, and zeros of the same sign."""
    np.testing.assert_array_equal(got, want)
    number = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))


def _eager_jit_lazy(fn, *arrays: np.ndarray) -> list[np.ndarray]:
    """``fn``'s result run eagerly, under ``braze.jit`` and on the lazy device."""
    eager = fn(*(braze.tensor(a) for a in arrays)).numpy()
    jitted = braze.jit(fn)(*(braze.tensor(a) for a in arrays)).numpy()
    lazy = fn(*(braze.tensor(a, device=braze.LAZY_CPU) for a in arrays)).numpy()
    return [eager, jitted, lazy]


def _interpreted(fn, *arrays: np.ndarray) -> np.ndarray:
    """``fn``'s result by the reference interpreter (each node's NumPy twin)."""
    root = fn(*(braze.tensor(a, device=braze.LAZY_CPU) for a in arrays))
    trace = build_graph([root._value])
    EXECUTOR._live.clear()
    return evaluate(trace.graph, trace.args)[0]


# A. Products are rounded before the sums they feed; contractions keep their FMAs ------------


def test_a_product_is_rounded_before_the_sum_it_feeds():
    a, b, c = (np.array(v, f32) for v in ([1e-30, 3.0], [-1e-30, 5.0], [0.0, 1.0]))
    with np.errstate(divide="ignore"):
        want = np.float32(1) / (a * b + c)  # a * b rounds to -0.0: 1 / (-0.0 + 0.0) = inf
    assert want[0] == np.inf
    for got in _eager_jit_lazy(lambda a, b, c: 1.0 / (a * b + c), a, b, c):
        _same_bits(got, want)


def test_the_difference_of_equal_squares_is_zero():
    x = (1 + np.random.default_rng(0).random(64) * 1e-3).astype(f32)
    for got in _eager_jit_lazy(lambda x, y: braze.sqrt(x * x - y * y), x, x.copy()):
        _same_bits(got, np.zeros_like(x))  # a fused x * x - y * y is the rounding error of y * y: NaN or not 0


def _function_assembly(assembly: str, name: str) -> str:
    start = assembly.index(f"\n{name}:")
    end = assembly.find(".size", start)
    return assembly[start:end]


def test_matrix_products_still_accumulate_with_fused_multiply_adds(tmp_path, monkeypatch):
    """The accumulation of a product's register tile asks for fused multiply-adds, and where
    the target has them (GCC, x86) the kernel's inner loop is made of them."""
    monkeypatch.setenv("BRAZE_DUMP", str(tmp_path))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((96, 72)).astype(f32), rng.standard_normal((72, 48)).astype(f32)
    got = braze.jit(lambda a, b: a @ b)(braze.tensor(a), braze.tensor(b)).numpy()
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-4)
    (source,) = (tmp_path / "kernels").glob("*.c")
    text = source.read_text()
    assert re.search(r"acc\[0\]\[0\] = braze_fmav32s\(w0, s, acc\[0\]\[0\]\)", text), "the tile's update is not fused"
    compiler = find_compiler()
    assert "-ffp-contract=off" in compiler.flags
    if "gcc" not in compiler.version.lower() or "__FMA__" not in compiler.target.macros:
        pytest.skip(f"FMA instructions are checked for GCC on x86 with FMA ({compiler.version})")
    flags = [f for f in compiler.flags if f not in ("-shared", "-fPIC")]
    command = [compiler.path, *flags, "-S", "-o", "-", str(source)]
    assembly = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    # The prelude's helpers are inline (none is emitted on its own): these are the kernel's.
    assert "vfmadd" in assembly, "no fused multiply-add in the product's kernel"


def test_the_fused_multiply_add_helpers_are_fused_and_plain_arithmetic_is_not(tmp_path):
    compiler = find_compiler()
    if "gcc" not in compiler.version.lower() or "__FMA__" not in compiler.target.macros:
        pytest.skip(f"FMA instructions are checked for GCC on x86 with FMA ({compiler.version})")
    source = cpu.prelude(compiler.target) + (
        "void tile(const float* restrict w, const float* restrict x, float* restrict out, long n) {\n"
        "  braze_vf32 acc = {0};\n"
        "  for (long k = 0; k < n; k++) {\n"
        "    braze_vf32 v; memcpy(&v, w + k * BRAZE_F32_LANES, sizeof(v)); acc = braze_fmav32s(v, x[k], acc);\n"
        "  }\n"
        "  memcpy(out, &acc, sizeof(acc));\n"
        "}\n"
        "double dot(const double* restrict a, const double* restrict b, long n) {\n"
        "  double s = 0; for (long k = 0; k < n; k++) s = braze_fma(a[k], b[k], s); return s;\n"
        "}\n"
        "float plain(float a, float b, float c) { return a * b + c; }\n"
    )
    path = tmp_path / "fma.c"
    path.write_text(source)
    flags = [f for f in compiler.flags if f not in ("-shared", "-fPIC")]
    command = [compiler.path, *flags, "-S", "-o", "-", str(path)]
    assembly = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert "vfmadd" in _function_assembly(assembly, "tile")
    assert "vfmadd" in _function_assembly(assembly, "dot")
    assert "vfmadd" not in _function_assembly(assembly, "plain")


# B. Float sums over an axis other than the innermost accumulate in double ------------------


@pytest.mark.parametrize(
    ("shape", "axes"),
    [((3, 2), 0), ((16, 1), 0), ((3, 5000), 0), ((3, 64, 5), (0, 2)), ((3, 4, 40), (0, 2)), ((3, 7, 2), 0)],
    ids=["or-reduction", "periodic", "big-result", "rows", "split-rows", "plain"],
)
def test_a_sum_over_a_leading_axis_keeps_the_digits_a_float_sum_loses(shape, axes):
    x = np.zeros(shape, f32)
    x[0], x[1], x[2] = 1e8, 1.0, -1e8
    want = np.sum(x, axis=axes, dtype=np.float64).astype(f32)
    assert np.all(want != 0)
    for got in _eager_jit_lazy(lambda t: braze.sum(t, axis=axes), x):
        _same_bits(got, want)


def test_a_mean_over_the_leading_axis_is_eagers():
    y = (1e4 + np.random.default_rng(0).random((5000, 3, 2))).astype(f32)
    eager, jitted, lazy = _eager_jit_lazy(lambda t: braze.mean(t, axis=0), y)
    np.testing.assert_allclose(eager, y.astype(np.float64).mean(axis=0), rtol=1e-7)
    _same_bits(jitted, eager)
    _same_bits(lazy, eager)


# C. Scans: sums in double from -0.0, products in the element type, everywhere ---------------


@pytest.mark.parametrize(
    ("op", "values", "want"),
    [
        ("cumsum", [3e38, 3e38, -3e38], [3e38, np.inf, 3e38]),
        ("cumsum", [1e8, 1.0, -1e8], [1e8, 1e8, 1.0]),
        ("cumsum", [-0.0, -0.0], [-0.0, -0.0]),
        ("cumsum", [-0.0, 0.0, -0.0], [-0.0, 0.0, 0.0]),
        ("cumprod", [1e30, 1e30, 1e-30], [1e30, np.inf, np.inf]),
    ],
)
def test_scans_agree_eager_compiled_and_interpreted(op, values, want):
    x, want = np.array(values, f32), np.array(want, f32)
    fn = lambda t: getattr(braze, op)(t, axis=0)  # noqa: E731
    for got in [*_eager_jit_lazy(fn, x), _interpreted(fn, x)]:
        _same_bits(got, want)


def test_a_float64_cumsum_keeps_a_negative_zero():
    x = np.array([-0.0, -0.0, 1.0], np.float64)
    for got in _eager_jit_lazy(lambda t: braze.cumsum(t, axis=0), x):
        _same_bits(got, np.cumsum(x))


# D. maximum and minimum keep their operands' order: NumPy's zero on a tie ----------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: braze.maximum(t, 0.0),
        lambda t: braze.maximum(0.0, t),
        lambda t: braze.minimum(t, -0.0),
        lambda t: braze.minimum(-0.0, t),
        lambda t: braze.clip(t, 0.0, 1.0),
        lambda t: braze.clip(t, -1.0, -0.0),
        lambda t: braze.stack([braze.maximum(t, braze.flip(t, 0)), braze.maximum(braze.flip(t, 0), t)]),
    ],
    ids=["max(x,0)", "max(0,x)", "min(x,-0)", "min(-0,x)", "clip(0,1)", "clip(-1,-0)", "both-orders"],
)
def test_a_tie_of_signed_zeros_gives_eagers_zero(fn):
    x = np.array([-0.0, 0.0, 0.0, -0.0, 2.0, -3.0], f32)  # ties with its reverse at 2 and 3
    eager, jitted, lazy = _eager_jit_lazy(fn, x)
    _same_bits(jitted, eager)
    _same_bits(lazy, eager)


def test_eagers_maximum_is_numpys_in_both_orders():
    x = np.array([-0.0, 0.0], f32)
    y = x[::-1].copy()
    _same_bits(braze.maximum(braze.tensor(x), braze.tensor(y)).numpy(), np.maximum(x, y))
    _same_bits(braze.jit(braze.maximum)(braze.tensor(x), braze.tensor(y)).numpy(), np.maximum(x, y))
    _same_bits(braze.jit(braze.minimum)(braze.tensor(y), braze.tensor(x)).numpy(), np.minimum(y, x))


# E. A float attribute is told apart by its bits -----------------------------------------------


def test_pads_of_either_zero_in_one_graph():
    x = np.ones(2, f32)
    fn = lambda t: braze.stack([braze.pad(t, [(1, 1)], 0.0), braze.pad(t, [(1, 1)], -0.0)])  # noqa: E731
    want = np.array([[0.0, 1, 1, 0.0], [-0.0, 1, 1, -0.0]], f32)
    for got in _eager_jit_lazy(fn, x):
        _same_bits(got, want)


def test_a_lazy_pad_of_negative_zero_after_one_of_zero():
    x = braze.tensor(np.ones(2, f32), device=braze.LAZY_CPU)
    first = braze.pad(x, [(1, 1)], 0.0).numpy()
    second = braze.pad(x, [(1, 1)], -0.0).numpy()
    _same_bits(first, np.array([0.0, 1, 1, 0.0], f32))
    _same_bits(second, np.array([-0.0, 1, 1, -0.0], f32))


def test_nodes_of_either_zero_are_two_nodes():
    x = parameter(0, Aval((2,), float32))
    attrs = {"low": (1,), "high": (1,), "interior": (0,)}
    zero = Node.make(pad, (x,), {**attrs, "value": 0.0}, x.aval)
    assert Node.make(pad, (x,), {**attrs, "value": -0.0}, x.aval) is not zero
    assert Node.make(pad, (x,), {**attrs, "value": 0.0}, x.aval) is zero
    nan = Node.make(pad, (x,), {**attrs, "value": float("nan")}, x.aval)
    assert Node.make(pad, (x,), {**attrs, "value": float("nan")}, x.aval) is nan


# F. Guards: a float by its bits, and what a function reads from a module of the user's -------

SIGNED = 0.0


def test_a_global_zero_changed_to_negative_zero_is_a_new_guard():
    global SIGNED
    x = np.array([-0.0, 1.0], f32)
    f = braze.jit(lambda t: t + SIGNED)
    SIGNED = 0.0
    _same_bits(f(braze.tensor(x)).numpy(), x + np.float32(0.0))
    SIGNED = -0.0
    try:
        _same_bits(f(braze.tensor(x)).numpy(), x + np.float32(-0.0))
    finally:
        SIGNED = 0.0


def test_a_closed_over_nan_does_not_retrace_every_call():
    values = [float("nan"), float("nan")]  # equal bits, distinct objects (never == each other)
    holder = {"value": values[0]}
    f = braze.jit(lambda t: t * holder["value"])
    x = braze.tensor(np.ones(2, f32))
    f(x)
    holder["value"] = values[1]
    assert np.isnan(f(x).numpy()).all()
    assert f.traces == 1


def _module(folder: Path, name: str, text: str, namespace: bool = False):
    """A module of the user's, ``name`` (dotted: in packages, namespace packages where
    ``namespace``), written into ``folder`` and imported."""
    parts = name.split(".")
    for k in range(1, len(parts)):
        package = folder.joinpath(*parts[:k])
        package.mkdir(exist_ok=True)
        if not namespace:
            (package / "__init__.py").touch()
    folder.joinpath(*parts[:-1], f"{parts[-1]}.py").write_text(text)
    for k in range(len(parts)):
        sys.modules.pop(".".join(parts[: k + 1]), None)
    return importlib.import_module(name)


def test_a_modules_attribute_is_read_again_on_every_call(tmp_path, monkeypatch):
    """Read as a global (``settings.SCALE``), through a submodule (``config.train.RATE``) and
    through a variable the function closes over."""
    monkeypatch.syspath_prepend(str(tmp_path))
    settings = _module(tmp_path, "braze_test_settings", "SCALE = 2.0\n")
    train = _module(tmp_path, "braze_test_config.train", "RATE = 1.0\n")
    shift = _module(tmp_path, "braze_test_spaced.shift", "BY = 0.0\n", namespace=True)
    try:
        namespace = {"settings": settings, "config": sys.modules["braze_test_config"]}
        namespace["spaced"] = sys.modules["braze_test_spaced"]
        code = "scaled = lambda t: t * settings.SCALE\nshifted = lambda t: t + config.train.RATE + spaced.shift.BY"
        exec(code, namespace)
        scaled, shifted = braze.jit(namespace["scaled"]), braze.jit(namespace["shifted"])
        closed = braze.jit(lambda t: t - settings.SCALE)
        x = braze.tensor(np.ones(2, f32))
        np.testing.assert_array_equal(scaled(x).numpy(), [2.0, 2.0])
        np.testing.assert_array_equal(shifted(x).numpy(), [2.0, 2.0])
        np.testing.assert_array_equal(closed(x).numpy(), [-1.0, -1.0])
        settings.SCALE, train.RATE, shift.BY = 3.0, 5.0, 0.5
        np.testing.assert_array_equal(scaled(x).numpy(), [3.0, 3.0])
        np.testing.assert_array_equal(shifted(x).numpy(), [6.5, 6.5])
        np.testing.assert_array_equal(closed(x).numpy(), [-2.0, -2.0])
        settings.SCALE = -0.0
        _same_bits(scaled(braze.tensor(np.array([1.0, -1.0], f32))).numpy(), np.array([-0.0, 0.0], f32))
    finally:
        names = ["braze_test_settings", "braze_test_config", "braze_test_config.train"]
        for name in [*names, "braze_test_spaced", "braze_test_spaced.shift"]:
            sys.modules.pop(name, None)


def test_a_library_modules_attributes_are_not_walked():
    import math

    from braze import jit_state

    def uses(t):
        return t * math.pi + braze.sum(t)

    paths = [path for path, _ in jit_state.function_roots(uses)]
    assert "math" in paths and "braze" in paths
    assert not any(path.startswith(("math.", "braze.")) for path in paths)


@pytest.mark.parametrize("bounds", [(0.0, 1.0), (np.nan, 1.0), (0.0, np.nan), (2.0, 1.0), (-0.0, 0.0)])
def test_clip_keeps_a_value_within_its_bounds_as_numpy_does_eager_and_compiled(bounds):
    """np.clip with both bounds: x where it lies within them (-0.0 at a bound of 0.0, which a
    maximum would turn into 0.0), NaN where x or a bound is NaN, max where min > max."""
    x = np.array([-1.0, -0.0, 0.0, 0.5, np.nan, 2.0, 1.0], np.float32)
    want = np.clip(x, *bounds)
    for got in (braze.clip(braze.tensor(x), *bounds), braze.jit(lambda t: braze.clip(t, *bounds))(braze.tensor(x))):
        np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(want))


def test_clip_passes_the_gradient_within_and_at_its_bounds_as_pytorchs_clamp():
    x = braze.tensor(np.array([-1.0, 0.0, 0.5, 1.0, 2.0], np.float32), requires_grad=True)
    braze.clip(x, 0.0, 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 1.0, 1.0, 0.0])
    lows = braze.tensor(np.array([0.0, 1.0, np.nan], np.float32))
    np.testing.assert_array_equal(
        braze.clip(braze.tensor(np.full((2, 3), 0.5, np.float32)), lows, 2.0).numpy()[0], [0.5, 1.0, np.nan]
    )
