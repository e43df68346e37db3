"""PyTorch's ``torch.nn.init``: functions that fill a tensor (usually a parameter) with
initial values in place and return it, as PyTorch programs call them
(``nn.init.kaiming_normal_(conv.weight, mode="fan_out", nonlinearity="relu")``).

Random values come from ``generator`` (a :class:`braze.Generator`) or else braze's default
generator (``braze.manual_seed``). They are drawn on the CPU and loaded into the tensor on
its device, as :mod:`braze.nn.initializers` makes weights: initial values are data, never
a computation traced into a lazy device's first step, and one seed gives the same values
on every device. The tensor keeps its identity, shape, dtype, device and
``requires_grad``, and no gradient is recorded. Under ``braze.jit`` they are an error:
values drawn while it traces would be constants of the compiled function.

Fans are PyTorch's: a weight ``(out, in, *kernel)`` has ``fan_in = in * prod(kernel)`` and
``fan_out = out * prod(kernel)`` (Keras lays kernels out the other way round, see
``initializers.fans``).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from braze import lazy
from braze.autodiff import no_grad
from braze.ir.dtypes import DType, float32, float64, storage_array
from braze.ir.errors import DTypeError, TraceError
from braze.nn.initializers import Orthogonal
from braze.ops import clip, random
from braze.runtime.device import CPU
from braze.tensor import Tensor, user_error

__all__ = [
    "calculate_gain",
    "constant_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]

_UNIT_GAIN = (
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "sigmoid",
)


def _fill(tensor: Tensor, values: Any) -> Tensor:
    """Replace ``tensor``'s values in place by ``values`` (its shape; a tensor or an array)
    as data on its device, recording no gradient."""
    array = values.numpy() if isinstance(values, Tensor) else values
    data = Tensor.from_numpy(np.require(storage_array(array, tensor.dtype), requirements="C"), tensor.device)
    with no_grad():
        tensor._assign(data)
    return tensor


def _checked(name: str, tensor: Any, floats: bool = True) -> Tensor:
    if lazy.is_recording():
        raise user_error(
            TraceError,
            f"{name}: values drawn while braze.jit traces would be constants of the compiled function, the same "
            "at every call: initialize outside @jit",
        )
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name}: expected a braze Tensor to fill in place, got {type(tensor).__name__}")
    if floats and not tensor.dtype.is_float:
        raise user_error(DTypeError, f"{name}: random values need a floating tensor, got {tensor.dtype.name}")
    return tensor


def _draw_dtype(tensor: Tensor) -> DType:
    """float64 for a float64 tensor, else float32 (bfloat16 is rounded from it when loaded)."""
    return float64 if tensor.dtype is float64 else float32


def _uniform(name: str, tensor: Any, low: float, high: float, generator: random.Generator | None) -> Tensor:
    tensor = _checked(name, tensor)
    # PyTorch refuses reversed bounds (a negative xavier gain makes them too): drawn, they
    # would fill (high, low] without a word.
    if not low <= high:
        raise ValueError(f"{name}: the lower bound {low} is above the upper bound {high}")
    draws = random.uniform(tensor.shape, low, high, _draw_dtype(tensor), generator=generator, device=CPU)
    return _fill(tensor, draws)


def _normal(name: str, tensor: Any, mean: float, std: float, generator: random.Generator | None) -> Tensor:
    tensor = _checked(name, tensor)
    if not std >= 0:  # PyTorch's refusal, a negative xavier gain's too
        raise ValueError(f"{name}: std must be 0 or more, got {std}")
    draws = random.randn(tensor.shape, _draw_dtype(tensor), generator=generator, device=CPU)
    return _fill(tensor, draws * std + mean)


def _fans(name: str, tensor: Tensor) -> tuple[int, int]:
    shape = tensor.shape
    if len(shape) < 2:
        raise ValueError(f"{name}: fan in and fan out need a tensor of at least 2 dimensions, got shape {shape}")
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """``torch.nn.init.calculate_gain``: the gain that keeps activations' variance through
    ``nonlinearity`` (``param`` is leaky_relu's negative slope, 0.01 by default)."""
    if nonlinearity in _UNIT_GAIN:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative_slope {param} is not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4  # PyTorch's choice, for self-normalizing networks
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: random.Generator | None = None) -> Tensor:
    """Fill ``tensor`` with samples of the uniform distribution on ``[a, b)``."""
    return _uniform("uniform_", tensor, a, b, generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: random.Generator | None = None) -> Tensor:
    """Fill ``tensor`` with samples of the normal distribution ``N(mean, std**2)``."""
    return _normal("normal_", tensor, mean, std, generator)


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: random.Generator | None = None,
) -> Tensor:
    """Fill ``tensor`` with samples of ``N(mean, std**2)`` truncated to ``[a, b]`` (bounds
    in the values' units, as PyTorch's): the normal quantile of uniform samples between
    the CDF at a and at b, which is the truncated distribution exactly."""
    tensor = _checked("trunc_normal_", tensor)
    if not a <= b:  # PyTorch's refusal: the clip below would otherwise fill every value with b
        raise ValueError(f"trunc_normal_: the lower bound a={a} is above the upper bound b={b}")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "trunc_normal_: mean is more than 2 std from [a, b]; the distribution of values may be incorrect",
            stacklevel=2,
        )
    low, high = (0.5 * (1.0 + math.erf((bound - mean) / (std * math.sqrt(2.0)))) for bound in (a, b))
    # In float64: the quantile's tails cancel digits in float32 (see random.randn).
    u = random.uniform(tensor.shape, low, high, float64, generator=generator, device=CPU)
    return _fill(tensor, clip(random.normal_quantile(u) * std + mean, a, b))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val``."""
    tensor = _checked("constant_", tensor, floats=False)
    return _fill(tensor, np.full(tensor.shape, val))


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D ``tensor`` with the identity matrix (ones on the diagonal of a rectangle too)."""
    tensor = _checked("eye_", tensor, floats=False)
    if tensor.ndim != 2:
        raise ValueError(f"eye_: only tensors of 2 dimensions are supported, got shape {tensor.shape}")
    return _fill(tensor, np.eye(*tensor.shape))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: random.Generator | None = None) -> Tensor:
    """Glorot's uniform initialization: ``U(-bound, bound)`` with ``bound = gain *
    sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans("xavier_uniform_", _checked("xavier_uniform_", tensor))
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / (fan_in + fan_out))
    return _uniform("xavier_uniform_", tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: random.Generator | None = None) -> Tensor:
    """Glorot's normal initialization: ``N(0, std**2)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans("xavier_normal_", _checked("xavier_normal_", tensor))
    return _normal("xavier_normal_", tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(name: str, tensor: Any, a: float, mode: str, nonlinearity: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"{name}: mode {mode!r} is not supported: use fan_in or fan_out")
    fan_in, fan_out = _fans(name, _checked(name, tensor))
    return calculate_gain(nonlinearity, a) / math.sqrt(fan_in if mode == "fan_in" else fan_out)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: random.Generator | None = None,
) -> Tensor:
    """He's uniform initialization: ``U(-bound, bound)`` with ``bound = gain * sqrt(3 /
    fan)``, the gain of ``nonlinearity`` (``a``: leaky_relu's negative slope) and the fan
    of ``mode``. A tensor without elements is left as it is, as PyTorch's."""
    if isinstance(tensor, Tensor) and tensor.size == 0:
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std("kaiming_uniform_", tensor, a, mode, nonlinearity)
    return _uniform("kaiming_uniform_", tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: random.Generator | None = None,
) -> Tensor:
    """He's normal initialization: ``N(0, std**2)`` with ``std = gain / sqrt(fan)``."""
    if isinstance(tensor, Tensor) and tensor.size == 0:
        return tensor
    std = _kaiming_std("kaiming_normal_", tensor, a, mode, nonlinearity)
    return _normal("kaiming_normal_", tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: random.Generator | None = None) -> Tensor:
    """Fill ``tensor`` (at least 2-D) with a (semi-)orthogonal matrix times ``gain``: its
    first axis against the others flattened, orthonormal rows or columns, whichever are
    fewer, uniformly distributed (Saxe et al.; PyTorch's)."""
    tensor = _checked("orthogonal_", tensor)
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: only tensors of 2 or more dimensions are supported, got shape {tensor.shape}")
    if tensor.size == 0:
        return tensor
    rows = tensor.shape[0]
    # Keras's Orthogonal makes the matrix of the last axis against the others: asked for
    # the transposed shape, its transpose is PyTorch's (rows, everything else).
    transposed = Orthogonal(gain).sample((tensor.size // rows, rows), float64, generator).numpy()
    return _fill(tensor, transposed.T.reshape(tensor.shape))
