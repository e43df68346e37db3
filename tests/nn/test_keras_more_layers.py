"""Keras's reshaping, noise, attention, wrapper, preprocessing and cell layers against
NumPy references (and float64 finite differences for the learned ones); a model of them
trains alike eagerly and compiled."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import keras
from braze.keras import layers, ops
from tests.gradcheck import assert_gradients_match

rng = np.random.default_rng(0)
SEQUENCES = rng.normal(size=(3, 5, 4)).astype("float32")
IMAGES = rng.normal(size=(2, 6, 7, 4)).astype("float32")


def test_reshaping_layers_match_numpy():
    vectors = SEQUENCES[:, 0]
    np.testing.assert_array_equal(layers.RepeatVector(3)(vectors).numpy(), np.repeat(vectors[:, None], 3, axis=1))
    np.testing.assert_array_equal(layers.Permute((2, 1))(SEQUENCES).numpy(), SEQUENCES.transpose(0, 2, 1))
    np.testing.assert_array_equal(
        layers.ZeroPadding1D((1, 2))(SEQUENCES).numpy(), np.pad(SEQUENCES, ((0, 0), (1, 2), (0, 0)))
    )
    np.testing.assert_array_equal(
        layers.ZeroPadding2D(((1, 2), (3, 0)))(IMAGES).numpy(), np.pad(IMAGES, ((0, 0), (1, 2), (3, 0), (0, 0)))
    )
    np.testing.assert_array_equal(
        layers.ZeroPadding2D(1)(IMAGES).numpy(), np.pad(IMAGES, ((0, 0), (1, 1), (1, 1), (0, 0)))
    )
    np.testing.assert_array_equal(layers.Cropping1D((1, 2))(SEQUENCES).numpy(), SEQUENCES[:, 1:3])
    np.testing.assert_array_equal(layers.Cropping2D(((1, 2), (0, 3)))(IMAGES).numpy(), IMAGES[:, 1:4, 0:4])
    np.testing.assert_array_equal(layers.Cropping2D((1, 2))(IMAGES).numpy(), IMAGES[:, 1:5, 2:5])
    with pytest.raises(ValueError, match="permutation"):
        layers.Permute((1, 3))
    with pytest.raises(braze.ShapeError, match="cropping 3 \\+ 2"):
        layers.Cropping1D((3, 2))(SEQUENCES)


def test_noise_layers_pass_inputs_in_inference_and_draw_the_right_noise_in_training():
    x = np.ones((200, 50, 10), "float32")
    for layer in (layers.GaussianNoise(0.5), layers.GaussianDropout(0.2), layers.SpatialDropout1D(0.3)):
        np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    n = x.size
    noise = layers.GaussianNoise(0.5, seed=1)(x, training=True).numpy() - 1.0
    assert abs(noise.mean()) < 5 * 0.5 / np.sqrt(n) and abs(noise.std() - 0.5) < 5 * 0.5 / np.sqrt(2 * n)
    factor = layers.GaussianDropout(0.2, seed=2)(x, training=True).numpy()
    spread = np.sqrt(0.2 / 0.8)
    assert abs(factor.mean() - 1) < 5 * spread / np.sqrt(n) and abs(factor.std() - spread) < 5 * spread / np.sqrt(2 * n)
    dropped = layers.SpatialDropout1D(0.3, seed=3)(x, training=True).numpy()
    per_channel = dropped[:, 0, :]
    assert np.all(dropped == per_channel[:, None, :])  # a channel is kept or dropped over every step
    assert set(np.unique(per_channel)) <= {0.0, np.float32(1 / 0.7)}
    channels = per_channel.size
    assert abs((per_channel == 0).mean() - 0.3) < 5 * np.sqrt(0.3 * 0.7 / channels)
    pixels = layers.SpatialDropout2D(0.5, seed=4)(IMAGES, training=True).numpy()
    kept = pixels[:, :1, :1, :] != 0
    np.testing.assert_array_equal(pixels, np.where(kept, IMAGES * 2, 0))


def test_identity_and_activity_regularization():
    np.testing.assert_array_equal(layers.Identity()(SEQUENCES).numpy(), SEQUENCES)
    layer = layers.ActivityRegularization(l1=0.1, l2=0.01)
    np.testing.assert_array_equal(layer(SEQUENCES).numpy(), SEQUENCES)
    expected = (0.1 * np.abs(SEQUENCES).sum() + 0.01 * (SEQUENCES**2).sum()) / len(SEQUENCES)
    np.testing.assert_allclose(float(layer.losses[0]), expected, rtol=1e-5)


def test_prelu_unit_and_group_normalization_match_numpy():
    prelu = layers.PReLU(alpha_initializer=keras.initializers.Constant(0.25), shared_axes=[1])
    y = prelu(SEQUENCES).numpy()
    assert prelu.alpha.shape == (1, 4)
    np.testing.assert_allclose(y, np.where(SEQUENCES > 0, SEQUENCES, 0.25 * SEQUENCES), rtol=1e-6)
    norms = np.sqrt((SEQUENCES.astype(np.float64) ** 2).sum(-1, keepdims=True))
    np.testing.assert_allclose(layers.UnitNormalization()(SEQUENCES).numpy(), SEQUENCES / norms, rtol=1e-5)
    group = layers.GroupNormalization(groups=2, epsilon=1e-3)
    got = group(IMAGES).numpy()
    grouped = IMAGES.astype(np.float64).reshape(2, 6, 7, 2, 2)
    mean = grouped.mean(axis=(1, 2, 4), keepdims=True)
    variance = grouped.var(axis=(1, 2, 4), keepdims=True)
    np.testing.assert_allclose(
        got, ((grouped - mean) / np.sqrt(variance + 1e-3)).reshape(IMAGES.shape), rtol=1e-4, atol=1e-5
    )
    with pytest.raises(braze.ShapeError, match="do not split into 3 groups"):
        layers.GroupNormalization(groups=3)(IMAGES)


def test_learned_layers_gradients_match_finite_differences():
    x = rng.normal(size=(2, 3, 4))
    for layer in (layers.PReLU(dtype="float64"), layers.GroupNormalization(groups=2, dtype="float64")):
        layer(braze.tensor(x))
        layer.set_weights([rng.normal(size=w.shape) for w in layer.get_weights()])
        assert_gradients_match(layer, [x], [0], rtol=1e-5, atol=1e-7)
    attention = layers.AdditiveAttention(dtype="float64")
    assert_gradients_match(lambda q: attention([q, q]), [x], [0], rtol=1e-5, atol=1e-7)


def test_dot_matches_einsum():
    a, b = SEQUENCES, rng.normal(size=(3, 6, 4)).astype("float32")
    np.testing.assert_allclose(layers.Dot(axes=2)([a, b]).numpy(), np.einsum("btd,bsd->bts", a, b), rtol=1e-5)
    np.testing.assert_allclose(layers.Dot(axes=(1, 1))([a, a]).numpy(), np.einsum("btd,bte->bde", a, a), rtol=1e-5)
    u, v = a[:, 0], a[:, 1]
    np.testing.assert_allclose(layers.dot([u, v], axes=1).numpy(), (u * v).sum(1, keepdims=True), rtol=1e-5)
    cosine = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(layers.Dot(axes=-1, normalize=True)([u, v]).numpy()[:, 0], cosine, rtol=1e-5)


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_attention_layers_match_numpy_with_masks():
    q, v = SEQUENCES.astype(np.float64), rng.normal(size=(3, 6, 4))
    query_mask = np.array([[1, 1, 1, 0, 0], [1] * 5, [1, 1, 0, 0, 0]], bool)
    value_mask = np.array([[1, 1, 1, 1, 0, 0], [1] * 6, [1, 0, 0, 0, 0, 0]], bool)
    masks = [braze.tensor(query_mask), braze.tensor(value_mask)]

    def expected(scores):
        weights = _softmax(scores - 1e9 * ~value_mask[:, None, :])
        return (weights @ v) * query_mask[..., None]

    got = layers.Attention()([q, v], mask=masks).numpy()
    np.testing.assert_allclose(got, expected(q @ v.transpose(0, 2, 1)), rtol=1e-5, atol=1e-6)
    additive = layers.AdditiveAttention()
    got = additive([q, v], mask=masks).numpy()
    scale = additive.scale.numpy()
    np.testing.assert_allclose(
        got, expected((np.tanh(q[:, :, None] + v[:, None]) * scale).sum(-1)), rtol=1e-5, atol=1e-6
    )
    concat = layers.Attention(score_mode="concat")([q, v], mask=masks).numpy()
    np.testing.assert_allclose(concat, expected(np.tanh(q[:, :, None] + v[:, None]).sum(-1)), rtol=1e-5, atol=1e-6)
    causal, weights = layers.Attention()([q, q], use_causal_mask=True, return_attention_scores=True)
    assert np.allclose(np.triu(weights.numpy(), 1), 0) and np.allclose(weights.numpy().sum(-1), 1)
    # Masks from Embedding(mask_zero=True) reach the layer without being passed.
    tokens = np.array([[3, 4, 0], [5, 0, 0]])
    e = layers.Embedding(8, 4, mask_zero=True)(tokens)
    out = layers.Attention()([e, e])
    np.testing.assert_array_equal(out._keras_mask.numpy(), tokens != 0)
    assert np.all(out.numpy()[tokens == 0] == 0)


def test_time_distributed_applies_one_layer_to_every_step():
    dense = layers.Dense(2)
    wrapped = layers.TimeDistributed(dense)
    y = wrapped(SEQUENCES).numpy()
    for step in range(SEQUENCES.shape[1]):
        np.testing.assert_allclose(y[:, step], dense(SEQUENCES[:, step]).numpy(), rtol=1e-6)
    assert len(wrapped.weights) == 2
    frames = rng.normal(size=(2, 3, 8, 8, 1)).astype("float32")
    assert layers.TimeDistributed(layers.Conv2D(4, 3))(frames).shape == (2, 3, 6, 6, 4)
    tokens = np.array([[3, 4, 0], [5, 0, 0]])
    masked = layers.TimeDistributed(layers.Dense(2))(layers.Embedding(8, 4, mask_zero=True)(tokens))
    np.testing.assert_array_equal(masked._keras_mask.numpy(), tokens != 0)


def test_category_encoding_and_discretization_match_numpy():
    tokens = np.array([[1, 1, 4], [0, 2, 2]])
    eye = np.eye(5, dtype="float32")
    np.testing.assert_array_equal(layers.CategoryEncoding(5, "one_hot")(np.array([1, 3])).numpy(), eye[[1, 3]])
    np.testing.assert_array_equal(layers.CategoryEncoding(5, "one_hot")(np.array([[1], [3]])).numpy(), eye[[1, 3]])
    counts = np.stack([np.bincount(row, minlength=5) for row in tokens]).astype("float32")
    np.testing.assert_array_equal(layers.CategoryEncoding(5, "count")(tokens).numpy(), counts)
    np.testing.assert_array_equal(layers.CategoryEncoding(5)(tokens).numpy(), (counts > 0).astype("float32"))
    weights = np.array([[0.5, 1.0, 2.0], [1.0, 1.0, 3.0]], "float32")
    weighted = layers.CategoryEncoding(5, "count")(tokens, count_weights=weights).numpy()
    expected = np.stack([np.bincount(t, w, minlength=5) for t, w in zip(tokens, weights, strict=True)])
    np.testing.assert_allclose(weighted, expected)
    with pytest.raises(ValueError, match="count_weights counts only"):
        layers.CategoryEncoding(5)(tokens, count_weights=weights)
    values = np.array([[-1.5, 0.0, 0.5], [1.0, 2.5, -0.2]], "float32")
    bins = layers.Discretization(bin_boundaries=[-1.0, 0.0, 1.0])(values).numpy()
    np.testing.assert_array_equal(bins, np.digitize(values, [-1.0, 0.0, 1.0]))
    data = rng.normal(size=1000)
    adapted = layers.Discretization(num_bins=4)
    adapted.adapt(data)
    np.testing.assert_allclose(adapted.bin_boundaries, np.quantile(data, [0.25, 0.5, 0.75]))
    assert np.bincount(adapted(data).numpy(), minlength=4).tolist() == [250] * 4


class RunningSumCell(layers.Layer):
    """A cell of one's own with two states: ``h = tanh(x kernel + h recurrent)`` and the
    running sum of the outputs."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = [units, units]

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
        self.recurrent = self.add_weight(shape=(self.units, self.units), name="recurrent")

    def call(self, inputs, states):
        h, total = states
        h = ops.tanh(ops.matmul(inputs, self.kernel) + ops.matmul(h, self.recurrent))
        return h, [h, total + h]


