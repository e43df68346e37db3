"""StringLookup and TextVectorization against the results Keras's documentation gives for
its examples, and against their definitions (vocabulary order, padding, TF-IDF) computed
here by hand; braze.strings against Python's string methods; text_dataset_from_directory
against the files it reads."""

from __future__ import annotations

import math

import numpy as np
import pytest

import braze as tf
from braze.data.errors import DataError
from braze.keras import layers, utils

VOCAB = ["a", "b", "c", "d"]
DATA = [["a", "c", "d", "d"], ["d", "z", "b", "z"]]


def values(x):
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x)


# StringLookup: the examples of Keras's documentation, with the results it prints.


def test_string_lookup_maps_known_strings_after_the_out_of_vocabulary_index():
    layer = layers.StringLookup(vocabulary=VOCAB)
    out = layer([["a", "c", "d"], ["d", "z", "b"]])
    assert out.dtype.name == "int64"
    np.testing.assert_array_equal(values(out), [[1, 3, 4], [4, 0, 2]])
    assert layer.get_vocabulary() == ["[UNK]", "a", "b", "c", "d"]
    assert layer.get_vocabulary(include_special_tokens=False) == VOCAB


def test_string_lookup_adapt_orders_by_count_then_by_token_decreasing():
    layer = layers.StringLookup()
    layer.adapt(np.array([["a", "c", "d"], ["d", "z", "b"]]))
    assert layer.get_vocabulary() == ["[UNK]", "d", "z", "c", "b", "a"]
    capped = layers.StringLookup(max_tokens=3)
    capped.adapt(np.array([["a", "c", "d"], ["d", "z", "b"]]))
    assert capped.get_vocabulary() == ["[UNK]", "d", "z"]


def test_string_lookup_mask_token_takes_index_zero():
    layer = layers.StringLookup(vocabulary=VOCAB, mask_token="")
    np.testing.assert_array_equal(values(layer([["a", "c", "d"], ["d", "", "b"]])), [[2, 4, 5], [5, 0, 3]])
    assert layer.get_vocabulary()[:2] == ["", "[UNK]"]


def test_string_lookup_vocabulary_with_its_special_tokens_first_is_the_same_vocabulary():
    layer = layers.StringLookup(vocabulary=["[UNK]", *VOCAB])
    assert layer.get_vocabulary() == ["[UNK]", *VOCAB]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("multi_hot", [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]]),
        ("count", [[0, 1, 0, 1, 2], [2, 0, 1, 0, 1]]),
    ],
)
def test_string_lookup_encodes_rows(mode, expected):
    out = layers.StringLookup(vocabulary=VOCAB, output_mode=mode)(DATA)
    np.testing.assert_array_equal(values(out), expected)


def test_string_lookup_one_hot_and_padding_to_max_tokens():
    out = layers.StringLookup(vocabulary=VOCAB, output_mode="one_hot")(["a", "b", "c", "d", "z"])
    np.testing.assert_array_equal(values(out), np.eye(5)[[1, 2, 3, 4, 0]])
    padded = layers.StringLookup(vocabulary=VOCAB, output_mode="multi_hot", max_tokens=8, pad_to_max_tokens=True)
    assert values(padded(DATA)).shape == (2, 8)


def test_string_lookup_tf_idf_with_given_weights_weighs_unknown_strings_by_their_mean():
    layer = layers.StringLookup(vocabulary=VOCAB, idf_weights=[0.25, 0.75, 0.6, 0.4], output_mode="tf_idf")
    np.testing.assert_allclose(values(layer(DATA)), [[0, 0.25, 0, 0.6, 0.8], [1.0, 0, 0.75, 0, 0.4]], rtol=1e-6)


def test_string_lookup_inverts_indices_to_strings():
    layer = layers.StringLookup(vocabulary=VOCAB, invert=True)
    out = layer(np.array([[1, 3, 4], [4, 0, 2]]))
    np.testing.assert_array_equal(out, [["a", "c", "d"], ["d", "[UNK]", "b"]])


def test_string_lookup_reads_a_vocabulary_file_and_bytes(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("a\nb\nc\nd\n")
    layer = layers.StringLookup(vocabulary=str(path))
    np.testing.assert_array_equal(values(layer(np.array([b"d", b"x", "a"], dtype=object))), [4, 0, 1])


def test_string_lookup_without_out_of_vocabulary_index_refuses_unknown_strings():
    layer = layers.StringLookup(vocabulary=VOCAB, num_oov_indices=0)
    np.testing.assert_array_equal(values(layer(["d", "a"])), [3, 0])
    with pytest.raises(ValueError, match="'z'.*not in the vocabulary"):
        layer(["z"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"vocabulary": ["a", "a"]}, "repeats"),
        ({"vocabulary": ["a", ""], "mask_token": ""}, "mask token"),
        ({"vocabulary": VOCAB, "max_tokens": 3}, "more than max_tokens"),
        ({"vocabulary": VOCAB, "output_mode": "tf_idf"}, "needs its idf_weights"),
        ({"output_mode": "hot"}, "output_mode"),
        ({"invert": True, "output_mode": "count"}, "invert"),
    ],
)
def test_string_lookup_refuses_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        layers.StringLookup(**kwargs)


