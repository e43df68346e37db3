"""LeNet checkpoints between braze's layout and PyTorch's.

braze names LeNet's parameters by their place in its ``Sequential`` and stores images NHWC:
conv kernels HWIO, dense kernels ``[inputs, outputs]``, and the first dense layer reads the
flattened ``5x5x16`` map in (height, width, channel) order. A PyTorch LeNet (``conv1``,
``conv2``, ``fc1``-``fc3``, as in PyTorch's tutorials) stores conv weights OIHW, linear
weights ``[outputs, inputs]``, and flattens (channel, height, width). The two functions
here convert a state dict either way; values are transposed, never changed.

===================  =================  ======================  ====================
braze name           braze shape        PyTorch name            PyTorch shape
===================  =================  ======================  ====================
``layers.0.kernel``  (5, 5, 1, 6)       ``conv1.weight``        (6, 1, 5, 5)
``layers.0.bias``    (6,)               ``conv1.bias``          (6,)
``layers.2.kernel``  (5, 5, 6, 16)      ``conv2.weight``        (16, 6, 5, 5)
``layers.2.bias``    (16,)              ``conv2.bias``          (16,)
``layers.5.kernel``  (400, 120)         ``fc1.weight``          (120, 400)
``layers.5.bias``    (120,)             ``fc1.bias``            (120,)
``layers.6.kernel``  (120, 84)          ``fc2.weight``          (84, 120)
``layers.6.bias``    (84,)              ``fc2.bias``            (84,)
``layers.7.kernel``  (84, 10)           ``fc3.weight``          (10, 84)
``layers.7.bias``    (10,)              ``fc3.bias``            (10,)
===================  =================  ======================  ====================
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from braze.nn.checkpoint import CheckpointError

Convert = Callable[[np.ndarray], np.ndarray]
FLATTENED = (16, 5, 5)  # channels, height, width of the map that fc1 reads


def _same(value: np.ndarray) -> np.ndarray:
    return value


def _conv_from_torch(weight: np.ndarray) -> np.ndarray:
    return weight.transpose(2, 3, 1, 0)  # OIHW -> HWIO


def _conv_to_torch(kernel: np.ndarray) -> np.ndarray:
    return kernel.transpose(3, 2, 0, 1)  # HWIO -> OIHW


def _dense_flip(value: np.ndarray) -> np.ndarray:
    return value.T


def _fc1_from_torch(weight: np.ndarray) -> np.ndarray:
    # Columns in (c, h, w) order become rows in (h, w, c) order.
    return weight.reshape(-1, *FLATTENED).transpose(2, 3, 1, 0).reshape(-1, weight.shape[0])


def _fc1_to_torch(kernel: np.ndarray) -> np.ndarray:
    channels, height, width = FLATTENED
    return kernel.reshape(height, width, channels, -1).transpose(3, 2, 0, 1).reshape(kernel.shape[1], -1)


# braze name -> (PyTorch name, to braze, to PyTorch)
LENET_TORCH_NAMES: dict[str, tuple[str, Convert, Convert]] = {
    "layers.0.kernel": ("conv1.weight", _conv_from_torch, _conv_to_torch),
    "layers.0.bias": ("conv1.bias", _same, _same),
    "layers.2.kernel": ("conv2.weight", _conv_from_torch, _conv_to_torch),
    "layers.2.bias": ("conv2.bias", _same, _same),
    "layers.5.kernel": ("fc1.weight", _fc1_from_torch, _fc1_to_torch),
    "layers.5.bias": ("fc1.bias", _same, _same),
    "layers.6.kernel": ("fc2.weight", _dense_flip, _dense_flip),
    "layers.6.bias": ("fc2.bias", _same, _same),
    "layers.7.kernel": ("fc3.weight", _dense_flip, _dense_flip),
    "layers.7.bias": ("fc3.bias", _same, _same),
}


def lenet_from_torch(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A braze ``LeNet`` state dict from a PyTorch LeNet's (``conv1.weight``, ...)."""
    _check_names(state, [torch_name for torch_name, _, _ in LENET_TORCH_NAMES.values()], "a PyTorch LeNet")
    return {
        name: np.ascontiguousarray(to_braze(np.asarray(state[torch_name])))
        for name, (torch_name, to_braze, _) in LENET_TORCH_NAMES.items()
    }


def lenet_to_torch(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A PyTorch LeNet's state dict (``conv1.weight``, ...) from a braze ``LeNet``'s."""
    _check_names(state, list(LENET_TORCH_NAMES), "braze's LeNet")
    return {
        torch_name: np.ascontiguousarray(to_torch(np.asarray(state[name])))
        for name, (torch_name, _, to_torch) in LENET_TORCH_NAMES.items()
    }


def _check_names(state: dict[str, np.ndarray], expected: list[str], what: str) -> None:
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise CheckpointError(f"not the parameters of {what}: missing {missing}, unexpected {unexpected}")
