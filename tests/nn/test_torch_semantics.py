"""PyTorch's semantics where a comparison with torch found braze apart: attention rows
with nothing to attend to, a mean cross-entropy whose every target is ignored, resuming an
optimizer saved before or after its scheduler, module names with and without a prefix,
one lr_lambda per group, a group's own labels, and a learning rate of 0. References: NumPy
and PyTorch's documented rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

import braze
from braze import nn
from braze.nn import functional as F
from braze.optim import lr_scheduler


def attention_reference(q, k, v, mask):
    """Masked softmax attention in float64; a row whose mask is all False gives zeros."""
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -np.inf)
    attends = mask.any(-1, keepdims=True)
    shifted = np.where(attends, scores - np.where(attends, scores, 0).max(-1, keepdims=True), -np.inf)
    weights = np.where(attends, np.exp(shifted) / np.exp(shifted).sum(-1, keepdims=True).clip(1e-300), 0.0)
    return weights @ v


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_attention_row_with_nothing_to_attend_to_is_zero(kind):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    mask = np.array([[True, True, False], [False, False, False], [True, False, True]])
    given = braze.tensor(mask) if kind == "bool" else braze.tensor(np.where(mask, 0.0, -np.inf))
    tq, tk, tv = (braze.tensor(a, requires_grad=True) for a in (q, k, v))
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=given)
    np.testing.assert_allclose(out.numpy(), attention_reference(q, k, v, mask), rtol=1e-12, atol=1e-12)
    out.sum().backward()
    for t in (tq, tk, tv):
        assert np.isfinite(t.grad.numpy()).all()
    np.testing.assert_array_equal(tq.grad.numpy()[:, 1], 0.0)  # the empty row depends on nothing


def test_a_mean_cross_entropy_of_only_ignored_targets_is_nan_with_zero_gradients():
    logits = braze.tensor(np.array([[1.0, 2.0, 3.0], [0.5, 0.0, -1.0]]), requires_grad=True)
    loss = F.cross_entropy(logits, braze.tensor([-100, -100]))
    assert math.isnan(loss.item())  # a mean over no example, as PyTorch's
    loss.backward()
    np.testing.assert_array_equal(logits.grad.numpy(), 0.0)
    logits.grad = None
    F.cross_entropy(logits, braze.tensor([2, -100])).backward()
    p = np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum()
    np.testing.assert_allclose(logits.grad.numpy(), [p - np.eye(3)[2], [0.0, 0.0, 0.0]], rtol=1e-12)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.ln = nn.LayerNorm(2)

    def forward(self, x):
        return self.ln(self.fc(x))


def test_module_names_follow_pytorchs_with_and_without_a_prefix():
    net = Net()
    net(braze.ones((1, 3)))
    assert [name for name, _ in net.named_modules()] == ["", "fc", "ln"]
    assert dict(net.named_modules())["fc"] is net.fc
    assert [name for name, _ in net.named_modules(prefix="net")] == ["net", "net.fc", "net.ln"]
    assert [name for name, _ in net.named_parameters(prefix="net")] == [
        "net.fc.kernel",
        "net.fc.bias",
        "net.ln.weight",
        "net.ln.bias",
    ]


def lrs_of(optimizer, steps: int, scheduler) -> list[float]:
    found = []
    for _ in range(steps):
        optimizer.step()
        scheduler.step()
        found.append(optimizer.param_groups[0]["lr"])
    return found


@pytest.mark.parametrize("order", ["loaded before the scheduler", "saved without one"])
def test_an_optimizer_resumes_whether_its_scheduler_came_before_or_after(order):
    def fresh():
        w = braze.tensor(np.ones(2), requires_grad=True)
        w.grad = braze.tensor(np.ones(2))
        return braze.optim.SGD([w], lr=0.1)

    reference = fresh()
    expected = lrs_of(reference, 6, lr_scheduler.StepLR(reference, step_size=2, gamma=0.5))
    first = fresh()
    if order == "loaded before the scheduler":
        scheduler = lr_scheduler.StepLR(first, step_size=2, gamma=0.5)
        lrs_of(first, 3, scheduler)
        resumed = fresh()
        resumed.load_state_dict(first.state_dict())  # holds initial_lr; this one has no scheduler yet
        later = lr_scheduler.StepLR(resumed, step_size=2, gamma=0.5, last_epoch=2)
        assert lrs_of(resumed, 3, later) == pytest.approx(expected[3:], rel=1e-12)
    else:
        saved = fresh().state_dict()  # no scheduler: no initial_lr
        resumed = fresh()
        scheduler = lr_scheduler.StepLR(resumed, step_size=2, gamma=0.5)
        resumed.load_state_dict(saved)
        assert resumed.param_groups[0]["initial_lr"] == 0.1
        assert lrs_of(resumed, 6, scheduler) == pytest.approx(expected, rel=1e-12)


def test_lambda_lr_takes_one_function_per_group():
    a, b = (braze.tensor(np.ones(1), requires_grad=True) for _ in range(2))
    sgd = braze.optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)
    scheduler = lr_scheduler.LambdaLR(sgd, [lambda e: 0.5**e, lambda e: 1.0 / (e + 1)])
    for epoch in range(1, 4):
        scheduler.step()
        assert [g["lr"] for g in sgd.param_groups] == pytest.approx([0.1 * 0.5**epoch, 1.0 / (epoch + 1)])
    with pytest.raises(ValueError, match="1 lr_lambdas for 2 parameter groups"):
        lr_scheduler.LambdaLR(sgd, [lambda e: 1.0])


def test_a_group_keeps_its_own_labels_and_refuses_unknown_numbers():
    w = braze.tensor(np.ones(2), requires_grad=True)
    adamw = braze.optim.AdamW([{"params": [w], "name": "decoder"}], lr=1e-3)
    assert adamw.param_groups[0]["name"] == "decoder"
    with pytest.raises(ValueError, match=r"unknown hyperparameters \['weight_dacay'\]"):
        braze.optim.AdamW([{"params": [w], "weight_dacay": 0.1}])


@pytest.mark.parametrize("make", [lambda p: braze.optim.SGD(p, lr=0.0), lambda p: braze.optim.Adam(p, lr=0.0, eps=0.0)])
def test_a_learning_rate_of_zero_is_allowed_and_leaves_the_weights(make):
    w = braze.tensor(np.array([1.0, -2.0]), requires_grad=True)
    optimizer = make([w])
    w.grad = braze.tensor(np.array([0.5, 0.5]))
    optimizer.step()
    np.testing.assert_array_equal(w.numpy(), [1.0, -2.0])
    with pytest.raises(ValueError, match="lr must be 0 or more"):
        braze.optim.SGD([w], lr=-0.1)