def test_rnn_runs_a_cell_of_ones_own():
    cell = RunningSumCell(3)
    outputs, h_last, total_last = layers.RNN(cell, return_sequences=True, return_state=True)(SEQUENCES)
    kernel, recurrent = cell.kernel.numpy().astype(np.float64), cell.recurrent.numpy().astype(np.float64)
    h, total = np.zeros((3, 3)), np.zeros((3, 3))
    for step in range(SEQUENCES.shape[1]):
        h = np.tanh(SEQUENCES[:, step] @ kernel + h @ recurrent)
        total = total + h
        np.testing.assert_allclose(outputs.numpy()[:, step], h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h_last.numpy(), h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(total_last.numpy(), total, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "GRU"])
def test_rnn_of_a_built_in_cell_is_its_layer(kind):
    layer = getattr(layers, kind)(3, return_sequences=True, go_backwards=True)
    expected = layer(SEQUENCES).numpy()
    rnn = layers.RNN(getattr(layers, f"{kind}Cell")(3), return_sequences=True, go_backwards=True)
    rnn(SEQUENCES)
    rnn.set_weights(layer.get_weights())
    np.testing.assert_allclose(rnn(SEQUENCES).numpy(), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="return_sequences"):
        getattr(layers, f"{kind}Cell")(3, return_sequences=True)