def test_tf_idf_layers_are_made_again_from_their_config():
    lookup = layers.StringLookup(output_mode="tf_idf")
    lookup.adapt(["a", "b", "a"])
    again = layers.StringLookup.from_config(lookup.get_config())
    np.testing.assert_array_equal(values(again(["a", "z"])), values(lookup(["a", "z"])))
    text = layers.TextVectorization(output_mode="tf_idf")
    text.adapt(["x y", "y"])
    np.testing.assert_array_equal(
        values(layers.TextVectorization.from_config(text.get_config())(["x z"])), values(text(["x z"]))
    )


def test_string_lookup_refuses_number_tensors_and_an_unset_vocabulary():
    with pytest.raises(TypeError, match="expected strings"):
        layers.StringLookup(vocabulary=VOCAB)(tf.ones(3))
    with pytest.raises(ValueError, match="adapt the layer"):
        layers.StringLookup()(["a"])
    with pytest.raises(ValueError, match="adapt the layer"):
        layers.StringLookup(invert=True)([1])
    with pytest.raises(ValueError, match="empty"):
        layers.StringLookup(vocabulary=[])


# TextVectorization.


def test_text_vectorization_adapted_pads_and_cuts_sequences():
    layer = layers.TextVectorization(max_tokens=5000, output_mode="int", output_sequence_length=4)
    layer.adapt(["foo bar", "bar baz", "baz bada boom"])
    np.testing.assert_array_equal(values(layer([["foo qux bar"], ["qux baz"]])), [[4, 1, 3, 0], [1, 2, 0, 0]])
    assert layer.get_vocabulary() == ["", "[UNK]", "baz", "bar", "foo", "boom", "bada"]


def test_text_vectorization_with_a_vocabulary():
    layer = layers.TextVectorization(output_sequence_length=4, vocabulary=["earth", "wind", "and", "fire"])
    out = layer([["earth wind and also fire"], ["fire and earth michigan"]])
    np.testing.assert_array_equal(values(out), [[2, 3, 4, 1], [5, 4, 2, 1]])


def test_text_vectorization_without_a_length_pads_to_the_longest_and_one_string_gives_one_sequence():
    layer = layers.TextVectorization(vocabulary=["x", "y"])
    np.testing.assert_array_equal(values(layer(["x y x", "y"])), [[2, 3, 2], [3, 0, 0]])
    np.testing.assert_array_equal(values(layer("y x")), [3, 2])


def test_text_vectorization_standardizes_ascii_case_and_keras_punctuation():
    layer = layers.TextVectorization(vocabulary=["hello", "world", "éa"])
    # Keras lower-cases ASCII letters only: "ÉA" becomes "Éa", which is not "éa".
    np.testing.assert_array_equal(values(layer(["Hello, World!", "ÉA éA"])), [[2, 3], [1, 4]])
    kept = layers.TextVectorization(standardize=None, vocabulary=["Hello,"])
    np.testing.assert_array_equal(values(kept(["Hello, hello,"])), [[2, 1]])


def test_text_vectorization_takes_functions_of_braze_strings():
    def standardize(text):
        return tf.strings.regex_replace(tf.strings.lower(text), "<br />", " ")

    def split(text):
        return tf.strings.split(text, sep="|")

    layer = layers.TextVectorization(standardize=standardize, split=split, vocabulary=["a b", "c"])
    np.testing.assert_array_equal(values(layer(["A B|C<br />", "C"])), [[2, 1], [3, 0]])


def test_text_vectorization_characters_and_ngrams():
    chars = layers.TextVectorization(split="character", vocabulary=["a", "b"])
    np.testing.assert_array_equal(values(chars(["abc"])), [[2, 3, 1]])
    grams = layers.TextVectorization(ngrams=2)
    grams.adapt(["the cat sat"])
    # Unigrams first, then bigrams; every token once, so ordered by the tokens, decreasing.
    expected = sorted(["the", "cat", "sat", "the cat", "cat sat"], reverse=True)
    assert grams.get_vocabulary() == ["", "[UNK]", *expected]


