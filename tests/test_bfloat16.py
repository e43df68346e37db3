"""bfloat16: the conversions against an independent rounding, every op computed in float32
and rounded (eagerly, lazily on every CPU target, jitted), and mixed precision
(``braze.autocast``): values against a float64 product of bfloat16-rounded operands, and
gradients against float64 finite differences at the tolerance bfloat16's 8 significant bits
give."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_targets import runnable_targets

import braze
from braze.backends import cpu
from braze.ir.dtypes import from_bfloat16, to_bfloat16

U = 2.0**-8  # bfloat16's unit roundoff: 8 significant bits (7 stored), rounded to nearest
F32 = 2.0**-24  # float32's


def nearest_bfloat16(values: np.ndarray) -> np.ndarray:
    """The bfloat16 nearest each finite float32 (ties to an even last bit), by comparing
    the two bfloat16 neighbours in float64: a different algorithm from braze's."""
    bits = np.asarray(values, np.float32).view(np.uint32)
    down = (bits & 0xFFFF0000).view(np.float32).astype(np.float64)  # toward zero
    _, exponent = np.frexp(np.abs(down))
    ulp = np.where(down == 0, 2.0**-133, np.exp2(np.maximum(exponent - 8, -133)))
    up = down + np.copysign(ulp, values.astype(np.float64))  # away from zero, past 2^128 too
    x = values.astype(np.float64)
    below, above = np.abs(x - down), np.abs(up - x)
    down_even = ((bits >> 16) & 1) == 0
    take_down = (below < above) | ((below == above) & down_even)
    with np.errstate(over="ignore"):
        return np.where(take_down, down, up).astype(np.float32)


def awkward_floats(count: int = 4096) -> np.ndarray:
    """Random bit patterns (every exponent, subnormals), exact ties, the largest finite and
    the values just below and above it."""
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32)
    ties = (rng.integers(0, 2**16, 64, dtype=np.uint64).astype(np.uint32) << 16) | 0x8000
    edges = np.array([0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF, 0x00008000, 0x80000001, 0, 0x80000000], np.uint32)
    values = np.concatenate([bits, ties, edges]).view(np.float32)
    return values[np.isfinite(values)]


def test_rounding_is_to_nearest_even_and_overflows_to_infinity():
    values = awkward_floats()
    got = from_bfloat16(to_bfloat16(values))
    np.testing.assert_array_equal(got, nearest_bfloat16(values))
    assert from_bfloat16(to_bfloat16(np.float32(3.4e38))) == np.inf  # beyond bfloat16's largest, 3.39e38


def test_nan_and_infinities_survive_a_round_trip():
    payloads = np.array([0x7FC00000, 0xFFC00001, 0x7F800001, 0x7FFFFFFF], np.uint32).view(np.float32)
    back = from_bfloat16(to_bfloat16(payloads))
    assert np.isnan(back).all()
    assert (np.signbit(back) == np.signbit(payloads)).all()
    infinities = np.array([np.inf, -np.inf], np.float32)
    np.testing.assert_array_equal(from_bfloat16(to_bfloat16(infinities)), infinities)


@pytest.mark.parametrize("device", ["cpu", "lazy"])
def test_tensors_convert_and_read_as_float32(device):
    dev = braze.LAZY_CPU if device == "lazy" else braze.CPU
    values = awkward_floats(512)
    x = braze.tensor(values, device=dev).astype(braze.bfloat16)
    assert x.dtype is braze.bfloat16
    np.testing.assert_array_equal(x.numpy(), nearest_bfloat16(values))
    np.testing.assert_array_equal(x.astype("float32").numpy(), nearest_bfloat16(values))
    made = braze.tensor([1.0, 1.00390625, 1.01171875], dtype="bfloat16", device=dev)
    np.testing.assert_array_equal(made.numpy(), [1.0, 1.0, 1.015625])  # ties go to even


def _rounded(a: np.ndarray) -> np.ndarray:
    return from_bfloat16(to_bfloat16(a))


