"""Weight initializers with Keras's names and formulas (``keras.initializers``).

An initializer is called with a shape (and optionally a dtype and a braze ``Generator``)
and returns the initial values as an eager CPU tensor; :func:`make_weight` turns them into
a weight on the default device. A seeded initializer gives the same values every call, as
in Keras; an unseeded one draws from the generator it is given, else from braze's default.
Initial values are data, never a computation traced into the first training step.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from braze.ir.dtypes import DEFAULT_FLOAT, as_dtype, storage_array
from braze.ops import random
from braze.ops.creation import full
from braze.runtime.device import CPU, default_device
from braze.tensor import Tensor

# The standard deviation of a unit normal truncated to [-2, 2], which Keras divides out so
# that truncated samples keep the variance asked for.
_TRUNCATED_STDDEV = 0.87962566103423978
_TWO_SIGMA = 0.9772498680518208  # the normal CDF at 2


def fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """(fan_in, fan_out) as Keras computes them: a conv kernel's receptive field counts."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[:-2])
    return receptive * shape[-2], receptive * shape[-1]


class Initializer:
    """Keras's base: ``initializer(shape, dtype)`` gives the values of a new weight."""

    def __call__(self, shape: Any, dtype: Any = None, generator: random.Generator | None = None) -> Tensor:
        return self.sample(tuple(int(s) for s in shape), as_dtype(dtype or DEFAULT_FLOAT), generator)

    def sample(self, shape: tuple[int, ...], dtype: Any, generator: random.Generator | None) -> Tensor:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Initializer:
        return cls(**config)


class _Seeded(Initializer):
    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def _generator(self, generator: random.Generator | None) -> random.Generator | None:
        return random.Generator(self.seed) if self.seed is not None else generator

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed}


class Zeros(Initializer):
    def sample(self, shape, dtype, generator):
        return full(shape, 0, dtype, CPU)


class Ones(Initializer):
    def sample(self, shape, dtype, generator):
        return full(shape, 1, dtype, CPU)


class Constant(Initializer):
    def __init__(self, value: float = 0.0) -> None:
        self.value = float(value)

    def sample(self, shape, dtype, generator):
        return full(shape, self.value, dtype, CPU)

    def get_config(self) -> dict[str, Any]:
        return {"value": self.value}


class RandomUniform(_Seeded):
    def __init__(self, minval: float = -0.05, maxval: float = 0.05, seed: int | None = None) -> None:
        super().__init__(seed)
        self.minval, self.maxval = float(minval), float(maxval)

    def sample(self, shape, dtype, generator):
        g = self._generator(generator)
        return random.uniform(shape, self.minval, self.maxval, dtype, generator=g, device=CPU)

    def get_config(self) -> dict[str, Any]:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class RandomNormal(_Seeded):
    truncated = False

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None) -> None:
        super().__init__(seed)
        self.mean, self.stddev = float(mean), float(stddev)

    def sample(self, shape, dtype, generator):
        return normal(shape, dtype, self._generator(generator), self.truncated) * self.stddev + self.mean

    def get_config(self) -> dict[str, Any]:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class TruncatedNormal(RandomNormal):
    """Normal samples within two standard deviations of the mean (Keras redraws the others)."""

    truncated = True


def normal(shape: tuple[int, ...], dtype: Any, generator: random.Generator | None, truncated: bool) -> Tensor:
    """Unit normal samples; ``truncated`` keeps them in [-2, 2] by inverting the CDF on
    uniform samples of [CDF(-2), CDF(2)], which gives the truncated distribution exactly."""
    if not truncated:
        return random.randn(shape, dtype, generator=generator, device=CPU)
    u = random.uniform(shape, 1.0 - _TWO_SIGMA, _TWO_SIGMA, dtype, generator=generator, device=CPU)
    return random.normal_quantile(u)


class VarianceScaling(_Seeded):
    """Samples of variance ``scale / n``, n the fan-in, fan-out or their mean (``mode``)."""

    def __init__(
        self, scale: float = 1.0, mode: str = "fan_in", distribution: str = "truncated_normal", seed: int | None = None
    ) -> None:
        if scale <= 0 or mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling: invalid scale={scale} or mode={mode!r} (fan_in, fan_out, fan_avg)")
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform", "normal"):
            raise ValueError(
                f"VarianceScaling: unknown distribution {distribution!r}: expected truncated_normal, "
                "untruncated_normal or uniform"
            )
        super().__init__(seed)
        distribution = "truncated_normal" if distribution == "normal" else distribution  # Keras's alias
        self.scale, self.mode, self.distribution = float(scale), mode, distribution

    def sample(self, shape, dtype, generator):
        fan_in, fan_out = fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        n = max(1.0, n)
        g = self._generator(generator)
        if self.distribution == "uniform":
            limit = math.sqrt(3.0 * self.scale / n)
            return random.uniform(shape, -limit, limit, dtype, generator=g, device=CPU)
        truncated = self.distribution == "truncated_normal"
        stddev = math.sqrt(self.scale / n) / (_TRUNCATED_STDDEV if truncated else 1.0)
        return normal(shape, dtype, g, truncated) * stddev

    def get_config(self) -> dict[str, Any]:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed}