def test_text_vectorization_multi_hot_count_and_tf_idf():
    texts = ["the cat sat", "the dog sat", "the cat"]
    hot = layers.TextVectorization(output_mode="multi_hot")
    hot.adapt(texts)
    vocab = hot.get_vocabulary()
    assert vocab == ["[UNK]", "the", "sat", "cat", "dog"]
    np.testing.assert_array_equal(values(hot(["cat cat bird"])), [[1, 0, 0, 1, 0]])
    count = layers.TextVectorization(output_mode="count", vocabulary=vocab[1:])
    np.testing.assert_array_equal(values(count(["cat cat bird"])), [[1, 0, 0, 2, 0]])
    idf = layers.TextVectorization(output_mode="tf_idf")
    idf.adapt(texts)
    documents = {"the": 3, "sat": 2, "cat": 2, "dog": 1}
    weights = [math.log(1 + 3 / (1 + documents[t])) for t in vocab[1:]]
    expected = [np.mean(weights) * 1, 0, 0, 2 * weights[2], 0]  # "bird" unknown once, "cat" twice
    np.testing.assert_allclose(values(idf(["cat cat bird"]))[0], expected, rtol=1e-6)


def test_text_vectorization_adapts_on_a_dataset_of_batches_and_vectorizes_in_a_map():
    texts = np.array(["b a", "b", "c b", "a b"])
    labels = np.arange(4)
    data = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(3)
    layer = layers.TextVectorization(output_sequence_length=3)
    layer.adapt(data.map(lambda x, y: x))
    assert layer.get_vocabulary() == ["", "[UNK]", "b", "a", "c"]
    batches = list(data.map(lambda x, y: (layer(tf.expand_dims(x, -1)), y)))
    np.testing.assert_array_equal(batches[0][0], [[2, 3, 0], [2, 0, 0], [4, 2, 0]])
    np.testing.assert_array_equal(batches[1][1], [3])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"output_mode": "one_hot"}, ValueError, "output_mode"),
        ({"output_mode": "count", "output_sequence_length": 3}, ValueError, "output_sequence_length"),
        ({"standardize": "upper"}, ValueError, "standardize"),
        ({"split": "comma"}, ValueError, "split"),
        ({"ragged": True}, NotImplementedError, "ragged"),
        ({"sparse": True}, NotImplementedError, "sparse"),
    ],
)
def test_text_vectorization_refuses_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        layers.TextVectorization(**kwargs)


# A model of a text input.

TEXTS = np.array(["good movie", "bad film", "great great", "awful", "good", "bad bad film"])
LABELS = np.array([1, 0, 1, 0, 1, 0])


def text_model(jit_compile: bool):
    tf.keras.utils.set_random_seed(0)
    vectorize = layers.TextVectorization(max_tokens=20, output_sequence_length=5)
    vectorize.adapt(TEXTS)
    tokens = tf.keras.Input(shape=(None,), dtype="int64")
    pooled = layers.GlobalAveragePooling1D()(layers.Embedding(20, 4)(tokens))
    numeric = tf.keras.Model(tokens, layers.Dense(1, activation="sigmoid")(pooled))
    text = tf.keras.Input(shape=(1,), dtype="string")
    indices = vectorize(text)
    assert indices.shape == (None, 5) and indices.dtype == "int64"
    model = tf.keras.Model(text, numeric(indices))
    model.compile(loss="binary_crossentropy", optimizer="adam", jit_compile=jit_compile)
    return model, numeric, vectorize


def test_a_model_of_a_text_input_computes_what_its_layers_compute_on_the_indices():
    model, numeric, vectorize = text_model(jit_compile=False)
    expected = values(numeric(vectorize(TEXTS)))
    np.testing.assert_allclose(model.predict(list(TEXTS), verbose=0), expected, rtol=1e-6)
    np.testing.assert_allclose(values(model(TEXTS[:, None])), expected, rtol=1e-6)


def test_a_compiled_model_of_a_text_input_reads_the_text_outside_its_step_and_compiles_once():
    data = tf.data.Dataset.from_tensor_slices((TEXTS, LABELS)).batch(2)
    eager, _, _ = text_model(jit_compile=False)
    compiled, _, _ = text_model(jit_compile=True)
    before = tf.metrics.counter("JitCompile")
    histories = [m.fit(data, epochs=2, verbose=0).history["loss"] for m in (eager, compiled)]
    assert tf.metrics.counter("JitCompile") == before + 1  # the training step, once for the three batches
    np.testing.assert_allclose(histories[1], histories[0], rtol=1e-5)
    np.testing.assert_allclose(compiled.evaluate(data, verbose=0), eager.evaluate(data, verbose=0), rtol=1e-5)


def test_a_lookup_without_out_of_vocabulary_index_builds_on_a_text_input_and_ops_say_what_text_takes():
    text = tf.keras.Input(shape=(), dtype="string")
    exact = layers.StringLookup(vocabulary=["a", "b"], num_oov_indices=0)
    model = tf.keras.Model(text, exact(text))
    np.testing.assert_array_equal(values(model(np.array(["b", "a"]))), [1, 0])
    with pytest.raises(TypeError, match="cannot read a text input"):
        tf.keras.ops.expand_dims(text, -1)


