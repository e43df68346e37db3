"""nanoGPT's GPT, written as nanoGPT's ``model.py`` writes it, with braze's PyTorch-style API.

Token and position embeddings, pre-norm blocks of causal self-attention and a GELU MLP,
a final layer norm and a head tied to the token embedding (the logits are the hidden
states times the embedding table transposed: one parameter, used twice). Parameter names
are nanoGPT's (``transformer.h.0.attn.c_attn.kernel``; braze's linear layers keep
Keras's ``kernel`` of shape ``(in, out)``).

The initial weights are nanoGPT's distribution drawn with NumPy from a seed (see
:func:`initial_state`), so any framework can start from the very same weights.
"""

from __future__ import annotations

from typing import Any

from braze import ops
from braze.ir.errors import ShapeError
from braze.models.gpt_config import GPTConfig, initial_state
from braze.nn import GELU, Dropout, Embedding, LayerNorm, Linear, Module, softmax_cross_entropy
from braze.nn.functional import scaled_dot_product_attention
from braze.tensor import Tensor, user_error

__all__ = ["GPT", "GPTConfig", "initial_state"]


class CausalSelfAttention(Module):
    def __init__(self, config: GPTConfig) -> None:
        self.c_attn = Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = Dropout(config.dropout)
        self.n_head, self.n_embd, self.dropout = config.n_head, config.n_embd, config.dropout

    def forward(self, x: Tensor) -> Tensor:
        B, T, C = x.size()  # noqa: N806 - nanoGPT's names
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        dropout = {"dropout_p": self.dropout} if self.training and self.dropout else {}
        y = scaled_dot_product_attention(q, k, v, causal=True, **dropout)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # the heads side by side again
        return self.resid_dropout(self.c_proj(y))


class MLP(Module):
    def __init__(self, config: GPTConfig) -> None:
        self.c_fc = Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = GELU()
        self.c_proj = Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(Module):
    def __init__(self, config: GPTConfig) -> None:
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Transformer(Module):
    """nanoGPT's ``transformer``: embeddings, blocks and the final layer norm."""

    def __init__(self, config: GPTConfig) -> None:
        self.wte = Embedding(config.vocab_size, config.n_embd)
        self.wpe = Embedding(config.block_size, config.n_embd)
        self.drop = Dropout(config.dropout)
        self.h = [Block(config) for _ in range(config.n_layer)]
        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)

    def forward(self, idx: Tensor) -> Tensor:
        pos = ops.arange(idx.shape[1], device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class GPT(Module):
    """nanoGPT's model: ``model(idx, targets)`` is ``(logits, loss)``, the logits of every
    position and the mean cross-entropy of the targets; without targets, the logits of the
    last position only and no loss."""

    def __init__(self, config: GPTConfig | None = None, seed: int = 0) -> None:
        self.config = config or GPTConfig()
        self.transformer = Transformer(self.config)
        self.load_state_dict(initial_state(self.config, seed))

    def forward(self, idx: Tensor, targets: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        b, t = idx.size()
        if t > self.config.block_size:
            raise user_error(
                ShapeError, f"GPT: a sequence of {t} tokens is longer than the block size {self.config.block_size}"
            )
        x = self.transformer(idx)
        if targets is None:
            return self.head(x[:, -1:, :]), None
        logits = self.head(x)
        loss = softmax_cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    def head(self, x: Tensor) -> Tensor:
        """The logits of hidden states ``x``: the head is the token embedding (weight tying)."""
        return x @ self.transformer.wte.weight.T

    def logits_at(self, idx: Tensor, position: Tensor) -> Tensor:
        """The next-token logits ``(B, vocab)`` after ``idx[:, position]``, for sampling from
        a context padded to a fixed length: causal attention makes them independent of what
        follows ``position``, and ``position`` is a tensor, so one compiled graph serves every
        position."""
        x = self.transformer(idx)
        return self.head(ops.take(x, position, axis=1))

    def num_params(self, non_embedding: bool = True) -> int:
        """The parameter count; nanoGPT leaves the position embedding out by default."""
        count = self.num_parameters()
        return count - self.transformer.wpe.weight.size if non_embedding else count

    def configure_optimizers(self, weight_decay: float, learning_rate: Any, betas: tuple[float, float]) -> Any:
        """nanoGPT's AdamW: matrices (linear kernels, embeddings) decay, vectors (biases,
        layer norms) do not."""
        from braze.optim import AdamW

        decay = [p for p in self.parameters() if p.ndim >= 2]
        no_decay = [p for p in self.parameters() if p.ndim < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        return AdamW(groups, lr=learning_rate, betas=betas)
