"""PyTorch's semantics where a review of braze's layers found them apart: the slope at 0
of softplus, of the binary cross-entropy of logits and of ``logaddexp``; ``nn.ReLU(True)``
and ``nn.LeakyReLU()`` as PyTorch reads them; SGD's arguments and dampening;
``nn.Embedding``'s ``padding_idx``; ``cross_entropy``'s ``ignore_index`` with probability
targets; ``LinearLR(total_iters=0)``; an LSTM's initial state given as one tensor. Each
is checked against a NumPy formula, float64 finite differences or PyTorch's documented rule.
"""

from __future__ import annotations

import numpy as np
import pytest

import braze
import braze.array_api as xp
from braze import keras, nn
from braze.nn import activations, tf_nn
from braze.nn import functional as F
from braze.optim import SGD, lr_scheduler

# Logits at the kink of relu and abs (0), near it, and far enough out that exp(|x|) overflows float64.
LOGITS = np.array([0.0, 0.0, 0.0, 1e-3, -1e-3, 2.5, -3.0, 40.0, -40.0, 1000.0, -1000.0])
TARGETS = np.array([0.0, 1.0, 0.25, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0])


def sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))


def value_and_grad(fn, *arrays: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """``fn``'s summed value and braze's gradients with respect to each float64 input."""
    tensors = [braze.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*tensors)
    out.sum().backward()
    return out.numpy(), [t.grad.numpy() for t in tensors]


def finite_differences(fn, x: np.ndarray, step: float = 1e-6) -> np.ndarray:
    """Central differences of ``fn`` (a NumPy function of float64 arrays, summed) at each element."""
    grad = np.empty_like(x)
    for i in range(x.size):
        up, down = x.copy(), x.copy()
        up.flat[i] += step
        down.flat[i] -= step
        grad.flat[i] = (fn(up).sum() - fn(down).sum()) / (2 * step)
    return grad


# 1. The slope at 0 --------------------------------------------------------------------


@pytest.mark.parametrize(
    "loss",
    [
        lambda x, y: nn.binary_cross_entropy(x, y, from_logits=True) * len(LOGITS),
        lambda x, y: tf_nn.sigmoid_cross_entropy_with_logits(labels=y, logits=x),
        lambda x, y: (
            keras.losses.BinaryCrossentropy(from_logits=True)(y.reshape(-1, 1), x.reshape(-1, 1)) * len(LOGITS)
        ),
    ],
    ids=["nn.binary_cross_entropy", "tf.nn.sigmoid_cross_entropy_with_logits", "keras.BinaryCrossentropy"],
)
def test_binary_cross_entropy_of_logits_has_the_slope_sigmoid_minus_target_at_0(loss):
    y = braze.tensor(TARGETS)
    value, (grad,) = value_and_grad(lambda x: loss(x, y), LOGITS)
    expected = np.logaddexp(0.0, LOGITS) - LOGITS * TARGETS  # softplus(x) - x * y, NumPy's
    np.testing.assert_allclose(value.sum(), expected.sum(), rtol=1e-12)
    # d/dx = sigmoid(x) - y: 1/2 - y at 0 (it was -y), finite far out.
    np.testing.assert_allclose(grad, sigmoid(LOGITS) - TARGETS, rtol=1e-9, atol=1e-15)


def test_binary_cross_entropy_of_logits_matches_finite_differences_and_keeps_small_losses():
    x = LOGITS[:7]
    y = braze.tensor(TARGETS[:7])
    _, (grad,) = value_and_grad(lambda t: tf_nn.sigmoid_cross_entropy_with_logits(labels=y, logits=t), x)
    np.testing.assert_allclose(
        grad, finite_differences(lambda a: np.logaddexp(0.0, a) - a * TARGETS[:7], x), rtol=1e-7, atol=1e-9
    )
    # A confident logit's loss, log1p(exp(-20)), keeps its digits in float32 (added last).
    confident = tf_nn.sigmoid_cross_entropy_with_logits(
        labels=braze.tensor(np.float32([1.0])), logits=braze.tensor(np.float32([20.0]))
    )
    np.testing.assert_allclose(confident.numpy(), np.log1p(np.exp(-20.0)), rtol=1e-6)


def test_softplus_has_slope_one_half_at_0_and_never_overflows():
    value, (grad,) = value_and_grad(activations.softplus, LOGITS)
    np.testing.assert_allclose(value, np.logaddexp(0.0, LOGITS), rtol=1e-15)
    np.testing.assert_allclose(grad, sigmoid(LOGITS), rtol=1e-12, atol=1e-300)
    x = LOGITS[:7]
    np.testing.assert_allclose(
        value_and_grad(activations.softplus, x)[1][0],
        finite_differences(lambda a: np.logaddexp(0.0, a), x),
        rtol=1e-7,
    )
    assert keras.activations.softplus is activations.softplus


def test_logaddexp_splits_the_gradient_evenly_where_the_inputs_tie():
    a = np.array([1.0, -3.0, 0.0, 2.0, -1.0, 700.0, 1e300])
    b = np.array([1.0, -3.0, 0.0, 5.0, -7.5, 700.0, 1e300])
    value, (ga, gb) = value_and_grad(lambda s, t: xp.logaddexp(s, t), a, b)
    np.testing.assert_allclose(value, np.logaddexp(a, b), rtol=1e-15)
    # d/da log(e^a + e^b) = e^a / (e^a + e^b) = sigmoid(a - b): 1/2 each at a tie (it was 1
    # and 0), as PyTorch's.
    np.testing.assert_allclose(ga, sigmoid(a - b), rtol=1e-12)
    np.testing.assert_allclose(gb, sigmoid(b - a), rtol=1e-12)
    fd_a = finite_differences(lambda s: np.logaddexp(s, b[:5]), a[:5])
    np.testing.assert_allclose(ga[:5], fd_a, rtol=1e-7)
    infinite = xp.logaddexp(braze.tensor([-np.inf, np.inf, np.inf]), braze.tensor([-np.inf, 1.0, np.inf]))
    np.testing.assert_array_equal(infinite.numpy(), [-np.inf, np.inf, np.inf])


# 2 and 5. PyTorch's activation layers ------------------------------------------------

X = np.array([-2.0, -0.5, 0.0, 0.5, 3.0, 7.0])


def test_relu_with_a_bool_first_argument_is_pytorchs_inplace_flag_not_a_cap():
    x = braze.tensor(X)
    for layer in (nn.ReLU(True), nn.ReLU(False), nn.ReLU(inplace=True), nn.ReLU()):
        np.testing.assert_array_equal(layer(x).numpy(), np.maximum(X, 0.0))
    again = nn.ReLU.from_config(nn.ReLU(True).get_config())
    np.testing.assert_array_equal(again(x).numpy(), np.maximum(X, 0.0))
    # Keras's max_value is still a cap.
    np.testing.assert_array_equal(nn.ReLU(6.0)(x).numpy(), np.minimum(np.maximum(X, 0.0), 6.0))
    np.testing.assert_array_equal(keras.layers.ReLU(max_value=1.0)(x).numpy(), np.clip(X, 0.0, 1.0))
    assert "inplace" not in keras.layers.ReLU().get_config()  # Keras's config stays Keras's
    with pytest.raises(TypeError, match="inplace must be a bool"):
        nn.ReLU(inplace=1)


def test_leaky_relu_defaults_to_pytorchs_slope_in_braze_nn_and_keras_slope_in_keras():
    x = braze.tensor(X)

    def leaky(slope: float) -> np.ndarray:
        return np.where(X > 0, X, slope * X)

    np.testing.assert_allclose(nn.LeakyReLU()(x).numpy(), leaky(0.01), rtol=1e-15)
    np.testing.assert_allclose(nn.LeakyReLU(0.2, True)(x).numpy(), leaky(0.2), rtol=1e-15)
    np.testing.assert_allclose(keras.layers.LeakyReLU()(x).numpy(), leaky(0.3), rtol=1e-15)
    np.testing.assert_allclose(keras.layers.LeakyReLU(0.2)(x).numpy(), leaky(0.2), rtol=1e-15)
    np.testing.assert_allclose(keras.layers.LeakyReLU(alpha=0.1)(x).numpy(), leaky(0.1), rtol=1e-15)
    assert keras.layers.LeakyReLU is not nn.LeakyReLU and issubclass(keras.layers.LeakyReLU, nn.LeakyReLU)
    # Each config makes its own class again, with its slope.
    again = keras.layers.LeakyReLU.from_config(keras.layers.LeakyReLU().get_config())
    assert type(again) is keras.layers.LeakyReLU and again.negative_slope == 0.3
    assert nn.LeakyReLU.from_config(nn.LeakyReLU().get_config()).negative_slope == 0.01


def test_a_saved_keras_leaky_relu_loads_with_keras_slope():
    model = keras.Sequential([keras.Input((6,)), keras.layers.LeakyReLU()])
    loaded = keras.models.model_from_json(model.to_json())
    np.testing.assert_allclose(
        loaded(braze.tensor(X.reshape(1, 6))).numpy().ravel(), np.where(X > 0, X, 0.3 * X), rtol=1e-6
    )


# 3. SGD --------------------------------------------------------------------------------

GRADS = [np.array([1.0, -2.0]), np.array([0.5, 3.0]), np.array([-1.5, 0.25]), np.array([2.0, 2.0])]


def torch_sgd(p, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, grads=GRADS):
    """PyTorch's SGD rule (torch.optim.SGD's documented algorithm) in NumPy."""
    p, buf = np.array(p, float), None
    for g in grads:
        g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


def run_sgd(*args, **kwargs) -> np.ndarray:
    p = braze.tensor(np.array([1.0, -1.0]), requires_grad=True)
    optimizer = SGD([p], *args, **kwargs)
    for g in GRADS:
        p.grad = braze.tensor(g)
        optimizer.step()
    return p.numpy()


def test_sgd_takes_pytorchs_arguments_in_pytorchs_order():
    # torch.optim.SGD.__init__ in PyTorch 2.13: (params, lr=0.001, momentum=0, dampening=0,
    # weight_decay=0, nesterov=False, *, maximize=False, ...)
    assert SGD([braze.tensor([1.0], requires_grad=True)]).lr == 0.001
    np.testing.assert_allclose(run_sgd(), torch_sgd([1.0, -1.0], 0.001), rtol=1e-14)
    np.testing.assert_allclose(run_sgd(0.1, 0.9, 0.5, 0.01), torch_sgd([1.0, -1.0], 0.1, 0.9, 0.5, 0.01), rtol=1e-14)
    np.testing.assert_allclose(
        run_sgd(0.1, 0.9, 0.0, 0.01, True), torch_sgd([1.0, -1.0], 0.1, 0.9, 0.0, 0.01, True), rtol=1e-14
    )
    np.testing.assert_allclose(run_sgd(0.1, 0.8), torch_sgd([1.0, -1.0], 0.1, 0.8), rtol=1e-14)
    with pytest.raises(ValueError, match="zero dampening"):
        SGD([braze.tensor([1.0], requires_grad=True)], 0.1, 0.9, 0.5, nesterov=True)


def test_sgd_dampening_matches_pytorch_in_groups_and_after_a_reload():
    p = braze.tensor(np.array([1.0, -1.0]), requires_grad=True)
    q = braze.tensor(np.array([2.0]), requires_grad=True)
    optimizer = SGD([{"params": [p]}, {"params": [q], "dampening": 0.0}], lr=0.1, momentum=0.9, dampening=0.3)
    for g in GRADS[:2]:
        p.grad, q.grad = braze.tensor(g), braze.tensor(g[:1])
        optimizer.step()
    # A second optimizer resumes from the first's state: its buffers are no first step's.
    twin = SGD([{"params": [p]}, {"params": [q], "dampening": 0.0}], lr=0.1, momentum=0.9, dampening=0.3)
    twin.load_state_dict(optimizer.state_dict())
    for g in GRADS[2:]:
        p.grad, q.grad = braze.tensor(g), braze.tensor(g[:1])
        twin.step()
    np.testing.assert_allclose(p.numpy(), torch_sgd([1.0, -1.0], 0.1, 0.9, 0.3), rtol=1e-14)
    np.testing.assert_allclose(q.numpy(), torch_sgd([2.0], 0.1, 0.9, grads=[g[:1] for g in GRADS]), rtol=1e-14)


def test_sgd_state_saved_without_dampening_still_loads():
    p = braze.tensor(np.array([1.0, -1.0]), requires_grad=True)
    optimizer = SGD([p], lr=0.1, momentum=0.9)
    state = optimizer.state_dict()
    for group in state["param_groups"]:  # as braze saved it before SGD took dampening
        del group["dampening"]
    optimizer.load_state_dict(state)
    assert optimizer.dampening == 0.0


def test_sgd_dampening_under_jit_matches_pytorchs_rule():
    p = braze.tensor(np.array([1.0, -1.0], np.float32), requires_grad=True)
    optimizer = SGD([p], 0.1, 0.9, 0.5)

    @braze.jit
    def step(g):
        optimizer.zero_grad()
        (p * g).sum().backward()
        optimizer.step()

    for g in GRADS:
        step(braze.tensor(g.astype(np.float32)))
    np.testing.assert_allclose(p.numpy(), torch_sgd([1.0, -1.0], 0.1, 0.9, 0.5), rtol=1e-6)


# 4. Embedding's padding_idx ------------------------------------------------------------


@pytest.mark.parametrize("make", [lambda: nn.Embedding(10, 4, 3), lambda: nn.Embedding(10, 4, padding_idx=-7)])
def test_embedding_third_argument_is_padding_idx(make):
    layer = make()
    assert layer.padding_idx == 3
    table = layer.weight.numpy()
    np.testing.assert_array_equal(table[3], 0.0)
    assert np.all(table[[0, 1, 2, 4]] != 0)
    indices = np.array([[3, 1, 3], [2, 3, 1]])
    cotangent = np.arange(1.0, 25.0).reshape(2, 3, 4).astype(np.float32)
    out = layer(braze.tensor(indices))
    np.testing.assert_array_equal(out.numpy(), table[indices])
    (out * braze.tensor(cotangent)).sum().backward()
    expected = np.zeros((10, 4), np.float32)
    np.add.at(expected, indices, cotangent)
    expected[3] = 0  # the padding row takes no gradient
    np.testing.assert_array_equal(layer.weight.grad.numpy(), expected)


def test_embedding_generator_is_a_keyword_and_padding_idx_is_checked():
    a = nn.Embedding(10, 4, generator=braze.Generator(5))
    b = nn.Embedding(10, 4, generator=braze.Generator(5))
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())
    with pytest.raises(TypeError, match="padding_idx"):
        nn.Embedding(10, 4, braze.Generator(5))
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(10, 4, 10)
    keras_layer = keras.layers.Embedding(10, 4, generator=braze.Generator(5))
    assert keras_layer.embeddings.shape == (10, 4) and keras_layer.padding_idx is None


