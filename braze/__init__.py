"""braze: a deep-learning framework with eager and lazy tensors and an XLA-style compiler.

Everything a user needs is importable from here: tensors and ops, dtypes, devices,
autodiff (``backward``, ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, the Jacobians and
Hessians, ``no_grad``; PyTorch's ``braze.autograd.grad``). The subpackages
``braze.nn``, ``braze.optim``, ``braze.data``, ``braze.models`` and ``braze.keras`` are
attributes too, as ``torch.nn`` is after ``import torch`` (and ``tf.keras`` after
``import tensorflow as tf``); they load on first use, so that ``import braze``
stays fast for programs that only need tensors.
"""

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

import braze.backends  # noqa: F401 - importing the backends registers them
from braze import autograd, config
from braze.autodiff import GradientTape, enable_grad, grad, no_grad, value_and_grad, vjp
from braze.function import function
from braze.interop import from_dlpack
from braze.ir.dtypes import DType, bfloat16, bool_, float32, float64, int32, int64
from braze.ir.errors import BrazeError, DeviceError, DTypeError, ShapeError, TraceError
from braze.jit import RecompileWarning, jit
from braze.lazy import barrier, explain
from braze.ops import *  # noqa: F403 - the op library is the public API
from braze.ops import __all__ as _ops_all
from braze.ops import strings
from braze.ops import tf_image as image
from braze.ops.tensorflow import (
    compat,
    gather,
    identity,
    numpy_function,
    py_function,
    random,
    repeat,
    shape,
    split,
    tensordot,
    tile,
    unstack,
)
from braze.ops.tensorflow import expand_dims as expand_dims  # tf.expand_dims, which takes text too

# tf.math and tf.range, kept out of __all__ so that ``from braze import *`` leaves the
# standard library's math and the builtin range as they are.
from braze.ops.tensorflow import math as math
from braze.ops.tensorflow import one_hot as one_hot  # tf.one_hot over braze.ops's, reading its calls alike
from braze.ops.tensorflow import range as range  # noqa: A004 - TensorFlow's name
from braze.ops.tensorflow import where as where  # tf.where, of one argument too
from braze.runtime import metrics
from braze.runtime.device import CPU, LAZY_CPU, Device, as_device, default_device, set_default_device
from braze.tensor import Tensor
from braze.transforms import hessian, hvp, jacfwd, jacrev, jvp

if TYPE_CHECKING:
    from braze import data, keras, lax, models, nn, optim

device = as_device
"""A device from its name, as ``braze.device("cpu:0:lazy")`` or ``braze.device("gpu")``: ``as_device``."""

string = "string"
"""``tf.string``: the dtype of text, which braze holds in NumPy arrays of ``str`` (see
``braze.strings``); ``keras.Input(dtype=tf.string)`` makes a text input."""

# Loaded by __getattr__ on first access (PEP 562); importing a submodule also binds it here,
# so later accesses are plain attribute reads. ``distributed`` is listed before it exists.
_SUBPACKAGES = ("data", "distributed", "keras", "lax", "models", "nn", "optim")


# TensorFlow's modules braze does not have, with what comes nearest in braze.
_MISSING_TF = {
    "train": "save with model.save('x.keras') or save_weights('x.npz'), and load with keras.models.load_model or "
    "load_weights; tf.train's checkpoints are not supported",
    "saved_model": "save with model.save('x.keras') and load with keras.models.load_model; braze writes no SavedModel",
}


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES and importlib.util.find_spec(f"braze.{name}") is not None:
        return importlib.import_module(f"braze.{name}")
    if name == "io":  # tf.io: file bytes and decoded images, for a tf.data map
        return importlib.import_module("braze.data.tf_io")
    if name in ("save", "load"):  # torch.save and torch.load of a state dict, without pickle
        return getattr(importlib.import_module("braze.nn.torch_save"), name)
    if name in _MISSING_TF:
        raise AttributeError(f"braze has no tf.{name}: {_MISSING_TF[name]}")
    raise AttributeError(f"module 'braze' has no attribute {name!r}")


def __dir__() -> list[str]:
    found = [name for name in _SUBPACKAGES if importlib.util.find_spec(f"braze.{name}") is not None]
    return sorted(set(globals()) | set(found) | {"save", "load"})


__all__ = [
    *_ops_all,
    "CPU",
    "LAZY_CPU",
    "BrazeError",
    "DType",
    "DTypeError",
    "Device",
    "DeviceError",
    "GradientTape",
    "RecompileWarning",
    "ShapeError",
    "Tensor",
    "TraceError",
    "as_device",
    "autograd",
    "barrier",
    "compat",
    "config",
    "data",
    "explain",
    "from_dlpack",
    "function",
    "gather",
    "jit",
    "keras",
    "lax",
    "image",
    "metrics",
    "models",
    "nn",
    "optim",
    "bool_",
    "default_device",
    "device",
    "enable_grad",
    "float32",
    "float64",
    "bfloat16",
    "grad",
    "hessian",
    "hvp",
    "int32",
    "int64",
    "jacfwd",
    "jacrev",
    "jvp",
    "no_grad",
    "random",
    "repeat",
    "shape",
    "split",
    "set_default_device",
    "tensordot",
    "identity",
    "numpy_function",
    "py_function",
    "strings",
    "tile",
    "unstack",
    "value_and_grad",
    "vjp",
]
__version__ = "0.1.0"
