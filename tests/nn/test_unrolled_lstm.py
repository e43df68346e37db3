"""An LSTM written as a Python loop over 60 time steps trains under ``@braze.jit`` to the
losses it reaches eagerly (its loop unrolls into one graph of some 3,500 nodes per step,
loss, gradients and update included, compiled once)."""

from __future__ import annotations

import numpy as np

import braze
from braze import nn
from braze.optim import SGD

STEPS, BATCH, FEATURES, UNITS = 60, 4, 3, 8


class UnrolledLSTM(nn.Module):
    def __init__(self, seed: int) -> None:
        generator = braze.Generator(seed)
        self.inputs = nn.Linear(FEATURES, 4 * UNITS, generator=generator)
        self.state = nn.Linear(UNITS, 4 * UNITS, bias=False, generator=generator)
        self.head = nn.Linear(UNITS, 1, generator=generator)

    def forward(self, x: braze.Tensor) -> braze.Tensor:
        h = braze.zeros((BATCH, UNITS), device=x.device)
        c = braze.zeros((BATCH, UNITS), device=x.device)
        for t in range(x.shape[1]):
            z = self.inputs(x[:, t, :]) + self.state(h)
            i, f, o = (braze.sigmoid(z[:, k * UNITS : (k + 1) * UNITS]) for k in (0, 1, 3))
            c = f * c + i * braze.tanh(z[:, 2 * UNITS : 3 * UNITS])
            h = o * braze.tanh(c)
        return self.head(h)


def step(model: nn.Module, optimizer: SGD, x: braze.Tensor, y: braze.Tensor) -> braze.Tensor:
    optimizer.zero_grad()
    loss = nn.mean_squared_error(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def test_a_60_step_python_loop_lstm_trains_under_jit_as_eagerly():
    rng = np.random.default_rng(0)
    x = braze.tensor(rng.standard_normal((BATCH, STEPS, FEATURES)).astype(np.float32))
    y = braze.tensor(rng.standard_normal((BATCH, 1)).astype(np.float32))
    eager, jitted = UnrolledLSTM(seed=1), UnrolledLSTM(seed=1)
    eager_optimizer, jitted_optimizer = SGD(eager.parameters(), lr=0.5), SGD(jitted.parameters(), lr=0.5)
    compiled = braze.jit(step)
    eager_losses = [step(eager, eager_optimizer, x, y).item() for _ in range(4)]
    jitted_losses = [compiled(jitted, jitted_optimizer, x, y).item() for _ in range(4)]
    assert eager_losses[-1] < eager_losses[0]  # it learns
    # float32 sums in another order, 60 steps deep: agreement to 1e-5 relative, not bitwise.
    np.testing.assert_allclose(jitted_losses, eager_losses, rtol=1e-5)
    for p, q in zip(eager.parameters(), jitted.parameters(), strict=True):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-4, atol=1e-6)
    assert compiled.compiles == 1  # plain SGD keeps no state: every step is the same entry
