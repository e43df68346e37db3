"""Sequence to sequence learning of addition (after keras-io's nlp/addition_rnn.py: the
example makes its own data), and an RNN over a cell of one's own (after Keras's guide
"Working with RNNs"), with TimeDistributed, RepeatVector and the attention layers."""

import numpy as np

import braze.keras as keras
from braze.keras import layers, ops

keras.utils.set_random_seed(5)
TRAINING_SIZE = 512
DIGITS = 2
MAXLEN = DIGITS + 1 + DIGITS


class CharacterTable:
    """Given a set of characters: one-hot encode them, decode one-hot probabilities."""

    def __init__(self, chars):
        self.chars = sorted(set(chars))
        self.char_indices = {c: i for i, c in enumerate(self.chars)}
        self.indices_char = {i: c for i, c in enumerate(self.chars)}

    def encode(self, sentence, num_rows):
        x = np.zeros((num_rows, len(self.chars)))
        for i, c in enumerate(sentence):
            x[i, self.char_indices[c]] = 1
        return x

    def decode(self, x, calc_argmax=True):
        if calc_argmax:
            x = x.argmax(axis=-1)
        return "".join(self.indices_char[x] for x in x)


chars = "0123456789+ "
ctable = CharacterTable(chars)
questions, expected, seen = [], [], set()
rng = np.random.default_rng(0)
while len(questions) < TRAINING_SIZE:
    f = lambda: int("".join(rng.choice(list("0123456789")) for _ in range(rng.integers(1, DIGITS + 1))))  # noqa: E731
    a, b = f(), f()
    key = tuple(sorted((a, b)))
    if key in seen:
        continue
    seen.add(key)
    q = f"{a}+{b}"
    query = q + " " * (MAXLEN - len(q))
    ans = str(a + b)
    ans += " " * (DIGITS + 1 - len(ans))
    questions.append(query[::-1])  # reversed, as the example does
    expected.append(ans)

x = np.zeros((len(questions), MAXLEN, len(chars)), dtype=bool)
y = np.zeros((len(questions), DIGITS + 1, len(chars)), dtype=bool)
for i, sentence in enumerate(questions):
    x[i] = ctable.encode(sentence, MAXLEN)
for i, sentence in enumerate(expected):
    y[i] = ctable.encode(sentence, DIGITS + 1)
split_at = len(x) - len(x) // 10
(x_train, x_val), (y_train, y_val) = (x[:split_at], x[split_at:]), (y[:split_at], y[split_at:])

model = keras.Sequential(
    [
        keras.Input((MAXLEN, len(chars))),
        layers.LSTM(32),
        layers.RepeatVector(DIGITS + 1),
        layers.LSTM(32, return_sequences=True),
        layers.TimeDistributed(layers.Dense(len(chars), activation="softmax")),
    ]
)
model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
history = model.fit(x_train, y_train, batch_size=32, epochs=2, validation_data=(x_val, y_val), verbose=0)
preds = np.argmax(model.predict(x_val[:10], verbose=0), axis=-1)
guesses = [ctable.decode(p, calc_argmax=False) for p in preds]


class MinimalRNNCell(layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="uniform", name="kernel")
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, self.units), initializer="uniform", name="recurrent_kernel"
        )

    def call(self, inputs, states):
        prev_output = states[0]
        h = ops.matmul(inputs, self.kernel)
        output = h + ops.matmul(prev_output, self.recurrent_kernel)
        return output, [output]


# The answer's characters read the question through attention over its encoding.
question = keras.Input((MAXLEN, len(chars)))
encoded = layers.RNN(MinimalRNNCell(16), return_sequences=True)(question)
encoded = layers.Bidirectional(layers.GRU(16, return_sequences=True))(encoded)
summary = layers.RepeatVector(DIGITS + 1)(layers.GlobalAveragePooling1D()(encoded))
decoded = layers.RNN([layers.LSTMCell(32), layers.GRUCell(32)], return_sequences=True)(summary)
context = layers.Attention(use_scale=True)([decoded, encoded])
outputs = layers.TimeDistributed(layers.Dense(len(chars), activation="softmax"))(
    layers.Concatenate()([decoded, context])
)
attentive = keras.Model(question, outputs)
attentive.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
attentive_history = attentive.fit(x_train, y_train, batch_size=32, epochs=2, verbose=0)