class Orthogonal(_Seeded):
    """An orthogonal matrix (Keras's recurrent kernels' default): the Q of the QR
    factorization of unit normal samples, its columns' signs made those of R's diagonal so
    that Q is uniform over orthogonal matrices; a kernel of more than two axes is the
    matrix of its last axis against the others. Times ``gain``."""

    def __init__(self, gain: float = 1.0, seed: int | None = None) -> None:
        super().__init__(seed)
        self.gain = float(gain)

    def sample(self, shape, dtype, generator):
        if len(shape) < 2:
            raise ValueError(f"Orthogonal: a kernel needs at least two axes, got shape {shape}")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        samples = normal((max(rows, cols), min(rows, cols)), as_dtype("float64"), self._generator(generator), False)
        q, r = np.linalg.qr(samples.numpy())
        q = q * np.sign(np.diag(r))
        matrix = q if rows >= cols else q.T
        return Tensor.from_numpy(storage_array((self.gain * matrix).reshape(shape), dtype), CPU)

    def get_config(self) -> dict[str, Any]:
        return {"gain": self.gain, "seed": self.seed}


def _scaling(name: str, scale: float, mode: str, distribution: str) -> type[VarianceScaling]:
    def __init__(self, seed: int | None = None) -> None:  # noqa: N807 - the generated class's constructor
        VarianceScaling.__init__(self, scale, mode, distribution, seed)

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed}

    return type(name, (VarianceScaling,), {"__init__": __init__, "get_config": get_config, "__module__": __name__})


GlorotUniform = _scaling("GlorotUniform", 1.0, "fan_avg", "uniform")
GlorotNormal = _scaling("GlorotNormal", 1.0, "fan_avg", "truncated_normal")
HeUniform = _scaling("HeUniform", 2.0, "fan_in", "uniform")
HeNormal = _scaling("HeNormal", 2.0, "fan_in", "truncated_normal")
LecunUniform = _scaling("LecunUniform", 1.0, "fan_in", "uniform")
LecunNormal = _scaling("LecunNormal", 1.0, "fan_in", "truncated_normal")

CLASSES: dict[str, type[Initializer]] = {
    cls.__name__: cls
    for cls in (
        Zeros,
        Ones,
        Constant,
        RandomUniform,
        RandomNormal,
        TruncatedNormal,
        VarianceScaling,
        GlorotUniform,
        GlorotNormal,
        HeUniform,
        HeNormal,
        LecunUniform,
        LecunNormal,
        Orthogonal,
    )
}
_NAMES = {
    "zeros": Zeros,
    "ones": Ones,
    "random_uniform": RandomUniform,
    "random_normal": RandomNormal,
    "uniform": RandomUniform,  # Keras's short names (Embedding's default is "uniform")
    "normal": RandomNormal,
    "truncated_normal": TruncatedNormal,
    "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal,
    "he_uniform": HeUniform,
    "he_normal": HeNormal,
    "lecun_uniform": LecunUniform,
    "lecun_normal": LecunNormal,
    "orthogonal": Orthogonal,
}


def serialize(initializer: Initializer) -> dict[str, Any]:
    """Keras's ``{"class_name", "config"}`` form of an initializer."""
    return {"class_name": type(initializer).__name__, "config": initializer.get_config()}


def deserialize(config: dict[str, Any]) -> Initializer:
    return CLASSES[config["class_name"]].from_config(config.get("config", {}))


def get(initializer: str | Initializer | Any) -> Initializer:
    """An initializer from a Keras name (``"he_normal"``, ``"HeNormal"``), an instance, or
    a function ``f(shape, dtype)``."""
    if isinstance(initializer, Initializer):
        return initializer
    if isinstance(initializer, dict) and "class_name" in initializer:
        return deserialize(initializer)
    if isinstance(initializer, str):
        found = _NAMES.get(initializer) or CLASSES.get(initializer)
        if found is None:
            raise ValueError(f"unknown initializer {initializer!r}: expected one of {sorted(_NAMES)}")
        return found()
    if callable(initializer):
        return _Function(initializer)
    raise TypeError(f"an initializer must be a name, an Initializer or a function, got {type(initializer).__name__}")


class _Function(Initializer):
    """A user's ``f(shape, dtype)`` returning an array or tensor."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __call__(self, shape: Any, dtype: Any = None, generator: random.Generator | None = None) -> Tensor:
        dtype = as_dtype(dtype or DEFAULT_FLOAT)
        value = self.fn(tuple(shape), dtype=dtype.name)
        array = storage_array(value.numpy() if isinstance(value, Tensor) else value, dtype)
        return Tensor.from_numpy(np.broadcast_to(array, tuple(shape)).copy(), CPU)


def make_weight(
    initializer: str | Initializer | Any,
    shape: tuple[int, ...],
    dtype: Any = None,
    generator: random.Generator | None = None,
    trainable: bool = True,
    device: Any = None,
) -> Tensor:
    """A new weight of ``shape`` on ``device`` (the default device), as data: a parameter
    (requires grad) when ``trainable``, else state such as batch norm's moving statistics."""
    values = get(initializer)(shape, dtype, generator)
    # storage_array: a bfloat16 tensor's numpy() reads as float32, its storage is uint16 bit patterns
    weight = Tensor.from_numpy(storage_array(values.numpy(), values.dtype), device or default_device())
    return weight.requires_grad_() if trainable else weight


def glorot_uniform(shape: tuple[int, ...], generator: random.Generator | None = None) -> Tensor:
    """A Glorot-uniform parameter (Keras's default kernel)."""
    return make_weight("glorot_uniform", shape, generator=generator)
