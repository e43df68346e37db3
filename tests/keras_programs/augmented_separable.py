"""Image classification from scratch (after keras-io's
examples/vision/image_classification_from_scratch.py), shrunk to MNIST digits: data
augmentation layers in front of a small Xception-like network of separable convolutions
with batch normalization and residual connections, on 512 images.

Only the training history is compared between eager and compiled runs. A convolution's
bias in front of batch normalization has a gradient that is zero but for rounding, and
Adam's first steps move a weight by the learning rate whatever its gradient's size, so
those biases take different random walks in any two summation orders; batch statistics
cancel them while training, but inference (with the moving statistics) does not, so the
predictions and validation scores of this model are rounding, in Keras as here. The
learning rate is Adam's 1e-3 (keras-io's earlier version of the example): at 3e-3 the
eager and compiled training losses drifted 2e-3 apart within three epochs on an AVX2
target, past the comparison's float32 tolerance."""

import numpy as np

import braze.keras as keras
from braze.keras import layers

keras.utils.set_random_seed(4)
(x_train, y_train), (x_test, _) = keras.datasets.mnist.load_data()
x_train = np.expand_dims(x_train[:512], -1).astype("float32")
y_train = y_train[:512]
x_test = np.expand_dims(x_test[:8], -1).astype("float32")

data_augmentation_layers = [
    layers.RandomRotation(0.05),
    layers.RandomZoom(0.1),
    layers.RandomTranslation(0.05, 0.05),
]


def data_augmentation(images):
    for layer in data_augmentation_layers:
        images = layer(images)
    return images


def make_model(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = data_augmentation(inputs)
    x = layers.Rescaling(1.0 / 255)(x)
    x = layers.Conv2D(16, 3, strides=2, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    previous_block_activation = x
    for size in [16, 32]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
        residual = layers.Conv2D(size, 1, strides=2, padding="same")(previous_block_activation)
        x = layers.add([x, residual])
        previous_block_activation = x

    x = layers.SeparableConv2D(48, 3, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(0.25)(x)
    outputs = layers.Dense(num_classes, activation=None)(x)
    return keras.Model(inputs, outputs)


model = make_model(input_shape=(28, 28, 1), num_classes=10)
model.compile(
    optimizer=keras.optimizers.Adam(1e-3),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=[keras.metrics.SparseCategoricalAccuracy(name="acc")],
)
history = model.fit(x_train, y_train, epochs=3, batch_size=64)
predictions = model.predict(x_test)
