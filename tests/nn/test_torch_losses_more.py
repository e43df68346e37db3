"""PyTorch's other losses (nll_loss, mse_loss, l1_loss, smooth_l1_loss, huber_loss,
binary_cross_entropy, binary_cross_entropy_with_logits, kl_div) and their modules against
NumPy transcriptions of PyTorch's documented formulas, in float64, for every reduction;
eagerly, on the lazy device and under braze.jit; gradients against float64 finite
differences."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_gradients_match

import braze
from braze import nn
from braze.ir.errors import DTypeError, ShapeError
from braze.nn import functional as F

# References: PyTorch's documentation, elementwise in float64 ------------------------------


def _reduced(losses: np.ndarray, reduction: str, denominator: float | None = None) -> np.ndarray:
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / (losses.size if denominator is None else denominator)


def ref_nll(x, target, weight=None, ignore_index=-100, reduction="mean"):
    """l_n = -w_{y_n} x_{n, y_n}, 0 for an ignored target; the mean divides by the kept targets' weights."""
    axis = 0 if x.ndim == 1 else 1
    classes = x.shape[axis]
    rows = np.moveaxis(x.astype(np.float64), axis, -1).reshape(-1, classes)
    w = np.ones(classes) if weight is None else weight.astype(np.float64)
    labels = np.asarray(target).reshape(-1)
    losses, counted = np.zeros(len(labels)), np.zeros(len(labels))
    for n, y in enumerate(labels):
        if y != ignore_index:
            losses[n], counted[n] = -w[y] * rows[n, y], w[y]
    return _reduced(losses.reshape(np.shape(target)), reduction, counted.sum())


def ref_mse(x, y, reduction="mean", weight=None):
    w = np.ones_like(x) if weight is None else np.broadcast_to(weight, x.shape)
    return _reduced(w * (x - y) ** 2, reduction, w.sum())


def ref_l1(x, y, reduction="mean", weight=None):
    w = np.ones_like(x) if weight is None else np.broadcast_to(weight, x.shape)
    return _reduced(w * np.abs(x - y), reduction, w.sum())


def ref_smooth_l1(x, y, reduction="mean", beta=1.0):
    d = np.abs(x - y)
    losses = d if beta == 0 else np.where(d < beta, 0.5 * d**2 / beta, d - 0.5 * beta)
    return _reduced(losses, reduction)


def ref_huber(x, y, reduction="mean", delta=1.0, weight=None):
    d = np.abs(x - y)
    losses = np.where(d < delta, 0.5 * d**2, delta * (d - 0.5 * delta))
    return _reduced(losses * (1.0 if weight is None else weight), reduction)  # mean: over the elements


def ref_bce(x, y, weight=None, reduction="mean"):
    with np.errstate(divide="ignore"):
        log_x, log_1mx = np.maximum(np.log(x), -100), np.maximum(np.log(1 - x), -100)
    losses = -(y * log_x + (1 - y) * log_1mx)
    return _reduced(losses * (1.0 if weight is None else weight), reduction)


def ref_bce_logits(x, y, weight=None, reduction="mean", pos_weight=None):
    """-w [p y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))]; -log sigmoid(x) = log(1 + e^-x)
    and -log(1 - sigmoid(x)) = log(1 + e^x), evaluated by logaddexp."""
    p = 1.0 if pos_weight is None else pos_weight
    losses = p * y * np.logaddexp(0, -x) + (1 - y) * np.logaddexp(0, x)
    return _reduced(losses * (1.0 if weight is None else weight), reduction)


def ref_kl(x, y, reduction="mean", log_target=False):
    if log_target:
        losses = np.exp(y) * (y - x)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            losses = np.where(y > 0, y * (np.log(y) - x), 0.0)
    if reduction == "batchmean":
        return losses.sum() / x.shape[0]
    return _reduced(losses, reduction)


# Cases ------------------------------------------------------------------------------------------

