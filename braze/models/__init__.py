"""The case-study models: LeNet-5 (the X10 tutorial), the XLA article's CNN and nanoGPT's GPT."""

from typing import Any

from braze.models.gpt_config import GPTConfig
from braze.models.lenet import LeNet
from braze.models.torch_layout import lenet_from_torch, lenet_to_torch
from braze.models.xla_cnn import XlaArticleCNN

__all__ = ["GPT", "GPTConfig", "LeNet", "XlaArticleCNN", "lenet_from_torch", "lenet_to_torch"]


def __getattr__(name: str) -> Any:
    # The GPT is built from braze.nn's transformer layers: it loads when it is first used.
    if name == "GPT":
        from braze.models.gpt import GPT

        return GPT
    raise AttributeError(f"module 'braze.models' has no attribute {name!r}")
