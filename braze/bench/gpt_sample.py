"""Text from a trained GPT, as nanoGPT's ``sample.py`` draws it, compiled without a graph
per context length.

Each new token is one call of a jitted function: the model's logits after the last token,
divided by the temperature, cut to the ``top_k`` most likely tokens, softmax, and one draw
from ``multinomial``. The context grows by a token per call, so it is padded at its end to
the next power of two (at most the block size; a longer context keeps its last block):
causal attention makes the logits after the last real token independent of the padding,
and the position of that token is an input tensor. A context of up to ``block_size``
tokens therefore compiles at most ``log2(block_size) + 1`` graphs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from braze import ops
from braze.autodiff import no_grad
from braze.data import CharTokenizer
from braze.ir.dtypes import int32
from braze.jit import jit
from braze.ops.random import Generator
from braze.tensor import Tensor

if TYPE_CHECKING:
    from braze.models.gpt import GPT


def padded_length(tokens: int, block_size: int) -> int:
    """The length a context of ``tokens`` tokens is padded to: the next power of two, at most ``block_size``."""
    return min(block_size, 1 << max(tokens - 1, 0).bit_length())


def max_graphs(block_size: int) -> int:
    """How many padded lengths a growing context can take: 1, 2, 4, ... and ``block_size``."""
    return math.ceil(math.log2(block_size)) + 1


@dataclass
class Sampler:
    """Draws tokens after a context with ``model`` (put in evaluation mode)."""

    model: GPT
    temperature: float = 0.8
    top_k: int | None = 200
    seed: int = 1337

    def __post_init__(self) -> None:
        if not self.temperature > 0:
            raise ValueError(f"the temperature must be more than 0, got {self.temperature}")
        if self.top_k is not None and self.top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {self.top_k}")
        self.model.eval()
        self.generator = Generator(self.seed)
        vocabulary = self.model.config.vocab_size
        # Keeping every token is keeping the logits as they are: no top-k in the graph.
        self.keep = None if self.top_k is None or self.top_k >= vocabulary else self.top_k
        self._next = jit(self._next_token)

    def _next_token(self, model: GPT, context: Tensor, position: Tensor) -> Tensor:
        with no_grad():
            raw = model.logits_at(context, position)
            # Shifted by their maximum before the division (the softmax is the same): a tiny
            # temperature then makes the other logits -inf, never inf - inf = NaN.
            logits = (raw - ops.max(raw, axis=-1, keepdims=True)) / self.temperature
            if self.keep is not None:
                kept, _ = ops.topk(logits, self.keep)
                logits = logits.masked_fill(logits < kept[:, -1:], -math.inf)
            return ops.multinomial(ops.softmax(logits, axis=-1), 1, generator=self.generator)

    @property
    def graphs(self) -> int:
        """The graphs compiled so far: one per padded context length used."""
        return self._next.compiles

    def generate(self, tokens: np.ndarray, max_new_tokens: int) -> np.ndarray:
        """``tokens`` (``(B, T)`` int32, T >= 1) followed by ``max_new_tokens`` drawn tokens."""
        tokens = np.asarray(tokens, np.int32)
        if tokens.ndim != 2 or tokens.shape[1] < 1:
            raise ValueError(f"generate: expected a (batch, tokens) array of at least one token, got {tokens.shape}")
        block = self.model.config.block_size
        for _ in range(max_new_tokens):
            context = tokens[:, -block:]
            length = padded_length(context.shape[1], block)
            padded = np.zeros((tokens.shape[0], length), np.int32)
            padded[:, : context.shape[1]] = context
            position = ops.tensor(np.int32(context.shape[1] - 1), dtype=int32)
            drawn = self._next(self.model, ops.tensor(padded), position).numpy()
            tokens = np.concatenate([tokens, drawn.astype(np.int32)], axis=1)
        return tokens


def sample_text(
    model: GPT,
    tokenizer: CharTokenizer,
    prompt: str = "\n",
    max_new_tokens: int = 500,
    num_samples: int = 1,
    temperature: float = 0.8,
    top_k: int | None = 200,
    seed: int = 1337,
) -> tuple[list[str], Sampler]:
    """``num_samples`` continuations of ``prompt`` (each with the prompt first), and the sampler."""
    if not prompt:
        raise ValueError("the prompt must have at least one character (nanoGPT starts from a newline)")
    if num_samples < 1 or max_new_tokens < 0:
        raise ValueError(
            f"num_samples must be positive and max_new_tokens not negative, got {num_samples}, {max_new_tokens}"
        )
    sampler = Sampler(model, temperature, top_k, seed)
    start = np.tile(tokenizer.encode(prompt), (num_samples, 1))
    with no_grad():
        tokens = sampler.generate(start, max_new_tokens)
    return [tokenizer.decode(row) for row in tokens], sampler
