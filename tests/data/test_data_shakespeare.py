"""Tiny Shakespeare: the shipped copy, its checksum, the tokenizer, the split and the blocks."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from braze.data import BlockSampler, CharTokenizer, DataError, load_shakespeare
from braze.data.shakespeare import REPO_DIR


def test_the_shipped_copy_is_nanogpts_text_and_split():
    data = load_shakespeare()
    assert len(data.text) == 1_115_394 and data.tokenizer.vocab_size == 65
    assert "".join(data.tokenizer.itos) == "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    assert len(data.train) == 1_003_854 and len(data.val) == 111_540  # nanoGPT's prepare.py prints these
    assert data.tokenizer.decode(data.train[:14]) == "First Citizen:"
    assert data.tokenizer.decode(data.val) == data.text[1_003_854:]


def test_tokenizer_round_trips_and_names_what_it_cannot_encode():
    tokenizer = CharTokenizer.from_text("hello world")
    assert tokenizer.itos == sorted(set("hello world"))
    tokens = tokenizer.encode("hold")
    assert tokens.dtype == np.int32 and tokenizer.decode(tokens) == "hold"
    with pytest.raises(DataError, match="'z' is not in the vocabulary of 8"):
        tokenizer.encode("zed")
    with pytest.raises(DataError, match="token 8 is outside the vocabulary of 8"):
        tokenizer.decode([1, 8])
    with pytest.raises(DataError, match="distinct single characters"):
        CharTokenizer(["a", "a"])


def test_a_changed_text_fails_its_checksum_unless_told_otherwise(tmp_path):
    path = tmp_path / "input.txt.gz"
    text = gzip.decompress((REPO_DIR / "input.txt.gz").read_bytes()).decode()
    path.write_bytes(gzip.compress(text.replace("ROMEO", "ROMEUS").encode()))
    with pytest.raises(DataError, match="MD5 mismatch .* expected 6fb458f1232090904fb40fe944165e91"):
        load_shakespeare(tmp_path)
    assert "ROMEUS" in load_shakespeare(path, verify=False).text


def test_where_the_text_is_looked_for(tmp_path, monkeypatch):
    with pytest.raises(DataError, match="Tiny Shakespeare not found; looked for .*input.txt"):
        load_shakespeare(tmp_path / "nowhere")
    (tmp_path / "shakespeare").mkdir()
    (tmp_path / "shakespeare" / "input.txt").write_text("to be or not to be\n")
    monkeypatch.setenv("BRAZE_DATA", str(tmp_path))
    data = load_shakespeare(verify=False)
    assert data.text == "to be or not to be\n" and len(data.train) == 17 and len(data.val) == 2


def test_blocks_are_slices_of_the_tokens_with_targets_one_later():
    tokens = np.arange(1000, dtype=np.int32) * 7
    x, y = BlockSampler(tokens, block_size=16, batch_size=12, seed=3).sample()
    assert x.shape == y.shape == (12, 16) and x.dtype == np.int32
    starts = x[:, 0] // 7
    assert np.all((starts >= 0) & (starts < 1000 - 16))
    np.testing.assert_array_equal(x, tokens[starts[:, None] + np.arange(16)])
    np.testing.assert_array_equal(y, tokens[starts[:, None] + np.arange(1, 17)])
    again = BlockSampler(tokens, block_size=16, batch_size=12, seed=3)
    np.testing.assert_array_equal(again.sample()[0], x)  # seeded
    assert not np.array_equal(again.sample()[0], x)  # and a new batch each time
    with pytest.raises(DataError, match="10 tokens hold no block of 10"):
        BlockSampler(tokens[:10], block_size=10, batch_size=2)
