"""Fixes from a review of the optimizers, schedulers and gradient clipping against PyTorch
2.13 and Keras 3: each test checks braze against NumPy transcriptions of their documented
rules (or their documented behaviour), never against braze itself."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import braze
from braze.nn.utils import clip_grad_norm_, clip_grad_value_
from braze.optim import SGD, Adam, AdamW, keras, lr_scheduler
from braze.runtime import metrics

# float32's unit roundoff. An Adam update is about a dozen float32 roundings (moments,
# root, bias corrections, quotient, learning rate), each at most U relative; with positive
# gradients every update of a parameter has the same sign, so a parameter that starts at 0
# (a sum of updates) keeps that relative error, plus one rounding per sum. 32 U bounds both
# for the few steps taken here.
U = 2.0**-24
RTOL = 32 * U


@pytest.fixture(autouse=True)
def private_cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path_factory.getbasetemp() / "jit-cache"))
    metrics.reset()


def positive_grads(steps: int, shape: tuple[int, ...] = (4, 3), seed: int = 0) -> list[np.ndarray]:
    """Gradients in [0.5, 1.5): no cancellation in the moments or in the parameters' sums."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.5, 1.5, shape).astype(np.float32) for _ in range(steps)]


def torch_adam(grads, lrs, betas, eps=1e-8, weight_decay=0.0, decoupled=False):
    """PyTorch's Adam/AdamW (torch.optim.Adam's documented algorithm) in float64 from a zero
    parameter; its bias corrections, ``1 - beta ** step``, are Python floats."""
    b1, b2 = betas
    p = np.zeros(grads[0].shape)
    m, v = np.zeros_like(p), np.zeros_like(p)
    for t, (g, lr) in enumerate(zip(grads, lrs, strict=True), start=1):
        g = g.astype(np.float64)
        if weight_decay and decoupled:
            p = p * (1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        denominator = np.sqrt(v) / math.sqrt(1 - b2**t) + eps
        p = p - lr / (1 - b1**t) * m / denominator
    return p


# --- Adam's bias corrections ---------------------------------------------------------------
# braze computed 1 - beta ** step in float32 from the float32 beta: 0.9999 rounds to
# 0.99989998, so 1 - beta ** t was off by 1.7e-4 relative (8e-5 in every update).


@pytest.mark.parametrize("betas", [(0.9, 0.999), (0.8, 0.9999)])
@pytest.mark.parametrize("kind", [Adam, AdamW])
def test_adam_bias_corrections_are_pytorchs_to_float32_rounding(kind, betas):
    grads = positive_grads(6)
    p = braze.tensor(np.zeros((4, 3), np.float32), requires_grad=True)
    optimizer = kind([p], lr=0.01, betas=betas)
    for g in grads:
        p.grad = braze.tensor(g)
        optimizer.step()
    expected = torch_adam(grads, [0.01] * 6, betas, weight_decay=optimizer.weight_decay, decoupled=kind is AdamW)
    np.testing.assert_allclose(p.numpy(), expected, rtol=RTOL)


def test_a_jitted_adam_step_with_a_scheduled_rate_is_pytorchs_and_compiles_once():
    grads = positive_grads(6)
    p = braze.tensor(np.zeros((4, 3), np.float32), requires_grad=True)
    q = braze.tensor(np.zeros((4, 3), np.float32), requires_grad=True)
    # Two groups: the second's rate is three times the first's, and the scheduler scales both.
    optimizer = Adam([{"params": [p]}, {"params": [q], "lr": 0.03}], lr=0.01, betas=(0.8, 0.9999))
    scheduler = lr_scheduler.LambdaLR(optimizer, lambda epoch: 1 / (epoch + 1))
    step = braze.jit(lambda o: o.step())
    for g in grads:
        p.grad, q.grad = braze.tensor(g), braze.tensor(g)
        step(optimizer)
        scheduler.step()
    rates = [0.01 / (epoch + 1) for epoch in range(6)]
    np.testing.assert_allclose(p.numpy(), torch_adam(grads, rates, (0.8, 0.9999)), rtol=RTOL)
    np.testing.assert_allclose(q.numpy(), torch_adam(grads, [3 * r for r in rates], (0.8, 0.9999)), rtol=RTOL)
    assert step.compiles == 1


def keras_adam(grads, lr, beta_1, beta_2, epsilon=1e-7):
    """Keras 3's Adam (keras/optimizers/adam.py) in float64 from a zero variable: the step
    size ``lr * sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)`` with the betas cast to the
    variable's dtype (float32) first, and epsilon added to the uncorrected ``sqrt(v)``."""
    b1, b2 = float(np.float32(beta_1)), float(np.float32(beta_2))
    p = np.zeros(grads[0].shape)
    m, v = np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        g = g.astype(np.float64)
        alpha = lr * math.sqrt(1 - b2**t) / (1 - b1**t)
        m = m + (g - m) * (1 - beta_1)
        v = v + (g * g - v) * (1 - beta_2)
        p = p - m * alpha / (np.sqrt(v) + epsilon)
    return p


@pytest.mark.parametrize("jitted", [False, True])
def test_keras_adam_is_its_formula_to_float32_rounding(jitted):
    grads = positive_grads(6, seed=1)
    w = braze.tensor(np.zeros((4, 3), np.float32), requires_grad=True)
    optimizer = keras.Adam(0.01, beta_1=0.8, beta_2=0.9999)

    def apply(o, g, w):
        o.apply_gradients([(g, w)])

    run = braze.jit(apply) if jitted else apply
    for g in grads:
        run(optimizer, braze.tensor(g), w)
    np.testing.assert_allclose(w.numpy(), keras_adam(grads, 0.01, 0.8, 0.9999), rtol=RTOL)


# --- zero_grad(set_to_none) and step(closure), as PyTorch's --------------------------------


def test_zero_grad_set_to_none_false_zeroes_and_the_zero_gradient_is_applied():
    p = braze.tensor(np.zeros(3, np.float32), requires_grad=True)
    optimizer = Adam([p], lr=0.1)
    g = np.array([1.0, 0.5, 0.25], np.float32)
    p.grad = braze.tensor(g)
    optimizer.step()
    optimizer.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), np.zeros(3))
    optimizer.step()  # PyTorch steps a zero gradient: the moments decay, the parameter still moves
    expected = torch_adam([g, np.zeros(3, np.float32)], [0.1, 0.1], (0.9, 0.999))
    np.testing.assert_allclose(p.numpy(), expected, rtol=RTOL)
    optimizer.zero_grad(set_to_none=True)
    assert p.grad is None
    p.grad = braze.tensor(g)
    optimizer.zero_grad()  # PyTorch's default: set_to_none=True
    assert p.grad is None


