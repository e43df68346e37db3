"""Variable-length token sequences, padded and masked (after keras-io's
nlp/bidirectional_lstm_imdb.py and nlp/text_classification_with_transformer.py, and Keras's
guide "Understanding masking & padding"): pad_sequences, Embedding(mask_zero=True), a
Bidirectional LSTM classifier, a transformer block whose attention skips the padding, a
tagger whose loss and weighted metric skip the padded steps, a custom layer that reads
the mask, and Masking on float sequences."""

import numpy as np

import braze as tf
import braze.keras as keras
from braze.keras import layers

keras.utils.set_random_seed(11)
rng = np.random.default_rng(1)
vocab_size, maxlen = 40, 12

# Lists of token ids of different lengths, as a tokenizer gives them; the label says
# whether token 7 occurs, the tag of each token is its id modulo 3.
sequences = [list(rng.integers(1, vocab_size, size=rng.integers(3, maxlen + 1))) for _ in range(192)]
labels = np.array([float(7 in s) for s in sequences], dtype="float32")
x = keras.utils.pad_sequences(sequences, maxlen=maxlen, padding="post")
tags = x % 3

# A bidirectional LSTM classifier.
inputs = keras.Input(shape=(None,), dtype="int32")
h = layers.Embedding(vocab_size, 16, mask_zero=True)(inputs)
h = layers.Bidirectional(layers.LSTM(8, return_sequences=True))(h)
h = layers.Bidirectional(layers.LSTM(8))(h)
outputs = layers.Dense(1, activation="sigmoid")(h)
lstm_model = keras.Model(inputs, outputs)
lstm_model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
history = lstm_model.fit(x, labels, batch_size=32, epochs=2, validation_split=0.25, verbose=0)


# A transformer block over the padded tokens.
class TransformerBlock(layers.Layer):
    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
        super().__init__()
        self.supports_masking = True  # the mask passes on to the pooling
        self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential([layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)

    def call(self, inputs, mask=None):
        padding = None if mask is None else tf.logical_and(mask[:, :, None], mask[:, None, :])
        attn_output = self.att(inputs, inputs, attention_mask=padding)
        out1 = self.layernorm1(inputs + self.dropout1(attn_output))
        ffn_output = self.dropout2(self.ffn(out1))
        return self.layernorm2(out1 + ffn_output)


class MaskedMean(layers.Layer):
    """The mean over the real tokens, from the mask the layer receives."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        weights = tf.cast(mask, inputs.dtype)[:, :, None]
        return tf.reduce_sum(inputs * weights, axis=1) / tf.reduce_sum(weights, axis=1)

    def compute_mask(self, inputs, mask=None):
        return None


inputs = keras.Input(shape=(maxlen,), dtype="int32")
embedded = layers.Embedding(vocab_size, 16, mask_zero=True)(inputs)
encoded = TransformerBlock(16, 2, 32)(embedded)
pooled = layers.concatenate([layers.GlobalAveragePooling1D()(encoded), MaskedMean()(embedded)])
outputs = layers.Dense(1, activation="sigmoid")(pooled)
transformer = keras.Model(inputs, outputs)
transformer.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy", metrics=["accuracy"])
transformer_history = transformer.fit(x, labels, batch_size=32, epochs=2, verbose=0)

# A tagger: a loss per token, the padded steps left out of the loss and, with
# sample weights, out of the weighted metric.
tagger = keras.Sequential(
    [
        keras.Input(shape=(maxlen,), dtype="int32"),
        layers.Embedding(vocab_size, 16, mask_zero=True),
        layers.GRU(16, return_sequences=True),
        layers.Dense(3),
    ]
)
tagger.compile(
    optimizer="rmsprop",
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    weighted_metrics=["sparse_categorical_accuracy"],
)
tag_history = tagger.fit(x, tags, sample_weight=np.ones(len(x), "float32"), batch_size=32, epochs=2, verbose=0)
tag_loss, tag_accuracy = tagger.evaluate(x[:64], tags[:64], sample_weight=np.ones(64, "float32"), verbose=0)

# Float sequences whose padded steps are all zeros: Masking.
signals = np.zeros((96, maxlen, 2), dtype="float32")
for i, s in enumerate(sequences[:96]):
    signals[i, : len(s)] = np.stack([np.sin(np.arange(len(s))), np.array(s) / vocab_size], axis=-1)
regressor = keras.Sequential(
    [keras.Input(shape=(maxlen, 2)), layers.Masking(mask_value=0.0), layers.SimpleRNN(8), layers.Dense(1)]
)
regressor.compile(optimizer="adam", loss="mse", metrics=["mae"])
regression_history = regressor.fit(signals, labels[:96], batch_size=16, epochs=2, verbose=0)
predictions = regressor.predict(signals[:8], verbose=0)
