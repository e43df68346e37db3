"""The settings of nanoGPT's GPT (``GPTConfig``) and its initial weights, apart from the
model, so that commands and benchmarks can read them without building one."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

INIT_STD = 0.02  # GPT-2's


@dataclass(frozen=True)
class GPTConfig:
    """nanoGPT's ``GPTConfig``; the defaults are its CPU run of the Shakespeare character model."""

    block_size: int = 64
    vocab_size: int = 65
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = False  # biases in the linear layers and layer norms (nanoGPT's train.py default)

    def __post_init__(self) -> None:
        for name in ("block_size", "vocab_size", "n_layer", "n_head", "n_embd"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"GPTConfig: {name} must be a positive integer, got {getattr(self, name)!r}")
        if self.n_embd % self.n_head:
            raise ValueError(f"GPTConfig: n_embd {self.n_embd} is not a multiple of n_head {self.n_head}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"GPTConfig: dropout must be in [0, 1), got {self.dropout}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def parameter_count(self) -> int:
        """The model's parameters (those of :func:`initial_state`; the output layer shares
        the token embedding), counted without building it."""
        c = self.n_embd
        per_layer = 12 * c * c + 2 * c + (11 * c if self.bias else 0)  # attention, MLP, two norms
        return (self.vocab_size + self.block_size) * c + self.n_layer * per_layer + (2 * c if self.bias else c)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> GPTConfig:
        unknown = sorted(set(values) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"GPTConfig: unknown settings {unknown}")
        return cls(**values)


def initial_state(config: GPTConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """nanoGPT's initial weights by name, drawn with ``numpy.random.default_rng(seed)`` in
    this order: the token and position embeddings, then each block's attention and MLP
    kernels, all normal with standard deviation 0.02 but the residual projections
    (``c_proj``), 0.02 / sqrt(2 n_layer); layer-norm weights are one, biases zero."""
    rng = np.random.default_rng(seed)

    def normal(*shape: int, std: float = INIT_STD) -> np.ndarray:
        return rng.normal(0.0, std, shape).astype(np.float32)

    c, projection = config.n_embd, INIT_STD / math.sqrt(2 * config.n_layer)
    state = {
        "transformer.wte.weight": normal(config.vocab_size, c),
        "transformer.wpe.weight": normal(config.block_size, c),
    }
    shapes = {"attn.c_attn": (c, 3 * c), "attn.c_proj": (c, c), "mlp.c_fc": (c, 4 * c), "mlp.c_proj": (4 * c, c)}
    for i in range(config.n_layer):
        prefix = f"transformer.h.{i}."
        for norm in ("ln_1", "ln_2"):
            state[f"{prefix}{norm}.weight"] = np.ones(c, np.float32)
        for name, shape in shapes.items():
            state[f"{prefix}{name}.kernel"] = normal(*shape, std=projection if name.endswith("c_proj") else INIT_STD)
    state["transformer.ln_f.weight"] = np.ones(c, np.float32)
    if config.bias:
        for name in [n for n in state if n.endswith((".weight", ".kernel")) and "wte" not in n and "wpe" not in n]:
            state[name.rsplit(".", 1)[0] + ".bias"] = np.zeros(state[name].shape[-1], np.float32)
    return state
