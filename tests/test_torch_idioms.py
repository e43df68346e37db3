"""PyTorch's tensor idioms where they agree with NumPy's meaning, the errors where they do
not, and sampling with ``multinomial`` (the op table checks the values and gradients of
view, permute, split, chunk, masked_fill, tril, triu and topk)."""

from __future__ import annotations

import numpy as np
import pytest

import braze


def test_size_is_numpys_count_and_called_pytorchs_shape():
    x = braze.zeros((2, 3, 4))
    assert x.size == 24 and x.size + 1 == 25 and isinstance(x.size, int)
    assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
    assert x.numel() == 24 and x.dim() == 3
    np.zeros(x.size)  # still an index for NumPy
    with pytest.raises(IndexError, match=r"size\(3\): dimension out of range for a tensor of rank 3"):
        x.size(3)


def test_transpose_permutes_as_numpy_and_swaps_two_axes_as_pytorch():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = braze.tensor(a)
    np.testing.assert_array_equal(x.transpose().numpy(), a.transpose())
    np.testing.assert_array_equal(x.transpose(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(x.transpose((1, 0, 2)).numpy(), a.transpose(1, 0, 2))
    np.testing.assert_array_equal(x.transpose(0, 2).numpy(), np.swapaxes(a, 0, 2))
    np.testing.assert_array_equal(x.transpose(-2, -1).numpy(), np.swapaxes(a, -2, -1))
    m = braze.tensor(a[0])
    np.testing.assert_array_equal(m.transpose(1, 0).numpy(), a[0].T)  # both readings agree
    np.testing.assert_array_equal(m.transpose((0, 1)).numpy(), a[0])
    for axes in ((0, 1), (-2, -1), (0, -1)):
        with pytest.raises(ValueError, match="NumPy reads it as a permutation that changes nothing, PyTorch as a swap"):
            m.transpose(*axes)
    with pytest.raises(braze.ShapeError, match="not a permutation"):
        x.transpose(0, 1, 1)


def test_view_permute_unsqueeze_contiguous():
    a = np.arange(12.0).reshape(3, 4)
    x = braze.tensor(a)
    assert x.view(2, 6).shape == (2, 6) and x.view((4, -1)).shape == (4, 3) and x.view(-1).shape == (12,)
    np.testing.assert_array_equal(x.permute(1, 0).numpy(), a.T)
    np.testing.assert_array_equal(x.permute((1, 0)).numpy(), a.T)
    assert x.unsqueeze(0).shape == (1, 3, 4) and x.unsqueeze(-1).shape == (3, 4, 1)
    assert x.contiguous() is x
    with pytest.raises(TypeError, match="a view as another dtype is not supported"):
        x.view(braze.float64)
    with pytest.raises(braze.ShapeError, match="cannot reshape"):
        x.view(5, -1)


def test_squeeze_of_a_longer_axis_is_numpys_error():
    x = braze.zeros((3, 1, 2))
    assert x.squeeze().shape == (3, 2) and x.squeeze(1).shape == (3, 2)
    with pytest.raises(braze.ShapeError, match="axis 0 of .* is not of size 1"):
        x.squeeze(0)


def test_split_and_chunk_follow_pytorch():
    a = np.arange(14.0).reshape(7, 2)
    x = braze.tensor(a)
    pieces = x.split(3)
    assert [p.shape for p in pieces] == [(3, 2), (3, 2), (1, 2)]
    np.testing.assert_array_equal(pieces[2].numpy(), a[6:])
    assert [p.shape[0] for p in x.split([2, 0, 5])] == [2, 0, 5]
    assert [p.shape[0] for p in x.chunk(3)] == [3, 3, 1]
    assert [p.shape[0] for p in braze.chunk(braze.zeros((6,)), 4)] == [2, 2, 2]  # fewer chunks, as PyTorch
    q, k, v = braze.zeros((2, 5, 12)).split(4, dim=2)
    assert q.shape == k.shape == v.shape == (2, 5, 4)
    with pytest.raises(braze.ShapeError, match=r"sizes \[2, 2\] do not add up to axis 0"):
        x.split([2, 2])
    with pytest.raises(ValueError, match="size of a piece must be positive"):
        x.split(0)
    with pytest.raises(ValueError, match="number of chunks must be a positive integer"):
        x.chunk(0)


def test_masked_fill_and_triangles_build_a_causal_mask():
    scores = braze.tensor(np.random.default_rng(0).standard_normal((2, 4, 4)).astype(np.float32))
    causal = braze.tril(braze.ones((4, 4), dtype="bool"))
    masked = scores.masked_fill(~causal, float("-inf"))
    expected = np.where(np.tril(np.ones((4, 4), bool)), scores.numpy(), -np.inf)
    np.testing.assert_array_equal(masked.numpy(), expected)
    with pytest.raises(braze.DTypeError, match="the mask must be a bool tensor"):
        scores.masked_fill(braze.ones((4, 4)), 0.0)
    with pytest.raises(braze.DTypeError, match=r"int32\[2\] cannot take the value 0.5 \(it would become float32\)"):
        braze.zeros((2,), dtype="int32").masked_fill(braze.ones((2,), dtype="bool"), 0.5)
    with pytest.raises(braze.ShapeError, match="does not broadcast to"):
        braze.zeros((4,)).masked_fill(braze.ones((3, 4), dtype="bool"), 1.0)
    with pytest.raises(braze.ShapeError, match="at least 2 dimensions"):
        braze.tril(braze.zeros((3,)))


def test_topk_orders_ties_and_infinities_and_checks_k():
    values, indices = braze.tensor([[-np.inf, 2.0, -np.inf, 2.0]]).topk(4)
    np.testing.assert_array_equal(values.numpy(), [[2.0, 2.0, -np.inf, -np.inf]])
    np.testing.assert_array_equal(indices.numpy(), [[1, 3, 0, 2]])
    with pytest.raises(ValueError, match=r"k must be in \[1, 4\]"):
        braze.topk(braze.zeros((2, 4)), 5)


def _frequencies(samples: np.ndarray, categories: int) -> np.ndarray:
    return np.bincount(samples.reshape(-1), minlength=categories) / samples.size


def _assert_close_to(frequencies: np.ndarray, p: np.ndarray, draws: int) -> None:
    """Within five standard deviations of a binomial count: a seeded draw is fixed, and a
    correct sampler passes this with probability above 1 - 1e-5 for each seed."""
    sigma = np.sqrt(p * (1 - p) / draws)
    assert np.all(np.abs(frequencies - p) <= 5 * sigma + 1e-12), (frequencies, p)


def test_multinomial_draws_each_category_with_its_probability():
    p = np.array([0.1, 0.0, 0.2, 0.7], np.float32)
    draws = 20000
    samples = braze.multinomial(braze.tensor(p), draws, replacement=True, generator=braze.Generator(0))
    assert samples.shape == (draws,) and samples.dtype == braze.int32
    _assert_close_to(_frequencies(samples.numpy(), 4), p, draws)
    # Weights need not be normalized: scaling them draws the very same samples.
    again = braze.multinomial(braze.tensor(p * 3), draws, replacement=True, generator=braze.Generator(0))
    np.testing.assert_array_equal(again.numpy(), samples.numpy())


def test_multinomial_without_replacement_draws_distinct_categories_in_order():
    p = np.array([0.5, 0.3, 0.2], np.float64)
    rows = 10000
    samples = braze.multinomial(braze.tensor(np.tile(p, (rows, 1))), 2, seed=3).numpy()
    assert samples.shape == (rows, 2) and np.all(samples[:, 0] != samples[:, 1])
    _assert_close_to(_frequencies(samples[:, 0], 3), p, rows)
    second = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(3) if i != j) for j in range(3)])
    _assert_close_to(_frequencies(samples[:, 1], 3), second, rows)
    never = braze.multinomial(braze.tensor([[0.0, 1.0, 2.0]]), 2, seed=0).numpy()
    assert sorted(never[0]) == [1, 2]
    with pytest.raises(ValueError, match="cannot draw 4 samples from 3 categories without replacement"):
        braze.multinomial(braze.tensor(p), 4)
    with pytest.raises(braze.DTypeError, match="1-D or 2-D float tensor of weights"):
        braze.multinomial(braze.tensor([1, 2]), 1)


@pytest.mark.parametrize("mode", ["lazy", "jit"])
def test_compiled_sampling_draws_what_eager_sampling_draws(mode):
    probs = np.random.default_rng(1).random((3, 65)).astype(np.float32)
    eager_generator = braze.Generator(11)
    expected = [braze.multinomial(braze.tensor(probs), 1, generator=eager_generator).numpy() for _ in range(3)]
    generator = braze.Generator(11)
    if mode == "jit":
        draw = braze.jit(lambda weights: braze.multinomial(weights, 1, generator=generator))
        got = [draw(braze.tensor(probs)).numpy() for _ in range(3)]
        assert draw.compiles == 1
    else:
        weights = braze.tensor(probs, device="lazy")
        got = [braze.multinomial(weights, 1, generator=generator).numpy() for _ in range(3)]
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_array_equal(g, e)
    assert len({tuple(e.reshape(-1)) for e in expected}) > 1  # new numbers on every call
