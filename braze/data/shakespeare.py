"""Tiny Shakespeare as nanoGPT's character model reads it: the text (checked against its
MD5), a character tokenizer, the 90/10 split and random blocks of a token sequence.

The text is karpathy's char-rnn ``tinyshakespeare/input.txt`` (1,115,394 characters, 65
distinct). The repository keeps a gzipped copy in ``data/shakespeare/``, so the case study
runs offline; ``$BRAZE_DATA`` (or its ``shakespeare/``) is searched first, and a named path
is the only source looked at.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from braze.data.errors import DataError

FILE = "input.txt"
MD5 = "6fb458f1232090904fb40fe944165e91"  # of the uncompressed text
REPO_DIR = Path(__file__).resolve().parents[2] / "data" / "shakespeare"
TRAIN_FRACTION = 0.9
MAX_BYTES = 256 * 2**20  # a character model's text; past this a gzip file is inflated no further


class CharTokenizer:
    """Each distinct character of a text is a token, numbered in sorted order (nanoGPT's
    ``stoi``/``itos``)."""

    def __init__(self, chars: Sequence[str]) -> None:
        self.itos = list(chars)
        if len(set(self.itos)) != len(self.itos) or any(len(c) != 1 for c in self.itos):
            raise DataError("CharTokenizer: the vocabulary must be distinct single characters")
        self.stoi = {c: i for i, c in enumerate(self.itos)}

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        return cls(sorted(set(text)))

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> np.ndarray:
        """The tokens of ``text`` (int32); a character outside the vocabulary is a DataError."""
        try:
            return np.array([self.stoi[c] for c in text], dtype=np.int32)
        except KeyError as error:
            raise DataError(f"CharTokenizer: {error.args[0]!r} is not in the vocabulary of {self.vocab_size}") from None

    def decode(self, tokens: Sequence[int] | np.ndarray) -> str:
        """The text of ``tokens``; a token outside the vocabulary is a DataError."""
        ids = np.asarray(tokens).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise DataError(f"CharTokenizer: token {int(ids.max())} is outside the vocabulary of {self.vocab_size}")
        return "".join(self.itos[int(i)] for i in ids)


@dataclass(frozen=True, eq=False)
class Shakespeare:
    """The text, its tokenizer and its tokens split 90/10 into ``train`` and ``val`` (int32)."""

    text: str
    tokenizer: CharTokenizer
    train: np.ndarray
    val: np.ndarray


def _candidates(path: str | os.PathLike | None) -> list[Path]:
    if path is not None:
        named = Path(path).expanduser()
        return [named / FILE, named / f"{FILE}.gz"] if named.is_dir() else [named]
    places = []
    if os.environ.get("BRAZE_DATA"):
        data = Path(os.environ["BRAZE_DATA"]).expanduser()
        places += [data, data / "shakespeare"]
    places.append(REPO_DIR)
    return [place / name for place in places for name in (FILE, f"{FILE}.gz")]


def _read_text_bytes(path: Path) -> bytes:
    """The bytes of ``path``, gunzipped when its name ends in ``.gz``, at most ``MAX_BYTES``."""
    try:
        with gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise DataError(f"{path}: cannot decompress gzip data ({error})") from None
    except OSError as error:
        raise DataError(f"{path}: cannot read ({error.strerror or error})") from None
    if len(data) > MAX_BYTES:
        raise DataError(f"{path}: more than {MAX_BYTES:,} bytes of text, too many for a character model")
    return data


def load_shakespeare(path: str | os.PathLike | None = None, verify: bool = True) -> Shakespeare:
    """Tiny Shakespeare from ``path`` (the text file, raw or ``.gz``, or a directory holding
    ``input.txt[.gz]``), or when it is None from ``$BRAZE_DATA``, ``$BRAZE_DATA/shakespeare``
    or the repository's ``data/shakespeare/``; ``verify`` checks the text's MD5 (turn it off
    for another text). The first 90% of the tokens train, the rest validate, as in nanoGPT.
    Raises :class:`DataError` when the text cannot be found, read or verified."""
    candidates = _candidates(path)
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        looked = ", ".join(str(c) for c in candidates)
        raise DataError(
            f"Tiny Shakespeare not found; looked for {looked}. Put input.txt (raw or gzipped) in a directory "
            "and set BRAZE_DATA=/that/directory, or pass its path"
        )
    data = _read_text_bytes(found)
    if verify:
        actual = hashlib.md5(data, usedforsecurity=False).hexdigest()
        if actual != MD5:
            raise DataError(f"{found}: MD5 mismatch (of the uncompressed text): expected {MD5}, got {actual}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DataError(f"{found}: not UTF-8 text ({error})") from None
    if len(text) < 2:
        raise DataError(f"{found}: a text of {len(text)} characters has nothing to learn")
    tokenizer = CharTokenizer.from_text(text)
    tokens = tokenizer.encode(text)
    n = int(len(tokens) * TRAIN_FRACTION)
    return Shakespeare(text, tokenizer, tokens[:n], tokens[n:])


class BlockSampler:
    """Random blocks of a token sequence, as nanoGPT's ``get_batch`` draws them: each of
    ``batch_size`` blocks starts at a position uniform in ``[0, len - block_size)``; the
    targets are the same blocks one token later. Seeded: one sampler, one sequence of batches."""

    def __init__(self, tokens: np.ndarray, block_size: int, batch_size: int, seed: int = 0) -> None:
        self.tokens = np.asarray(tokens)
        if block_size < 1 or batch_size < 1:
            raise DataError(f"BlockSampler: block_size and batch_size must be positive, got {block_size}, {batch_size}")
        if len(self.tokens) <= block_size:
            raise DataError(
                f"BlockSampler: {len(self.tokens)} tokens hold no block of {block_size} with its next token"
            )
        self.block_size, self.batch_size = block_size, batch_size
        self._offsets = np.arange(block_size)
        self._rng = np.random.default_rng(seed)

    def sample(self) -> tuple[np.ndarray, np.ndarray]:
        """(inputs, targets), int32 arrays of shape ``[batch_size, block_size]``."""
        starts = self._rng.integers(0, len(self.tokens) - self.block_size, self.batch_size)
        rows = starts[:, None] + self._offsets
        return self.tokens[rows], self.tokens[rows + 1]
