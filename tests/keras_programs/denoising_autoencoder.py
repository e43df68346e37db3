"""A convolutional autoencoder that denoises MNIST digits (after keras-io's
examples/vision/autoencoder.py), on 256 images: Conv2D and MaxPooling2D down,
Conv2DTranspose and UpSampling2D back up, written with the functional API."""

import numpy as np

import braze.keras as keras
from braze.keras import layers

keras.utils.set_random_seed(1)


def preprocess(array):
    array = array.astype("float32") / 255.0
    return np.reshape(array, (len(array), 28, 28, 1))


def noise(array):
    noisy_array = array + 0.4 * np.random.normal(loc=0.0, scale=1.0, size=array.shape)
    return np.clip(noisy_array, 0.0, 1.0).astype("float32")


(train_data, _), (test_data, _) = keras.datasets.mnist.load_data()
np.random.seed(2)
train_data = preprocess(train_data[:256])
test_data = preprocess(test_data[:64])
noisy_train_data = noise(train_data)
noisy_test_data = noise(test_data)

inputs = layers.Input(shape=(28, 28, 1))
x = layers.Conv2D(16, (3, 3), activation="relu", padding="same")(inputs)
x = layers.MaxPooling2D((2, 2), padding="same")(x)
x = layers.Conv2D(16, (3, 3), activation="relu", padding="same")(x)
x = layers.MaxPooling2D((2, 2), padding="same")(x)
x = layers.Conv2DTranspose(16, (3, 3), strides=2, activation="relu", padding="same")(x)
x = layers.UpSampling2D((2, 2))(x)
x = layers.Conv2D(1, (3, 3), activation="sigmoid", padding="same")(x)

autoencoder = keras.Model(inputs, x)
autoencoder.compile(optimizer="adam", loss="binary_crossentropy")
autoencoder.summary()

history = autoencoder.fit(
    x=noisy_train_data,
    y=train_data,
    epochs=2,
    batch_size=64,
    shuffle=True,
    validation_data=(noisy_test_data, test_data),
)
predictions = autoencoder.predict(noisy_test_data[:8])