def test_a_modules_zero_grad_takes_set_to_none_as_pytorchs():
    model = braze.nn.Linear(3, 2)
    model(braze.tensor(np.ones((1, 3), np.float32))).sum().backward()
    model.zero_grad(set_to_none=False)
    for p in model.parameters():
        np.testing.assert_array_equal(p.grad.numpy(), np.zeros(p.shape, np.float32))
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_step_calls_the_closure_with_gradients_recorded_and_returns_its_loss():
    w = braze.tensor(np.array([1.0, -2.0], np.float32), requires_grad=True)
    optimizer = SGD([w], lr=0.1)

    def closure():
        optimizer.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with braze.no_grad():  # PyTorch's step records the closure's gradients even here
        loss = optimizer.step(closure)
    assert loss.item() == 5.0
    np.testing.assert_allclose(w.numpy(), [1.0 - 0.1 * 2.0, -2.0 + 0.1 * 4.0], rtol=U)
    assert optimizer.step() is None


# --- Bad hyperparameters are refused when given, not taken as NaN at the first step ---------


@pytest.mark.parametrize(
    "make",
    [
        lambda p: SGD([p], lr=None),
        lambda p: SGD([p], lr="0.1"),
        lambda p: SGD([p], lr=0.1, momentum=0.9, dampening=None),
        lambda p: Adam([p], eps=None),
        lambda p: AdamW([{"params": [p], "lr": [0.1]}]),
        lambda p: keras.Adam(learning_rate=None),
    ],
)
def test_a_hyperparameter_that_is_not_a_number_is_refused(make):
    p = braze.tensor(np.ones(2, np.float32), requires_grad=True)
    with pytest.raises(TypeError, match="must be a number, a 0-d tensor or a schedule"):
        make(p)


def test_a_groups_params_given_as_a_set_are_refused_as_pytorch_does():
    p = braze.tensor(np.ones(2, np.float32), requires_grad=True)
    with pytest.raises(TypeError, match="not a set"):
        SGD([{"params": {p}}], lr=0.1)


# --- Keras's argument checks ------------------------------------------------------------------


@pytest.mark.parametrize("clipping", [{"clipnorm": 1.0, "clipvalue": 0.5}, {"clipvalue": 0.5, "global_clipnorm": 1.0}])
def test_keras_refuses_two_kinds_of_clipping(clipping):
    # Keras 3: "Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set."
    with pytest.raises(ValueError, match="only one of clipnorm, clipvalue and global_clipnorm"):
        keras.SGD(0.1, **clipping)


def test_keras_sgd_momentum_above_one_is_refused():
    # Keras 3: "`momentum` must be a float between [0, 1]."
    with pytest.raises(ValueError, match=r"momentum must be in \[0, 1\]"):
        keras.SGD(0.1, momentum=1.5)
    keras.SGD(0.1, momentum=1.0)


# --- Gradient clipping with a bound of 0 ----------------------------------------------------


