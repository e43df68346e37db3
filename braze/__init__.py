"""braze: a deep-learning framework with eager and lazy tensors and an XLA-style compiler.

Everything a user needs is importable from here: tensors and ops, dtypes, devices,
autodiff (``backward``, ``grad``, ``value_and_grad``, ``no_grad``).
"""

from braze import config
from braze.autodiff import enable_grad, grad, no_grad, value_and_grad
from braze.ir.dtypes import DType, bool_, float32, float64, int32, int64
from braze.ir.errors import BrazeError, DeviceError, DTypeError, ShapeError
from braze.jit import jit
from braze.lazy import barrier, explain
from braze.ops import *  # noqa: F403 - the op library is the public API
from braze.ops import __all__ as _ops_all
from braze.runtime import metrics
from braze.runtime.device import CPU, LAZY_CPU, Device, as_device, default_device, set_default_device
from braze.tensor import Tensor

device = as_device

__all__ = [
    *_ops_all,
    "CPU",
    "LAZY_CPU",
    "BrazeError",
    "DType",
    "DTypeError",
    "Device",
    "DeviceError",
    "ShapeError",
    "Tensor",
    "as_device",
    "barrier",
    "config",
    "explain",
    "jit",
    "metrics",
    "bool_",
    "default_device",
    "device",
    "enable_grad",
    "float32",
    "float64",
    "grad",
    "int32",
    "int64",
    "no_grad",
    "set_default_device",
    "value_and_grad",
]
__version__ = "0.1.0"
