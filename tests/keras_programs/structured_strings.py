"""Structured data classification from scratch, Keras 3's backend-agnostic version (after
keras-io's structured_data/structured_data_classification_from_scratch.py): a table with
a column of strings ("thal"), StringLookup or IntegerLookup chosen by the column's dtype
in a tf.data map (num_oov_indices=0, the "binary" output mode), Normalization adapted on
mapped datasets, dict Inputs of int64 and float32 concatenated in a layer of its own, and
a prediction for one new sample. The heart-disease CSV is replaced by columns of its
shape, and the pandas dataframe by a dict of NumPy columns (pandas is not a dependency):
``dataframe.sample``/``drop`` become a random split, ``unique()`` np.unique."""

import numpy as np

import braze as tf
import braze.keras as keras
from braze.keras import layers

keras.utils.set_random_seed(11)
rng = np.random.default_rng(12)
rows = 303
integer_ranges = {
    "age": (29, 78),
    "sex": (0, 2),
    "cp": (0, 5),
    "trestbps": (94, 200),
    "chol": (126, 564),
    "fbs": (0, 2),
    "restecg": (0, 3),
    "thalach": (71, 202),
    "exang": (0, 2),
    "slope": (1, 4),
    "ca": (0, 4),
}
dataframe = {name: rng.integers(low, high, rows) for name, (low, high) in integer_ranges.items()}
dataframe["oldpeak"] = rng.random(rows) * 6.2
dataframe["thal"] = rng.choice(np.array(["fixed", "normal", "reversible", "1", "2"], dtype=object), rows)
dataframe["target"] = ((dataframe["cp"] > 2) ^ (dataframe["thal"] == "reversible")).astype("int64")
val_rows = rng.random(rows) < 0.2
val_dataframe = {name: column[val_rows] for name, column in dataframe.items()}
train_dataframe = {name: column[~val_rows] for name, column in dataframe.items()}

print(f"Using {len(train_dataframe['age'])} samples for training and {len(val_dataframe['age'])} for validation")

COLUMN_NAMES = [
    "age",
    "sex",
    "cp",
    "trestbps",
    "chol",
    "fbs",
    "restecg",
    "thalach",
    "exang",
    "oldpeak",
    "slope",
    "ca",
    "thal",
    "target",
]
TARGET_FEATURE_NAME = "target"
NUMERIC_FEATURE_NAMES = ["age", "trestbps", "thalach", "oldpeak", "slope", "chol"]
CATEGORICAL_FEATURES_WITH_VOCABULARY = {
    feature_name: sorted(
        [
            value if dataframe[feature_name].dtype == "int64" else str(value)
            for value in list(np.unique(dataframe[feature_name]))
        ]
    )
    for feature_name in COLUMN_NAMES
    if feature_name not in list(NUMERIC_FEATURE_NAMES + [TARGET_FEATURE_NAME])
}
FEATURE_NAMES = NUMERIC_FEATURE_NAMES + list(CATEGORICAL_FEATURES_WITH_VOCABULARY.keys())


def encode_categorical(features, target):
    for feature_name in features:
        if feature_name in CATEGORICAL_FEATURES_WITH_VOCABULARY:
            lookup_class = layers.StringLookup if features[feature_name].dtype == "string" else layers.IntegerLookup
            vocabulary = CATEGORICAL_FEATURES_WITH_VOCABULARY[feature_name]
            index = lookup_class(
                vocabulary=vocabulary,
                mask_token=None,
                num_oov_indices=0,
                output_mode="binary",
            )
            value_index = index(features[feature_name])
            features[feature_name] = value_index

        else:
            pass

    return dict(features), target


def encode_numerical_feature(feature, name, dataset):
    normalizer = layers.Normalization()
    feature_ds = dataset.map(lambda x, y: x[name])
    feature_ds = feature_ds.map(lambda x: tf.expand_dims(x, -1))
    normalizer.adapt(feature_ds)
    encoded_feature = normalizer(feature)
    return encoded_feature


def dataframe_to_dataset(dataframe):
    dataframe = dataframe.copy()
    labels = dataframe.pop("target")
    ds = tf.data.Dataset.from_tensor_slices((dict(dataframe), labels)).map(encode_categorical)
    ds = ds.shuffle(buffer_size=len(labels))
    return ds


train_ds = dataframe_to_dataset(train_dataframe)
val_ds = dataframe_to_dataset(val_dataframe)

for x, y in train_ds.take(1):
    print("Input:", x)
    print("Target:", y)

train_ds = train_ds.batch(32)
val_ds = val_ds.batch(32)


def create_model_inputs():
    inputs = {}

    def create_input_helper(feature_name):
        num_categories = len(CATEGORICAL_FEATURES_WITH_VOCABULARY[feature_name])
        inputs[feature_name] = layers.Input(name=feature_name, shape=(num_categories,), dtype="int64")
        return inputs

    for feature_name in FEATURE_NAMES:
        if feature_name in CATEGORICAL_FEATURES_WITH_VOCABULARY:
            create_input_helper(feature_name)
        else:
            feature_input = layers.Input(name=feature_name, shape=(1,), dtype="float32")
            inputs[feature_name] = encode_numerical_feature(feature_input, feature_name, train_ds)
    return inputs


class Classifier(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense_1 = layers.Dense(32, activation="relu")
        self.dropout = layers.Dropout(0.5)
        self.dense_2 = layers.Dense(1, activation="sigmoid")

    def call(self, inputs):
        all_features = layers.concatenate(list(inputs.values()))
        x = self.dense_1(all_features)
        x = self.dropout(x)
        output = self.dense_2(x)
        return output

    def build(self, input_shape):
        self.built = True


def create_model():
    all_inputs = create_model_inputs()
    output = Classifier()(all_inputs)
    model = keras.Model(all_inputs, output)
    return model


model = create_model()
model.compile("adam", "binary_crossentropy", metrics=["accuracy"])

history = model.fit(train_ds, epochs=3, validation_data=val_ds)

sample = {
    "age": 60,
    "sex": 1,
    "cp": 1,
    "trestbps": 145,
    "chol": 233,
    "fbs": 1,
    "restecg": 2,
    "thalach": 150,
    "exang": 0,
    "oldpeak": 2.3,
    "slope": 3,
    "ca": 0,
    "thal": "fixed",
}


def get_cat_encoding(cat, cat_value):
    encoding = [0] * len(cat)
    if cat_value in cat:
        encoding[cat.index(cat_value)] = 1
    return encoding


for name, value in sample.items():
    if name in CATEGORICAL_FEATURES_WITH_VOCABULARY:
        sample.update({name: get_cat_encoding(CATEGORICAL_FEATURES_WITH_VOCABULARY[name], sample[name])})
input_dict = {name: tf.convert_to_tensor([value]) for name, value in sample.items()}
predictions = model.predict(input_dict)

print(
    f"This particular patient had a {100 * predictions[0][0]:.1f} "
    "percent probability of having a heart disease, "
    "as evaluated by our model."
)
