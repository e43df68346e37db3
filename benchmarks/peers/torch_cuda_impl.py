"""PyTorch on an NVIDIA GPU: the torch peer's model and step, eager and ``torch.compile``,
on ``cuda``. Skipped with a note where PyTorch sees no CUDA device."""

from __future__ import annotations

from collections.abc import Callable

from . import torch_impl

MODES = torch_impl.MODES


def version() -> str:
    import torch

    release = torch_impl.version()
    if not torch.cuda.is_available():
        raise RuntimeError(f"torch {release} sees no CUDA device")
    return f"{release}, CUDA {torch.version.cuda}"


def make_step(name: str, mode: str = "eager") -> tuple[Callable[[], float], str]:
    return torch_impl.make_step(name, mode, device="cuda")
