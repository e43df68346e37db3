"""nanoGPT's GPT in braze against a NumPy transcription of nanoGPT's forward pass, its
initial weights, optimizer groups and checkpoints."""

from __future__ import annotations

import math

import numpy as np
import pytest
from transformer_layers import needs_transformer_layers

import braze
from braze.models import GPTConfig
from braze.models.gpt_config import GPTConfig as Config

pytestmark = needs_transformer_layers

TINY = GPTConfig(block_size=8, vocab_size=11, n_layer=2, n_head=2, n_embd=16)


def _layer_norm(x, weight, bias):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + 1e-5) * weight
    return y if bias is None else y + bias


def _gelu(x):  # PyTorch's nn.GELU(): the exact one, with erf
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def numpy_gpt(state: dict[str, np.ndarray], config: GPTConfig, idx: np.ndarray) -> np.ndarray:
    """nanoGPT's ``GPT.forward`` in float64 NumPy: the logits of every position."""
    s = {k: v.astype(np.float64) for k, v in state.items()}
    b, t = idx.shape
    nh, c = config.n_head, config.n_embd

    def linear(x, name):
        y = x @ s[f"{name}.kernel"]
        return y + s[f"{name}.bias"] if config.bias else y

    def norm(x, name):
        return _layer_norm(x, s[f"{name}.weight"], s.get(f"{name}.bias"))

    x = s["transformer.wte.weight"][idx] + s["transformer.wpe.weight"][:t]
    for i in range(config.n_layer):
        p = f"transformer.h.{i}."
        q, k, v = np.split(linear(norm(x, p + "ln_1"), p + "attn.c_attn"), 3, axis=-1)
        q, k, v = (a.reshape(b, t, nh, c // nh).transpose(0, 2, 1, 3) for a in (q, k, v))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(c // nh)
        scores = np.where(np.tril(np.ones((t, t), bool)), scores, -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        y = (weights @ v).transpose(0, 2, 1, 3).reshape(b, t, c)
        x = x + linear(y, p + "attn.c_proj")
        x = x + linear(_gelu(linear(norm(x, p + "ln_2"), p + "mlp.c_fc")), p + "mlp.c_proj")
    return norm(x, "transformer.ln_f") @ s["transformer.wte.weight"].T


def tokens(config: GPTConfig, batch: int = 3, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, config.vocab_size, (batch, config.block_size + 1)).astype(np.int32)


@pytest.mark.parametrize("bias", [False, True])
def test_logits_and_loss_match_nanogpts_forward_in_numpy(bias):
    config = Config(**{**TINY.to_dict(), "bias": bias})
    model = braze.models.GPT(config, seed=3)
    data = tokens(config)
    x, y = data[:, :-1], data[:, 1:]
    logits, loss = model(braze.tensor(x), braze.tensor(y))
    expected = numpy_gpt(model.state_dict(), config, x)
    np.testing.assert_allclose(logits.numpy(), expected, rtol=1e-4, atol=1e-5)
    shifted = expected - expected.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    reference_loss = -np.take_along_axis(log_probs, y[..., None], -1).mean()
    np.testing.assert_allclose(loss.item(), reference_loss, rtol=1e-5)
    last, none = model(braze.tensor(x))
    assert none is None and last.shape == (3, 1, config.vocab_size)
    np.testing.assert_allclose(last.numpy()[:, 0], expected[:, -1], rtol=1e-4, atol=1e-5)


def test_initial_weights_are_nanogpts_distribution_from_the_seed():
    model = braze.models.GPT(GPTConfig(), seed=0)
    assert model.num_params() == 795_904  # nanoGPT prints "number of parameters: 0.80M"
    assert model.num_params(non_embedding=False) == 795_904 + 64 * 128
    state = model.state_dict()
    assert sorted(state) == sorted(braze.models.gpt.initial_state(GPTConfig(), 0))
    wte = state["transformer.wte.weight"]
    assert abs(wte.std() - 0.02) < 0.002 and abs(wte.mean()) < 0.002
    projection = state["transformer.h.3.mlp.c_proj.kernel"]
    assert abs(projection.std() - 0.02 / math.sqrt(8)) < 0.0005
    assert np.all(state["transformer.ln_f.weight"] == 1)
    again = braze.models.GPT(GPTConfig(), seed=0).state_dict()
    assert all(np.array_equal(state[k], again[k]) for k in state)


def test_the_head_is_the_token_embedding():
    model = braze.models.GPT(TINY)
    names = [name for name, _ in model.named_parameters()]
    assert not any("lm_head" in name for name in names)  # one parameter, used twice
    x = braze.tensor(tokens(TINY)[:, :-1])
    _, loss = model(x, braze.tensor(tokens(TINY)[:, 1:]))
    loss.backward()
    wte = model.transformer.wte.weight
    assert wte.grad is not None and np.all(np.abs(wte.grad.numpy()).sum(1) > 0)  # every token's row, via the head


def test_optimizer_groups_decay_matrices_only():
    model = braze.models.GPT(TINY)
    optimizer = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99))
    decay, no_decay = optimizer.param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.ndim == 2 for p in decay["params"]) and all(p.ndim == 1 for p in no_decay["params"])
    assert len(decay["params"]) + len(no_decay["params"]) == len(model.parameters())
    assert optimizer.betas == (0.9, 0.99)


def test_a_sequence_longer_than_the_block_is_an_error():
    model = braze.models.GPT(TINY)
    with pytest.raises(braze.ShapeError, match="a sequence of 9 tokens is longer than the block size 8"):
        model(braze.tensor(tokens(TINY)))