def test_stacked_cells_are_stacked_layers_and_masks_skip_steps():
    first, second = layers.LSTM(4, return_sequences=True, return_state=True), layers.GRU(2, return_sequences=True)
    out, h, c = first(SEQUENCES)
    expected = second(out).numpy()
    stacked = layers.RNN([layers.LSTMCell(4), layers.GRUCell(2)], return_sequences=True, return_state=True)
    stacked(SEQUENCES)
    stacked.set_weights(first.get_weights() + second.get_weights())
    got, *states = stacked(SEQUENCES)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(states[0].numpy(), h.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(states[1].numpy(), c.numpy(), rtol=1e-5, atol=1e-6)
    rnn = layers.RNN(RunningSumCell(3))
    mask = np.array([[1, 1, 1, 0, 0], [1] * 5, [1, 1, 0, 0, 0]], bool)
    final = rnn(SEQUENCES, mask=braze.tensor(mask)).numpy()
    for row, length in enumerate(mask.sum(1)):
        np.testing.assert_allclose(final[row], rnn(SEQUENCES[row : row + 1, :length]).numpy()[0], rtol=1e-5, atol=1e-6)


def test_a_model_of_these_layers_trains_alike_eagerly_and_compiled():
    x = rng.normal(size=(32, 6, 3)).astype("float32")
    y = (x.sum(axis=(1, 2)) > 0).astype("float32")
    histories = []
    for jit in (False, True):
        keras.utils.set_random_seed(4)
        inputs = keras.Input((6, 3))
        h = layers.GaussianNoise(0.1)(inputs)
        h = layers.TimeDistributed(layers.Dense(4))(h)
        h = layers.PReLU()(h)
        h = layers.ZeroPadding1D(1)(h)
        h = layers.Cropping1D((1, 1))(h)
        h = layers.Add()([h, layers.Attention(use_scale=True)([h, h])])
        h = layers.RNN(layers.GRUCell(4), return_sequences=True)(h)
        h = layers.GroupNormalization(groups=2)(h)
        h = layers.SpatialDropout1D(0.1)(h)
        h = layers.GlobalAveragePooling1D()(h)
        outputs = layers.Dense(1, activation="sigmoid")(layers.UnitNormalization()(h))
        model = keras.Model(inputs, outputs)
        model.compile(optimizer="adam", loss="binary_crossentropy", jit_compile=jit)
        histories.append(model.fit(x, y, batch_size=8, epochs=2, verbose=0).history["loss"])
    np.testing.assert_allclose(histories[1], histories[0], rtol=1e-4)


def test_models_of_these_layers_save_and_load(tmp_path):
    inputs = keras.Input((6, 3))
    h = layers.TimeDistributed(layers.Dense(4))(inputs)
    h = layers.Add()([h, layers.AdditiveAttention()([h, h])])
    h = layers.RNN([layers.LSTMCell(4), layers.SimpleRNNCell(2)], return_sequences=True)(h)
    h = layers.GlobalAveragePooling1D()(layers.ZeroPadding1D(1)(h))
    model = keras.Model(inputs, layers.Dense(1)(h))
    x = rng.normal(size=(2, 6, 3)).astype("float32")
    model.save(tmp_path / "model.keras")
    restored = keras.models.load_model(tmp_path / "model.keras")
    np.testing.assert_array_equal(restored.predict(x, verbose=0), model.predict(x, verbose=0))
    # A preprocessing model built before adapt, adapted, saved with its boundaries.
    binner = keras.Sequential([keras.Input((3,)), layers.Discretization(num_bins=3), layers.CategoryEncoding(3)])
    binner.layers[0].adapt(rng.normal(size=(100, 3)))
    binner.save(tmp_path / "binner.keras")
    restored = keras.models.load_model(tmp_path / "binner.keras")
    np.testing.assert_array_equal(restored.predict(x[0], verbose=0), binner.predict(x[0], verbose=0))
    with pytest.raises(ValueError, match="adapt the layer"):
        layers.Discretization(num_bins=3)(x[0])
    codes = keras.Sequential([keras.Input((2,), dtype="int64"), layers.IntegerLookup(output_mode="count")])
    codes.layers[0].adapt(np.array([[3, 5], [5, 9], [5, 3]]))
    codes.save(tmp_path / "codes.keras")
    ids = np.array([[5, 7], [3, 3]])
    np.testing.assert_array_equal(
        keras.models.load_model(tmp_path / "codes.keras").predict(ids, verbose=0), codes.predict(ids, verbose=0)
    )


def test_integer_lookup_indexes_as_keras_documents():
    data = np.array([[12, 1138, 42], [42, 1000, 36]])
    learned = layers.IntegerLookup()
    learned.adapt(data)
    assert learned.get_vocabulary() == [-1, 42, 1138, 1000, 36, 12]  # by frequency, ties by decreasing value
    given = layers.IntegerLookup(vocabulary=[12, 36, 1138, 42])
    np.testing.assert_array_equal(given(data).numpy(), [[1, 3, 4], [4, 0, 2]])
    masked = layers.IntegerLookup(vocabulary=[12, 36, 1138, 42], mask_token=0)
    np.testing.assert_array_equal(masked(np.array([[12, 0, 7]])).numpy(), [[2, 0, 1]])
    hot = layers.IntegerLookup(vocabulary=[12, 36, 1138, 42], output_mode="multi_hot")
    np.testing.assert_array_equal(
        hot(np.array([[12, 1138, 42, 42], [42, 7, 36, 7]])).numpy(), [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]]
    )
    inverse = layers.IntegerLookup(vocabulary=[12, 36, 1138, 42], invert=True)
    np.testing.assert_array_equal(inverse(np.array([[1, 3, 4], [4, 0, 2]])).numpy(), [[12, 1138, 42], [42, -1, 36]])
    capped = layers.IntegerLookup(max_tokens=3)
    capped.adapt(data)
    assert capped.get_vocabulary() == [-1, 42, 1138]
    with pytest.raises(ValueError, match="adapt the layer"):
        layers.IntegerLookup()(data)


