"""TensorFlow's spellings under ``import braze as tf``: GradientTape against NumPy
gradients, tf.function over captured models, optimizers and metrics (equal to the eager
steps, new batches never frozen into the trace), and the op names tf.reduce_mean & co."""

from __future__ import annotations

import numpy as np
import pytest

import braze as tf
from braze import keras


def test_gradient_tape_gives_numpy_gradients_and_none_where_unconnected():
    w = tf.Variable(np.array([[1.0, 2.0], [3.0, -1.0]], np.float32))
    b = tf.Variable(np.zeros(2, np.float32))
    unused = tf.Variable(np.ones(2, np.float32))
    x = np.array([[0.5, -1.0], [2.0, 1.0]], np.float32)
    with tf.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(tf.square(tf.matmul(x, w) + b))
    grad_w, grad_b, grad_unused = tape.gradient(y, [w, b, unused])
    z = x @ w.numpy()
    np.testing.assert_allclose(grad_w.numpy(), x.T @ (2 * z), rtol=1e-6)
    np.testing.assert_allclose(grad_b.numpy(), (2 * z).sum(0), rtol=1e-6)
    assert grad_unused is None
    assert tape.gradient(y, {"w": w})["w"] is not None  # persistent: asked twice, any structure
    constant = tf.constant([2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(constant)
        out = tf.reduce_mean(constant * constant)
    np.testing.assert_allclose(tape.gradient(out, constant).numpy(), [2.0, 3.0])
    with pytest.raises(RuntimeError, match="only be called once"):
        tape.gradient(out, constant)


def make_model():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.layers.Dense(4, activation="relu", input_shape=(3,)), keras.layers.Dense(2)])


def train(compiled: bool) -> tuple[list[float], float, list[np.ndarray]]:
    """Four steps of a step function that captures its model, optimizer and metric."""
    model = make_model()
    optimizer = keras.optimizers.Adam(0.05)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    accuracy = keras.metrics.SparseCategoricalAccuracy()

    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_weights)
        optimizer.apply_gradients(zip(grads, model.trainable_weights, strict=True))
        accuracy.update_state(y, model(x))
        return loss

    step = tf.function(train_step) if compiled else train_step
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(4):  # a new batch every call: NumPy arguments are inputs, not constants
        x = rng.standard_normal((8, 3)).astype(np.float32)
        losses.append(float(step(x, (x[:, 0] > 0).astype(np.int32))))
    if compiled:
        assert step.compiles <= 2  # the first call also makes Adam's slots
    return losses, float(accuracy.result()), [w.numpy() for w in model.weights]


def test_tf_function_updates_what_it_captures_as_the_eager_step_does():
    (eager_losses, eager_accuracy, eager_weights), (losses, accuracy_value, weights) = train(False), train(True)
    # Adam divides by the root of tiny second moments, amplifying float32 rounding.
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-4)
    assert accuracy_value == pytest.approx(eager_accuracy)
    for got, expected in zip(weights, eager_weights, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_run_functions_eagerly_runs_the_python_of_a_tf_function():
    calls = []

    @tf.function
    def double(x):
        calls.append(1)
        return x * 2.0

    tf.config.run_functions_eagerly(True)
    try:
        double(tf.constant([1.0]))
        double(tf.constant([1.0]))
    finally:
        tf.config.run_functions_eagerly(False)
    double(tf.constant([1.0]))
    double(tf.constant([1.0]))
    assert len(calls) == 4  # twice as Python, then on every call: braze.jit guards the list it appends to
    assert f"{tf.constant(0.12345):.2f}" == "0.12"


def test_tensorflow_op_names():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(tf.reduce_mean(x, axis=0).numpy(), [2.0, 3.0])
    np.testing.assert_allclose(tf.reduce_max(x, axis=1, keepdims=True).numpy(), [[2.0], [4.0]])
    assert tf.reduce_sum(x).item() == 10.0 and tf.reduce_min(x).item() == 1.0
    np.testing.assert_allclose(tf.square(tf.convert_to_tensor([[3.0]])).numpy(), [[9.0]])
    np.testing.assert_allclose(tf.clip_by_value(x, 1.5, 3.5).numpy(), [[1.5, 2.0], [3.0, 3.5]])
    assert tf.concat([x, x], axis=1).shape == (2, 4)
    assert tf.cast(x, tf.int32).dtype == tf.int32
    np.testing.assert_allclose(tf.nn.relu(tf.constant([-1.0, 2.0])).numpy(), [0.0, 2.0])
    np.testing.assert_allclose(tf.constant(1.5, shape=(2,)).numpy(), [1.5, 1.5])
    logits = np.array([[2.0, 0.5, -1.0]], np.float32)
    expected = -np.log(np.exp(2.0) / np.exp(logits).sum())
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=np.array([0]), logits=logits)
    np.testing.assert_allclose(loss.numpy(), [expected], rtol=1e-6)
    v = tf.Variable(np.ones(2, np.float32))
    v.assign_sub(tf.constant([0.5, 0.25]))
    np.testing.assert_allclose(v.numpy(), [0.5, 0.75])


