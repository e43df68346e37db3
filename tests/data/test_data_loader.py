"""DataLoader batching, shuffling, prefetch thread lifetime, and mnist_loaders."""

import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import braze
from braze.data import MNIST, DataError, DataLoader, ImageFolder, TensorDataset, make_two_class_folder, mnist_loaders


def prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "braze-data-prefetch"]


def arrays(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    return x, np.arange(n, dtype=np.int64) * 7


def test_shuffled_epoch_covers_every_sample_once():
    x, y = arrays()
    loader = DataLoader((x, y), batch_size=3, shuffle=True, seed=0)
    assert len(loader) == 4
    batches = list(loader)
    assert [len(b[0]) for b in batches] == [3, 3, 3, 1]
    xs = np.concatenate([b[0] for b in batches])
    ys = np.concatenate([b[1] for b in batches])
    np.testing.assert_array_equal(xs[np.argsort(ys)], x)
    np.testing.assert_array_equal(np.sort(ys), y)
    assert not np.array_equal(ys, y)  # actually shuffled
    np.testing.assert_array_equal(xs[:, 0] / 3 * 7, ys)  # rows stay paired


def test_unshuffled_keeps_order():
    x, _ = arrays()
    (xs,) = zip(*DataLoader(x, batch_size=4), strict=True)
    np.testing.assert_array_equal(np.concatenate(xs), x)


def test_drop_last():
    x, y = arrays()
    loader = DataLoader((x, y), batch_size=3, shuffle=True, seed=1, drop_last=True)
    assert len(loader) == 3
    batches = list(loader)
    assert [len(b[1]) for b in batches] == [3, 3, 3]
    assert len(set(np.concatenate([b[1] for b in batches]).tolist())) == 9


def test_seeded_epochs_are_reproducible_and_differ():
    x, y = arrays(50)

    def run(seed):
        loader = DataLoader((x, y), batch_size=8, shuffle=True, seed=seed)
        return [np.concatenate([b[1] for b in loader]).tolist() for _ in range(3)]

    first = run(42)
    assert first == run(42)
    assert first[0] != first[1] and first != run(43)


def test_prefetch_zero_matches_threaded():
    x, y = arrays(20)
    a = [b[1].tolist() for b in DataLoader((x, y), 6, shuffle=True, seed=2, prefetch=0)]
    b = [b[1].tolist() for b in DataLoader((x, y), 6, shuffle=True, seed=2, prefetch=3)]
    assert a == b


def test_dataset_samples_are_stacked():
    class Squares:
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return np.full((2,), i, dtype=np.float32), i * i

    batches = list(DataLoader(Squares(), batch_size=2))
    assert [b[1].tolist() for b in batches] == [[0, 1], [4, 9], [16]]
    assert batches[0][0].shape == (2, 2)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 40), batch_size=st.integers(1, 12), drop_last=st.booleans(), seed=st.integers(0, 2**31))
def test_every_epoch_is_a_permutation(n, batch_size, drop_last, seed):
    loader = DataLoader(np.arange(n), batch_size, shuffle=True, seed=seed, drop_last=drop_last)
    seen = np.concatenate([b[0] for b in loader]) if len(loader) else np.array([], int)
    assert len(seen) == (len(loader) * batch_size if drop_last else n)
    assert len(set(seen.tolist())) == len(seen) and set(seen.tolist()) <= set(range(n))


def test_break_stops_the_thread():
    loader = DataLoader(np.arange(1000), batch_size=1, prefetch=1)
    for _ in loader:
        break
    for thread in prefetch_threads():
        thread.join(timeout=1.0)
    assert not prefetch_threads()


def test_closing_an_iterator_stops_the_thread():
    it = iter(DataLoader(np.arange(1000), batch_size=1, prefetch=2))
    next(it)
    time.sleep(0.05)  # let the producer fill the queue and block
    assert prefetch_threads()
    it.close()
    assert not prefetch_threads()


def test_producer_exception_reaches_consumer():
    class Broken:
        def __len__(self):
            return 10

        def __getitem__(self, i):
            if i == 6:
                raise RuntimeError("sample 6 is broken")
            return np.float32(i)

    got = []
    with pytest.raises(RuntimeError, match="sample 6 is broken"):
        for (batch,) in DataLoader(Broken(), batch_size=3):
            got.append(batch.tolist())
    assert got == [[0, 1, 2], [3, 4, 5]]
    assert not prefetch_threads()


def test_bad_arguments():
    with pytest.raises(DataError, match="first dimension"):
        DataLoader((np.zeros(3), np.zeros(4)), batch_size=2)
    with pytest.raises(DataError, match="batch_size"):
        DataLoader(np.zeros(3), batch_size=0)


def test_mnist_loaders_on_small_data():
    rng = np.random.default_rng(0)
    data = MNIST(
        rng.integers(0, 256, (300, 28, 28), dtype=np.uint8),
        np.arange(300, dtype=np.int32) % 10,
        rng.integers(0, 256, (50, 28, 28), dtype=np.uint8),
        np.arange(50, dtype=np.int32) % 10,
    )
    train, test = mnist_loaders(batch_size=128, data=data)
    assert (len(train), len(test)) == (2, 1)
    x, y = next(iter(train))
    assert x.shape == (128, 28, 28, 1) and x.dtype == np.float32
    assert y.dtype == np.int32 and x.min() >= 0.0 and x.max() <= 1.0
    x, y = next(iter(test))
    np.testing.assert_array_equal(x[..., 0] * 255, data.test_images.astype(np.float32))
    np.testing.assert_array_equal(y, data.test_labels)


def test_mnist_loaders_on_real_data(real_mnist):
    train, test = mnist_loaders(data=real_mnist)
    assert len(train) == 468 and len(test) == 79
    assert sum(len(b[1]) for b in test) == 10000
    x, y = next(iter(train))
    assert x.shape == (128, 28, 28, 1) and y.shape == (128,)