def test_lookups_without_an_out_of_vocabulary_index_and_keras_2_output_modes():
    exact = layers.IntegerLookup(vocabulary=[12, 36], num_oov_indices=0, output_mode="binary")  # binary: multi_hot
    np.testing.assert_array_equal(exact(np.array([[36, 36], [12, 36]])).numpy(), [[0, 1], [1, 1]])
    assert exact.get_vocabulary() == [12, 36]
    with pytest.raises(ValueError, match=r"\[7\] are not in the vocabulary"):
        exact(np.array([7, 12]))
    np.testing.assert_array_equal(
        layers.CategoryEncoding(max_tokens=3, output_mode="binary")([0, 2]).numpy(), [1, 0, 1]
    )
    strings = layers.StringLookup(vocabulary=["a", "b"], num_oov_indices=0, output_mode="tf-idf", idf_weights=[2, 3])
    np.testing.assert_allclose(strings([["b", "b"]]).numpy(), [[0, 6]])


def test_merge_layers_promote_their_inputs_to_one_dtype_as_keras_does():
    ints = np.array([[1, 0]], np.int64)
    floats = np.array([[0.5]], np.float32)
    joined = layers.Concatenate()([ints, floats])
    assert joined.dtype == braze.float32
    np.testing.assert_array_equal(joined.numpy(), [[1, 0, 0.5]])
    assert layers.Add()([np.array([1], np.int32), np.array([2], np.int64)]).dtype == braze.int64


