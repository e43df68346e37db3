"""Text classification from scratch (after keras-io's nlp/text_classification_from_scratch.py):
review files on disk read by text_dataset_from_directory, a TextVectorization layer with
a standardization of tf.strings ops adapted on a mapped dataset, the text vectorized in
a tf.data map, and a 1-D convnet over an Embedding. The IMDB reviews are replaced by
files of their layout (aclImdb/train/pos/0_7.txt, HTML line breaks, punctuation), fewer
and shorter; the model's sizes are keras-io's. Its last section makes a model of a string
Input (which Keras 3 runs on TensorFlow only) and evaluates it on the raw text."""

import os
import re
import string

import numpy as np

import braze as tf
import braze.keras as keras
from braze.keras import layers

keras.utils.set_random_seed(3)
rng = np.random.default_rng(5)
good = ["great", "wonderful", "moving", "brilliant", "superb", "loved"]
bad = ["awful", "boring", "dull", "terrible", "worst", "hated"]
plain = ["the", "film", "a", "was", "and", "it", "plot", "acting", "story", "this", "of", "movie", "i"]
for part, count in (("train", 120), ("test", 48)):
    for label, words in (("pos", good), ("neg", bad)):
        folder = os.path.join("aclImdb", part, label)
        os.makedirs(folder)
        for k in range(count // 2):
            sentences = []
            for _ in range(rng.integers(2, 6)):
                chosen = rng.choice(plain + words, size=rng.integers(4, 12))
                sentences.append(" ".join(chosen).capitalize() + rng.choice([".", "!", "?", "..."]))
            with open(os.path.join(folder, f"{k}_{rng.integers(1, 11)}.txt"), "w") as file:
                file.write(" <br /><br />".join(sentences))
dataset_dir = "aclImdb"

batch_size = 32
train_dir = os.path.join(dataset_dir, "train")
test_dir = os.path.join(dataset_dir, "test")

raw_train_ds = keras.utils.text_dataset_from_directory(
    train_dir,
    batch_size=batch_size,
    validation_split=0.2,
    subset="training",
    seed=1337,
    class_names=["pos", "neg"],
)
raw_val_ds = keras.utils.text_dataset_from_directory(
    train_dir,
    batch_size=batch_size,
    validation_split=0.2,
    subset="validation",
    seed=1337,
    class_names=["pos", "neg"],
)
raw_test_ds = keras.utils.text_dataset_from_directory(test_dir, batch_size=batch_size)

print(f"Number of batches in raw_train_ds: {raw_train_ds.cardinality()}")
print(f"Number of batches in raw_val_ds: {raw_val_ds.cardinality()}")
print(f"Number of batches in raw_test_ds: {raw_test_ds.cardinality()}")

for text_batch, label_batch in raw_train_ds.take(1):
    for i in range(5):
        print(text_batch.numpy()[i])
        print(label_batch.numpy()[i])


def custom_standardization(input_data):
    lowercase = tf.strings.lower(input_data)
    stripped_html = tf.strings.regex_replace(lowercase, "<br />", " ")
    return tf.strings.regex_replace(stripped_html, f"[{re.escape(string.punctuation)}]", "")


max_features = 20000
embedding_dim = 128
sequence_length = 500

vectorize_layer = keras.layers.TextVectorization(
    standardize=custom_standardization,
    max_tokens=max_features,
    output_mode="int",
    output_sequence_length=sequence_length,
)

text_ds = raw_train_ds.map(lambda x, y: x)
vectorize_layer.adapt(text_ds)
vocabulary = vectorize_layer.get_vocabulary()


def vectorize_text(text, label):
    text = tf.expand_dims(text, -1)
    return vectorize_layer(text), label


train_ds = raw_train_ds.map(vectorize_text)
val_ds = raw_val_ds.map(vectorize_text)
test_ds = raw_test_ds.map(vectorize_text)

train_ds = train_ds.cache().prefetch(buffer_size=10)
val_ds = val_ds.cache().prefetch(buffer_size=10)
test_ds = test_ds.cache().prefetch(buffer_size=10)

inputs = keras.Input(shape=(None,), dtype="int64")
x = layers.Embedding(max_features, embedding_dim)(inputs)
x = layers.Dropout(0.5)(x)
x = layers.Conv1D(128, 7, padding="valid", activation="relu", strides=3)(x)
x = layers.Conv1D(128, 7, padding="valid", activation="relu", strides=3)(x)
x = layers.GlobalMaxPooling1D()(x)
x = layers.Dense(128, activation="relu")(x)
x = layers.Dropout(0.5)(x)
predictions = layers.Dense(1, activation="sigmoid", name="predictions")(x)

model = keras.Model(inputs, predictions)
model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])

epochs = 3
history = model.fit(train_ds, validation_data=val_ds, epochs=epochs)
score = model.evaluate(test_ds)

inputs = keras.Input(shape=(1,), dtype="string")
indices = vectorize_layer(inputs)
outputs = model(indices)

end_to_end_model = keras.Model(inputs, outputs)
end_to_end_model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])

end_to_end_score = end_to_end_model.evaluate(raw_test_ds)