def test_a_layer_of_text_and_computed_tensors_is_refused():
    text = tf.keras.Input(shape=(1,), dtype="string")
    number = tf.keras.Input(shape=(2,))

    class Both(layers.Layer):
        def call(self, text, number):
            return number

    with pytest.raises(ValueError, match="reads text and tensors"):
        tf.keras.Model([text, number], Both()(text, layers.Dense(2)(number)))


# braze.strings against Python's own string methods.


def test_strings_functions_agree_with_python():
    text = np.array(["Hello  World ", " ÀbC-d"])
    np.testing.assert_array_equal(tf.strings.lower(text), ["hello  world ", " Àbc-d"])  # ASCII only, as TF
    np.testing.assert_array_equal(tf.strings.lower(text, encoding="utf-8"), [s.lower() for s in text])
    np.testing.assert_array_equal(tf.strings.upper(text), ["HELLO  WORLD ", " ÀBC-D"])
    np.testing.assert_array_equal(tf.strings.strip(text), [s.strip() for s in text])
    np.testing.assert_array_equal(tf.strings.regex_replace(text, r"[lo]", "_"), ["He___  W_r_d ", " ÀbC-d"])
    np.testing.assert_array_equal(
        tf.strings.regex_replace(text, "l", "L", replace_global=False), ["HeLlo  World ", " ÀbC-d"]
    )
    assert tf.strings.split(text) == [s.split() for s in text]
    assert tf.strings.split("a,b", sep=",") == ["a", "b"]
    assert tf.strings.unicode_split("Àb") == ["À", "b"]
    np.testing.assert_array_equal(tf.strings.length(text), [len(s.encode()) for s in text])
    np.testing.assert_array_equal(tf.strings.length(text, unit="UTF8_CHAR"), [len(s) for s in text])
    np.testing.assert_array_equal(tf.strings.join([np.array(["a", "b"]), "x"], separator="-"), ["a-x", "b-x"])
    assert tf.strings.ngrams([["a", "b", "c"]], (1, 3)) == [["a", "b", "c", "a b c"]]
    assert tf.strings.reduce_join(np.array(["a", "b", "c"])) == "abc"
    assert str(tf.strings.regex_replace("Hi. How?", "[.?!,]", r" \0 ")) == "Hi .  How ? "  # RE2: \0 the match
    assert str(tf.strings.regex_replace("ab", "(a)(b)", r"\2\1")) == "ba"
    with pytest.raises(ValueError, match="invalid escape"):
        tf.strings.regex_replace("a", "a", r"\n")
    assert tf.strings.split("a  b", sep="") == ["a", "b"]  # TensorFlow's empty separator: whitespace
    long_last = np.array([["a", "b"], ["cc", "dddd"]])
    np.testing.assert_array_equal(tf.strings.reduce_join(long_last, axis=1, separator="-"), ["a-b", "cc-dddd"])
    np.testing.assert_array_equal(tf.strings.reduce_join(long_last, axis=0, keepdims=True), [["acc", "bdddd"]])
    with pytest.raises(TypeError, match="expected strings"):
        tf.strings.lower(np.arange(3))


# text_dataset_from_directory.


def test_text_dataset_from_directory_reads_each_file_as_one_labelled_text(tmp_path):
    texts = {"neg": ["bad film", "worst"], "pos": ["good", "great film", "fine"]}
    for label, items in texts.items():
        (tmp_path / label).mkdir()
        for k, text in enumerate(items):
            (tmp_path / label / f"{k}.txt").write_text(text)
    (tmp_path / "pos" / "notes.md").write_text("not a review")
    data = utils.text_dataset_from_directory(tmp_path, batch_size=2, shuffle=False, verbose=False)
    assert data.class_names == ["neg", "pos"]
    got = [(str(t), int(y)) for x, ys in data for t, y in zip(x, ys, strict=True)]
    assert got == [(t, k) for k, label in enumerate(["neg", "pos"]) for t in texts[label]]
    cut = utils.text_dataset_from_directory(tmp_path, batch_size=None, shuffle=False, max_length=3, verbose=False)
    assert [str(x) for x, _ in cut][:2] == ["bad", "wor"]
    train, val = utils.text_dataset_from_directory(tmp_path, validation_split=0.4, subset="both", seed=1, verbose=False)
    seen = [str(t) for data in (train, val) for x, _ in data for t in x]
    assert sorted(seen) == sorted(t for items in texts.values() for t in items)


def test_text_dataset_from_directory_refuses_text_that_is_not_utf8(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.txt").write_bytes(b"\xff\xfe bad")
    with pytest.raises(DataError, match="x.txt: not UTF-8"):
        list(utils.text_dataset_from_directory(tmp_path, verbose=False))