def test_embedding_takes_a_regularizer_and_ops_have_keras_sub_namespaces():
    embedding = layers.Embedding(6, 3, embeddings_regularizer=keras.regularizers.l2(0.5))
    embedding(np.array([[1, 2]]))
    table = embedding.embeddings.numpy().astype(np.float64)
    np.testing.assert_allclose(float(sum(embedding.losses)), 0.5 * (table**2).sum(), rtol=1e-5)
    with pytest.warns(UserWarning, match="input_length is deprecated"):
        layers.Embedding(6, 3, input_length=4)
    with pytest.raises(NotImplementedError, match="embeddings_constraint"):
        layers.Embedding(6, 3, embeddings_constraint="non_neg")
    x = np.array([-1.0, 0.0, 2.0], "float32")
    np.testing.assert_allclose(ops.nn.sigmoid(x).numpy(), 1 / (1 + np.exp(-x)), rtol=1e-6)
    np.testing.assert_array_equal(ops.numpy.maximum(x, 0).numpy(), np.maximum(x, 0))
    assert ops.core.shape(braze.ones((2, 3))) == (2, 3)


@pytest.mark.parametrize(
    ("equation", "output_shape", "bias_axes", "input_shape", "expected"),
    [  # the examples of Keras's documentation
        ("ab,bc->ac", 64, "c", (3, 32), (3, 64)),
        ("abc,cd->abd", (None, 64), "d", (3, 32, 128), (3, 32, 64)),
        ("abc,cde->abde", (None, 4, 16), "de", (3, 32, 8), (3, 32, 4, 16)),
        ("...b,bc->...c", 64, "c", (3, 32, 128), (3, 32, 64)),
    ],
)
def test_einsum_dense_computes_its_equation_plus_bias(equation, output_shape, bias_axes, input_shape, expected):
    x = np.random.default_rng(0).standard_normal(input_shape).astype(np.float32)
    layer = layers.EinsumDense(equation, output_shape=output_shape, bias_axes=bias_axes, bias_initializer="ones")
    y = layer(x)
    assert y.shape == expected
    kernel, bias = layer.kernel.numpy(), layer.bias.numpy()
    np.testing.assert_allclose(y.numpy(), np.einsum(equation, x, kernel) + bias, rtol=1e-5, atol=1e-5)
    symbolic = layers.EinsumDense(equation, output_shape=output_shape, bias_axes=bias_axes)(
        keras.Input(input_shape[1:])
    )
    assert symbolic.shape == (None, *expected[1:])


def test_einsum_dense_trains_and_round_trips(tmp_path):
    x = np.random.default_rng(1).standard_normal((16, 5, 3)).astype(np.float32)
    y = x.sum(-1, keepdims=True) * 2.0
    model = keras.Sequential([keras.Input((5, 3)), layers.EinsumDense("abc,cd->abd", (None, 1), bias_axes="d")])
    model.compile(optimizer="adam", loss="mse")
    losses = model.fit(x, y, epochs=20, verbose=0).history["loss"]
    assert losses[-1] < losses[0]
    model.save(tmp_path / "einsum.keras")
    np.testing.assert_allclose(
        keras.models.load_model(tmp_path / "einsum.keras").predict(x, verbose=0), model.predict(x, verbose=0)
    )
    with pytest.raises(ValueError, match="bias axis 'z'"):
        layers.EinsumDense("ab,bc->ac", 4, bias_axes="z")
    with pytest.raises(ValueError, match="must read"):
        layers.EinsumDense("ab->b", 4)