def test_assign_sets_trainable_variables_and_weights_eagerly_and_in_a_tf_function():
    v = tf.Variable(np.zeros(2, np.float32))
    v.assign([1.0, 2.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    assert v.trainable
    dense = tf.keras.layers.Dense(3)
    dense.build((None, 2))
    kernel = np.arange(6, dtype=np.float32).reshape(2, 3)
    dense.kernel.assign(kernel)
    np.testing.assert_array_equal(dense(np.eye(2, dtype=np.float32)).numpy(), kernel)

    @tf.function
    def double_then_read(x):
        v.assign(x * 2)
        return v + 1

    np.testing.assert_array_equal(double_then_read(tf.constant([1.0, 3.0])).numpy(), [3.0, 7.0])
    np.testing.assert_array_equal(v.numpy(), [2.0, 6.0])
    w = tf.Variable(np.ones(2, np.float32))
    with tf.GradientTape() as tape:
        w.assign(w * 3)  # the tape sees the new value, not the assignment: d(w.w)/dw = 2w
        y = tf.reduce_sum(w * w)
    np.testing.assert_array_equal(tape.gradient(y, w).numpy(), [6.0, 6.0])


def test_nested_tapes_give_the_second_derivative():
    """TensorFlow's nested tapes: the inner gradient is recorded by the outer tape."""
    x = tf.Variable(np.array([0.5, -1.25, 2.0], np.float64))
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = tf.reduce_sum(tf.exp(x) * x)
        dy = inner.gradient(y, x)
    d2 = outer.gradient(dy, x)
    v = x.numpy()
    np.testing.assert_allclose(dy.numpy(), np.exp(v) * (v + 1), rtol=1e-12)
    np.testing.assert_allclose(d2.numpy(), np.exp(v) * (v + 2), rtol=1e-12)


def test_a_tape_watches_a_computed_tensor_as_wgan_gp_does():
    """The gradient by a tensor computed inside the outer tape stops at it, and the outer
    tape differentiates the penalty made of it: here g = 3 (2v)^2, so d sum(g) / dv = 24 v."""
    v = tf.Variable(np.array([0.5, -1.5, 2.0], np.float64))
    with tf.GradientTape() as outer:
        x = v * 2.0
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(x**3)
        g = inner.gradient(y, [x])[0]
        penalty = tf.reduce_sum(g)
    np.testing.assert_allclose(g.numpy(), 3 * (2 * v.numpy()) ** 2, rtol=1e-12)
    np.testing.assert_allclose(outer.gradient(penalty, v).numpy(), 24 * v.numpy(), rtol=1e-12)


def test_compat_converts_between_text_and_bytes():
    assert tf.compat.as_bytes("JFIF") in b"\xff\xd8\xff\xe0\x00\x10JFIF" and tf.compat.as_bytes(b"ab") == b"ab"
    assert tf.compat.as_text(b"caf\xc3\xa9") == "café" == tf.compat.as_str("café")
    with pytest.raises(TypeError, match="expected bytes or str, got int"):
        tf.compat.as_bytes(3)


def test_tf_nn_dropout_zeroes_a_fraction_and_scales_the_rest():
    kept = tf.nn.dropout(tf.ones((100, 100)), rate=0.25, seed=1).numpy()
    assert set(np.unique(kept)) <= {0.0, np.float32(1) / np.float32(0.75)}
    assert abs((kept == 0).mean() - 0.25) < 4 * np.sqrt(0.25 * 0.75 / kept.size)
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(tf.nn.embedding_lookup(table, np.array([3, 0, 3])).numpy(), table[[3, 0, 3]])


def test_tf_one_hot_takes_float_labels_as_tensorflow_does():
    labels = np.array([2.0, 0.0, 1.0], np.float32)
    np.testing.assert_array_equal(tf.one_hot(labels, depth=3).numpy(), np.eye(3, dtype=np.float32)[[2, 0, 1]])


def test_tensorflow_modules_braze_lacks_name_what_to_use():
    with pytest.raises(AttributeError, match=r"no tf.train: save with model.save\('x.keras'\)"):
        _ = tf.train
    with pytest.raises(AttributeError, match="no tf.saved_model"):
        _ = tf.saved_model


def test_depth_to_space_follows_tensorflows_formula_and_space_to_depth_undoes_it():
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 12)).astype(np.float32)
    b, channels = 2, 3
    expected = np.empty((2, 6, 8, channels), np.float32)
    for h in range(3):
        for w in range(4):
            for i in range(b):
                for j in range(b):
                    block = (i * b + j) * channels
                    expected[:, h * b + i, w * b + j, :] = x[:, h, w, block : block + channels]
    shuffled = tf.nn.depth_to_space(x, b)
    np.testing.assert_array_equal(shuffled.numpy(), expected)
    np.testing.assert_array_equal(tf.nn.space_to_depth(shuffled, b).numpy(), x)
    with pytest.raises(ValueError, match="not a multiple of block_size"):
        tf.nn.depth_to_space(x[..., :10], 2)


