"""The case-study models: LeNet-5 (the X10 tutorial) and the XLA article's CNN."""

from braze.models.lenet import LeNet
from braze.models.torch_layout import lenet_from_torch, lenet_to_torch
from braze.models.xla_cnn import XlaArticleCNN

__all__ = ["LeNet", "XlaArticleCNN", "lenet_from_torch", "lenet_to_torch"]
