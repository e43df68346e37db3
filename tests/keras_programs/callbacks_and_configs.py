"""Callbacks, a custom metric and model configs as Keras's guides use them (after keras-io's
guides to callbacks, to built-in training methods, to the Sequential model and to
serialization), on 256 MNIST images."""

import numpy as np

import braze.keras as keras
from braze.keras import layers

keras.utils.set_random_seed(0)
(x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
x_train = x_train[:256].reshape(-1, 28, 28, 1).astype("float32") / 255
x_test = x_test[:128].reshape(-1, 28, 28, 1).astype("float32") / 255
y_train, y_test = y_train[:256], y_test[:128]


class ConfidentPredictions(keras.metrics.Metric):
    """How many predictions put more than `threshold` on one class."""

    def __init__(self, threshold=0.9, name="confident", **kwargs):
        super().__init__(name=name, **kwargs)
        self.threshold = threshold
        self.count = self.add_weight(name="count", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        confident = keras.ops.cast(keras.ops.max(y_pred, axis=-1) > self.threshold, "float32")
        self.count.assign_add(keras.ops.sum(confident))

    def result(self):
        return self.count

    def reset_state(self):
        self.count.assign(0.0)


class LossHistory(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.per_batch = []

    def on_train_batch_end(self, batch, logs=None):
        self.per_batch.append(logs["loss"])


model = keras.Sequential(
    [
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(8, 3, activation="relu", name="first_conv"),
        layers.MaxPooling2D(2),
        layers.Conv2D(16, 3, activation="relu"),
        layers.GlobalAveragePooling2D(),
        layers.Dropout(0.25),
        layers.Dense(10, activation="softmax"),
    ]
)
model.compile(
    optimizer=keras.optimizers.RMSprop(learning_rate=1e-2),
    loss="sparse_categorical_crossentropy",
    metrics=["accuracy", ConfidentPredictions()],
)
loss_history = LossHistory()
checkpoint = keras.callbacks.ModelCheckpoint("ckpt-{epoch}-{batch}.keras", save_freq=4)
history = model.fit(x_train, y_train, batch_size=64, epochs=2, callbacks=[loss_history, checkpoint], verbose=0)
batch_losses = loss_history.per_batch

# A feature extractor over the Sequential model's layers.
extractor = keras.Model(inputs=model.inputs, outputs=[layer.output for layer in model.layers])
features = [f.numpy().mean() for f in extractor(x_test[:16])]

# The architecture from its config, the weights copied: the same predictions.
rebuilt = keras.Sequential.from_config(model.get_config())
rebuilt.set_weights(model.get_weights())
predictions = rebuilt.predict(x_test, verbose=0)
assert np.allclose(predictions, model.predict(x_test, verbose=0), atol=1e-6)

# The last checkpoint holds the model as it ended, with its optimizer.
restored = keras.models.load_model("ckpt-2-4.keras", custom_objects={"ConfidentPredictions": ConfidentPredictions})
assert np.allclose(restored.predict(x_test, verbose=0), predictions, atol=1e-6)

# A clone trains from new weights.
clone = keras.models.clone_model(model)
clone.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
clone_history = clone.fit(x_train, y_train, batch_size=128, epochs=1, verbose=0)