def test_clip_grad_norm_with_max_norm_0_zeroes_the_gradients_and_returns_the_norm():
    grads = [np.array([3.0, 4.0], np.float32), np.array([12.0], np.float32)]
    params = [braze.tensor(np.zeros(g.shape, np.float32), requires_grad=True) for g in grads]
    for order, total in ((2.0, 13.0), (math.inf, 12.0)):
        for p, g in zip(params, grads, strict=True):
            p.grad = braze.tensor(g)
        # torch.nn.utils.clip_grad_norm_ scales by min(1, max_norm / (total + 1e-6)) = 0
        assert clip_grad_norm_(params, 0.0, order).item() == total
        for p in params:
            np.testing.assert_array_equal(p.grad.numpy(), np.zeros(p.shape))
    with pytest.raises(ValueError, match="max_norm must be 0 or more"):
        clip_grad_norm_(params, -1.0)


def test_clip_grad_value_with_0_zeroes_the_gradients():
    p = braze.tensor(np.zeros(3, np.float32), requires_grad=True)
    p.grad = braze.tensor(np.array([-2.0, 0.5, 3.0], np.float32))
    clip_grad_value_([p], 0.0)  # torch.clamp(g, -0.0, 0.0)
    np.testing.assert_array_equal(p.grad.numpy(), np.zeros(3))
    with pytest.raises(ValueError, match="clip_value must be 0 or more"):
        clip_grad_value_([p], -1.0)


# --- LambdaLR's state, as PyTorch's -----------------------------------------------------------


class Warmup:
    """A callable object: PyTorch saves its attributes in the state, and restores them."""

    def __init__(self, epochs: int) -> None:
        self.epochs = epochs

    def __call__(self, epoch: int) -> float:
        return min(1.0, (epoch + 1) / self.epochs)


def test_lambda_lr_saves_no_functions_and_keeps_its_own_when_loading():
    def optimizer():
        return SGD([braze.tensor([1.0], requires_grad=True)], lr=0.1)

    saved_from = lr_scheduler.LambdaLR(optimizer(), [lambda epoch: 0.5**epoch])
    for _ in range(3):
        saved_from.step()
    state = pickle.loads(pickle.dumps(saved_from.state_dict()))  # a lambda could not be pickled
    assert state["lr_lambdas"] == [None] and "lr_lambda" not in state
    resumed = lr_scheduler.LambdaLR(optimizer(), lambda epoch: 0.1**epoch)
    resumed.load_state_dict(state)
    resumed.step()
    assert resumed.last_epoch == 4
    assert resumed.get_last_lr() == [0.1 * 0.1**4]  # its own function, at the restored epoch

    warmup = Warmup(10)
    with_object = lr_scheduler.LambdaLR(optimizer(), warmup)
    assert with_object.state_dict()["lr_lambdas"] == [{"epochs": 10}]
    warmup.epochs = 2
    with_object.load_state_dict({**with_object.state_dict(), "lr_lambdas": [{"epochs": 4}]})
    assert warmup.epochs == 4


# --- A state saved by another kind of optimizer is refused, and nothing is loaded ----------


def test_a_state_with_another_optimizers_slots_is_refused_and_nothing_is_loaded():
    w = braze.tensor(np.ones(3, np.float32), requires_grad=True)
    grad = braze.tensor(np.ones(3, np.float32))
    rmsprop = keras.RMSprop(0.01)
    rmsprop.apply_gradients([(grad, w)])
    adam = keras.Adam(0.01)
    adam.apply_gradients([(grad, w)])
    before = {name: slot.numpy().copy() for name, slot in adam.state[0].items()}
    # Keras's groups hold no hyperparameters: only the slots tell RMSprop's state from Adam's.
    for state in (rmsprop.state_dict(), keras.Adam(0.01, amsgrad=True).build([w]).state_dict()):
        with pytest.raises(ValueError, match="parameter 0 saved the slots"):
            adam.load_state_dict(state)
        assert sorted(adam.state[0]) == sorted(before)
    for name, value in before.items():
        np.testing.assert_array_equal(adam.state[0][name].numpy(), value)
    adam.apply_gradients([(grad, w)])  # still steps

    torch_adam_state = {  # PyTorch's slot names, with the groups of braze's Adam
        "state": {0: {"step": np.float32(1), "exp_avg": np.zeros(3), "exp_avg_sq": np.zeros(3)}},
        "param_groups": Adam([w], lr=0.1).state_dict()["param_groups"],
    }
    with pytest.raises(ValueError, match=r"saved the slots \['exp_avg', 'exp_avg_sq', 'step'\]"):
        Adam([w], lr=0.1).load_state_dict(torch_adam_state)

    # SGD's momentum buffer is made once momentum is on: a state with or without it loads.
    with_momentum = SGD([w], lr=0.1, momentum=0.9).state_dict()
    SGD([w], lr=0.1).load_state_dict(with_momentum)
    SGD([w], lr=0.1, momentum=0.9).load_state_dict(SGD([w], lr=0.1).state_dict())
