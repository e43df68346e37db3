"""A functional model with three inputs and two outputs, as in Keras's functional API
guide (its ticket classifier, with dense features standing in for text)."""

import numpy as np

import braze.keras as keras
from braze.keras import layers

keras.utils.set_random_seed(1)
num_tags = 12
num_departments = 4

title_input = keras.Input(shape=(16,), name="title")
body_input = keras.Input(shape=(32,), name="body")
tags_input = keras.Input(shape=(num_tags,), name="tags")

title_features = layers.Dense(8, activation="relu")(title_input)
body_features = layers.Dense(8, activation="relu")(body_input)
x = layers.concatenate([title_features, body_features, tags_input])

priority_pred = layers.Dense(1, name="priority")(x)
department_pred = layers.Dense(num_departments, name="department")(x)

model = keras.Model(
    inputs=[title_input, body_input, tags_input],
    outputs={"priority": priority_pred, "department": department_pred},
)
model.compile(
    optimizer=keras.optimizers.RMSprop(1e-3),
    loss={
        "priority": keras.losses.BinaryCrossentropy(from_logits=True),
        "department": keras.losses.CategoricalCrossentropy(from_logits=True),
    },
    loss_weights={"priority": 1.0, "department": 0.2},
    metrics={"department": ["accuracy"]},
)

rng = np.random.default_rng(0)
title_data = rng.standard_normal((128, 16)).astype("float32")
body_data = rng.standard_normal((128, 32)).astype("float32")
tags_data = rng.integers(0, 2, size=(128, num_tags)).astype("float32")
priority_targets = rng.random(size=(128, 1))
dept_targets = keras.utils.to_categorical(rng.integers(0, num_departments, size=128), num_departments)

history = model.fit(
    {"title": title_data, "body": body_data, "tags": tags_data},
    {"priority": priority_targets, "department": dept_targets},
    epochs=2,
    batch_size=32,
)
predictions = model.predict({"title": title_data, "body": body_data, "tags": tags_data})
