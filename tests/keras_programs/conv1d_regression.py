"""A 1-D convolutional regressor of time series (after keras-io's timeseries examples),
with per-example sample weights, the mae metric and keras.ops in the functional graph."""

import numpy as np

import braze.keras as keras
from braze.keras import layers, ops

keras.utils.set_random_seed(5)

steps, channels = 24, 2
rng = np.random.default_rng(0)
x = rng.standard_normal((160, steps, channels)).astype("float32")
y = x[:, -6:, 0].mean(axis=1, keepdims=True) + 0.1 * rng.standard_normal((160, 1))
weights = rng.uniform(0.5, 1.5, 160)

inputs = keras.Input(shape=(steps, channels))
x_centered = inputs - ops.mean(inputs, axis=1, keepdims=True)
features = layers.Conv1D(filters=8, kernel_size=5, padding="causal", activation="relu")(x_centered)
features = layers.MaxPooling1D(pool_size=2)(features)
features = layers.Conv1D(filters=8, kernel_size=3, activation="relu")(features)
pooled = layers.GlobalAveragePooling1D()(features)
outputs = layers.Dense(1)(layers.Concatenate()([pooled, ops.mean(inputs, axis=1)]))
model = keras.Model(inputs=inputs, outputs=outputs)

model.compile(loss="mse", optimizer=keras.optimizers.Adam(learning_rate=1e-2), metrics=["mae"])
history = model.fit(
    x[:128], y[:128], sample_weight=weights[:128], batch_size=32, epochs=3, validation_data=(x[128:], y[128:])
)
test_mae = model.evaluate(x[128:], y[128:], verbose=0)[1]
