"""Keras's masks: made by ``Embedding(mask_zero=True)`` and ``Masking``, carried by tensors,
honoured by the recurrent layers, attention, pooling, merges, losses and weighted metrics,
dropped with Keras's warning by a layer that does not support them.

The reference for a masked sequence is the same layer run on the sequence cut to its
real steps; for the losses and pooling, NumPy over the kept steps."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import braze
from braze import keras
from braze.keras import layers
from tests.gradcheck import assert_gradients_match

LENGTHS = (3, 7, 5, 1)


def padded_tokens(vocab: int = 20, steps: int = 7, seed: int = 0) -> np.ndarray:
    """Token ids (batch, steps) whose rows end in zeros after their ``LENGTHS``."""
    rng = np.random.default_rng(seed)
    x = rng.integers(1, vocab, size=(len(LENGTHS), steps))
    for row, length in enumerate(LENGTHS):
        x[row, length:] = 0
    return x


RECURRENT = [layers.SimpleRNN, layers.LSTM, layers.GRU]


@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("kind", RECURRENT, ids=lambda k: k.__name__)
def test_recurrent_layer_skips_masked_steps_as_if_the_sequence_ended(kind, go_backwards):
    keras.utils.set_random_seed(0)
    x = padded_tokens()
    embedding = layers.Embedding(20, 4, mask_zero=True)
    rnn = kind(3, go_backwards=go_backwards)
    final = rnn(embedding(x)).numpy()
    for row, length in enumerate(LENGTHS):
        alone = rnn(embedding(x[row : row + 1, :length])).numpy()
        np.testing.assert_allclose(final[row], alone[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", RECURRENT, ids=lambda k: k.__name__)
def test_masked_steps_repeat_the_last_output_or_give_zeros(kind):
    keras.utils.set_random_seed(1)
    x = padded_tokens()
    embedding = layers.Embedding(20, 4, mask_zero=True)
    outputs = kind(3, return_sequences=True)(embedding(x))
    np.testing.assert_array_equal(outputs._keras_mask.numpy(), x != 0)
    values = outputs.numpy()
    for row, length in enumerate(LENGTHS):
        np.testing.assert_array_equal(
            values[row, length:], np.broadcast_to(values[row, length - 1], values[row, length:].shape)
        )
    zeroed = kind(3, return_sequences=True, zero_output_for_mask=True)(embedding(x)).numpy()
    assert all(np.all(zeroed[row, length:] == 0) for row, length in enumerate(LENGTHS))


def test_bidirectional_sequences_match_each_sequence_alone():
    keras.utils.set_random_seed(2)
    x = padded_tokens()
    embedding = layers.Embedding(20, 4, mask_zero=True)
    both = layers.Bidirectional(layers.LSTM(3, return_sequences=True))
    values = both(embedding(x)).numpy()
    for row, length in enumerate(LENGTHS):
        alone = both(embedding(x[row : row + 1, :length])).numpy()[0]
        np.testing.assert_allclose(values[row, :length], alone, rtol=1e-5, atol=1e-6)
        assert np.all(values[row, length:] == 0)  # Keras's rule for Bidirectional sequences


def test_masking_layer_masks_the_steps_equal_to_the_value():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 5, 2)).astype("float32")
    x[0, 3:] = -1.0
    x[1, 1] = -1.0
    x[2, 2, 0] = -1.0  # one feature alone is kept
    y = layers.Masking(mask_value=-1.0)(x)
    kept = np.any(x != -1.0, axis=-1)
    np.testing.assert_array_equal(y._keras_mask.numpy(), kept)
    np.testing.assert_array_equal(y.numpy(), x * kept[..., None])


def test_global_average_pooling_averages_the_kept_steps():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(4, 6, 3)).astype("float32")
    mask = rng.random((4, 6)) < 0.6
    mask[:, 0] = True
    pooled = layers.GlobalAveragePooling1D()(braze.tensor(x), mask=braze.tensor(mask))
    expected = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    np.testing.assert_allclose(pooled.numpy(), expected, rtol=1e-6)
    assert pooled._keras_mask is None


def test_attention_leaves_the_padding_out_and_keeps_the_query_mask():
    keras.utils.set_random_seed(5)
    x = padded_tokens()
    embedding = layers.Embedding(20, 8, mask_zero=True)
    attention = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    e = embedding(x)
    y = attention(e, e)
    np.testing.assert_array_equal(y._keras_mask.numpy(), x != 0)
    values = y.numpy()
    assert np.all(np.isfinite(values))  # padded queries attend to nothing, and are not NaN
    for row, length in enumerate(LENGTHS):
        alone = embedding(x[row : row + 1, :length])
        np.testing.assert_allclose(values[row, :length], attention(alone, alone).numpy()[0], rtol=1e-5, atol=1e-6)
    plain = braze.tensor(e.numpy())
    given = attention(plain, plain, query_mask=braze.tensor(x != 0), value_mask=braze.tensor(x != 0)).numpy()
    np.testing.assert_allclose(given, values, rtol=1e-6, atol=1e-7)


def _nll(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(-1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probabilities, labels[..., None], -1)[..., 0]


@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum"])
def test_loss_leaves_masked_steps_out(reduction):
    keras.utils.set_random_seed(6)
    x = padded_tokens()
    labels = x % 3
    logits = layers.Dense(3)(layers.Embedding(20, 4, mask_zero=True)(x))
    weights = np.array([1.0, 2.0, 0.5, 3.0], dtype="float32")
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=reduction)
    kept = x != 0
    nll = _nll(logits.numpy().astype(np.float64), labels) * weights[:, None]
    expected = nll[kept].sum() / (kept.sum() if reduction != "sum" else 1)
    np.testing.assert_allclose(float(loss(labels, logits, sample_weight=weights)), expected, rtol=1e-5)


def test_weighted_metric_leaves_masked_steps_out():
    keras.utils.set_random_seed(7)
    x = padded_tokens()
    labels = x % 3
    logits = layers.Dense(3)(layers.Embedding(20, 4, mask_zero=True)(x))
    metric = keras.metrics.SparseCategoricalAccuracy()
    metric.update_state(labels, logits, sample_weight=np.ones(len(x), "float32"))
    right = logits.numpy().argmax(-1) == labels
    np.testing.assert_allclose(float(metric.result()), right[x != 0].mean(), rtol=1e-6)


def test_fit_trains_on_the_kept_steps_eagerly_and_compiled_alike():
    x = padded_tokens(steps=7)
    x = np.concatenate([x] * 8)
    labels = x % 3
    histories = []
    for jit in (False, True):
        keras.utils.set_random_seed(8)
        model = keras.Sequential(
            [
                keras.Input(shape=(7,), dtype="int32"),
                layers.Embedding(20, 8, mask_zero=True),
                layers.GRU(6, return_sequences=True),
                layers.Dense(3),
            ]
        )
        model.compile(
            optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=jit
        )
        first = float(model.evaluate(x, labels, verbose=0))
        logits = model.predict(x, verbose=0)
        expected = _nll(logits.astype(np.float64), labels)[x != 0].mean()
        np.testing.assert_allclose(first, expected, rtol=1e-5)
        histories.append(model.fit(x, labels, batch_size=8, epochs=2, verbose=0).history["loss"])
    np.testing.assert_allclose(histories[1], histories[0], rtol=1e-4)


def test_merges_combine_masks():
    a = braze.tensor(np.ones((2, 4, 3), "float32"))
    b = braze.tensor(np.ones((2, 4, 3), "float32"))
    a._keras_mask = braze.tensor(np.array([[1, 1, 0, 0], [1, 1, 1, 0]], bool))
    b._keras_mask = braze.tensor(np.array([[1, 0, 1, 0], [1, 1, 1, 1]], bool))
    np.testing.assert_array_equal(
        layers.Add()([a, b])._keras_mask.numpy(), a._keras_mask.numpy() & b._keras_mask.numpy()
    )
    unmasked = braze.tensor(np.ones((2, 2, 3), "float32"))
    joined = layers.Concatenate(axis=1)([a, unmasked])._keras_mask.numpy()
    np.testing.assert_array_equal(joined, np.concatenate([a._keras_mask.numpy(), np.ones((2, 2), bool)], axis=1))
    features = layers.Concatenate()([a, b])._keras_mask.numpy()  # Keras's rule: a step any input keeps
    np.testing.assert_array_equal(features, a._keras_mask.numpy() | b._keras_mask.numpy())
    plain = braze.tensor(np.ones((2, 4, 3), "float32"))
    assert layers.Concatenate()([a, plain])._keras_mask.numpy().all()


def test_custom_layer_receives_the_mask_and_computes_its_own():
    class CountKept(layers.Layer):
        supports_masking = True

        def call(self, inputs, mask=None):
            return braze.reduce_sum(braze.cast(mask, "float32"), axis=1)

        def compute_mask(self, inputs, mask=None):
            return None

    class Halve(layers.Layer):
        supports_masking = True

        def call(self, inputs):
            return inputs * 0.5

        def compute_mask(self, inputs, mask=None):
            return mask[:, ::2]

    x = padded_tokens()
    e = layers.Embedding(20, 4, mask_zero=True)(x)
    np.testing.assert_array_equal(CountKept()(e).numpy(), np.array(LENGTHS, "float32"))
    np.testing.assert_array_equal(Halve()(e)._keras_mask.numpy(), (x != 0)[:, ::2])
    lam = layers.Lambda(lambda t: t * 2, mask=lambda t, m: m[:, :2])(e)
    np.testing.assert_array_equal(lam._keras_mask.numpy(), (x != 0)[:, :2])


def test_a_layer_without_mask_support_drops_it_with_a_warning():
    e = layers.Embedding(20, 4, mask_zero=True)(padded_tokens())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = layers.Conv1D(2, 3)(e)
    assert y._keras_mask is None
    assert any("does not support masking" in str(w.message) and "conv1d" in str(w.message) for w in caught)
    with pytest.raises(TypeError, match="takes no mask"):
        layers.Flatten()(e, mask=e._keras_mask)


def test_functional_model_carries_masks_through_its_graph():
    keras.utils.set_random_seed(9)
    inputs = keras.Input(shape=(None,), dtype="int32")
    h = layers.Embedding(20, 4, mask_zero=True)(inputs)
    assert h._keras_mask is not None
    h = layers.LSTM(3, return_sequences=True)(h)
    outputs = layers.Dense(2)(h)
    model = keras.Model(inputs, outputs)
    x = padded_tokens()
    np.testing.assert_array_equal(model(x)._keras_mask.numpy(), x != 0)


def test_masked_recurrent_gradients_match_finite_differences():
    keras.utils.set_random_seed(10)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    rnn = layers.LSTM(3, return_sequences=True, dtype="float64")
    x = np.random.default_rng(10).normal(size=(2, 5, 2))

    def fn(t):
        return rnn(t, mask=braze.tensor(mask))

    assert_gradients_match(fn, [x], [0], rtol=1e-5, atol=1e-7)
    grad = braze.grad(lambda t: braze.reduce_sum(fn(t) ** 2))(braze.tensor(x)).numpy()
    assert np.all(grad[0, 3:] == 0)  # a masked step's input reaches nothing


def test_batch_norm_statistics_and_softmax_leave_masked_steps_out():
    x = np.random.default_rng(11).normal(size=(2, 4, 3)).astype("float32")
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], bool)
    norm = layers.BatchNormalization(momentum=0.0, epsilon=1e-3)
    y = norm(x, training=True, mask=braze.tensor(mask)).numpy()
    kept = x[mask].astype(np.float64)
    np.testing.assert_allclose(norm.moving_mean.numpy(), kept.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(norm.moving_variance.numpy(), kept.var(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y[mask], (kept - kept.mean(0)) / np.sqrt(kept.var(0) + 1e-3), rtol=1e-5, atol=1e-5)
    scores = np.random.default_rng(12).normal(size=(2, 3, 4)).astype("float32")
    allowed = np.random.default_rng(13).random((2, 3, 4)) < 0.7
    allowed[..., 0] = True
    got = layers.Softmax()(scores, mask=braze.tensor(allowed)).numpy()
    e = np.exp(scores - scores.max(-1, keepdims=True)) * allowed
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_stacked_and_own_cells_skip_masked_steps():
    keras.utils.set_random_seed(12)
    x = padded_tokens()
    embedding = layers.Embedding(20, 4, mask_zero=True)
    for cells in ([layers.SimpleRNNCell(3), layers.SimpleRNNCell(3)], [layers.LSTMCell(4), layers.GRUCell(2)]):
        rnn = layers.RNN(cells)
        final = rnn(embedding(x)).numpy()
        for row, length in enumerate(LENGTHS):
            np.testing.assert_allclose(
                final[row], rnn(embedding(x[row : row + 1, :length])).numpy()[0], rtol=1e-5, atol=1e-6
            )


def test_masks_are_arguments_in_the_functional_api_and_compute_mask_takes_keras_keywords():
    keras.utils.set_random_seed(13)
    inputs = keras.Input(shape=(None,), dtype="int32")
    embedding = layers.Embedding(20, 4, mask_zero=True)
    e = embedding(inputs)
    symbolic_mask = embedding.compute_mask(inputs)
    h = layers.LSTM(3, return_sequences=True)(e, mask=e._keras_mask)
    model = keras.Model(inputs, layers.GlobalAveragePooling1D()(h, mask=symbolic_mask))
    x = padded_tokens()
    values = model(x).numpy()
    for row, length in enumerate(LENGTHS):
        np.testing.assert_allclose(values[row], model(x[row : row + 1, :length]).numpy()[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(embedding.compute_mask(x, mask=None).numpy(), x != 0)
    pooled = layers.GlobalAveragePooling1D()(np.ones((2, 3, 2), "float32"), mask=np.array([[1, 0, 0], [1, 1, 0]], bool))
    np.testing.assert_array_equal(pooled.numpy(), np.ones((2, 2)))


def test_attention_takes_a_list_of_masks_only():
    q = braze.tensor(np.ones((2, 3, 4), "float32"))
    with pytest.raises(ValueError, match=r"mask must be a list \[query_mask, value_mask\]"):
        layers.Attention()([q, q], mask=braze.tensor(np.ones((2, 3), bool)))
    with pytest.raises(ValueError, match="mask must be a list"):
        layers.Attention()([q, q], mask=[braze.tensor(np.ones((2, 3), bool))])


def test_bidirectional_wraps_copies_of_any_recurrent_layer():
    keras.utils.set_random_seed(14)
    x = padded_tokens()
    embedding = layers.Embedding(20, 4, mask_zero=True)
    cell_layer = layers.RNN(layers.GRUCell(3), return_sequences=True)
    both = layers.Bidirectional(cell_layer)
    values = both(embedding(x)).numpy()
    assert both.forward_layer is not cell_layer and both.forward_layer.name.startswith("forward_")
    for row, length in enumerate(LENGTHS):
        alone = both(embedding(x[row : row + 1, :length])).numpy()[0]
        np.testing.assert_allclose(values[row, :length], alone, rtol=1e-5, atol=1e-6)


def test_a_layer_receives_each_tensor_arguments_mask_by_name():
    class Pair(layers.Layer):
        supports_masking = True

        def call(self, inputs, context, inputs_mask=None, context_mask=None):
            self.seen = (inputs_mask, context_mask)
            return inputs

    x = padded_tokens()
    e = layers.Embedding(20, 4, mask_zero=True)(x)
    plain = braze.tensor(np.ones((4, 7, 4), "float32"))
    pair = Pair()
    pair(e, context=plain)
    np.testing.assert_array_equal(pair.seen[0].numpy(), x != 0)
    assert pair.seen[1] is None
    pair(plain, e)
    assert pair.seen[0] is None
    np.testing.assert_array_equal(pair.seen[1].numpy(), x != 0)


def test_with_two_tensor_arguments_mask_is_not_filled_as_in_keras():
    class Decoder(layers.Layer):
        supports_masking = True

        def call(self, inputs, encoder_outputs, mask=None):
            self.seen = mask
            return inputs

    e = layers.Embedding(20, 4, mask_zero=True)(padded_tokens())
    decoder = Decoder()
    decoder(e, e)
    assert decoder.seen is None  # Keras fills mask only for a call of one tensor argument
    attention = layers.MultiHeadAttention(num_heads=1, key_dim=2)
    ints = (padded_tokens() != 0).astype("int32")
    by_ints = attention(e, e, attention_mask=braze.tensor(ints[:, None, :] * np.ones((1, 7, 1), "int32")))
    by_bools = attention(e, e, attention_mask=braze.tensor(np.broadcast_to(ints[:, None, :] != 0, (4, 7, 7)).copy()))
    np.testing.assert_array_equal(by_ints.numpy(), by_bools.numpy())  # 0/1 masks as Keras casts them
