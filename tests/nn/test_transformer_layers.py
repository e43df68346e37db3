"""The transformer's layers (Embedding, LayerNorm, GELU, scaled dot-product attention,
multi-head attention) against NumPy transcriptions, their gradients against float64
finite differences, and the same values eagerly, lazily and under @jit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import assert_gradients_match

import braze
import braze.keras as keras
from braze import nn
from braze.nn import functional as F

RNG = np.random.default_rng(0)


def _erf(x):
    return np.vectorize(math.erf)(x)


def numpy_layer_norm(x, weight=None, bias=None, eps=1e-5, axes=(-1,)):
    mean = x.mean(axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    y = y if weight is None else y * weight
    return y if bias is None else y + bias


def numpy_attention(q, k, v, mask=None, scale=None):
    scores = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)) @ v


def test_gelu_exact_and_tanh_match_their_formulas():
    x = np.linspace(-6, 6, 241).astype(np.float32)
    exact = 0.5 * x * (1 + _erf(x / math.sqrt(2)))
    approx = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(nn.GELU()(braze.tensor(x)).numpy(), exact, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(nn.GELU("tanh")(braze.tensor(x)).numpy(), approx, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(keras.activations.gelu(braze.tensor(x)).numpy(), exact, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        keras.activations.gelu(braze.tensor(x), approximate=True).numpy(), approx, rtol=1e-6, atol=1e-7
    )
    dense = keras.layers.Dense(3, activation="gelu", input_dim=4)
    inputs = RNG.standard_normal((2, 4)).astype(np.float32)
    pre = inputs @ dense.kernel.numpy()
    np.testing.assert_allclose(
        dense(braze.tensor(inputs)).numpy(), 0.5 * pre * (1 + _erf(pre / math.sqrt(2))), rtol=1e-5, atol=1e-6
    )
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU("sigmoid")


@pytest.mark.parametrize("affine, bias", [(True, True), (True, False), (False, False)])
def test_layer_norm_matches_numpy(affine, bias):
    x = RNG.standard_normal((3, 4, 6)).astype(np.float32) * 3 + 1
    layer = nn.LayerNorm(6, elementwise_affine=affine, bias=bias)
    if affine:
        layer.weight = braze.tensor(RNG.standard_normal(6).astype(np.float32), requires_grad=True)
        if bias:
            layer.bias = braze.tensor(RNG.standard_normal(6).astype(np.float32), requires_grad=True)
    names = sorted(n for n, _ in layer.named_parameters())
    assert names == sorted(["weight", "bias"][: affine + (affine and bias)])
    weight = layer.weight.numpy() if affine else None
    shift = layer.bias.numpy() if affine and bias else None
    np.testing.assert_allclose(layer(braze.tensor(x)).numpy(), numpy_layer_norm(x, weight, shift), atol=2e-6)


def test_keras_layer_normalization_over_one_or_more_axes():
    x = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    last = keras.layers.LayerNormalization()
    np.testing.assert_allclose(last(braze.tensor(x)).numpy(), numpy_layer_norm(x, eps=1e-3), atol=2e-6)
    assert last.gamma.shape == (5,) and last.beta.shape == (5,)
    both = keras.layers.LayerNormalization(axis=[1, 2], center=False)
    both(braze.tensor(x))
    both.gamma = braze.tensor(RNG.standard_normal((3, 5)).astype(np.float32), requires_grad=True)
    want = numpy_layer_norm(x, both.gamma.numpy(), eps=1e-3, axes=(1, 2))
    np.testing.assert_allclose(both(braze.tensor(x)).numpy(), want, atol=2e-6)
    middle = keras.layers.LayerNormalization(axis=1, epsilon=1e-5)
    np.testing.assert_allclose(middle(braze.tensor(x)).numpy(), numpy_layer_norm(x, axes=(1,)), atol=2e-6)
    assert not hasattr(both, "beta") and middle.gamma.shape == (3,)


def test_embedding_rows_and_their_gradient_with_duplicates():
    layer = nn.Embedding(7, 3)
    indices = np.array([[0, 6, 6], [2, 0, 6]])
    table = layer.weight.numpy()
    out = layer(braze.tensor(indices))
    np.testing.assert_array_equal(out.numpy(), table[indices])
    upstream = RNG.standard_normal((2, 3, 3)).astype(np.float32)
    (out * braze.tensor(upstream)).sum().backward()
    expected = np.zeros_like(table)
    np.add.at(expected, indices, upstream)
    np.testing.assert_allclose(layer.weight.grad.numpy(), expected, rtol=1e-6)
    assert abs(float(table.std()) - 1) < 0.5  # PyTorch's normal initial table
    assert keras.layers.Embedding(5, 4).embeddings.numpy().max() <= 0.05  # Keras's uniform one


@pytest.mark.parametrize("bad", [7, -1])
def test_embedding_out_of_range_raises_eagerly_and_clamps_compiled(bad):
    layer = nn.Embedding(7, 2)
    with pytest.raises(IndexError, match=r"embedding: index .* out of bounds for axis 0 of size 7"):
        layer(braze.tensor([1, bad]))
    layer.to(braze.LAZY_CPU)
    clamped = layer(braze.tensor([1, bad], device=braze.LAZY_CPU)).numpy()
    np.testing.assert_array_equal(clamped, layer.weight.numpy()[[1, 6 if bad > 0 else 0]])


def test_scaled_dot_product_attention_matches_numpy():
    q, k, v = (RNG.standard_normal((2, 3, n, 4)).astype(np.float32) for n in (5, 6, 6))
    causal = np.tril(np.ones((5, 6), bool))
    got = F.scaled_dot_product_attention(braze.tensor(q), braze.tensor(k), braze.tensor(v), causal=True)
    np.testing.assert_allclose(got.numpy(), numpy_attention(q, k, v, causal), rtol=1e-5, atol=1e-6)
    torch_spelling = F.scaled_dot_product_attention(braze.tensor(q), braze.tensor(k), braze.tensor(v), is_causal=True)
    np.testing.assert_array_equal(torch_spelling.numpy(), got.numpy())
    mask = RNG.random((5, 6)) < 0.7
    mask[:, 0] = True
    masked = F.scaled_dot_product_attention(braze.tensor(q), braze.tensor(k), braze.tensor(v), braze.tensor(mask))
    np.testing.assert_allclose(masked.numpy(), numpy_attention(q, k, v, mask), rtol=1e-5, atol=1e-6)
    additive = np.where(mask, 0, -np.inf).astype(np.float32)
    added = F.scaled_dot_product_attention(
        braze.tensor(q), braze.tensor(k), braze.tensor(v), braze.tensor(additive), scale=0.3
    )
    np.testing.assert_allclose(added.numpy(), numpy_attention(q, k, v, mask, 0.3), rtol=1e-5, atol=1e-6)


def test_multi_head_attention_matches_numpy_from_its_weights():
    x = RNG.standard_normal((2, 5, 6)).astype(np.float32)
    memory = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4, output_shape=7)
    mask = RNG.random((2, 5, 4)) < 0.8
    mask[..., 0] = True
    got = layer(braze.tensor(x), braze.tensor(memory), attention_mask=braze.tensor(mask)).numpy()
    w = {n: p.numpy() for n, p in layer.named_parameters()}

    def project(inputs, name):
        return np.einsum("btd,dhk->bhtk", inputs, w[f"{name}.kernel"]) + w[f"{name}.bias"][:, None, :]

    heads = numpy_attention(project(x, "query"), project(memory, "key"), project(memory, "value"), mask[:, None])
    want = np.einsum("bhtk,hko->bto", heads, w["attention_output.kernel"]) + w["attention_output.bias"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    self_attention = keras.layers.MultiHeadAttention(num_heads=3, key_dim=2)
    y = self_attention(braze.tensor(x), braze.tensor(x), use_causal_mask=True).numpy()
    w = {n: p.numpy() for n, p in self_attention.named_parameters()}
    causal = np.tril(np.ones((5, 5), bool))
    heads = numpy_attention(project(x, "query"), project(x, "key"), project(x, "value"), causal)
    want = np.einsum("bhtk,hko->bto", heads, w["attention_output.kernel"]) + w["attention_output.bias"]
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def _float64(*shape, scale=1.0):
    return RNG.standard_normal(shape) * scale


GRADIENTS = {
    "gelu": (lambda x: F.gelu(x), [_float64(3, 4, scale=2)]),
    "gelu_tanh": (lambda x: F.gelu(x, "tanh"), [_float64(3, 4, scale=2)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, 5, w, b), [_float64(2, 3, 5, scale=2), _float64(5), _float64(5)]),
    "standardize_axes": (lambda x, w: F.standardize(x, (0, 2), w, None, 1e-3), [_float64(3, 2, 4), _float64(3, 4)]),
    "embedding": (lambda w: F.embedding(braze.tensor([[0, 3, 3], [3, 1, 0]]), w) * 1.5, [_float64(4, 2)]),
    "attention_causal": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, causal=True),
        [_float64(2, 2, 4, 3), _float64(2, 2, 4, 3), _float64(2, 2, 4, 2)],
    ),
    "attention_masked": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, braze.tensor(np.tril(np.ones((3, 5), bool), 2))),
        [_float64(1, 3, 2), _float64(1, 5, 2), _float64(1, 5, 4)],
    ),
}


@pytest.mark.parametrize("name", GRADIENTS)
def test_gradients_match_finite_differences(name):
    fn, arrays = GRADIENTS[name]
    assert_gradients_match(fn, arrays, list(range(len(arrays))), rtol=1e-5, atol=1e-7)


def test_multi_head_attention_gradients_match_finite_differences():
    layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=2)
    x = _float64(1, 3, 4)
    layer(braze.tensor(x.astype(np.float32)), braze.tensor(x.astype(np.float32)))  # built in float32
    layer.to(dtype=braze.float64)
    assert_gradients_match(lambda t: layer(t, t, use_causal_mask=True), [x], [0], rtol=1e-5, atol=1e-7)


class Block(nn.Module):
    """A GPT block of the layers, with an embedding in front and a head tied to it."""

    def __init__(self) -> None:
        self.wte = nn.Embedding(11, 8)
        self.ln = nn.LayerNorm(8, bias=False)
        self.attention = nn.MultiHeadAttention(num_heads=2, key_dim=4)
        self.gelu = nn.GELU()

    def forward(self, idx):
        x = self.wte(idx)
        x = x + self.attention(self.ln(x), self.ln(x), use_causal_mask=True)
        return self.wte.attend(self.gelu(x))


def test_layers_agree_eagerly_lazily_and_jitted():
    idx = RNG.integers(0, 11, (2, 5))
    model = Block()
    eager = model(braze.tensor(idx)).numpy()
    model.to(braze.LAZY_CPU)
    lazy = model(braze.tensor(idx, device=braze.LAZY_CPU)).numpy()
    jitted = braze.jit(lambda i: model(i))(braze.tensor(idx, device=braze.LAZY_CPU)).numpy()
    np.testing.assert_allclose(lazy, eager, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5, atol=1e-5)


class Tied(nn.Module):
    """An encoder and a decoder embedding sharing one table (one parameter, two layers)."""

    def __init__(self) -> None:
        self.encoder = nn.Embedding(5, 3)
        self.decoder = nn.Embedding(5, 3)
        self.decoder.weight = self.encoder.weight

    def forward(self, a, b):
        return (self.encoder(a) * self.decoder(b)).sum()


def test_a_tied_weight_is_one_parameter_trained_and_saved_once(tmp_path):
    model = Tied()
    assert [n for n, _ in model.named_parameters()] == ["encoder.weight"]
    table = model.encoder.weight.numpy().copy()
    a, b = np.array([0, 1, 1]), np.array([1, 4, 4])
    loss = model(braze.tensor(a), braze.tensor(b))
    loss.backward()
    expected = np.zeros_like(table)
    np.add.at(expected, a, table[b])
    np.add.at(expected, b, table[a])
    np.testing.assert_allclose(model.encoder.weight.grad.numpy(), expected, rtol=1e-6)
    optimizer = braze.optim.SGD(model.parameters(), lr=0.5)
    optimizer.step()
    np.testing.assert_allclose(model.decoder.weight.numpy(), table - 0.5 * expected, rtol=1e-6)
    model.save(tmp_path / "tied.safetensors")
    fresh = Tied()
    fresh.load(tmp_path / "tied.safetensors")
    assert fresh.decoder.weight is fresh.encoder.weight
    np.testing.assert_array_equal(fresh.decoder.weight.numpy(), model.encoder.weight.numpy())


def test_a_tied_weight_trains_under_jit():
    model = Tied()
    eager = Tied()
    eager.load_state_dict(model.state_dict())
    optimizers = [braze.optim.SGD(m.parameters(), lr=0.1) for m in (model, eager)]
    a, b = braze.tensor([0, 2, 2]), braze.tensor([2, 3, 0])

    @braze.jit
    def step(a, b):
        loss = model(a, b)
        loss.backward()
        optimizers[0].step()
        optimizers[0].zero_grad()
        return loss

    for _ in range(3):
        step(a, b)
        loss = eager(a, b)
        loss.backward()
        optimizers[1].step()
        optimizers[1].zero_grad()
    np.testing.assert_allclose(model.encoder.weight.numpy(), eager.encoder.weight.numpy(), rtol=1e-5, atol=1e-6)
    assert model.decoder.weight is model.encoder.weight


def test_attention_dropout_drops_weights_and_draws_a_new_mask_every_compiled_step():
    q = RNG.standard_normal((2, 6, 3)).astype(np.float32)
    identity = np.broadcast_to(np.eye(6, dtype=np.float32), (2, 6, 6)).copy()  # the output is the weights
    weights = numpy_attention(q, q, identity, np.tril(np.ones((6, 6), bool)))
    args = [braze.tensor(a, device=braze.LAZY_CPU) for a in (q, identity)]
    step = braze.jit(lambda q, v: F.scaled_dot_product_attention(q, q, v, dropout_p=0.5, causal=True))
    first, second = step(*args).numpy(), step(*args).numpy()
    for dropped in (first, second):
        kept = dropped != 0
        assert 0 < kept[weights > 0].mean() < 1
        np.testing.assert_allclose(dropped[kept], weights[kept] * 2, rtol=1e-5)
    assert not np.array_equal(first != 0, second != 0)