RNG = np.random.default_rng(0)
SHAPE = (4, 3, 5)
X = RNG.standard_normal(SHAPE)
Y = RNG.standard_normal(SHAPE)
PROBABILITIES = RNG.uniform(0.02, 0.98, SHAPE)
BITS = (RNG.uniform(size=SHAPE) < 0.5).astype(np.float64)
ELEMENT_WEIGHT = RNG.uniform(0.1, 2.0, SHAPE)
CLASS_WEIGHT = RNG.uniform(0.1, 2.0, 5)  # broadcast over the last axis
LOG_P = np.log(RNG.dirichlet(np.ones(5), (4, 3)))  # distributions over the last axis
LOG_Q = np.log(RNG.dirichlet(np.ones(5), (4, 3)))

# name: (braze function, reference, input, target, options)
CASES = {
    "mse": (F.mse_loss, ref_mse, X, Y, {}),
    "mse weighted": (F.mse_loss, ref_mse, X, Y, {"weight": ELEMENT_WEIGHT}),
    "l1": (F.l1_loss, ref_l1, X, Y, {}),
    "l1 weighted": (F.l1_loss, ref_l1, X, Y, {"weight": ELEMENT_WEIGHT}),
    "smooth_l1": (F.smooth_l1_loss, ref_smooth_l1, X, Y, {}),
    "smooth_l1 beta 0.5": (F.smooth_l1_loss, ref_smooth_l1, X, Y, {"beta": 0.5}),
    "smooth_l1 beta 0": (F.smooth_l1_loss, ref_smooth_l1, X, Y, {"beta": 0.0}),
    "huber": (F.huber_loss, ref_huber, X, Y, {}),
    "huber delta 0.3 weighted": (F.huber_loss, ref_huber, X, Y, {"delta": 0.3, "weight": ELEMENT_WEIGHT}),
    "bce": (F.binary_cross_entropy, ref_bce, PROBABILITIES, BITS, {}),
    "bce soft targets weighted": (
        F.binary_cross_entropy,
        ref_bce,
        PROBABILITIES,
        PROBABILITIES[::-1],
        {"weight": CLASS_WEIGHT},
    ),
    "bce logits": (F.binary_cross_entropy_with_logits, ref_bce_logits, 3 * X, BITS, {}),
    "bce logits weight + pos_weight": (
        F.binary_cross_entropy_with_logits,
        ref_bce_logits,
        3 * X,
        PROBABILITIES,
        {"weight": ELEMENT_WEIGHT, "pos_weight": CLASS_WEIGHT},
    ),
    "kl": (F.kl_div, ref_kl, LOG_P, np.exp(LOG_Q), {}),
    "kl log_target": (F.kl_div, ref_kl, LOG_P, LOG_Q, {"log_target": True}),
}


def _run(fn, args, kwargs, mode):
    """``fn`` on float32 tensors: eagerly, on the lazy device, or compiled by braze.jit."""
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    tensors = [braze.tensor(np.asarray(a, np.float32), device=device) for a in args]
    options = {k: braze.tensor(np.asarray(v, np.float32), device=device) for k, v in kwargs.items() if k in _TENSORS}
    settings = {k: v for k, v in kwargs.items() if k not in _TENSORS}
    if mode == "jit":
        return braze.jit(lambda *t: fn(*t[:2], **settings, **dict(zip(options, t[2:], strict=True))))(
            *tensors, *options.values()
        ).numpy()
    return fn(*tensors, **settings, **options).numpy()


_TENSORS = ("weight", "pos_weight")
# float32 inputs: each loss to a few ulp (relative 1e-6), a sum or mean of 60 of them to
# some tens of ulp; a difference of nearly equal logs (kl) loses as much of its terms' size.
RTOL, ATOL = 2e-5, 2e-6


