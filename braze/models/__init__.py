"""The case-study models: LeNet-5 (the X10 tutorial), the XLA article's CNN, ResNet-20 and
nanoGPT's GPT."""

from braze.models.gpt import GPT
from braze.models.gpt_config import GPTConfig
from braze.models.lenet import LeNet
from braze.models.resnet import ResNet20
from braze.models.torch_layout import lenet_from_torch, lenet_to_torch
from braze.models.xla_cnn import XlaArticleCNN

__all__ = ["GPT", "GPTConfig", "LeNet", "ResNet20", "XlaArticleCNN", "lenet_from_torch", "lenet_to_torch"]
