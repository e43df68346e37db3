"""PyTorch's cross_entropy / CrossEntropyLoss against a NumPy transcription of PyTorch's
documented formula (class axis 1, ignore_index, class weights, label smoothing, the three
reductions), its gradients against float64 finite differences, compiled against eager."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_gradients_match

import braze
import braze.nn.functional as F
from braze import nn
from braze.ir.errors import DTypeError, ShapeError


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    x = x.astype(np.float64)
    shifted = x - x.max(axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis, keepdims=True))


def reference(scores, target, weight=None, ignore_index=-100, reduction="mean", smoothing=0.0):
    """PyTorch's documentation, written as loops over the examples: l_n = -sum_c w_c q_nc
    log p_nc with q the (smoothed) target; integer targets' mean divides by sum of w_{y_n}
    over the kept ones, probability targets' mean by the number of examples."""
    axis = 0 if scores.ndim == 1 else 1
    classes = scores.shape[axis]
    log_p = np.moveaxis(_log_softmax(scores, axis), axis, -1).reshape(-1, classes)
    w = np.ones(classes) if weight is None else weight.astype(np.float64)
    if np.issubdtype(target.dtype, np.floating):
        q = np.moveaxis(target, axis, -1).reshape(-1, classes) * (1 - smoothing) + smoothing / classes
        losses = np.array([-(w * q[n] * log_p[n]).sum() for n in range(len(log_p))])
        out_shape = np.moveaxis(target, axis, -1).shape[:-1]
        denominator = len(losses)
    else:
        labels = target.reshape(-1)
        losses, counted = np.zeros(len(labels)), np.zeros(len(labels))
        for n, y in enumerate(labels):
            if y == ignore_index:
                continue
            q = np.full(classes, smoothing / classes)
            q[y] += 1 - smoothing
            # PyTorch: (1 - e) w_y (-log p_y) + (e / C) sum_c w_c (-log p_c)
            losses[n] = -(1 - smoothing) * w[y] * log_p[n, y] - smoothing / classes * (w * log_p[n]).sum()
            counted[n] = w[y]
        out_shape = target.shape
        denominator = counted.sum()
    if reduction == "none":
        return losses.reshape(out_shape)
    return losses.sum() if reduction == "sum" else losses.sum() / denominator


RNG = np.random.default_rng(0)
CASES = {
    "2d": (RNG.standard_normal((6, 5)), np.array([1, 4, -100, 0, 2, 4])),
    "sequence (N, C, T)": (RNG.standard_normal((3, 4, 5)), RNG.integers(0, 4, (3, 5))),
    "one example (C,)": (RNG.standard_normal(7), np.array(3)),
    "probabilities": (RNG.standard_normal((4, 3)), RNG.dirichlet(np.ones(3), 4)),
    "probabilities (N, C, T)": (RNG.standard_normal((2, 3, 4)), np.moveaxis(RNG.dirichlet(np.ones(3), (2, 4)), -1, 1)),
}
OPTIONS = {
    "plain": {},
    "sum": {"reduction": "sum"},
    "none": {"reduction": "none"},
    "weight": {"weight": np.array([0.5, 2.0, 1.0, 3.0, 0.25, 1.5, 1.0])},
    "smoothing": {"label_smoothing": 0.1},
    "weight + smoothing + sum": {
        "weight": np.array([0.5, 2.0, 1.0, 3.0, 0.25, 1.5, 1.0]),
        "label_smoothing": 0.2,
        "reduction": "sum",
    },
    "ignore_index -1": {"ignore_index": -1},
}


def _options(case: str, options: dict) -> tuple[dict, dict]:
    """The options for braze and for the reference, the weights cut to the case's classes."""
    scores = CASES[case][0]
    classes = scores.shape[0 if scores.ndim == 1 else 1]
    mine = dict(options)
    if "weight" in mine:
        mine["weight"] = mine["weight"][:classes]
    theirs = {"smoothing" if k == "label_smoothing" else k: v for k, v in mine.items()}
    return mine, theirs