@pytest.mark.filterwarnings("ignore:kl_div. reduction='mean'")
@pytest.mark.parametrize("mode", ["eager", "lazy", "jit"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("case", CASES)
def test_losses_match_pytorchs_formulas(case, reduction, mode):
    fn, reference, x, y, options = CASES[case]
    got = _run(fn, (x, y), {**options, "reduction": reduction}, mode)
    expected = reference(x, y, reduction=reduction, **options)
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("mode", ["eager", "lazy", "jit"])
def test_kl_div_batchmean_is_the_divergence_per_example(mode):
    got = _run(F.kl_div, (LOG_P, np.exp(LOG_Q)), {"reduction": "batchmean"}, mode)
    np.testing.assert_allclose(got, ref_kl(LOG_P, np.exp(LOG_Q), "batchmean"), rtol=RTOL, atol=ATOL)
    # the KL divergence of q from p per example: sum_c q (log q - log p), averaged over axis 0
    per_example = (np.exp(LOG_Q) * (LOG_Q - LOG_P)).sum(axis=-1).sum(axis=-1)
    np.testing.assert_allclose(got, per_example.mean(), rtol=RTOL)


def test_kl_div_mean_warns_as_pytorch_does_and_zero_targets_cost_nothing():
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(braze.tensor(LOG_P.astype(np.float32)), braze.tensor(np.exp(LOG_Q).astype(np.float32)))
    target = np.exp(LOG_Q).astype(np.float32)
    target[..., 0] = 0.0
    x = braze.tensor(LOG_P.astype(np.float32), requires_grad=True)
    loss = F.kl_div(x, braze.tensor(target), reduction="sum")
    loss.backward()
    np.testing.assert_allclose(loss.numpy(), ref_kl(LOG_P, target.astype(np.float64), "sum"), rtol=RTOL)
    assert np.isfinite(x.grad.numpy()).all() and (x.grad.numpy()[..., 0] == 0).all()


# nll_loss --------------------------------------------------------------------------------------

NLL_CASES = {
    "(N, C)": (np.log(RNG.dirichlet(np.ones(5), 6)), np.array([1, 4, -100, 0, 2, 4])),
    "(N, C, d1, d2)": (RNG.standard_normal((2, 4, 3, 2)), RNG.integers(0, 4, (2, 3, 2))),
    "one example (C,)": (RNG.standard_normal(7), np.array(3)),
}
NLL_OPTIONS = {
    "plain": {},
    "weight": {"weight": np.array([0.5, 2.0, 1.0, 3.0, 0.25, 1.5, 1.0])},
    "ignore_index 2": {"ignore_index": 2},
}


@pytest.mark.parametrize("mode", ["eager", "lazy", "jit"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("option", NLL_OPTIONS)
@pytest.mark.parametrize("case", NLL_CASES)
def test_nll_loss_matches_pytorchs_formula(case, option, reduction, mode):
    x, target = NLL_CASES[case]
    options = dict(NLL_OPTIONS[option])
    classes = x.shape[0 if x.ndim == 1 else 1]
    if "weight" in options:
        options["weight"] = options["weight"][:classes]
    if "ignore_index" in options:  # -100 is a class out of range then, an IndexError
        target = np.where(target == -100, options["ignore_index"], target)
    expected = ref_nll(x, target, reduction=reduction, **options)
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    weight = options.pop("weight", None)
    args = [braze.tensor(x.astype(np.float32), device=device), braze.tensor(target, device=device)]
    if weight is not None:
        args.append(braze.tensor(weight.astype(np.float32), device=device))

    def loss(x, t, w=None):
        return F.nll_loss(x, t, w, reduction=reduction, **options)

    got = (braze.jit(loss) if mode == "jit" else loss)(*args).numpy()
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)
    # the module: the same function with its options fixed, its weight a buffer moved by to()
    loss_module = nn.NLLLoss(None if weight is None else weight.astype(np.float32), reduction=reduction, **options)
    loss_module.to(device)
    np.testing.assert_allclose(loss_module(args[0], args[1]).numpy(), got, rtol=1e-6, atol=1e-7)


def test_log_softmax_then_nll_loss_is_cross_entropy_as_in_the_mnist_example():
    scores, target = RNG.standard_normal((8, 10)).astype(np.float32), RNG.integers(0, 10, 8)
    x = braze.tensor(scores)
    log_p = braze.ops.log_softmax(x, axis=1)
    for reduction in ("mean", "sum"):
        np.testing.assert_allclose(
            F.nll_loss(log_p, braze.tensor(target), reduction=reduction).numpy(),
            F.cross_entropy(x, braze.tensor(target), reduction=reduction).numpy(),
            rtol=1e-6,
        )


def test_nll_mean_over_targets_that_are_all_ignored_is_nan_with_zero_gradient():
    x = braze.tensor(np.zeros((2, 3), np.float32), requires_grad=True)
    loss = F.nll_loss(x, braze.tensor(np.array([-100, -100])))
    loss.backward()
    assert np.isnan(loss.item()) and (x.grad.numpy() == 0).all()


# Gradients -------------------------------------------------------------------------------------

GRADIENT_CASES = [
    "mse weighted",
    "l1 weighted",
    "smooth_l1 beta 0.5",
    "huber delta 0.3 weighted",
    "bce soft targets weighted",
    "bce logits weight + pos_weight",
    "kl",
    "kl log_target",
]


@pytest.mark.filterwarnings("ignore:kl_div. reduction='mean'")
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("case", GRADIENT_CASES)
def test_gradients_match_finite_differences(case, reduction):
    fn, _, x, y, options = CASES[case]
    # |x - y| away from 0 and from beta/delta, where the piecewise losses have kinks
    if fn in (F.l1_loss, F.smooth_l1_loss, F.huber_loss):
        y = x + np.sign(y) * (0.6 + np.abs(y))
    kwargs = {k: braze.tensor(v) if k in _TENSORS else v for k, v in options.items()}

    def loss(x, y):
        return fn(x, y, reduction=reduction, **kwargs)

    assert_gradients_match(loss, [x, y], [0, 1])


def test_nll_gradients_match_finite_differences():
    x, target = NLL_CASES["(N, C, d1, d2)"]
    weight = braze.tensor(np.array([0.5, 2.0, 1.0, 3.0]))
    assert_gradients_match(lambda x: F.nll_loss(x, braze.tensor(target), weight, ignore_index=1), [x], [0])


def test_binary_cross_entropy_clamps_the_log_at_minus_100_and_keeps_gradients_finite():
    x = braze.tensor(np.array([0.0, 1.0, 0.0, 1.0, 0.5], np.float32), requires_grad=True)
    y = np.array([1.0, 0.0, 0.0, 1.0, 1.0], np.float32)
    losses = F.binary_cross_entropy(x, braze.tensor(y), reduction="none")
    np.testing.assert_allclose(losses.numpy(), [100.0, 100.0, 0.0, 0.0, np.log(2.0)], rtol=1e-6)
    losses.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


def test_binary_cross_entropy_with_logits_is_stable_for_large_logits():
    x = np.array([-200.0, -30.0, 0.0, 30.0, 200.0], np.float32)
    for y in (np.zeros(5, np.float32), np.ones(5, np.float32)):
        got = F.binary_cross_entropy_with_logits(braze.tensor(x), braze.tensor(y), reduction="none").numpy()
        expected = ref_bce_logits(x.astype(np.float64), y, reduction="none")
        np.testing.assert_allclose(got, expected.astype(np.float32), rtol=1e-6)  # e-87 is 0 in float32


# Modules --------------------------------------------------------------------------------------

MODULES = [
    (nn.MSELoss, F.mse_loss, X, Y, {}),
    (nn.L1Loss, F.l1_loss, X, Y, {}),
    (nn.SmoothL1Loss, F.smooth_l1_loss, X, Y, {"beta": 0.5}),
    (nn.HuberLoss, F.huber_loss, X, Y, {"delta": 0.3}),
    (nn.BCELoss, F.binary_cross_entropy, PROBABILITIES, BITS, {"weight": CLASS_WEIGHT}),
    (nn.BCEWithLogitsLoss, F.binary_cross_entropy_with_logits, X, BITS, {"pos_weight": CLASS_WEIGHT}),
    (nn.KLDivLoss, F.kl_div, LOG_P, LOG_Q, {"log_target": True, "reduction": "batchmean"}),
]


@pytest.mark.parametrize("reduction", ["none", "sum"])
@pytest.mark.parametrize("module, fn, x, y, options", MODULES, ids=lambda v: getattr(v, "__name__", ""))
def test_modules_apply_their_function_with_the_options_fixed(module, fn, x, y, options, reduction):
    options = {k: np.asarray(v, np.float32) if k in _TENSORS else v for k, v in options.items()}
    options.setdefault("reduction", reduction)
    x, y = braze.tensor(x.astype(np.float32)), braze.tensor(y.astype(np.float32))
    np.testing.assert_array_equal(module(**options)(x, y).numpy(), fn(x, y, **options).numpy())
    # the weights are buffers: saved with the module, moved with it
    assert sorted(module(**options).state_dict()) == sorted(k for k in options if k in _TENSORS)


# Bad calls ------------------------------------------------------------------------------------

F32 = np.zeros((3, 1), np.float32)


@pytest.mark.parametrize(
    "call,error,message",
    [
        # PyTorch broadcasts (3, 1) against (3,) to (3, 3) with a warning: braze refuses
        (lambda: F.mse_loss(F32, np.zeros(3, np.float32)), ShapeError, r"input's shape \(3, 1\)"),
        (lambda: F.l1_loss(F32, np.zeros(3, np.float32)), ShapeError, "broadcast"),
        (lambda: F.kl_div(F32, np.zeros((1, 3), np.float32), reduction="sum"), ShapeError, "kl_div"),
        (lambda: F.binary_cross_entropy(F32, np.zeros(3, np.float32)), ShapeError, "binary_cross_entropy"),
        (lambda: F.mse_loss(F32, F32, weight=np.ones(2)), ShapeError, "weight"),
        (
            lambda: F.binary_cross_entropy_with_logits(F32, F32, pos_weight=np.ones(2)),
            ShapeError,
            r"pos_weight \(2,\)",
        ),
        (lambda: F.mse_loss(F32, F32, reduction="avg"), ValueError, "avg"),
        (lambda: F.kl_div(F32, F32, reduction="avg"), ValueError, "batchmean"),
        (lambda: nn.MSELoss(reduction="batchmean"), ValueError, "batchmean"),
        (lambda: F.mse_loss(np.zeros(3, np.int32), np.zeros(3, np.int32)), DTypeError, "floating"),
        (lambda: F.smooth_l1_loss(F32, F32, beta=-1.0), ValueError, "beta"),
        (lambda: F.huber_loss(F32, F32, delta=0.0), ValueError, "delta"),
        (lambda: F.nll_loss(np.zeros((2, 3), np.float32), np.array([0, 3])), IndexError, "index 3 is out of"),
        (lambda: F.nll_loss(np.zeros((2, 3), np.float32), np.array([0, -1])), IndexError, "index -1 is out of"),
        (lambda: F.nll_loss(np.zeros((2, 3), np.float32), np.zeros(2, np.float32)), DTypeError, "integer"),
        (lambda: F.nll_loss(np.zeros((2, 3), np.float32), np.zeros((2, 3), np.int64)), ShapeError, r"\(2,\)"),
        (lambda: F.nll_loss(np.zeros((2, 3), np.float32), np.array([0, 1]), np.ones(2)), ShapeError, r"\(3,\)"),
    ],
)
def test_bad_calls_name_the_problem(call, error, message):
    with pytest.raises(error, match=message):
        call()
