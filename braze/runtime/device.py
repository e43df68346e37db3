"""Devices: a hardware kind, an ordinal and an execution backend, as in X10.

``Device("CPU", 0, "EAGER")`` runs each op at once; ``Device("CPU", 0, "LAZY")`` records ops
into a trace that is compiled and run at a barrier. Asking for a GPU on a machine without a
usable one falls back to the CPU with a warning, as the X10 tutorial describes for its
default devices.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from braze.ir.errors import DeviceError
from braze.runtime.backend import kind_available

KINDS = ("CPU", "GPU")
BACKENDS = ("EAGER", "LAZY")


def gpu_available() -> bool:
    """Whether a GPU runtime (CUDA, or an OpenCL GPU) can be used."""
    return kind_available("GPU")


@dataclass(frozen=True)
class Device:
    """Where a tensor lives and how its ops run."""

    kind: str = "CPU"
    ordinal: int = 0
    backend: str = "EAGER"

    def __post_init__(self) -> None:
        kind, backend = self.kind.upper(), self.backend.upper()
        if kind not in KINDS:
            raise DeviceError(f"unknown device kind {self.kind!r}: expected one of {KINDS}")
        if backend not in BACKENDS:
            raise DeviceError(f"unknown device backend {self.backend!r}: expected one of {BACKENDS}")
        if not isinstance(self.ordinal, int) or self.ordinal < 0:
            raise DeviceError(f"device ordinal must be a non-negative integer, got {self.ordinal!r}")
        if kind == "GPU" and not gpu_available():
            warnings.warn(
                f"no usable GPU (a CUDA device, or an OpenCL GPU) for Device(kind: .GPU, ordinal: "
                f"{self.ordinal}); falling back to the CPU",
                RuntimeWarning,
                stacklevel=3,
            )
            kind, ordinal = "CPU", 0
        else:
            ordinal = self.ordinal
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "backend", backend)
        object.__setattr__(self, "ordinal", ordinal)
        # Every lazy op looks its device up in a dict: the hash is computed once.
        object.__setattr__(self, "_hash", hash((kind, ordinal, backend)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple:
        return Device, (self.kind, self.ordinal, self.backend)  # the hash is made again where it loads

    @property
    def is_lazy(self) -> bool:
        return self.backend == "LAZY"

    def __repr__(self) -> str:
        return f"Device(kind: .{self.kind}, ordinal: {self.ordinal}, backend: .{self.backend})"

    def __enter__(self) -> Device:
        """``with device:`` makes it the default device for the block (PyTorch's ``with
        torch.device(...)``, TensorFlow's ``with tf.device(...)``)."""
        _ENTERED.append(default_device())
        set_default_device(self)
        return self

    def __exit__(self, *exc: object) -> None:
        set_default_device(_ENTERED.pop())

    __str__ = __repr__


CPU = Device("CPU", 0, "EAGER")
"""The eager CPU, ``cpu:0:eager``: ops run at once, on NumPy. The default device."""
LAZY_CPU = Device("CPU", 0, "LAZY")
"""The lazy CPU, ``cpu:0:lazy`` (X10's ``Device.defaultXLA``): ops are recorded and compiled at a barrier."""
_DEFAULT: list[Device] = [CPU]
_ENTERED: list[Device] = []  # the default devices that ``with device:`` blocks replaced, innermost last


def default_device() -> Device:
    """The device new tensors are created on (the eager CPU unless changed)."""
    return _DEFAULT[0]


def set_default_device(device: Device | str) -> None:
    """Make ``device`` the one new tensors and models are created on (``braze.config.set_jit`` sets the lazy CPU)."""
    _DEFAULT[0] = as_device(device)


def as_device(spec: Device | str | None) -> Device:
    """Parse a device: a Device, None (the default), or text such as "cpu", "lazy",
    "gpu:1", "cpu:0:lazy", "eager" (case-insensitive, parts in any order)."""
    if spec is None:
        return default_device()
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise DeviceError(f"expected a Device or a device name, got {type(spec).__name__}")
    kind, ordinal, backend = "CPU", 0, "EAGER"
    if spec.startswith("/"):  # TensorFlow's "/CPU:0", "/device:GPU:1": the current mode, eager or lazy
        backend = default_device().backend
    for part in spec.replace("/", ":").split(":"):
        token = part.strip().upper()
        if token in ("", "DEVICE"):
            continue
        if token in KINDS:
            kind = token
        elif token in BACKENDS:
            backend = token
        elif token in ("XLA", "X10"):
            backend = "LAZY"
        elif token.isdigit():
            ordinal = int(token)
        else:
            raise DeviceError(
                f"cannot parse device {spec!r}: expected parts like 'cpu', 'gpu', 'eager', "
                "'lazy' and an ordinal, e.g. 'cpu:0:lazy'"
            )
    return Device(kind, ordinal, backend)
