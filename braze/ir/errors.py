"""The error types braze raises. Each message names the op and the offending shapes/dtypes."""


class BrazeError(Exception):
    """Base class of every error braze raises on purpose."""


class ShapeError(BrazeError, ValueError):
    """Shapes that an op cannot combine, or an axis out of range."""


class DTypeError(BrazeError, TypeError):
    """Dtypes that an op cannot combine, or a dtype braze does not support."""


class DeviceError(BrazeError, RuntimeError):
    """Tensors on different devices, or a device that cannot be used."""


class TraceError(BrazeError, RuntimeError):
    """Something a traced function did that a compiled call could not repeat: reading a
    value as a Python number, a Python side effect, or reading state the tracer cannot see."""


class ConfigError(BrazeError, ValueError):
    """A setting braze cannot use: an environment variable (``BRAZE_...``) or an option of
    no valid value, or options that contradict each other."""


class MissingDependency(BrazeError, ImportError):
    """An optional package a feature needs is not installed (its message says what to install)."""