@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("case", CASES)
def test_cross_entropy_matches_pytorchs_formula(case, option):
    scores, target = CASES[case]
    mine, theirs = _options(case, OPTIONS[option])
    target = np.where(target == -100, -1, target) if option == "ignore_index -1" else target
    if option == "ignore_index -1" and np.issubdtype(target.dtype, np.floating):
        # PyTorch refuses ignore_index with probability targets: no class of one can be ignored.
        with pytest.raises(ValueError, match="ignore_index is not supported"):
            F.cross_entropy(braze.tensor(scores), braze.tensor(target), ignore_index=-1)
        return
    expected = reference(scores, target, **theirs)
    kwargs = {k: braze.tensor(v.astype(np.float32)) if k == "weight" else v for k, v in mine.items()}
    got = F.cross_entropy(braze.tensor(scores.astype(np.float32)), braze.tensor(target), **kwargs)
    # float32 log-softmax over a handful of classes: a few ulp of the loss's magnitude
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)
    module = nn.CrossEntropyLoss(**kwargs)
    np.testing.assert_allclose(module(braze.tensor(scores.astype(np.float32)), target).numpy(), got.numpy())


@pytest.mark.parametrize("case", ["2d", "sequence (N, C, T)", "probabilities"])
def test_cross_entropy_gradients_match_finite_differences(case):
    scores, target = CASES[case]
    weight = braze.tensor(np.array([0.5, 2.0, 1.0, 3.0, 0.25])[: scores.shape[1]])

    def loss(x):
        return F.cross_entropy(x, braze.tensor(target), weight=weight, label_smoothing=0.1)

    assert_gradients_match(loss, [scores.astype(np.float64)], [0])


def test_compiled_cross_entropy_agrees_with_eager():
    scores, target = CASES["2d"]
    x = braze.tensor(scores.astype(np.float32))
    step = braze.jit(lambda s, t: F.cross_entropy(s, t, label_smoothing=0.1))
    np.testing.assert_allclose(
        step(x, braze.tensor(target)).numpy(),
        F.cross_entropy(x, braze.tensor(target), label_smoothing=0.1).numpy(),
        rtol=1e-6,
    )


def test_a_mean_over_targets_that_are_all_ignored_is_nan_as_in_pytorch():
    got = F.cross_entropy(braze.tensor(np.zeros((2, 3), np.float32)), braze.tensor(np.array([-100, -100])))
    assert np.isnan(got.item())


def test_the_class_weights_are_a_buffer_saved_with_the_module():
    loss = nn.CrossEntropyLoss(weight=np.array([1.0, 2.0], np.float32))
    assert list(loss.state_dict()) == ["weight"]
    assert nn.CrossEntropyLoss().state_dict() == {}


@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda: F.cross_entropy(np.zeros((2, 3), np.float32), np.array([0, 3])), IndexError, "index 3 is out of"),
        (lambda: F.cross_entropy(np.zeros((2, 3), np.float32), np.array([0, 1, 2])), ShapeError, r"shape \(2,\)"),
        (lambda: F.cross_entropy(np.zeros((2, 3), np.float32), np.zeros((2, 4))), ShapeError, "input's shape"),
        (lambda: F.cross_entropy(np.zeros((2, 3), np.float32), np.array([True, False])), DTypeError, "bool"),
        (lambda: F.cross_entropy(np.zeros((2, 3), np.int32), np.array([0, 1])), DTypeError, "floating scores"),
        (
            lambda: F.cross_entropy(np.zeros((2, 3), np.float32), np.array([0, 1]), weight=np.ones(2)),
            ShapeError,
            "(3,)",
        ),
        (lambda: F.cross_entropy(np.zeros((2, 3), np.float32), np.array([0, 1]), reduction="avg"), ValueError, "avg"),
        (lambda: nn.CrossEntropyLoss(label_smoothing=1.5), ValueError, "label_smoothing"),
    ],
)
def test_bad_calls_name_the_problem(call, error, message):
    with pytest.raises(error, match=message):
        call()
