"""Structured data classification from scratch (after keras-io's
structured_data/structured_data_classification_from_scratch.py): a table of numerical
and integer-coded categorical columns in a tf.data pipeline, Normalization and
IntegerLookup adapted on mapped datasets, one Input per column, a model of their
concatenation. The heart-disease table is replaced by columns of its shape."""

import numpy as np

import braze as tf
import braze.keras as keras
from braze.keras import layers

keras.utils.set_random_seed(9)
rng = np.random.default_rng(4)
rows = 303
table = {
    "age": rng.integers(29, 78, rows),
    "sex": rng.integers(0, 2, rows),
    "cp": rng.integers(0, 5, rows),
    "trestbps": rng.integers(94, 200, rows),
    "chol": rng.integers(126, 564, rows),
    "fbs": rng.integers(0, 2, rows),
    "restecg": rng.integers(0, 3, rows),
    "thalach": rng.integers(71, 202, rows),
    "exang": rng.integers(0, 2, rows),
    "oldpeak": rng.random(rows) * 6.2,
    "slope": rng.integers(1, 4, rows),
    "ca": rng.integers(0, 4, rows),
    "thal": rng.choice([3, 6, 7], rows),
}
table["target"] = ((table["cp"] > 2) ^ (table["exang"] == 1)).astype("int64")
val_rows = rng.random(rows) < 0.2
val_dataframe = {name: column[val_rows] for name, column in table.items()}
train_dataframe = {name: column[~val_rows] for name, column in table.items()}


def dataframe_to_dataset(dataframe):
    dataframe = dict(dataframe)
    labels = dataframe.pop("target")
    ds = tf.data.Dataset.from_tensor_slices((dict(dataframe), labels))
    ds = ds.shuffle(buffer_size=len(labels), seed=0)
    return ds


train_ds = dataframe_to_dataset(train_dataframe).batch(32)
val_ds = dataframe_to_dataset(val_dataframe).batch(32)


def encode_numerical_feature(feature, name, dataset):
    normalizer = layers.Normalization()
    feature_ds = dataset.map(lambda x, y: x[name])
    feature_ds = feature_ds.map(lambda x: tf.expand_dims(x, -1))
    normalizer.adapt(feature_ds)
    return normalizer(feature)


def encode_categorical_feature(feature, name, dataset):
    lookup = layers.IntegerLookup(output_mode="one_hot")
    feature_ds = dataset.map(lambda x, y: x[name])
    feature_ds = feature_ds.map(lambda x: tf.expand_dims(x, -1))
    lookup.adapt(feature_ds)
    return lookup(feature)


categorical = ["sex", "cp", "fbs", "restecg", "exang", "ca", "thal"]
numerical = ["age", "trestbps", "chol", "thalach", "oldpeak", "slope"]
inputs = {name: keras.Input(shape=(1,), name=name, dtype="int64") for name in categorical}
inputs.update({name: keras.Input(shape=(1,), name=name) for name in numerical})
all_features = layers.concatenate(
    [encode_categorical_feature(inputs[name], name, train_ds) for name in categorical]
    + [encode_numerical_feature(inputs[name], name, train_ds) for name in numerical]
)
x = layers.Dense(32, activation="relu")(all_features)
x = layers.Dropout(0.5)(x)
output = layers.Dense(1, activation="sigmoid")(x)
model = keras.Model(list(inputs.values()), output)
model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
history = model.fit(train_ds, epochs=3, validation_data=val_ds, verbose=0)

sample = {"age": 60, "sex": 1, "cp": 1, "trestbps": 145, "chol": 233, "fbs": 1, "restecg": 2, "thalach": 150}
sample.update({"exang": 0, "oldpeak": 2.3, "slope": 3, "ca": 0, "thal": 6})
input_dict = {name: tf.convert_to_tensor([value]) for name, value in sample.items()}
predictions = model.predict(input_dict, verbose=0)