# Ops on bfloat16 tensors: each computed in float32 on the operands' values and rounded once.
OPS = {
    "add": (lambda x, y: x + y, np.add),
    "mul": (lambda x, y: x * y, np.multiply),
    "div": (lambda x, y: x / y, np.divide),
    "exp": (lambda x, y: braze.exp(x), lambda x, y: np.exp(x)),
    "tanh": (lambda x, y: braze.tanh(x), lambda x, y: np.tanh(x)),
    "max": (lambda x, y: braze.maximum(x, y), np.maximum),
    "select": (lambda x, y: braze.where(x > y, x, y * 2.0), lambda x, y: np.where(x > y, x, y * 2)),
    "transpose": (lambda x, y: x.T + y.T, lambda x, y: x.T + y.T),
    "sum": (lambda x, y: (x * y).sum(axis=1), None),
    "matmul": (lambda x, y: x @ y.T, None),
}


@pytest.mark.parametrize("device", ["cpu", "lazy", "jit"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_ops_compute_in_float32_and_round(name, device):
    """Against the float32 result on the operands' bfloat16 values, rounded: exact where
    the float32 result is correctly rounded; otherwise within a unit of bfloat16's last bit
    (the compiled float32 arithmetic may land the other side of a rounding boundary)."""
    build, twin = OPS[name]
    rng = np.random.default_rng(1)
    a, b = (_rounded(rng.uniform(0.5, 2.0, (6, 37)).astype(np.float32)) for _ in range(2))
    if twin is None:  # a sum of products: float32 accumulation in any order
        wide = a.astype(np.float64) * b if name == "sum" else None
        want = wide.sum(axis=1) if name == "sum" else a.astype(np.float64) @ b.T.astype(np.float64)
        k = a.shape[1]
        bound = U * np.abs(want) + k * F32 * np.abs(want)
    else:
        want = twin(a, b).astype(np.float32)
        bound = 2 * U * np.abs(want)
    dev = braze.LAZY_CPU if device == "lazy" else braze.CPU
    fn = braze.jit(build) if device == "jit" else build
    got = fn(braze.tensor(a, "bfloat16", dev), braze.tensor(b, "bfloat16", dev))
    assert got.dtype is braze.bfloat16
    assert (np.abs(got.numpy() - want) <= bound).all()
    if twin is not None and device != "lazy":
        np.testing.assert_array_equal(got.numpy(), _rounded(want))


@pytest.mark.skipif(not cpu.available(), reason="no C compiler")
@pytest.mark.parametrize("target", runnable_targets())
def test_compiled_conversions_match_the_reference_bit_for_bit(target, tmp_path):
    from braze.backends.reference.interpreter import evaluate
    from braze.ir.text import parse_graph

    graph = parse_graph(
        """graph(%0: f32[4107], %1: bf16[4107]) {
  %2 = convert(%0) {dtype=bf16} : bf16[4107]
  %3 = convert(%1) {dtype=f32} : f32[4107]
  %4 = convert(%1) {dtype=s32} : s32[4107]
  %5 = convert(%1) {dtype=f64} : f64[4107]
  return (%2, %3, %4, %5)
}"""
    )
    values = np.concatenate([awkward_floats(4096), np.array([np.nan, -np.inf, np.inf, 3.4e38, -3.4e38], np.float32)])
    values = values[:4107] if values.size >= 4107 else np.resize(values, 4107)
    args = [values, to_bfloat16(values[::-1].copy())]
    native = cpu.compile_graph(cpu.optimize(graph), cpu.DiskCache(tmp_path), target)(args)
    for got, want in zip(native, evaluate(graph, args), strict=True):
        np.testing.assert_array_equal(got, want)


def test_autocast_rounds_the_operands_and_accumulates_in_float32():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((8, 300)).astype(np.float32), rng.standard_normal((300, 5)).astype(np.float32)
    exact = _rounded(x).astype(np.float64) @ _rounded(w).astype(np.float64)
    # float32 accumulation of 300 exact products, then one rounding to bfloat16
    bound = U * np.abs(exact) + 300 * F32 * (np.abs(x) @ np.abs(w))
    for dev in (braze.CPU, braze.LAZY_CPU):
        with braze.autocast("bfloat16"):
            y = braze.tensor(x, device=dev) @ braze.tensor(w, device=dev)
            assert braze.is_autocast_enabled()
        assert not braze.is_autocast_enabled()
        assert y.dtype is braze.float32
        assert (np.abs(y.numpy() - exact) <= bound).all()
        assert not np.allclose(y.numpy(), x @ w, rtol=1e-5)  # it did round


def test_autocast_leaves_other_ops_in_float32():
    x = braze.tensor([1.00390625, 3.0])  # 1 + 2^-8 is not a bfloat16
    with braze.autocast("bfloat16"):
        assert (x * 1.0).numpy()[0] == np.float32(1.00390625)
        assert x.sum().numpy() == np.float32(4.00390625)


def test_autocast_supports_bfloat16_only():
    with pytest.raises(braze.DTypeError, match="only bfloat16"):
        braze.autocast("float64")


@pytest.mark.parametrize(
    ("convolution", "filter_shape", "taps"),
    [(braze.conv2d, (3, 3, 5, 4), 3 * 3 * 5), (braze.depthwise_conv2d, (3, 3, 5, 2), 3 * 3)],
    ids=["conv2d", "depthwise_conv2d"],
)
def test_convolution_under_autocast_rounds_operands(convolution, filter_shape, taps):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 7, 7, 5)).astype(np.float32)
    w = rng.standard_normal(filter_shape).astype(np.float32)
    plain = convolution(braze.tensor(_rounded(x)), braze.tensor(_rounded(w)), padding="SAME").numpy()
    with braze.autocast():
        mixed = convolution(braze.tensor(x), braze.tensor(w), padding="SAME").numpy()
    scale = convolution(braze.tensor(np.abs(x)), braze.tensor(np.abs(w)), padding="SAME").numpy()
    assert (np.abs(mixed - plain) <= U * np.abs(plain) + 2 * taps * F32 * scale).all()
    assert not np.allclose(mixed, convolution(braze.tensor(x), braze.tensor(w), padding="SAME").numpy())


