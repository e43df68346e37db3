"""bfloat16 arithmetic beyond single primitives: composites that round once, optimizers
that update bfloat16 parameters in float32, and autocast as a per-thread setting.
References: float64 NumPy, with bfloat16 rounding by ``nearest_bfloat16``."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import braze
from braze import nn
from tests.test_bfloat16 import nearest_bfloat16


def bf16(values: np.ndarray) -> braze.Tensor:
    return braze.tensor(np.asarray(values, np.float32)).astype(braze.bfloat16)


def within_half_an_ulp(got: np.ndarray, exact: np.ndarray) -> None:
    """``got`` is ``exact`` rounded once to bfloat16: within half a bfloat16 ulp of it, give or
    take float32's own rounding of the computation (2^-20 of the value, generously)."""
    _, exponent = np.frexp(np.abs(exact))
    half_ulp = np.exp2(exponent - 9.0)
    error = np.abs(got.astype(np.float64) - exact)
    assert (error <= half_ulp + np.abs(exact) * 2.0**-20).all(), f"worst {np.max(error / half_ulp):.3f} half ulps"


@pytest.mark.parametrize("device", ["cpu", "lazy"])
def test_bfloat16_softmax_mean_var_and_norm_round_once(device):
    rng = np.random.default_rng(0)
    logits = bf16(rng.standard_normal((8, 200)) * 4).to(device)
    v = logits.numpy().astype(np.float64)  # the operands' exact values
    expected = np.exp(v - v.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    within_half_an_ulp(braze.softmax(logits, axis=1).numpy(), expected)
    shifted = v - v.max(1, keepdims=True)
    within_half_an_ulp(
        braze.log_softmax(logits, axis=1).numpy(), shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    )
    triples = bf16(rng.uniform(1.0, 2.0, (2000, 3))).to(device)
    t = triples.numpy().astype(np.float64)
    within_half_an_ulp(triples.mean(axis=1).numpy(), t.mean(1))
    within_half_an_ulp(braze.var(triples, axis=1).numpy(), t.var(1))
    rows = bf16(rng.standard_normal((16, 32))).to(device)
    weight, bias = bf16(rng.uniform(0.5, 1.5, 32)).to(device), bf16(rng.standard_normal(32)).to(device)
    r, w, b = (a.numpy().astype(np.float64) for a in (rows, weight, bias))
    normalized = (r - r.mean(1, keepdims=True)) / np.sqrt(r.var(1, keepdims=True) + 1e-5) * w + b
    got = nn.functional.layer_norm(rows, 32, weight, bias)
    assert got.dtype == braze.bfloat16
    within_half_an_ulp(got.numpy(), normalized)


def test_bfloat16_softmax_gradient_is_bfloat16():
    logits = bf16([[1.0, 2.0, 3.0]]).requires_grad_()
    (braze.softmax(logits, axis=1) * bf16([[1.0, 0.0, 0.0]])).sum().backward()
    assert logits.grad.dtype == braze.bfloat16
    p = np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum()
    expected = p[0] * (np.eye(3)[0] - p)  # d p_0 / d logits
    np.testing.assert_allclose(logits.grad.numpy()[0], expected, rtol=2 * 2.0**-8, atol=1e-6)


def adam_in_float32(w: np.ndarray, steps: int, lr: float = 0.01) -> np.ndarray:
    """PyTorch's Adam on a bfloat16 parameter whose gradient is ones: each step computed in
    float32 from the bfloat16 values, the parameter and moments rounded to bfloat16."""
    m, v = np.zeros_like(w), np.zeros_like(w)
    for step in range(1, steps + 1):
        g = np.ones_like(w)
        m = nearest_bfloat16(np.float32(0.9) * m + np.float32(0.1) * g)
        v = nearest_bfloat16(np.float32(0.999) * v + np.float32(0.001) * g * g)
        m_hat, v_hat = m / np.float32(1 - 0.9**step), v / np.float32(1 - 0.999**step)
        w = nearest_bfloat16(w - np.float32(lr) * m_hat / (np.sqrt(v_hat) + np.float32(1e-8)))
    return w


class Weights(nn.Module):
    def __init__(self, values: np.ndarray) -> None:
        super().__init__()
        self.w = bf16(values).requires_grad_()


@pytest.mark.parametrize("optimizer", ["torch", "keras"])
def test_adam_updates_bfloat16_parameters(optimizer):
    start = np.array([1.0, 2.0, 3.0], np.float32)
    model = Weights(start)
    adam = braze.optim.Adam(model, lr=0.01) if optimizer == "torch" else braze.keras.optimizers.Adam(0.01)
    for _ in range(3):
        if optimizer == "torch":
            adam.zero_grad()
            model.w.sum().backward()
            adam.step()
        else:
            adam.apply_gradients([(braze.ones_like(model.w), model.w)])
    assert model.w.dtype == braze.bfloat16
    got = model.w.numpy()
    assert (got < start).all()  # it moved (in bfloat16 arithmetic beta2 = 1 and it never did)
    np.testing.assert_allclose(got, adam_in_float32(start, 3), atol=2.0**-7 * 3)


def test_adams_step_count_of_a_bfloat16_parameter_counts_past_256():
    model = Weights(np.array([1.0], np.float32))
    adam = braze.optim.Adam(model, lr=0.01)
    model.w.sum().backward()
    adam.step()
    state = adam.state_dict()
    state["state"][0]["step"] = np.array(256.0)
    adam.load_state_dict(state)
    adam.step()
    assert adam.state_dict()["state"][0]["step"] == 257.0  # 257 is no bfloat16


def test_autocast_is_a_setting_of_its_thread():
    a = braze.tensor(np.full((1, 1), 1.00390625, np.float32))  # 1 + 2^-8, no bfloat16
    seen = {}

    def worker():
        seen["enabled"] = braze.is_autocast_enabled()
        seen["product"] = (a @ a).numpy().item()

    with braze.autocast("bfloat16"):
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert (a @ a).numpy().item() == 1.0  # here, the operands are rounded
    assert seen == {"enabled": False, "product": np.float32(1.00390625) ** 2}


def test_autocast_takes_pytorchs_spelling():
    for spelled in (
        braze.autocast("cpu", dtype=braze.bfloat16),
        braze.autocast(device_type="cpu"),
        braze.autocast("lazy"),
    ):
        with spelled:
            assert braze.is_autocast_enabled()
    with pytest.raises(braze.DTypeError, match="only bfloat16"):
        braze.autocast("cpu", dtype=braze.float64)
