"""Regression of a car's fuel efficiency from its features (after TensorFlow's tutorial
"Basic regression: Predict fuel efficiency"), on synthetic data of the Auto MPG data set's
shape: a Normalization layer adapted to the training features, one with a single feature,
and a SimpleRNN over a short series of the same features."""

import numpy as np

import braze as tf
from braze import keras
from braze.keras import layers

tf.random.set_seed(3)
rng = np.random.default_rng(3)
train_features = rng.normal([5.5, 195.0, 104.0, 2970.0, 15.6, 76.0], [1.7, 105.0, 38.0, 850.0, 2.7, 3.7], (314, 6))
train_labels = 50.0 - 0.007 * train_features[:, 3] - 0.05 * train_features[:, 2] + rng.normal(0.0, 2.0, 314)
test_features = train_features[:78] + rng.normal(0.0, 0.1, (78, 6))
test_labels = train_labels[:78]

horsepower = np.array(train_features[:, 2])
horsepower_normalizer = layers.Normalization(input_shape=[1], axis=None)
horsepower_normalizer.adapt(horsepower)
horsepower_model = tf.keras.Sequential([horsepower_normalizer, layers.Dense(units=1)])
horsepower_model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.1), loss="mean_absolute_error")
horsepower_history = horsepower_model.fit(train_features[:, 2], train_labels, epochs=5, verbose=0, validation_split=0.2)

normalizer = tf.keras.layers.Normalization(axis=-1)
normalizer.adapt(np.array(train_features))
print(normalizer.mean.numpy())


def build_and_compile_model(norm):
    model = keras.Sequential(
        [norm, layers.Dense(64, activation="relu"), layers.Dense(64, activation="relu"), layers.Dense(1)]
    )
    model.compile(loss="mean_absolute_error", optimizer=tf.keras.optimizers.Adam(0.001))
    return model


dnn_model = build_and_compile_model(normalizer)
dnn_model.summary()
history = dnn_model.fit(train_features, train_labels, validation_split=0.2, verbose=0, epochs=10)
test_results = dnn_model.evaluate(test_features, test_labels, verbose=0)

series = np.stack([train_features * (1.0 + 0.01 * t) for t in range(4)], axis=1)  # (314, 4 steps, 6)
rnn_model = keras.Sequential([keras.Input((4, 6)), layers.Normalization(), layers.SimpleRNN(16), layers.Dense(1)])
rnn_model.layers[0].adapt(series)
rnn_model.compile(loss="mean_absolute_error", optimizer="rmsprop")
rnn_history = rnn_model.fit(series, train_labels, epochs=3, batch_size=32, verbose=0)