# 6. cross_entropy's ignore_index with probabilities -------------------------------------


def test_cross_entropy_refuses_ignore_index_with_probability_targets():
    logits = braze.tensor(np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]]))
    probabilities = braze.tensor(np.array([[0.2, 0.5, 0.3], [1.0, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="ignore_index is not supported"):
        F.cross_entropy(logits, probabilities, ignore_index=1)
    with pytest.raises(ValueError, match="ignore_index is not supported"):
        nn.CrossEntropyLoss(ignore_index=0)(logits, probabilities)
    log_softmax = logits.numpy() - np.logaddexp.reduce(logits.numpy(), axis=1, keepdims=True)
    expected = -(probabilities.numpy() * log_softmax).sum(axis=1).mean()
    np.testing.assert_allclose(F.cross_entropy(logits, probabilities).item(), expected, rtol=1e-14)


# 7. LinearLR(total_iters=0) ------------------------------------------------------------


def test_linear_lr_with_no_iterations_keeps_the_start_factor():
    optimizer = SGD([braze.tensor([1.0], requires_grad=True)], lr=0.5)
    scheduler = lr_scheduler.LinearLR(optimizer, start_factor=0.5, end_factor=0.8, total_iters=0)
    seen = [optimizer.lr]
    for _ in range(4):
        optimizer.step()
        scheduler.step()
        seen.append(optimizer.lr)
    # PyTorch's chained form: start_factor * lr at epoch 0, unchanged past total_iters.
    assert seen == [0.25] * 5
    assert scheduler.get_last_lr() == [0.25]


# 8. An LSTM's initial state -------------------------------------------------------------


def test_lstm_initial_state_given_as_one_tensor_says_it_is_a_pair():
    lstm = nn.LSTM(3, 4)
    x = braze.tensor(np.zeros((5, 2, 3), np.float32))
    h0 = braze.tensor(np.zeros((1, 2, 4), np.float32))
    with pytest.raises(TypeError, match=r"LSTM: the initial state is a pair \(h_0, c_0\), got a tensor"):
        lstm(x, h0)
    out, (h, c) = lstm(x, (h0, h0))
    assert out.shape == (5, 2, 4) and h.shape == c.shape == (1, 2, 4)