def test_assign_records_no_gradient_into_a_non_trainable_variable():
    w = tf.Variable(np.ones(3, np.float32))
    running = tf.Variable(np.zeros(3, np.float32), trainable=False)
    with tf.GradientTape() as tape:
        running.assign(w * 2)  # a running statistic, as Keras layers keep them
        y = tf.reduce_sum(running * 3 + w)
    assert not running.trainable
    np.testing.assert_array_equal(tape.gradient(y, w).numpy(), [1.0, 1.0, 1.0])


def test_one_hot_reads_braze_and_tensorflow_calls_and_star_import_keeps_builtins():
    labels = np.array([0, 2])
    assert tf.one_hot(labels, 3, tf.float64).dtype == "float64"  # braze's (labels, num_classes, dtype)
    np.testing.assert_array_equal(tf.one_hot(labels, 3, 5.0).numpy(), [[5, 0, 0], [0, 0, 5]])  # TF's on_value
    namespace: dict = {}
    exec("from braze import *", namespace)
    assert "range" not in namespace and "math" not in namespace


def test_tensordot_contracts_the_axes_given():
    a = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    b = np.random.default_rng(4).standard_normal((4, 3, 5)).astype(np.float32)
    np.testing.assert_allclose(
        tf.tensordot(a, b, axes=[[1, 2], [1, 0]]).numpy(), np.tensordot(a, b, axes=([1, 2], [1, 0])), rtol=1e-5
    )
    np.testing.assert_allclose(tf.tensordot(a, b[:, 0], axes=1).numpy(), np.tensordot(a, b[:, 0], axes=1), rtol=1e-5)