@pytest.mark.parametrize("device", ["cpu", "lazy"])
def test_autocast_gradients_match_float64_finite_differences(device):
    """The loss sum(c * (x @ w)) under autocast. Its derivative treats each rounding as the
    identity (as every framework's autocast), so it is compared with float64 central
    differences of the unrounded product: d/dx = c @ w.T, computed from c, w rounded to
    bfloat16 (2u each), a float32 sum of K products (K ulps), and rounded (u): within
    (3u + K * 2^-24) |c| @ |w|.T plus u |d/dx|."""
    dev = braze.LAZY_CPU if device == "lazy" else braze.CPU
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 40))
    w = rng.standard_normal((40, 9))
    c = rng.standard_normal((6, 9))

    def loss(a, b):
        with braze.autocast():
            return (braze.tensor(c.astype(np.float32), device=dev) * (a @ b)).sum()

    gx, gw = braze.grad(loss, argnums=(0, 1))(
        braze.tensor(x.astype(np.float32), device=dev), braze.tensor(w.astype(np.float32), device=dev)
    )
    eps = 1e-6

    def numeric(f, at):
        out = np.empty_like(at)
        for i in np.ndindex(at.shape):
            plus, minus = at.copy(), at.copy()
            plus[i] += eps
            minus[i] -= eps
            out[i] = (f(plus) - f(minus)) / (2 * eps)
        return out

    nx = numeric(lambda v: float((c * (v @ w)).sum()), x)
    nw = numeric(lambda v: float((c * (x @ v)).sum()), w)
    for got, want, scale, k in ((gx, nx, np.abs(c) @ np.abs(w).T, 9), (gw, nw, np.abs(x).T @ np.abs(c), 6)):
        bound = (3 * U + k * F32) * scale + U * np.abs(want) + 1e-6
        assert (np.abs(got.numpy() - want) <= bound).all()
        assert not np.allclose(got.numpy(), want, rtol=1e-6)  # the cotangents were rounded


