"""The recurrent layers: PyTorch's nn.RNN, nn.LSTM and nn.GRU and Keras's layers.SimpleRNN,
layers.LSTM and layers.GRU against NumPy loops written from each framework's equations (gate orders and
weight layouts included), on every device mode; their gradients against float64 finite
differences; and training through them lazily to eager's losses."""

from __future__ import annotations

import numpy as np
import pytest
from default_device import made_on
from gradcheck import assert_gradients_match

import braze
from braze import keras

RNG = np.random.default_rng(3)
X = RNG.standard_normal((3, 5, 4)).astype(np.float32)  # (batch, steps, features)


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def torch_lstm_ref(x, weights, layers):
    """PyTorch's equations, time major: gates i, f, g, o of W_ih x + b_ih + W_hh h + b_hh."""
    hs, cs = [], []
    for k in range(layers):
        w_ih, w_hh, b_ih, b_hh = (weights[f"{n}_l{k}"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
        h = np.zeros((x.shape[1], w_hh.shape[1]))
        c = np.zeros_like(h)
        out = []
        for x_t in x:
            i, f, g, o = np.split(x_t @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=-1)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h = sigmoid(o) * np.tanh(c)
            out.append(h)
        x = np.stack(out)
        hs.append(h)
        cs.append(c)
    return x, np.stack(hs), np.stack(cs)


def torch_gru_ref(x, weights):
    """PyTorch's equations: r, z, n; n = tanh(W_in x + b_in + r * (W_hn h + b_hn))."""
    w_ih, w_hh, b_ih, b_hh = (weights[f"{n}_l0"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
    h = np.zeros((x.shape[1], w_hh.shape[1]))
    out = []
    for x_t in x:
        x_r, x_z, x_n = np.split(x_t @ w_ih.T + b_ih, 3, axis=-1)
        h_r, h_z, h_n = np.split(h @ w_hh.T + b_hh, 3, axis=-1)
        r, z = sigmoid(x_r + h_r), sigmoid(x_z + h_z)
        n = np.tanh(x_n + r * h_n)
        h = (1 - z) * n + z * h
        out.append(h)
    return np.stack(out), h[None]


def torch_rnn_ref(x, weights, layers, activation):
    """PyTorch's equations, time major: h = act(W_ih x + b_ih + W_hh h + b_hh), layer by layer."""
    last = []
    for k in range(layers):
        w_ih, w_hh, b_ih, b_hh = (weights[f"{n}_l{k}"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
        h = np.zeros((x.shape[1], w_hh.shape[1]))
        out = []
        for x_t in x:
            h = activation(x_t @ w_ih.T + b_ih + h @ w_hh.T + b_hh)
            out.append(h)
        x = np.stack(out)
        last.append(h)
    return x, np.stack(last)


def keras_simple_rnn_ref(x, kernel, recurrent, bias, go_backwards=False):
    """Keras's equations, batch major: h = tanh(x K + h R + b)."""
    h = np.zeros((x.shape[0], recurrent.shape[0]))
    steps = range(x.shape[1])[::-1] if go_backwards else range(x.shape[1])
    out = []
    for t in steps:
        h = np.tanh(x[:, t] @ kernel + h @ recurrent + bias)
        out.append(h)
    return np.stack(out, axis=1), h


def keras_lstm_ref(x, kernel, recurrent, bias, go_backwards=False):
    """Keras's equations, batch major: gates i, f, c, o of x K + h R + b."""
    h = np.zeros((x.shape[0], recurrent.shape[0]))
    c = np.zeros_like(h)
    steps = range(x.shape[1])[::-1] if go_backwards else range(x.shape[1])
    out = []
    for t in steps:
        i, f, g, o = np.split(x[:, t] @ kernel + h @ recurrent + bias, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        out.append(h)
    return np.stack(out, axis=1), h, c


def keras_gru_ref(x, kernel, recurrent, bias):
    """Keras's equations (reset_after): z, r, h; h~ = tanh(x K_h + b0_h + r * (h R_h + b1_h))."""
    h = np.zeros((x.shape[0], recurrent.shape[0]))
    out = []
    for t in range(x.shape[1]):
        x_z, x_r, x_h = np.split(x[:, t] @ kernel + bias[0], 3, axis=-1)
        h_z, h_r, h_h = np.split(h @ recurrent + bias[1], 3, axis=-1)
        z, r = sigmoid(x_z + h_z), sigmoid(x_r + h_r)
        h = z * h + (1 - z) * np.tanh(x_h + r * h_h)
        out.append(h)
    return np.stack(out, axis=1), h


def _state(module):
    return {name: np.asarray(t.numpy(), np.float64) for name, t in module.named_parameters()}


DEVICES = [braze.CPU, braze.LAZY_CPU]


@pytest.mark.parametrize("device", DEVICES, ids=["eager", "lazy"])
def test_torch_lstm_layout_and_values(device):
    lstm = braze.nn.LSTM(4, 6, num_layers=2, batch_first=True).to(device)
    shapes = {name: tuple(t.shape) for name, t in lstm.named_parameters()}
    assert shapes == {
        **{f"weight_ih_l{k}": (24, 4 if k == 0 else 6) for k in range(2)},
        **{f"weight_hh_l{k}": (24, 6) for k in range(2)},
        **{f"{b}_l{k}": (24,) for b in ("bias_ih", "bias_hh") for k in range(2)},
    }
    out, (h, c) = lstm(braze.tensor(X, device=device))
    want_out, want_h, want_c = torch_lstm_ref(X.transpose(1, 0, 2), _state(lstm), 2)
    np.testing.assert_allclose(out.numpy(), want_out.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES, ids=["eager", "lazy"])
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_torch_rnn_layout_and_values(device, nonlinearity):
    rnn = braze.nn.RNN(4, 6, 2, nonlinearity, batch_first=True).to(device)  # PyTorch's positional order
    shapes = {name: tuple(t.shape) for name, t in rnn.named_parameters()}
    assert shapes == {
        **{f"weight_ih_l{k}": (6, 4 if k == 0 else 6) for k in range(2)},
        **{f"weight_hh_l{k}": (6, 6) for k in range(2)},
        **{f"{b}_l{k}": (6,) for b in ("bias_ih", "bias_hh") for k in range(2)},
    }
    out, h = rnn(braze.tensor(X, device=device))
    activation = np.tanh if nonlinearity == "tanh" else (lambda v: np.maximum(v, 0.0))
    want_out, want_h = torch_rnn_ref(X.transpose(1, 0, 2), _state(rnn), 2, activation)
    np.testing.assert_allclose(out.numpy(), want_out.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), want_h, rtol=1e-5, atol=1e-6)


def test_torch_rnn_refuses_an_unknown_nonlinearity():
    with pytest.raises(ValueError, match="nonlinearity must be 'tanh' or 'relu', got 'sigmoid'"):
        braze.nn.RNN(4, 6, nonlinearity="sigmoid")


@pytest.mark.parametrize("device", DEVICES, ids=["eager", "lazy"])
def test_keras_simple_rnn_values(device):
    x = braze.tensor(X, device=device)
    with made_on(device):
        rnn = keras.layers.SimpleRNN(6, return_sequences=True, return_state=True, go_backwards=True)
        out, h = rnn(x)
    kernel, recurrent = (np.asarray(w.numpy(), np.float64) for w in (rnn.kernel, rnn.recurrent_kernel))
    assert kernel.shape == (4, 6) and recurrent.shape == (6, 6) and tuple(rnn.bias.shape) == (6,)
    np.testing.assert_allclose(recurrent @ recurrent.T, np.eye(6), atol=1e-5)  # orthogonal
    bias = RNG.standard_normal(6).astype(np.float32)
    rnn.bias = braze.tensor(bias, device=device)
    out, h = rnn(x)
    want_out, want_h = keras_simple_rnn_ref(X, kernel, recurrent, bias, go_backwards=True)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), want_h, rtol=1e-5, atol=1e-6)


def test_keras_simple_rnn_has_no_recurrent_activation():
    with pytest.raises(TypeError, match="SimpleRNN: unexpected argument 'recurrent_activation'"):
        keras.layers.SimpleRNN(4, recurrent_activation="sigmoid")


@pytest.mark.parametrize("device", DEVICES, ids=["eager", "lazy"])
def test_torch_gru_values_time_major(device):
    gru = braze.nn.GRU(4, 5).to(device)
    assert tuple(gru.weight_ih_l0.shape) == (15, 4) and tuple(gru.weight_hh_l0.shape) == (15, 5)
    out, h = gru(braze.tensor(X, device=device))  # (steps, batch, features): here 3 steps of 5
    want_out, want_h = torch_gru_ref(X, _state(gru))
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), want_h, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES, ids=["eager", "lazy"])
def test_keras_lstm_and_gru_values(device):
    x = braze.tensor(X, device=device)
    with made_on(device):
        lstm = keras.layers.LSTM(6, return_sequences=True, return_state=True, go_backwards=True)
        out, h, c = lstm(x)
        gru = keras.layers.GRU(5, return_state=True)
        gru.build((None, 5, 4))
        gru.built = True
    gru.bias = braze.tensor(RNG.standard_normal((2, 15)).astype(np.float32), device=device)  # both biases read
    last, g = gru(x)
    kernel, recurrent, bias = (
        np.asarray(w.numpy(), np.float64) for w in (lstm.kernel, lstm.recurrent_kernel, lstm.bias)
    )
    np.testing.assert_array_equal(bias[6:12], 1.0)  # unit_forget_bias
    np.testing.assert_allclose(recurrent @ recurrent.T, np.eye(6), atol=1e-5)  # orthogonal
    want_out, want_h, want_c = keras_lstm_ref(X, kernel, recurrent, bias, go_backwards=True)
    for got, want in ((out, want_out), (h, want_h), (c, want_c)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    assert tuple(gru.bias.shape) == (2, 15)
    gk, gr, gb = (np.asarray(w.numpy(), np.float64) for w in (gru.kernel, gru.recurrent_kernel, gru.bias))
    want_seq, want_last = keras_gru_ref(X, gk, gr, gb)
    np.testing.assert_allclose(last.numpy(), want_last, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g.numpy(), want_seq[:, -1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_torch_recurrent_gradients_match_finite_differences(kind):
    layer = getattr(braze.nn, kind)(2, 3)
    names = [n for n, _ in layer.named_parameters()]
    initial = [np.asarray(t.numpy(), np.float64) for _, t in layer.named_parameters()]

    def fn(x, *weights):
        for name, w in zip(names, weights, strict=True):
            setattr(layer, name, w)
        out = layer(x)[0]
        return out * out

    arrays = [RNG.standard_normal((4, 2, 2)), *initial]
    assert_gradients_match(fn, arrays, list(range(len(arrays))), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM"])
def test_keras_recurrent_gradients_match_finite_differences(kind):
    layer = getattr(keras.layers, kind)(3, return_sequences=True, dtype="float64")
    layer(braze.tensor(np.zeros((1, 2, 2))))

    def fn(x, kernel, recurrent, bias):
        layer.kernel, layer.recurrent_kernel, layer.bias = kernel, recurrent, bias
        return layer(x)

    arrays = [RNG.standard_normal((2, 4, 2))] + [
        np.asarray(w.numpy(), np.float64) for w in (layer.kernel, layer.recurrent_kernel, layer.bias)
    ]
    assert_gradients_match(fn, arrays, [0, 1, 2, 3], rtol=1e-5, atol=1e-7)


def _train(device, kind, steps=4, jit=False):
    braze.manual_seed(0)
    with made_on(device):
        lstm = getattr(braze.nn, kind)(4, 8, batch_first=True)
        head = braze.nn.Linear(8, 1)
    params = [*lstm.parameters(), *head.parameters()]
    optimizer = braze.optim.SGD(params, lr={"RNN": 0.05, "LSTM": 0.5}[kind])  # a tanh RNN diverges at 0.5 here
    x = braze.tensor(X, device=device)
    y = braze.tensor(X.sum(axis=(1, 2))[:, None] * 0.1, device=device)

    def step(lstm, head, optimizer, x, y):
        out, _ = lstm(x)
        loss = ((head(out[:, -1]) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    run = braze.jit(step) if jit else step
    return [run(lstm, head, optimizer, x, y).item() for _ in range(steps)]


@pytest.mark.parametrize("kind", ["RNN", "LSTM"])
@pytest.mark.parametrize("mode", ["lazy", "jit"])
def test_a_recurrent_network_trains_lazily_and_jitted_to_eagers_losses(mode, kind):
    eager = _train(braze.CPU, kind)
    other = _train(braze.LAZY_CPU, kind) if mode == "lazy" else _train(braze.CPU, kind, jit=True)
    np.testing.assert_allclose(other, eager, rtol=1e-4)
    assert eager[-1] < eager[0]


@pytest.mark.parametrize(("kind", "gates"), [("SimpleRNN", 1), ("LSTM", 4)])
def test_a_keras_model_with_a_recurrent_layer_fits_saves_and_loads(tmp_path, kind, gates):
    y = X.sum(axis=(1, 2))[:, None]
    model = keras.Sequential([keras.Input((5, 4)), getattr(keras.layers, kind)(6), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(X, y, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert model.count_params() == gates * 6 * (4 + 6) + gates * 6 + 6 + 1  # Keras's count for these layers
    model.save(tmp_path / "recurrent.keras")
    loaded = keras.models.load_model(tmp_path / "recurrent.keras")
    np.testing.assert_array_equal(loaded.predict(X, verbose=0), model.predict(X, verbose=0))


def _weights(layer):
    return (np.asarray(w.numpy(), np.float64) for w in (layer.kernel, layer.recurrent_kernel, layer.bias))


def test_bidirectional_runs_a_copy_over_the_reversed_steps_and_merges():
    concat = keras.layers.Bidirectional(keras.layers.LSTM(6, return_sequences=True))
    out = concat(X).numpy()
    forward, _, _ = keras_lstm_ref(X, *_weights(concat.forward_layer))
    backward, _, _ = keras_lstm_ref(X, *_weights(concat.backward_layer), go_backwards=True)
    assert concat.backward_layer.go_backwards and out.shape == (3, 5, 12)
    np.testing.assert_allclose(out, np.concatenate([forward, backward[:, ::-1]], -1), rtol=1e-5, atol=1e-6)
    summed = keras.layers.Bidirectional(keras.layers.SimpleRNN(4, return_state=True), merge_mode="sum")
    merged, h_forward, h_backward = summed(X)
    _, want_forward = keras_simple_rnn_ref(X, *_weights(summed.forward_layer))
    _, want_backward = keras_simple_rnn_ref(X, *_weights(summed.backward_layer), go_backwards=True)
    np.testing.assert_allclose(h_forward.numpy(), want_forward, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h_backward.numpy(), want_backward, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(merged.numpy(), want_forward + want_backward, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="wraps a SimpleRNN, LSTM, GRU or RNN"):
        keras.layers.Bidirectional(keras.layers.Dense(3))


def test_bidirectional_gradients_match_finite_differences():
    layer = keras.layers.Bidirectional(keras.layers.SimpleRNN(3, dtype="float64"), merge_mode="ave")
    layer(braze.tensor(np.zeros((1, 2, 2))))
    sides = (layer.forward_layer, layer.backward_layer)

    def fn(x, *weights):
        for side, (kernel, recurrent, bias) in zip(sides, (weights[:3], weights[3:]), strict=True):
            side.kernel, side.recurrent_kernel, side.bias = kernel, recurrent, bias
        return layer(x)

    arrays = [RNG.standard_normal((2, 4, 2)), *_weights(sides[0]), *_weights(sides[1])]
    assert_gradients_match(fn, arrays, list(range(7)), rtol=1e-5, atol=1e-7)
