"""PyTorch's tensor methods (braze.torch_methods) against NumPy transcriptions of PyTorch's
documented rules: conversions, copies, shapes, indexing, comparisons, reductions along
``dim`` (PyTorch's ``(values, indices)`` and N - 1 divisor there, NumPy's readings without
it), eagerly, on the lazy device and compiled, with gradients where they are linear."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.ir.errors import DTypeError, ShapeError

A = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 11.5) * np.float32(0.75)
DEVICES = [braze.CPU, braze.LAZY_CPU]
DEVICE_IDS = ["eager", "lazy"]


def _x(device=braze.CPU) -> braze.Tensor:
    return braze.tensor(A, device=device)


# Method, its NumPy transcription of PyTorch's rule.
SAME_AS_NUMPY = [
    ("float", lambda x: x.astype(np.int32).float(), lambda a: a.astype(np.int32).astype(np.float32)),
    ("long", lambda x: x.long(), lambda a: a.astype(np.int64)),
    ("int", lambda x: x.int(), lambda a: a.astype(np.int32)),
    ("bool", lambda x: x.bool(), lambda a: a.astype(bool)),
    ("double", lambda x: x.double(), lambda a: a.astype(np.float64)),
    ("expand", lambda x: x[:, :1].expand(2, 3, 4), lambda a: np.broadcast_to(a[:, :1], (2, 3, 4))),
    (
        "expand -1 and new axis",
        lambda x: x[:, :1].expand(5, -1, 3, -1),
        lambda a: np.broadcast_to(a[:, :1], (5, 2, 3, 4)),
    ),
    ("expand_as", lambda x: x[:1].expand_as(x), lambda a: np.broadcast_to(a[:1], a.shape)),
    ("view_as", lambda x: x.reshape(4, 6).view_as(x), lambda a: a),
    ("t", lambda x: x[0].t(), lambda a: a[0].T),
    ("mT", lambda x: x.mT, lambda a: np.swapaxes(a, -2, -1)),
    ("movedim", lambda x: x.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
    ("movedim pairs", lambda x: x.movedim((0, 1), (2, 0)), lambda a: np.moveaxis(a, (0, 1), (2, 0))),
    ("narrow", lambda x: x.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
    ("narrow negative start", lambda x: x.narrow(1, -2, 2), lambda a: a[:, 1:3]),
    ("select", lambda x: x.select(1, -1), lambda a: a[:, -1]),
    ("flip", lambda x: x.flip((0, 2)), lambda a: np.flip(a, (0, 2))),
    ("roll", lambda x: x.roll(1, 2), lambda a: np.roll(a, 1, 2)),
    ("roll several", lambda x: x.roll((-1, 5), (0, 2)), lambda a: np.roll(a, (-1, 5), (0, 2))),
    ("roll flattened", lambda x: x.roll(3), lambda a: np.roll(a, 3)),
    (
        "gather",
        lambda x: x.gather(2, [[[3, 0], [1, 1], [2, 0]], [[0, 0], [3, 3], [1, 2]]]),
        lambda a: np.take_along_axis(a, np.array([[[3, 0], [1, 1], [2, 0]], [[0, 0], [3, 3], [1, 2]]]), 2),
    ),
    (
        "gather of a smaller index",
        lambda x: x.gather(1, [[[2, 0, 1]]]),
        lambda a: np.take_along_axis(a[:1, :, :3], np.array([[[2, 0, 1]]]), 1),
    ),
    ("index_select", lambda x: x.index_select(1, [2, 0, 2]), lambda a: a[:, [2, 0, 2]]),
    ("masked_select", lambda x: x.masked_select(x[0] > 0), lambda a: a[np.broadcast_to(a[0] > 0, a.shape)]),
    ("pow", lambda x: x.pow(2), lambda a: a**2),
    ("square", lambda x: x.square(), lambda a: a * a),
    ("rsqrt", lambda x: x.abs().rsqrt(), lambda a: np.float32(1) / np.sqrt(np.abs(a))),
    ("reciprocal", lambda x: x.reciprocal(), lambda a: np.float32(1) / a),
    ("neg", lambda x: x.neg(), lambda a: -a),
    ("sign", lambda x: x.sign(), lambda a: np.sign(a)),
    ("clamp", lambda x: x.clamp(min=-1.0, max=2.0), lambda a: np.clip(a, -1.0, 2.0)),
    ("clamp min", lambda x: x.clamp(min=0.0), lambda a: np.maximum(a, 0.0)),
    ("clip", lambda x: x.clip(-1.0, 2.0), lambda a: np.clip(a, -1.0, 2.0)),
    (
        "eq ne lt le gt ge",
        lambda x: braze.stack([x.eq(1.5), x.ne(1.5), x.lt(0), x.le(0), x.gt(0), x.ge(0)]),
        lambda a: np.stack([a == 1.5, a != 1.5, a < 0, a <= 0, a > 0, a >= 0]),
    ),
    (
        "logical",
        lambda x: braze.stack([(x > 0).logical_and(x < 3), (x > 0).logical_or(x < -3), (x > 0).logical_not()]),
        lambda a: np.stack([(a > 0) & (a < 3), (a > 0) | (a < -3), ~(a > 0)]),
    ),
    ("mm", lambda x: x[0].mm(x[1].t()), lambda a: a[0] @ a[1].T),
    ("bmm", lambda x: x.bmm(x.mT), lambda a: a @ np.swapaxes(a, 1, 2)),
    ("matmul", lambda x: x.matmul(x.mT), lambda a: a @ np.swapaxes(a, 1, 2)),
    ("sum dim keepdim", lambda x: x.sum(dim=1, keepdim=True), lambda a: a.sum(1, keepdims=True)),
    ("mean dims", lambda x: x.mean(dim=(0, 2)), lambda a: a.mean((0, 2))),
    ("prod dim", lambda x: x.prod(dim=-1), lambda a: a.prod(-1)),
    ("argmax dim", lambda x: x.argmax(dim=1, keepdim=True), lambda a: a.argmax(1, keepdims=True)),
    ("argmin dim", lambda x: x.argmin(dim=2), lambda a: a.argmin(2)),
    ("cumsum dim", lambda x: x.cumsum(dim=1), lambda a: a.cumsum(1)),
    ("amax", lambda x: x.amax(dim=(0, 1)), lambda a: a.max((0, 1))),
    ("amin keepdim", lambda x: x.amin(dim=1, keepdim=True), lambda a: a.min(1, keepdims=True)),
    ("max without dim is numpys", lambda x: x.max(1), lambda a: a.max(1)),
    ("var without dim is numpys", lambda x: x.var(), lambda a: a.var()),
    ("var dim divides by n - 1", lambda x: x.var(dim=1), lambda a: a.var(1, ddof=1)),
    ("var dim unbiased false", lambda x: x.var(dim=1, unbiased=False), lambda a: a.var(1)),
    ("var correction", lambda x: x.var(correction=2), lambda a: a.var(ddof=2)),
    ("std", lambda x: x.std(), lambda a: a.std()),
    ("std dim keepdim", lambda x: x.std(dim=2, keepdim=True), lambda a: a.std(2, ddof=1, keepdims=True)),
    ("std ddof", lambda x: x.std(0, ddof=1), lambda a: a.std(0, ddof=1)),
    ("softmax", lambda x: x.softmax(1), lambda a: np.exp(a) / np.exp(a).sum(1, keepdims=True)),
    ("log_softmax", lambda x: x.log_softmax(-1), lambda a: a - np.log(np.exp(a).sum(-1, keepdims=True))),
    ("logsumexp", lambda x: x.logsumexp(2), lambda a: np.log(np.exp(a).sum(2))),
    ("any", lambda x: (x > 7).any(dim=2), lambda a: (a > 7).any(2)),
    ("all", lambda x: x.all(), lambda a: np.all(a)),
    ("all keepdim", lambda x: (x > -7).all(dim=1, keepdim=True), lambda a: (a > -7).all(1, keepdims=True)),
    ("norm", lambda x: x.norm(), lambda a: np.sqrt((a.astype(np.float64) ** 2).sum()).astype(np.float32)),
    ("norm 1 dim", lambda x: x.norm(1, dim=2), lambda a: np.abs(a).sum(2)),
    ("norm inf", lambda x: x.norm(float("inf"), dim=(1, 2)), lambda a: np.abs(a).max((1, 2))),
    ("new_full", lambda x: x.new_full((2, 1), 7), lambda a: np.full((2, 1), 7, np.float32)),
    ("new_zeros", lambda x: x.new_zeros(3, 2), lambda a: np.zeros((3, 2), np.float32)),
    ("new_ones", lambda x: x.long().new_ones((2,)), lambda a: np.ones(2, np.int64)),
    ("new_tensor", lambda x: x.new_tensor([1, 2]), lambda a: np.array([1.0, 2.0], np.float32)),
    ("type_as", lambda x: x.type_as(braze.tensor([1], dtype="int64")), lambda a: a.astype(np.int64)),
    ("to dtype", lambda x: x.to(braze.float64), lambda a: a.astype(np.float64)),
    ("cat", lambda x: braze.cat([x, x[:, :1]], dim=1), lambda a: np.concatenate([a, a[:, :1]], 1)),
    ("stack dim", lambda x: braze.stack([x, x], dim=2), lambda a: np.stack([a, a], 2)),
]


@pytest.mark.parametrize(("name", "method", "numpy"), SAME_AS_NUMPY, ids=[c[0] for c in SAME_AS_NUMPY])
@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_a_pytorch_method_gives_pytorchs_result(name, method, numpy, device):
    got, expected = method(_x(device)), numpy(A)
    assert got.shape == expected.shape
    # braze's positions are its index dtype (int32), PyTorch's int64: integers both.
    assert got.dtype.name == expected.dtype.name or got.dtype.kind == expected.dtype.kind == "i"
    # The products and reductions round as float32 does; everything else is exact.
    np.testing.assert_allclose(got.numpy(), expected, rtol=3e-6, atol=3e-6 * np.abs(A).max())


@pytest.mark.parametrize("name", ["gather", "index_select", "roll several", "expand -1 and new axis", "narrow"])
def test_pytorch_methods_compile_and_differentiate_as_numpy_reads_them(name):
    method = dict((c[0], c[1]) for c in SAME_AS_NUMPY)[name]
    np.testing.assert_array_equal(braze.jit(method)(_x()).numpy(), method(_x()).numpy())
    weights = np.random.default_rng(0).standard_normal(method(_x()).shape).astype(np.float32)
    grad = braze.grad(lambda t: (method(t) * braze.tensor(weights)).sum())(_x())
    # The method only moves elements: its gradient scatters each weight back to its source.
    positions = braze.tensor(np.arange(A.size, dtype=np.float32).reshape(A.shape))
    sources = method(positions).numpy().astype(np.int64)
    expected = np.zeros(A.size, np.float32)
    np.add.at(expected, sources.reshape(-1), weights.reshape(-1))
    np.testing.assert_allclose(grad.numpy().reshape(-1), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_max_min_and_sort_along_a_dim_give_values_and_indices(device):
    a = np.array([[3.0, 1.0, 3.0, -2.0], [0.0, 5.0, 5.0, 1.0]], np.float32)
    x = braze.tensor(a, device=device)
    values, indices = x.max(dim=1)
    np.testing.assert_array_equal(values.numpy(), a.max(1))
    np.testing.assert_array_equal(indices.numpy(), a.argmax(1))  # the first of ties
    low = x.min(dim=0, keepdim=True)
    np.testing.assert_array_equal(low.values.numpy(), a.min(0, keepdims=True))
    np.testing.assert_array_equal(low.indices.numpy(), a.argmin(0)[None])
    ordered = x.sort(dim=1, descending=True)
    np.testing.assert_array_equal(ordered.values.numpy(), -np.sort(-a, 1))
    np.testing.assert_array_equal(ordered.indices.numpy(), np.argsort(-a, 1, kind="stable"))
    np.testing.assert_array_equal(x.sort().numpy(), np.sort(a))  # without dim: NumPy's values


def test_clone_is_a_new_tensor_that_gradients_flow_through():
    x = braze.tensor(A, requires_grad=True)
    copy = x.clone()
    assert copy is not x
    (copy * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full_like(A, 3.0))
    plain = braze.tensor(A)
    copy = plain.clone()
    copy += 1.0
    np.testing.assert_array_equal(plain.numpy(), A)  # the original keeps its values
    copy.requires_grad_()
    assert not plain.requires_grad


def test_in_place_fill_zero_and_copy_replace_the_values():
    x = braze.tensor(A)
    assert x.fill_(2.5) is x
    np.testing.assert_array_equal(x.numpy(), np.full_like(A, 2.5))
    x.zero_()
    np.testing.assert_array_equal(x.numpy(), np.zeros_like(A))
    x.copy_(np.arange(4))
    np.testing.assert_array_equal(x.numpy(), np.broadcast_to(np.arange(4, dtype=np.float32), A.shape))
    with pytest.raises(RuntimeError, match="in-place update of a tensor that requires grad"):
        braze.tensor(A, requires_grad=True).zero_()


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_nonzero_asks_which_librarys_result(device):
    a = np.array([[0.0, 1.5], [-2.0, 0.0]], np.float32)
    x = braze.tensor(a, device=device)
    np.testing.assert_array_equal(x.nonzero(as_tuple=False).numpy(), np.argwhere(a))
    for got, expected in zip(x.nonzero(as_tuple=True), np.nonzero(a), strict=True):
        np.testing.assert_array_equal(got.numpy(), expected)
    with pytest.raises(TypeError, match="as_tuple=False"):
        x.nonzero()


def test_float_classification():
    a = np.array([0.0, -np.inf, np.nan, 3.0, np.inf], np.float32)
    x = braze.tensor(a)
    np.testing.assert_array_equal(x.isnan().numpy(), np.isnan(a))
    np.testing.assert_array_equal(x.isinf().numpy(), np.isinf(a))
    np.testing.assert_array_equal(x.isfinite().numpy(), np.isfinite(a))
    ints = braze.tensor([1, 2])
    assert not ints.isnan().numpy().any() and ints.isfinite().numpy().all()
    assert x.is_floating_point() and not ints.is_floating_point() and x.element_size() == 4


def test_misuse_is_a_clear_error():
    x = _x()
    with pytest.raises(DTypeError, match="no float16"):
        x.half()
    with pytest.raises(ShapeError, match="rank at most 2"):
        x.t()
    with pytest.raises(ShapeError, match="-1 is not allowed"):
        x.expand(-1, 2, 3, 4)
    with pytest.raises(ShapeError, match="rank 2"):
        x.mm(x)
    with pytest.raises(ShapeError, match="at most its size"):
        x[:, :2].gather(1, np.zeros((3, 1, 1), np.int64))  # 3 rows where the tensor has 2
    with pytest.raises(IndexError, match="narrow"):
        x.narrow(2, 3, 2)
    with pytest.raises(TypeError, match="both axis and dim"):
        x.sum(0, dim=1)
    with pytest.raises(TypeError, match="both correction and unbiased"):
        x.var(correction=1, unbiased=True)
    with pytest.raises(TypeError, match="clamp: give min, max or both"):
        x.clamp()
    with pytest.raises(ValueError, match="norm: p must be"):
        x.norm(3)


IN_PLACE = [
    ("add_", lambda t: t.add_(2.0), lambda a: a + 2),
    ("add_ alpha", lambda t: t.add_(braze.tensor(A, device=t.device), alpha=0.5), lambda a: a + 0.5 * a),
    ("sub_ alpha", lambda t: t.sub_(1.5, alpha=2), lambda a: a - 3),
    ("mul_", lambda t: t.mul_(-2.0), lambda a: a * -2),
    ("div_", lambda t: t.div_(4.0), lambda a: a / 4),
    ("pow_", lambda t: t.pow_(2), lambda a: a**2),
    ("neg_", lambda t: t.neg_(), lambda a: -a),
    ("abs_", lambda t: t.abs_(), lambda a: np.abs(a)),
    ("sqrt_", lambda t: t.abs_().sqrt_(), lambda a: np.sqrt(np.abs(a))),
    ("exp_", lambda t: t.exp_(), lambda a: np.exp(a)),
    ("clamp_", lambda t: t.clamp_(-1.0, 1.0), lambda a: np.clip(a, -1, 1)),
]


@pytest.mark.parametrize(("name", "method", "numpy"), IN_PLACE, ids=[c[0] for c in IN_PLACE])
@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_an_in_place_method_updates_the_tensor_itself(name, method, numpy, device):
    x = _x(device)
    assert method(x) is x
    # exp_, sqrt_ and pow_ compiled are braze's vector math, a few ulp from NumPy's.
    np.testing.assert_allclose(x.numpy(), numpy(A), rtol=2e-6, atol=0)


@pytest.mark.parametrize("mode", ["eager", "lazy", "jit"])
def test_data_updates_a_parameter_outside_the_gradient_computation(mode):
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    p = braze.tensor(A, requires_grad=True, device=device)

    def halve():
        p.data.mul_(0.5)

    run = braze.jit(halve) if mode == "jit" else halve
    run()
    run()
    if mode == "lazy":  # a barrier computes the parameter's new value, as it does any pending one
        braze.barrier()
        assert p._value.data is not None
    np.testing.assert_array_equal(p.numpy(), A * 0.25)
    assert p.requires_grad and p.is_leaf
    p.data = np.zeros_like(A)
    np.testing.assert_array_equal(p.numpy(), np.zeros_like(A))
    with pytest.raises(RuntimeError, match="requires grad"):
        p.mul_(2.0)  # on the parameter itself, as PyTorch's: only under no_grad


def test_random_fills_draw_their_distributions_in_place():
    w = braze.tensor(np.zeros((200, 100), np.float32), requires_grad=True)
    w.data.uniform_(-0.5, 0.25, generator=braze.Generator(1))
    values = w.numpy()
    assert values.min() >= -0.5 and values.max() < 0.25
    # 20,000 draws: the mean of U(-0.5, 0.25) within six standard errors.
    assert abs(values.mean() - (-0.125)) < 6 * 0.75 / np.sqrt(12) / np.sqrt(values.size)
    w.data.normal_(1.0, 0.02, generator=braze.Generator(2))
    values = w.numpy().astype(np.float64)
    assert abs(values.mean() - 1.0) < 6 * 0.02 / np.sqrt(values.size)
    assert abs(values.std() - 0.02) < 6 * 0.02 / np.sqrt(2 * values.size)
    with pytest.raises(ValueError, match="in-place update must keep"):
        braze.tensor([1, 2]).add_(0.5)  # an int tensor cannot take a float, as PyTorch's


@pytest.mark.parametrize("reps", [(2,), (2, 1), (1, 2, 3), (2, 1, 1, 2)], ids=repr)
def test_tile_repeats_the_tensor_as_numpy_and_pytorch(reps):
    np.testing.assert_array_equal(_x().tile(*reps).numpy(), np.tile(A, reps))
    np.testing.assert_array_equal(_x().tile(reps).numpy(), np.tile(A, reps))


def test_repeat_needs_an_axis_where_the_libraries_differ():
    np.testing.assert_array_equal(_x().repeat(2, axis=1).numpy(), A.repeat(2, axis=1))
    with pytest.raises(TypeError, match="x.tile"):
        _x().repeat(1, 2, 1)


def test_empty_is_a_tensor_of_zeros_to_fill():
    w = braze.empty((2, 3), "float64", braze.LAZY_CPU)
    assert w.shape == (2, 3) and w.dtype == braze.float64 and w.device == braze.LAZY_CPU
    np.testing.assert_array_equal(w.numpy(), np.zeros((2, 3)))


def test_positions_along_a_named_dim_are_pytorchs_int64():
    x = _x()
    assert x.argmax(dim=1).dtype == braze.int64 and x.argmin(dim=0, keepdim=True).dtype == braze.int64
    assert x.max(dim=2).indices.dtype == braze.int64 and x.sort(dim=1).indices.dtype == braze.int64
    assert x.argsort(dim=1).dtype == braze.int64
    assert x.argmax(1).dtype == braze.int32  # NumPy's reading keeps braze's index dtype
    # so a prediction compares with PyTorch's int64 targets, as in PyTorch's MNIST example
    targets = braze.tensor(A.argmax(1).astype(np.int64))
    assert x.argmax(dim=1).eq(targets).all()
