"""The settings of nanoGPT's GPT (``GPTConfig``), apart from the model, so that commands
and benchmarks can read and check them without building one."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


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

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> GPTConfig:
        unknown = sorted(set(values) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"GPTConfig: unknown settings {unknown}")
        return cls(**values)
