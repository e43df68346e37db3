"""Sampling from the GPT: padded contexts give the logits of unpadded ones, greedy and top-k
draws follow the model's logits, and a growing context compiles a graph per padded length."""

from __future__ import annotations

import numpy as np
import pytest
from transformer_layers import needs_transformer_layers

import braze
from braze.bench.gpt_sample import Sampler, max_graphs, padded_length, sample_text
from braze.data import CharTokenizer, DataError
from braze.models import GPTConfig

TINY = GPTConfig(block_size=8, vocab_size=11, n_layer=2, n_head=2, n_embd=16)


def test_contexts_are_padded_to_powers_of_two_up_to_the_block():
    assert [padded_length(n, 8) for n in range(1, 10)] == [1, 2, 4, 4, 8, 8, 8, 8, 8]
    assert [padded_length(n, 6) for n in (1, 2, 3, 5, 6)] == [1, 2, 4, 6, 6]
    assert max_graphs(64) == 7 and max_graphs(8) == 4 and max_graphs(6) == 4 and max_graphs(1) == 1


def reference_next_logits(model, tokens: np.ndarray) -> np.ndarray:
    """The logits after the last token, from the unpadded context."""
    with braze.no_grad():
        return model(braze.tensor(tokens[:, -model.config.block_size :]))[0].numpy()[:, -1]


@needs_transformer_layers
def test_the_logits_after_a_padded_context_are_those_of_the_context():
    model = braze.models.GPT(TINY, seed=1)
    rng = np.random.default_rng(0)
    for length in (1, 3, 5, 8):
        context = rng.integers(0, 11, (2, length)).astype(np.int32)
        padded = np.concatenate([context, rng.integers(0, 11, (2, 8 - length))], axis=1).astype(np.int32)
        with braze.no_grad():
            got = model.logits_at(braze.tensor(padded), braze.tensor(np.int32(length - 1))).numpy()
        np.testing.assert_allclose(got, reference_next_logits(model, context), rtol=1e-5, atol=1e-6)


@needs_transformer_layers
def test_greedy_sampling_follows_the_models_argmax_and_compiles_once_per_padded_length():
    model = braze.models.GPT(TINY, seed=2)
    sampler = Sampler(model, top_k=1)
    start = np.array([[3], [7]], np.int32)
    tokens = sampler.generate(start, 12)
    expected = start
    for _ in range(12):
        expected = np.concatenate([expected, reference_next_logits(model, expected).argmax(-1)[:, None]], axis=1)
    np.testing.assert_array_equal(tokens, expected)
    assert sampler.graphs == max_graphs(8) == 4


@needs_transformer_layers
def test_top_k_draws_only_the_k_most_likely_and_a_seed_repeats_its_text():
    model = braze.models.GPT(TINY, seed=4)
    start = np.tile(np.array([[5, 1, 2]], np.int32), (64, 1))
    drawn = Sampler(model, top_k=3, temperature=2.0, seed=9).generate(start, 1)[:, -1]
    top3 = np.argsort(-reference_next_logits(model, start[:1]))[0, :3]
    assert set(drawn) <= set(top3) and len(set(drawn)) > 1
    again = Sampler(model, top_k=3, temperature=2.0, seed=9).generate(start, 1)[:, -1]
    other = Sampler(model, top_k=3, temperature=2.0, seed=10).generate(start, 1)[:, -1]
    np.testing.assert_array_equal(again, drawn)
    assert not np.array_equal(other, drawn)


@needs_transformer_layers
def test_sampling_arguments_are_checked():
    model = braze.models.GPT(TINY)
    tokenizer = CharTokenizer(list("abcdefghijk"))
    texts, _ = sample_text(model, tokenizer, "abc", max_new_tokens=4, num_samples=2)
    assert len(texts) == 2 and all(t.startswith("abc") and len(t) == 7 for t in texts)
    with pytest.raises(ValueError, match="the prompt must have at least one character"):
        sample_text(model, tokenizer, "")
    with pytest.raises(ValueError, match="the temperature must be more than 0"):
        sample_text(model, tokenizer, "a", temperature=0.0)
    with pytest.raises(ValueError, match="top_k must be at least 1"):
        sample_text(model, tokenizer, "a", top_k=0)
    with pytest.raises(DataError, match="'z' is not in the vocabulary"):
        sample_text(model, tokenizer, "z")
