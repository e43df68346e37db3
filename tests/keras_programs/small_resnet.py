"""A small residual network (batch normalization, residual adds, a strided block with a
1x1 projection, global average pooling) trained with callbacks, saved and loaded."""

import numpy as np

import braze.keras as keras
from braze.keras import layers

keras.utils.set_random_seed(4)


def residual_block(x, filters, stride=1):
    shortcut = x
    x = layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    x = layers.Conv2D(filters, 3, padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    if stride != 1 or shortcut.shape[-1] != filters:
        shortcut = layers.Conv2D(filters, 1, strides=stride, use_bias=False)(shortcut)
        shortcut = layers.BatchNormalization()(shortcut)
    x = layers.Add()([x, shortcut])
    return layers.Activation("relu")(x)


inputs = keras.Input(shape=(12, 12, 3))
x = layers.Conv2D(4, 3, padding="same", use_bias=False)(inputs)
x = layers.BatchNormalization()(x)
x = layers.ReLU()(x)
x = residual_block(x, 4)
x = residual_block(x, 8, stride=2)
x = layers.GlobalAveragePooling2D()(x)
outputs = layers.Dense(3, activation="softmax")(x)
model = keras.Model(inputs, outputs, name="small_resnet")

rng = np.random.default_rng(0)
x_train = rng.random((128, 12, 12, 3)).astype("float32")
y_train = rng.integers(0, 3, 128)

model.compile(
    optimizer=keras.optimizers.SGD(learning_rate=0.05, momentum=0.9),
    loss="sparse_categorical_crossentropy",
    metrics=["accuracy"],
)
callbacks = [
    keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=0),
    keras.callbacks.EarlyStopping(monitor="val_loss", patience=3),
    keras.callbacks.ModelCheckpoint("resnet.keras", monitor="val_loss", save_best_only=False),
]
history = model.fit(x_train, y_train, batch_size=32, epochs=3, validation_split=0.25, callbacks=callbacks)
predictions = model.predict(x_train[:32], batch_size=32)

restored = keras.models.load_model("resnet.keras")
restored_predictions = restored.predict(x_train[:32], batch_size=32)
weights = model.get_weights()
