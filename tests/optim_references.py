"""NumPy transcriptions, in float64, of PyTorch's documented update rules for Adadelta,
RMSprop and Adagrad: the parameter ``w0`` after one step per gradient of ``grads``.
``maximize`` is PyTorch's: the gradient negated first, then the L2 decay added."""

from __future__ import annotations

import numpy as np


def _gradient(g: np.ndarray, w: np.ndarray, weight_decay: float, maximize: bool) -> np.ndarray:
    return (-g if maximize else g) + weight_decay * w


def adadelta(w0, grads, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    w, v, u = w0.astype(np.float64), 0.0, 0.0
    for g in grads:
        g = _gradient(g, w, weight_decay, maximize)
        v = rho * v + (1 - rho) * g * g
        d = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * d * d
        w = w - lr * d
    return w


def rmsprop(w0, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, maximize=False):
    w, v, mean, buf = w0.astype(np.float64), 0.0, 0.0, 0.0
    for g in grads:
        g = _gradient(g, w, weight_decay, maximize)
        v = alpha * v + (1 - alpha) * g * g
        variance = v
        if centered:
            mean = alpha * mean + (1 - alpha) * g
            variance = v - mean * mean
        step = g / (np.sqrt(variance) + eps)
        if momentum:
            buf = momentum * buf + step
            step = buf
        w = w - lr * step
    return w


def adagrad(
    w0, grads, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10, maximize=False
):
    w, total = w0.astype(np.float64), initial_accumulator_value
    for t, g in enumerate(grads, start=1):
        g = _gradient(g, w, weight_decay, maximize)
        total = total + g * g
        w = w - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(total) + eps)
    return w
