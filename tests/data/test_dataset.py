"""tf.data's Dataset on arrays (slices, batches, TensorFlow's buffered shuffle, map, repeat,
take), Keras's to_categorical, pad_sequences and Sequence, and keras.datasets.mnist."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.data import Dataset, Sequence, pad_sequences, to_categorical
from braze.data.mnist import load_data


def test_slices_batch_and_shuffle_keep_rows_together():
    x, y = np.arange(10).reshape(10, 1) * 1.0, np.arange(10)
    batches = list(Dataset.from_tensor_slices((x, y)).batch(4))
    assert [len(b[1]) for b in batches] == [4, 4, 2] and len(Dataset.from_tensor_slices(y).batch(4)) == 3
    assert len(list(Dataset.from_tensor_slices(y).batch(4, drop_remainder=True))) == 2
    shuffled = Dataset.from_tensor_slices({"x": x, "y": y}).shuffle(100, seed=0)
    first, second = [e["y"] for e in shuffled], [e["y"] for e in shuffled]
    assert sorted(first) == list(range(10)) and first != second  # a new order every pass
    assert all(e["x"][0] == e["y"] for e in shuffled)
    fixed = Dataset.from_tensor_slices(y).shuffle(100, seed=0, reshuffle_each_iteration=False)
    assert list(fixed) == list(fixed)


def test_a_small_shuffle_buffer_draws_from_the_next_elements_only():
    order = [int(v) for v in Dataset.from_tensor_slices(np.arange(100)).shuffle(3, seed=1)]
    assert sorted(order) == list(range(100))
    assert all(order[i] <= i + 2 for i in range(100))  # element i is out after at most i + 2 others came in


def test_map_repeat_take_skip():
    data = Dataset.from_tensor_slices((np.arange(4.0), np.arange(4))).map(lambda a, b: (a * 2, b))
    assert [float(a) for a, _ in data] == [0.0, 2.0, 4.0, 6.0]
    assert len(data.repeat(3)) == 12 and [int(b) for _, b in data.skip(1).take(2)] == [1, 2]
    with pytest.raises(ValueError, match="different numbers of rows"):
        Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))


def test_keras_utilities():
    np.testing.assert_array_equal(to_categorical([[2], [0]], 3), [[0, 0, 1], [1, 0, 0]])
    padded = pad_sequences([[1, 2, 3], [4]], maxlen=2)
    np.testing.assert_array_equal(padded, [[2, 3], [0, 4]])
    after = pad_sequences([[1, 2, 3]], maxlen=4, padding="post", truncating="post")
    np.testing.assert_array_equal(after, [[1, 2, 3, 0]])

    class Batches(Sequence):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return np.full((2, 1), i), np.zeros(2)

    assert [int(x[0, 0]) for x, _ in Batches()] == [0, 1]


def test_mnist_load_data_is_kerass_arrays():
    (x_train, y_train), (x_test, y_test) = load_data()
    assert x_train.shape == (60000, 28, 28) and x_test.shape == (10000, 28, 28)
    assert x_train.dtype == y_train.dtype == np.uint8 and set(np.unique(y_test)) == set(range(10))


def test_elements_answer_numpy_as_tensorflows_tensors_do():
    images = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    labels = np.array([0, 1, 0, 1])
    (batch_images, batch_labels), *_ = list(Dataset.from_tensor_slices((images, labels)).batch(4))
    np.testing.assert_array_equal(batch_images[1].numpy(), images[1])
    assert int(batch_labels[1]) == 1 and type(batch_images.numpy()) is np.ndarray
    row = next(iter(Dataset.from_tensor_slices(labels)))
    assert row.numpy() == 0
    assert all(type(a) is np.ndarray for a in next(Dataset.from_tensor_slices((images, labels)).as_numpy_iterator()))


def test_lists_are_tensors_and_tuples_and_dicts_structures_as_in_tensorflow():
    numbers = list(Dataset.from_tensor_slices([1, 2, 3]))
    assert [int(n) for n in numbers] == [1, 2, 3]
    pairs = list(Dataset.from_tensor_slices(([[1, 2], [3, 4]], [0, 1])))
    np.testing.assert_array_equal(pairs[1][0], [3, 4])
    assert int(pairs[1][1]) == 1
    table = Dataset.from_tensor_slices(({"a": [1.0, 2.0, 3.0], "b": [4, 5, 6]}, [0, 1, 0]))
    features, labels = next(iter(table.batch(2)))
    np.testing.assert_array_equal(features["b"], [4, 5])
    np.testing.assert_array_equal(labels, [0, 1])
    (whole,) = list(Dataset.from_tensors([1, 2]))
    np.testing.assert_array_equal(whole, [1, 2])
    with pytest.raises(ValueError, match="a scalar has no rows"):
        Dataset.from_tensor_slices(5)


def test_text_elements_compare_as_tensorflow_string_tensors():
    data = Dataset.from_tensor_slices(({"thal": np.array(["fixed", "normal"], dtype=object)}, np.arange(2)))
    (first, _), (_, _) = list(data)
    assert first["thal"].dtype == "string" and first["thal"].dtype == braze.string
    assert first["thal"].dtype.kind == "U" and np.dtype(first["thal"].dtype) == np.dtype("<U5")
    ((batch, labels),) = list(data.batch(2))
    assert batch["thal"].dtype == "string" and labels.dtype != "string"
    np.testing.assert_array_equal(np.unique(batch["thal"]), ["fixed", "normal"])
    assert first["thal"].numpy() == b"fixed"  # TensorFlow's text: UTF-8 bytes
    assert batch["thal"].numpy().tolist() == [b"fixed", b"normal"]
    mapped = data.map(lambda x, y: x["thal"]).batch(2)
    assert next(iter(mapped)).dtype == "string"  # still text after a map


def test_padded_batch_list_files_text_lines_and_a_seeded_shuffle(tmp_path):
    data = Dataset.from_tensor_slices(np.arange(3)).map(
        lambda i: (np.arange(int(i) + 1), np.array(["a"] * (int(i) + 1)))
    )
    (numbers, text), (last, _) = list(data.padded_batch(2))
    np.testing.assert_array_equal(numbers, [[0, 0], [0, 1]])
    np.testing.assert_array_equal(text, [["a", ""], ["a", "a"]])
    np.testing.assert_array_equal(last, [[0, 1, 2]])
    ((numbers, text),) = list(data.padded_batch(3, padded_shapes=([4], [None]), padding_values=(-1, "<pad>")))
    assert numbers.tolist()[0] == [0, -1, -1, -1] and text.tolist()[0] == ["a", "<pad>", "<pad>"]
    for name, body in (("b.txt", "x,1\r\ny,2\n"), ("a.txt", "z,3")):
        (tmp_path / name).write_text(body, newline="")
    listed = [str(p) for p in Dataset.list_files(str(tmp_path / "*.txt"), shuffle=False)]
    assert listed == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    lines = [str(line) for line in braze.data.TextLineDataset(listed)]
    assert lines == ["z,3", "x,1", "y,2"]
    assert braze.strings.to_number(np.array(["1.5", "2"])).tolist() == [1.5, 2.0]
    orders = []
    for _ in range(2):
        braze.random.set_seed(42)  # TensorFlow's global seed makes an unseeded shuffle repeat
        orders.append([int(x) for x in Dataset.range(20).shuffle(20)])
    assert orders[0] == orders[1] and orders[0] != list(range(20))


def test_make_csv_dataset_infers_column_types_and_batches_features_and_labels(tmp_path):
    (tmp_path / "a.csv").write_text('age,workclass,hours,label\n39,State-gov,40.5,0\n50,,13,1\n38,"Private, Inc",,0\n')
    data = braze.data.experimental.make_csv_dataset(
        str(tmp_path / "*.csv"), batch_size=2, label_name="label", num_epochs=1, shuffle=False
    )
    (first, first_labels), (second, _) = list(data)
    assert (
        first["age"].dtype == np.int32 and first["hours"].dtype == np.float32 and first["workclass"].dtype == "string"
    )
    assert first["age"].tolist() == [39, 50] and first["workclass"].tolist() == ["State-gov", ""]
    assert second["workclass"].tolist() == ["Private, Inc"] and second["hours"].tolist() == [0.0]  # defaults
    assert first_labels.tolist() == [0, 1]
    forever = braze.data.experimental.make_csv_dataset(str(tmp_path / "a.csv"), batch_size=2, label_name="label")
    assert len(list(forever.take(5))) == 5  # num_epochs=None repeats, as TensorFlow's


def test_make_csv_dataset_reads_missing_values_defaults_and_wide_integers_as_tensorflow(tmp_path):
    (tmp_path / "c.csv").write_text("a,b,c,label\n1,NA,x,0\n3000000000,2.5,,1\n,3,y,0\n")
    read = braze.data.experimental.make_csv_dataset
    ((x, _),) = list(read(str(tmp_path / "c.csv"), 3, label_name="label", na_value="NA", num_epochs=1, shuffle=False))
    assert x["a"].dtype == np.int64 and x["a"].tolist() == [1, 3000000000, 0]  # past int32: int64
    assert x["b"].dtype == np.float32 and x["b"].tolist() == [0.0, 2.5, 3.0]  # NA is missing, not text
    defaults = [-7, 0.5, "none", 0]
    ((x, _),) = list(
        read(
            str(tmp_path / "c.csv"),
            3,
            label_name="label",
            column_defaults=defaults,
            na_value="NA",
            num_epochs=1,
            shuffle=False,
        )
    )
    assert x["a"].tolist()[2] == -7 and x["b"].tolist()[0] == 0.5 and x["c"].tolist()[1] == "none"
    ((x, y),) = list(
        read(
            str(tmp_path / "c.csv"),
            3,
            label_name="label",
            select_columns=["c"],
            column_defaults=["?"],
            num_epochs=1,
            shuffle=False,
        )
    )
    assert list(x) == ["c"] and x["c"].tolist() == ["x", "?", "y"] and y.tolist() == [0, 1, 0]


def test_a_negative_count_takes_everything_and_skips_everything():
    data = Dataset.from_tensor_slices((np.arange(10), np.arange(10) * 2))
    taken, skipped = data.take(-1), data.skip(-1)
    assert len(taken) == 10 and [int(x) for x, _ in taken] == list(range(10))
    assert len(skipped) == 0 and list(skipped) == []