def _conv_same(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A stride-1 SAME convolution in float64, tap by tap."""
    kh, kw = w.shape[:2]
    xp = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    h, wd = x.shape[1:3]
    return sum(np.einsum("nhwc,co->nhwo", xp[:, a : a + h, b : b + wd], w[a, b]) for a in range(kh) for b in range(kw))


def _conv_same_gradients(x: np.ndarray, w: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gradients of sum(c * _conv_same(x, w)) in x and w, in float64."""
    kh, kw = w.shape[:2]
    xp = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    h, wd = x.shape[1:3]
    gxp, gw = np.zeros_like(xp), np.zeros_like(w)
    for a in range(kh):
        for b in range(kw):
            gxp[:, a : a + h, b : b + wd] += np.einsum("nhwo,co->nhwc", c, w[a, b])
            gw[a, b] = np.einsum("nhwc,nhwo->co", xp[:, a : a + h, b : b + wd], c)
    return gxp[:, kh // 2 : kh // 2 + h, kw // 2 : kw // 2 + wd], gw


def test_autocast_convolution_gradients_match_float64_finite_differences():
    """The loss sum(c * conv(x, w)) under autocast, compiled (16 channels in and out: the
    bfloat16 pair kernels, forward and both gradients, where the target has them), against
    float64 central differences of the unrounded convolution at sampled coordinates, within
    the bound of the matrix-product test with K the products each gradient sums."""
    rng = np.random.default_rng(10)
    x, w, c = (
        rng.standard_normal((2, 6, 7, 16)),
        rng.standard_normal((3, 3, 16, 16)),
        rng.standard_normal((2, 6, 7, 16)),
    )
    dev = braze.LAZY_CPU

    def loss(a, b):
        with braze.autocast():
            return (braze.tensor(c.astype(np.float32), device=dev) * braze.conv2d(a, b, padding="SAME")).sum()

    gx, gw = braze.grad(loss, argnums=(0, 1))(
        braze.tensor(x.astype(np.float32), device=dev), braze.tensor(w.astype(np.float32), device=dev)
    )
    scales = _conv_same_gradients(np.abs(x), np.abs(w), np.abs(c))  # the magnitudes each element sums
    eps = 1e-6
    for got, at, scale, k, f in (
        (gx.numpy(), x, scales[0], 3 * 3 * 16, lambda v: (c * _conv_same(v, w)).sum()),
        (gw.numpy(), w, scales[1], 2 * 6 * 7, lambda v: (c * _conv_same(x, v)).sum()),
    ):
        for flat in rng.choice(at.size, 24, replace=False):
            i = np.unravel_index(flat, at.shape)
            plus, minus = at.copy(), at.copy()
            plus[i] += eps
            minus[i] -= eps
            want = (f(plus) - f(minus)) / (2 * eps)
            assert abs(got[i] - want) <= (3 * U + k * F32) * scale[i] + U * abs(want) + 1e-6, i
    assert not np.allclose(gx.numpy(), _conv_same_gradients(x, w, c)[0], rtol=1e-6)  # the cotangents were rounded


@pytest.mark.parametrize("device", ["cpu", "lazy"])
def test_bfloat16_convolutions_and_their_gradients_round_once(device):
    """A convolution of bfloat16 tensors accumulates in float32 and rounds once, to
    bfloat16; so do its gradients (with respect to bfloat16 operands, bfloat16)."""
    dev = braze.LAZY_CPU if device == "lazy" else braze.CPU
    rng = np.random.default_rng(11)
    x, w, c = (
        _rounded(rng.standard_normal(s).astype(np.float32)) for s in ((2, 5, 6, 3), (3, 3, 3, 16), (2, 5, 6, 16))
    )
    wide = [v.astype(np.float64) for v in (x, w, c)]
    a, b, ct = (braze.tensor(v, "bfloat16", dev) for v in (x, w, c))
    y = braze.conv2d(a, b, padding="SAME")
    gx, gw = braze.grad(lambda p, q: (braze.conv2d(p, q, padding="SAME") * ct).sum(), argnums=(0, 1))(a, b)
    assert y.dtype is gx.dtype is gw.dtype is braze.bfloat16
    scales = _conv_same(*(np.abs(v) for v in wide[:2])), *_conv_same_gradients(*(np.abs(v) for v in wide))
    for got, want, scale, k in zip(
        (y, gx, gw), (_conv_same(*wide[:2]), *_conv_same_gradients(*wide)), scales, (27, 144, 60), strict=True
    ):
        assert (np.abs(got.numpy() - want) <= U * np.abs(want) + k * F32 * scale).all()


def test_second_derivatives_flow_through_autocast():
    """The Hessian-vector product of sum((x @ w)^2) / 2 in x: (v @ w) @ w.T, every product
    on rounded operands (four roundings of operands or results per product)."""
    rng = np.random.default_rng(5)
    x, w, v = rng.standard_normal((3, 16)), rng.standard_normal((16, 4)), rng.standard_normal((3, 16))

    def loss(a):
        with braze.autocast():
            y = a @ braze.tensor(w.astype(np.float32))
        return (y * y).sum() * 0.5

    _, hv = braze.jvp(braze.grad(loss), (braze.tensor(x.astype(np.float32)),), (braze.tensor(v.astype(np.float32)),))
    want = (v @ w) @ w.T
    scale = (np.abs(v) @ np.abs(w)) @ np.abs(w).T
    assert (np.abs(hv.numpy() - want) <= (8 * U + 32 * F32) * scale).all()


@pytest.mark.skipif(not cpu.available(), reason="no C compiler")
@pytest.mark.parametrize("target", runnable_targets())
def test_the_target_says_whether_it_has_bfloat16_dot_products(target):
    from braze.backends.cpu.compiler import find_compiler

    described = find_compiler(target).target
    assert described.bfloat16_dot == ("__AVX512BF16__" in described.macros)
    assert described.bfloat16_dot == ("bfloat16 dot products" in described.describe())


def test_keras_mixed_bfloat16_policy_turns_autocast_on_for_the_program():
    from braze.keras import mixed_precision

    x = braze.tensor([[1.00390625, 1.0]])
    w = braze.tensor([[1.0], [1.0]])
    try:
        mixed_precision.set_global_policy("mixed_bfloat16")
        assert mixed_precision.global_policy().compute_dtype == "bfloat16"
        assert (x @ w).numpy()[0, 0] == 2.0  # 1 + 2^-8 rounded to 1
    finally:
        mixed_precision.set_global_policy("float32")
    assert (x @ w).numpy()[0, 0] == np.float32(2.00390625)
    with pytest.raises(ValueError, match="mixed_float16"):
        mixed_precision.set_global_policy("mixed_float16")


# (lhs shape, rhs shape, lhs contracting, rhs contracting): odd and even depths, columns
# that fill no whole vector, and each operand transposed (a dense layer's two gradients).
PRODUCTS = [
    ((37, 23), (23, 40), 1, 0),
    ((5, 64), (64, 16), 1, 0),
    ((23, 37), (23, 9), 0, 0),
    ((8, 31), (130, 31), 1, 1),
]


@pytest.mark.skipif(not cpu.available(), reason="no C compiler")
@pytest.mark.parametrize("target", runnable_targets())
def test_bfloat16_matrix_products_accumulate_in_float32_on_every_target(target, tmp_path, monkeypatch):
    """Compiled from the bfloat16 operands (with vdpbf16ps where the target has it), within
    float32 accumulation of K exact products (and the instruction's flush of subnormal
    products, below 2^-126 each) of the float64 product."""
    from braze.backends.cpu.compiler import find_compiler
    from braze.ir.text import parse_graph

    monkeypatch.setenv("BRAZE_DUMP", str(tmp_path / "dump"))
    rng = np.random.default_rng(6)
    for lhs, rhs, lc, rc in PRODUCTS:
        m, n = lhs[1 - lc], rhs[1 - rc]
        dims = f"lhs_batch=(), lhs_contracting=({lc},), rhs_batch=(), rhs_contracting=({rc},)"
        graph = parse_graph(
            f"""graph(%0: bf16[{lhs[0]},{lhs[1]}], %1: bf16[{rhs[0]},{rhs[1]}]) {{
  %2 = dot_general(%0, %1) {{{dims}}} : f32[{m},{n}]
  return (%2)
}}"""
        )
        optimized = cpu.optimize(graph, verify=True)
        (product,) = _products(optimized)
        assert all(i.dtype is braze.bfloat16 for i in product.inputs)
        a, b = (to_bfloat16(rng.standard_normal(s).astype(np.float32)) for s in (lhs, rhs))
        (got,) = cpu.compile_graph(optimized, cpu.DiskCache(tmp_path / "cache"), target)([a, b])
        wa, wb = from_bfloat16(a).astype(np.float64), from_bfloat16(b).astype(np.float64)
        wa, wb = (wa if lc == 1 else wa.T), (wb if rc == 0 else wb.T)
        k = wa.shape[1]
        bound = k * F32 * (np.abs(wa) @ np.abs(wb)) + k * 2.0**-126
        assert got.dtype == np.float32 and got.shape == (m, n)
        assert (np.abs(got - wa @ wb) <= bound).all()
    sources = "".join(p.read_text() for p in (tmp_path / "dump").rglob("*.c"))
    assert "braze_from_bf16(am[" in sources or "_mm512_dpbf16_ps" in sources  # read as bfloat16
    assert ("_mm512_dpbf16_ps" in sources) == find_compiler(target).target.bfloat16_dot


def _products(graph) -> list:
    """The dot_generals inside the fused kernels of an optimized graph."""
    return [
        inner
        for node in graph.nodes()
        if node.op.name == "fusion"
        for inner in node.attr("computation").nodes()
        if inner.op.name == "dot_general"
    ]


@pytest.mark.skipif(not cpu.available(), reason="no C compiler")
def test_autocast_products_read_the_bfloat16_operands():
    """What autocast records (float32 products of rounded values) compiles to products of
    the bfloat16 values themselves, forward and in both gradients."""
    from braze.lazy import explain

    def step(x, w):
        with braze.autocast():
            return braze.grad(lambda a, b: ((a @ b) ** 2).sum(), argnums=(0, 1))(x, w)

    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((32, 24)).astype(np.float32), rng.standard_normal((24, 40)).astype(np.float32)
    report = explain(step, braze.tensor(x, device=braze.LAZY_CPU), braze.tensor(w, device=braze.LAZY_CPU))
    products = _products(report.optimized)
    assert len(products) == 3
    assert all(i.dtype is braze.bfloat16 for p in products for i in p.inputs)


def test_jit_compiles_again_when_autocast_changes():
    step = braze.jit(lambda a, b: a @ b)
    x, w = braze.tensor([[1.00390625, 1.0]]), braze.tensor([[1.0], [1.0]])
    assert step(x, w).numpy()[0, 0] == np.float32(2.00390625)
    with braze.autocast():
        assert step(x, w).numpy()[0, 0] == 2.0  # 1 + 2^-8 rounded to 1
    assert step(x, w).numpy()[0, 0] == np.float32(2.00390625)
    assert step.compiles == 2


def test_braze_train_lenet_under_autocast(capsys):
    from braze import cli

    args = ["train", "lenet", "--device", "lazy", "--autocast", "bf16", "--epochs", "1", "--steps-per-epoch", "3"]
    assert cli.main([*args, "--eval-steps", "2"]) == 0
    out = capsys.readouterr().out
    assert "Mixed precision: bfloat16 products" in out and "[Epoch 0] Training Loss:" in out
    assert not braze.is_autocast_enabled()  # only while it trained


# (op, lhs shape, rhs shape, strides, padding, result shape): an odd and an even reduction
# per op (a filter row's taps x channels; the output pixels of a filter gradient), row and
# column strides, padding, and one or two vectors of output channels.
CONVOLUTIONS = [
    ("conv", (2, 9, 10, 3), (3, 3, 3, 32), (2, 1), ((1, 1), (0, 2)), (2, 5, 10, 32)),
    ("conv", (1, 7, 8, 20), (3, 2, 20, 16), (1, 2), ((0, 0), (0, 0)), (1, 5, 4, 16)),
    ("conv_grad_input", (2, 5, 6, 17), (3, 3, 32, 17), (2, 2), ((1, 1), (1, 1)), (2, 9, 11, 32)),
    ("conv_grad_filter", (2, 9, 11, 5), (2, 4, 7, 16), (2, 2), ((1, 0), (2, 2)), (3, 3, 5, 16)),
    ("conv_grad_filter", (1, 6, 9, 8), (1, 4, 6, 32), (1, 1), ((0, 0), (0, 0)), (3, 4, 8, 32)),
]


def _contraction_graph(op: str, attrs: str, lhs, rhs, out, dtype: str):
    """``op`` of two float32 operands read back from ``dtype`` (what autocast records for
    bfloat16, the float64 reference otherwise)."""
    from braze.ir.text import parse_graph

    wide = "f64" if dtype == "f64" else "f32"
    a, b, c = (",".join(map(str, s)) for s in (lhs, rhs, out))
    return parse_graph(
        f"""graph(%0: {dtype}[{a}], %1: {dtype}[{b}]) {{
  %2 = convert(%0) {{dtype={wide}}} : {wide}[{a}]
  %3 = convert(%1) {{dtype={wide}}} : {wide}[{b}]
  %4 = {op}(%2, %3) {{{attrs}}} : {wide}[{c}]
  return (%4)
}}"""
    )


def _check_compiled_from_bfloat16(op: str, attrs: str, lhs, rhs, out, k: int, target: str, tmp_path, rng) -> None:
    """``op`` compiled from the bfloat16 operands (vdpbf16ps where the target has it,
    float32 after widening elsewhere), against the reference interpreter in float64 on the
    same bfloat16 values: within float32 accumulation of ``k`` exact products (k ulps of
    the sum of their magnitudes, and the instruction's flush of subnormal products, below
    2^-126 each)."""
    from braze.backends.reference.interpreter import evaluate

    optimized = cpu.optimize(_contraction_graph(op, attrs, lhs, rhs, out, "bf16"), verify=True)
    (kernel,) = [
        inner
        for node in optimized.nodes()
        if node.op.name == "fusion"
        for inner in node.attr("computation").nodes()
        if inner.op.name == op
    ]
    assert all(i.dtype is braze.bfloat16 for i in kernel.inputs)
    a, b = (to_bfloat16(rng.standard_normal(s).astype(np.float32)) for s in (lhs, rhs))
    (got,) = cpu.compile_graph(optimized, cpu.DiskCache(tmp_path / "cache"), target)([a, b])
    exact = _contraction_graph(op, attrs, lhs, rhs, out, "f64")
    wa, wb = (from_bfloat16(v).astype(np.float64) for v in (a, b))
    (want,) = evaluate(exact, [wa, wb])
    (scale,) = evaluate(exact, [np.abs(wa), np.abs(wb)])
    assert got.dtype == np.float32 and got.shape == out
    assert (np.abs(got - want) <= k * F32 * scale + k * 2.0**-126).all(), op


def _reduction_length(op: str, rhs, out) -> int:
    """Products summed per result: filter taps x input channels (conv), taps x cotangent
    channels (input gradient: at most), output pixels (filter gradient)."""
    if op == "conv_grad_input":
        return rhs[0] * rhs[1] * rhs[3]
    return rhs[0] * rhs[1] * rhs[2]


@pytest.mark.skipif(not cpu.available(), reason="no C compiler")
@pytest.mark.parametrize("target", runnable_targets())
def test_bfloat16_convolutions_accumulate_in_float32_on_every_target(target, tmp_path, monkeypatch):
    """Forward, input-gradient and filter-gradient convolutions from bfloat16 operands."""
    from braze.backends.cpu.compiler import find_compiler

    monkeypatch.setenv("BRAZE_DUMP", str(tmp_path / "dump"))
    rng = np.random.default_rng(8)
    for op, lhs, rhs, strides, padding, out in CONVOLUTIONS:
        extra = {"conv_grad_input": f", input_hw={out[1:3]}", "conv_grad_filter": f", filter_hw={out[:2]}"}.get(op, "")
        attrs = f"strides={strides}, padding={padding}, dilation=(1, 1){extra}"
        _check_compiled_from_bfloat16(op, attrs, lhs, rhs, out, _reduction_length(op, rhs, out), target, tmp_path, rng)
    sources = "".join(p.read_text() for p in (tmp_path / "dump").rglob("*.c"))
    assert ("_mm512_dpbf16_ps" in sources) == find_compiler(target).target.bfloat16_dot


# (lhs, rhs, dimensions, result, depth): attention's batched q @ k^T (an odd depth), and a
# 3-D lhs whose batch and time collapse into the rows (x @ W over batch, time, channels).
BATCHED_PRODUCTS = [
    (
        (2, 3, 5, 17),
        (2, 3, 24, 17),
        "lhs_batch=(0, 1), lhs_contracting=(3,), rhs_batch=(0, 1), rhs_contracting=(3,)",
        (2, 3, 5, 24),
        17,
    ),
    ((2, 7, 16), (16, 40), "lhs_batch=(), lhs_contracting=(2,), rhs_batch=(), rhs_contracting=(0,)", (2, 7, 40), 16),
]


@pytest.mark.skipif(not cpu.available(), reason="no C compiler")
@pytest.mark.parametrize("target", runnable_targets())
def test_batched_bfloat16_products_accumulate_in_float32_on_every_target(target, tmp_path):
    rng = np.random.default_rng(9)
    for lhs, rhs, dims, out, depth in BATCHED_PRODUCTS:
        _check_compiled_from_bfloat16("dot_general", dims, lhs, rhs, out, depth, target, tmp_path, rng)