@pytest.mark.parametrize("drop_last", [False, True])
def test_shards_of_ranks_make_up_each_one_process_batch(monkeypatch, drop_last):
    """Rank r of 3 (the job's rank and size as init() leaves them) gets every third sample
    of the shared permutation: the ranks' batches b make up the one-process batch b of 3x
    the size (each full one), each rank has as many batches, and the epoch is covered."""
    data = np.arange(20)
    whole = [b for (b,) in DataLoader(data, 6, shuffle=True, seed=4, drop_last=drop_last, prefetch=0)]
    shards = []
    for rank in range(3):
        monkeypatch.setattr("braze.data.loader.rank_and_size", lambda rank=rank: (rank, 3))
        loader = DataLoader(data, 2, shuffle=True, seed=4, drop_last=drop_last, shard=True, prefetch=0)
        shards.append([b for (b,) in loader])
        assert len(loader) == len(shards[-1]) == (3 if drop_last else 4)
    for b, batch in enumerate(whole[:3]):
        assert sorted(np.concatenate([s[b] for s in shards]).tolist()) == sorted(batch.tolist())
    if not drop_last:  # 20 samples in 3 equal shares: two are repeated, none is missed
        assert set(np.concatenate(sum(shards, [])).tolist()) == set(range(20))


def test_sharding_outside_a_job_is_the_whole_data_and_shuffling_needs_a_seed():
    assert [b.tolist() for (b,) in DataLoader(np.arange(5), 2, shard=True, prefetch=0)] == [[0, 1], [2, 3], [4]]
    with pytest.raises(DataError, match="needs a seed"):
        DataLoader(np.arange(5), 2, shuffle=True, shard=True)


@pytest.mark.parametrize("variable", ["PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"])
def test_sharding_in_a_process_mpiexec_started_needs_init_first(monkeypatch, tmp_path, variable):
    """Under mpiexec without braze.distributed.init(), every rank would be rank 0 of 1 and
    take every sample: a sharded loader or image folder says so instead."""
    monkeypatch.setenv(variable, "1")
    with pytest.raises(DataError, match=r"started by mpiexec: call braze.distributed.init\(\) before"):
        DataLoader(np.arange(5), 2, shard=True)
    train, _ = make_two_class_folder(tmp_path, 4, 2, size=(8, 8))
    with pytest.raises(DataError, match="started by mpiexec"):
        ImageFolder(train, (8, 8), "binary", batch_size=2, shuffle=False, shard=True)
    assert len(ImageFolder(train, (8, 8), "binary", batch_size=2)) == 2  # unsharded: no job needed


class _Samples:
    """Four samples made by ``make(i)``."""

    def __init__(self, make) -> None:
        self.make = make

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int):
        return self.make(i)


def test_list_samples_batch_as_tuples_of_fields():
    loader = DataLoader(_Samples(lambda i: [np.full(3, float(i)), np.float32(i % 2)]), 2, prefetch=0)
    inputs, labels = next(iter(loader))
    np.testing.assert_array_equal(inputs, [[0.0] * 3, [1.0] * 3])
    np.testing.assert_array_equal(labels, [0.0, 1.0])


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda i: {"x": np.full(3, float(i)), "y": i % 2}, "sample 0 is a dict"),
        (lambda i: (np.ones(2 + i), np.float32(0)), r"field 0 of one batch have different shapes"),
    ],
    ids=["dict", "ragged"],
)
def test_samples_a_batch_cannot_hold_are_a_data_error(make, message):
    with pytest.raises(DataError, match=message):
        next(iter(DataLoader(_Samples(make), 2, prefetch=0)))


def test_a_tensor_dataset_gives_pytorchs_samples_and_batches():
    images = np.arange(20, dtype=np.float32).reshape(5, 2, 2)
    labels = braze.tensor(np.array([3, 1, 4, 1, 5]))
    dataset = TensorDataset(images, labels)
    assert len(dataset) == 5
    first = dataset[1]
    np.testing.assert_array_equal(first[0], images[1])
    assert first[1] == 1
    for prefetch in (0, 2):
        batches = list(DataLoader(dataset, batch_size=2, prefetch=prefetch))
        assert [len(b[0]) for b in batches] == [2, 2, 1]
        # An array's rows come back as arrays, a tensor's as tensors (PyTorch's data.to(device))
        assert all(isinstance(b[0], np.ndarray) and isinstance(b[1], braze.Tensor) for b in batches)
        np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), images)
        np.testing.assert_array_equal(np.concatenate([b[1].to("cpu").numpy() for b in batches]), [3, 1, 4, 1, 5])
    lazy = DataLoader(TensorDataset(braze.tensor(images, device=braze.LAZY_CPU)), batch_size=5)
    (batch,) = next(iter(lazy))
    assert batch.device == braze.LAZY_CPU
    assert len(DataLoader(dataset)) == 5  # PyTorch's batch_size of 1
    with pytest.raises(DataError, match="share their first dimension"):
        TensorDataset(images, np.zeros(4))


def test_pytorchs_num_workers_and_pin_memory_are_taken():
    x = np.arange(10, dtype=np.float32)
    for workers, prefetch in ((0, 0), (2, 4)):
        loader = DataLoader((x,), batch_size=4, num_workers=workers)
        assert loader.prefetch == prefetch
        np.testing.assert_array_equal(np.concatenate([b for (b,) in loader]), x)
    with pytest.raises(DataError, match="num_workers"):
        DataLoader((x,), num_workers=-1)
    with pytest.warns(UserWarning, match="pin_memory has no effect"):
        DataLoader((x,), pin_memory=True)
