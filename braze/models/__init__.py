"""The case-study models: LeNet-5 (the X10 tutorial) and the XLA article's CNN."""

from braze.models.lenet import LeNet
from braze.models.xla_cnn import XlaArticleCNN

__all__ = ["LeNet", "XlaArticleCNN"]
