"""keras.optimizers against NumPy implementations of Keras's update formulas (three steps
with changing gradients), apply_gradients and apply, gradient clipping, learning rates
set between steps, and the unsupported arguments that fail at once."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.keras import optimizers

W0 = np.array([1.0, -2.0, 3.0])
G = np.array([0.5, -1.0, 2.0])


def gradient(w):
    return G * w  # changes with the weights, so every step's state matters


def numpy_run(update, steps=3):
    w, state = W0.copy(), {}
    for t in range(1, steps + 1):
        w = update(w, gradient(w), state, t)
    return w


def sgd(lr, momentum, nesterov):
    def update(w, g, s, t):
        v = s["v"] = momentum * s.get("v", 0.0) - lr * g
        return w + (momentum * v - lr * g if nesterov else v)

    return update


def adam(lr, b1=0.9, b2=0.999, eps=1e-7, amsgrad=False, wd=0.0):
    def update(w, g, s, t):
        w = w - w * lr * wd
        m = s["m"] = s.get("m", 0.0) + (g - s.get("m", 0.0)) * (1 - b1)
        v = s["v"] = s.get("v", 0.0) + (g * g - s.get("v", 0.0)) * (1 - b2)
        if amsgrad:
            v = s["vhat"] = np.maximum(s.get("vhat", 0.0), v)
        return w - m * lr * np.sqrt(1 - b2**t) / (1 - b1**t) / (np.sqrt(v) + eps)

    return update


def rmsprop(lr, rho, momentum, eps, centered):
    def update(w, g, s, t):
        v = s["v"] = rho * s.get("v", 0.0) + (1 - rho) * g * g
        if centered:
            a = s["a"] = rho * s.get("a", 0.0) + (1 - rho) * g
            denominator = v - a * a + eps
        else:
            denominator = v + eps
        step = lr * g / np.sqrt(denominator)
        if momentum:
            step = s["m"] = momentum * s.get("m", 0.0) + step
        return w - step

    return update


def adagrad(lr, initial=0.1, eps=1e-7):
    def update(w, g, s, t):
        acc = s["acc"] = s.get("acc", initial) + g * g
        return w - lr * g / np.sqrt(acc + eps)

    return update


@pytest.mark.parametrize(
    ("optimizer", "reference"),
    [
        (lambda: optimizers.SGD(0.1), sgd(0.1, 0.0, False)),
        (lambda: optimizers.SGD(0.1, momentum=0.9, nesterov=True), sgd(0.1, 0.9, True)),
        (lambda: optimizers.Adam(0.1, amsgrad=True), adam(0.1, amsgrad=True)),
        (lambda: optimizers.AdamW(0.1, weight_decay=0.05), adam(0.1, wd=0.05)),
        (lambda: optimizers.RMSprop(0.1, momentum=0.5, centered=True), rmsprop(0.1, 0.9, 0.5, 1e-7, True)),
        (lambda: optimizers.RMSprop(0.01), rmsprop(0.01, 0.9, 0.0, 1e-7, False)),
        (lambda: optimizers.Adagrad(0.1), adagrad(0.1)),
    ],
    ids=["sgd", "nesterov", "amsgrad", "adamw", "rmsprop-centered", "rmsprop", "adagrad"],
)
def test_updates_follow_keras_formulas(optimizer, reference):
    opt = optimizer()
    w = braze.tensor(W0.astype(np.float32), requires_grad=True)
    for _ in range(3):
        opt.apply_gradients([(braze.tensor(gradient(w.numpy()).astype(np.float32)), w)])
    np.testing.assert_allclose(w.numpy(), numpy_run(reference), rtol=1e-5, atol=1e-6)
    assert opt.iterations.item() == 3


def test_clipping_and_learning_rate_changes():
    w = braze.tensor([3.0, 4.0], requires_grad=True)
    opt = optimizers.SGD(1.0, clipnorm=1.0)
    opt.apply_gradients([(braze.tensor([3.0, 4.0]), w)])  # norm 5 clipped to 1
    np.testing.assert_allclose(w.numpy(), [2.4, 3.2], rtol=1e-6)
    opt.learning_rate = 0.5
    opt.apply_gradients([(braze.tensor([0.3, 0.4]), w)])
    np.testing.assert_allclose(w.numpy(), [2.25, 3.0], rtol=1e-6)
    a, b = braze.tensor([1.0], requires_grad=True), braze.tensor([1.0], requires_grad=True)
    optimizers.SGD(1.0, global_clipnorm=1.0).apply([braze.tensor([3.0]), braze.tensor([4.0])], [a, b])
    np.testing.assert_allclose([a.item(), b.item()], [0.4, 0.2], rtol=1e-6)
    clipped = braze.tensor([1.0], requires_grad=True)
    optimizers.SGD(1.0, clipvalue=0.5).apply_gradients([(braze.tensor([-3.0]), clipped)])
    assert clipped.item() == pytest.approx(1.5)


def test_a_keras_schedule_sets_each_steps_learning_rate():
    schedule = optimizers.schedules.ExponentialDecay(0.5, decay_steps=1, decay_rate=0.5)
    w = braze.tensor([1.0], requires_grad=True)
    opt = optimizers.SGD(schedule)
    for _ in range(3):
        opt.apply_gradients([(braze.tensor([1.0]), w)])
    assert w.item() == pytest.approx(1.0 - 0.5 - 0.25 - 0.125)


def test_a_none_gradient_is_skipped_and_unsupported_options_fail_at_once():
    w, unused = braze.tensor([1.0], requires_grad=True), braze.tensor([1.0], requires_grad=True)
    optimizers.SGD(0.5).apply_gradients([(braze.tensor([1.0]), w), (None, unused)])
    assert (w.item(), unused.item()) == (0.5, 1.0)
    with pytest.raises(NotImplementedError, match="use_ema"):
        optimizers.Adam(use_ema=True)
    with pytest.raises(TypeError, match=r"unexpected argument\(s\) \['decay'\]"):
        optimizers.SGD(decay=0.1)
    assert isinstance(optimizers.get("rmsprop"), optimizers.RMSprop)
