"""Imbalanced binary classification of tabular data (after keras-io's
structured_data/imbalanced_classification.py): class weights, Precision, Recall and AUC,
a custom layer with add_loss, and a model trained on a tf.data.Dataset."""

import numpy as np

import braze as tf
import braze.keras as keras
from braze.keras import layers

keras.utils.set_random_seed(6)
rng = np.random.default_rng(0)
features = rng.standard_normal((256, 10)).astype("float32")
targets = (features[:, 0] + 0.5 * features[:, 1] > 1.2).astype("float32")
counts = np.bincount(targets.astype(int))
class_weight = {0: 1.0 / counts[0], 1: 1.0 / counts[1]}


class ActivityPenalty(layers.Layer):
    def __init__(self, rate=1e-3, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * tf.reduce_mean(tf.square(inputs)))
        return inputs


model = keras.Sequential(
    [
        layers.Dense(16, activation="relu", input_shape=(features.shape[-1],)),
        layers.BatchNormalization(),
        ActivityPenalty(),
        layers.Dense(16, activation="relu", kernel_regularizer=keras.regularizers.l2(1e-4)),
        layers.Dense(1, activation="sigmoid"),
    ]
)
metrics = [
    keras.metrics.Precision(name="precision"),
    keras.metrics.Recall(name="recall"),
    keras.metrics.AUC(name="auc"),
]
model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="binary_crossentropy", metrics=metrics)

train = tf.data.Dataset.from_tensor_slices((features[:192], targets[:192])).batch(64)
history = model.fit(train, epochs=3, class_weight=class_weight, validation_data=(features[192:], targets[192:]))
probabilities = model.predict(features[192:])
