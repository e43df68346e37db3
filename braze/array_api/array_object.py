"""The standard's array object: a braze Tensor whose operators follow the Array API.

``Array`` is a ``Tensor`` (every braze function takes it) whose operators promote as the
standard does, take Python scalars of the array's kind, update in place for ``+=`` and
``x[key] = value``, and index with boolean masks and integer arrays. A plain Tensor keeps
braze's own operators; every function of :mod:`braze.array_api` takes either and returns
Arrays. An ``Array`` made from a Tensor shares its value: no copy.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from braze import lazy
from braze.ir.prims import structural
from braze.runtime.device import Device
from braze.tensor import Tensor, executor_for

# A NumPy scalar is an operand as the Python scalar of its kind is (braze's own operators
# read it so too): ``y == np.int64(1)`` compares elementwise, as NumPy's and braze's do.
_OPERAND_TYPES = (Tensor, bool, int, float, np.bool_, np.integer, np.floating)


def wrap(t: Tensor) -> Array:
    """A new Array over ``t``'s value: values never change in place (an in-place update
    gives the array a new one), so sharing one is safe. A leaf that requires gradients
    is read through a reshape to its own shape, so that gradients of what the Array
    computes reach the leaf."""
    if t.requires_grad and t.is_leaf:
        t = structural.reshape.bind(t, new_sizes=tuple(t.shape))
    out = Array._make(t._value, t._aval, t.device)
    out.requires_grad = t.requires_grad
    out._grad_node = t._grad_node
    out._tangents = t._tangents  # inside braze.jvp: the array carries the tensor's tangents
    return out


def copied(t: Tensor) -> Array:
    """An Array of ``t``'s value in a buffer of its own (``copy=True``). braze never writes
    into a buffer, but NumPy may write into one it shares with braze (``asarray`` of an
    ndarray, DLPack): the copy must not see that. A value not computed yet (lazy, or in a
    trace) gets a buffer of its own when it is computed, so it is left as it is."""
    out = wrap(t)
    if not t.device.is_lazy or (t._value.data is not None and not lazy.is_recording()):
        out._value = executor_for(t.device).from_numpy(t._stored_copy(), t.device)
    return out


def _binary(name: str) -> tuple[Callable, Callable, Callable]:
    """The operator, its reflection and its in-place form, by the namespace function ``name``."""

    def forward(self: Array, other: Any, /) -> Array:
        if not isinstance(other, _OPERAND_TYPES):
            return NotImplemented
        return getattr(elementwise, name)(self, other)

    def reflected(self: Array, other: Any, /) -> Array:
        if not isinstance(other, _OPERAND_TYPES):
            return NotImplemented
        return getattr(elementwise, name)(other, self)

    def in_place(self: Array, other: Any, /) -> Array:
        result = getattr(elementwise, name)(self, other)
        if result.dtype is not self.dtype or result.shape != self.shape:
            raise TypeError(
                f"in-place {name}: the result, {result.dtype.name}{result.shape}, would change the array's "
                f"{self.dtype.name}{self.shape}"
            )
        self._assign(result)
        return self

    return forward, reflected, in_place


class Array(Tensor):
    """An array of the Array API standard, on any braze device (see the module's doc)."""

    __slots__ = ()
    __hash__ = Tensor.__hash__

    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        return namespace(api_version)

    @property
    def mT(self) -> Array:  # noqa: N802 - the standard's name
        return linear_algebra.matrix_transpose(self)

    @property
    def T(self) -> Array:  # noqa: N802 - the standard's name
        if self.ndim != 2:
            raise ValueError(f"x.T is the transpose of a matrix; this array has shape {self.shape} (use x.mT)")
        return manipulation.permute_dims(self, (1, 0))

    def to_device(self, device: Device | str, /, *, stream: Any = None) -> Array:
        """This array on ``device`` (itself when it is there already)."""
        if stream is not None:
            raise ValueError("to_device: braze devices have no streams")
        return wrap(self.to(device))

    __add__, __radd__, __iadd__ = _binary("add")
    __sub__, __rsub__, __isub__ = _binary("subtract")
    __mul__, __rmul__, __imul__ = _binary("multiply")
    __truediv__, __rtruediv__, __itruediv__ = _binary("divide")
    __floordiv__, __rfloordiv__, __ifloordiv__ = _binary("floor_divide")
    __mod__, __rmod__, __imod__ = _binary("remainder")
    __pow__, __rpow__, __ipow__ = _binary("pow")
    __and__, __rand__, __iand__ = _binary("bitwise_and")
    __or__, __ror__, __ior__ = _binary("bitwise_or")
    __xor__, __rxor__, __ixor__ = _binary("bitwise_xor")
    __lshift__, __rlshift__, __ilshift__ = _binary("bitwise_left_shift")
    __rshift__, __rrshift__, __irshift__ = _binary("bitwise_right_shift")
    __eq__ = _binary("equal")[0]  # type: ignore[assignment]
    __ne__ = _binary("not_equal")[0]  # type: ignore[assignment]
    __lt__ = _binary("less")[0]
    __le__ = _binary("less_equal")[0]
    __gt__ = _binary("greater")[0]
    __ge__ = _binary("greater_equal")[0]

    def __matmul__(self, other: Any, /) -> Array:
        return linear_algebra.matmul(self, other) if isinstance(other, Tensor) else NotImplemented

    def __rmatmul__(self, other: Any, /) -> Array:
        return linear_algebra.matmul(other, self) if isinstance(other, Tensor) else NotImplemented

    def __imatmul__(self, other: Any, /) -> Array:
        result = linear_algebra.matmul(self, other)
        if result.shape != self.shape or result.dtype is not self.dtype:
            raise TypeError(f"in-place matmul would change the array's {self.dtype.name}{self.shape}")
        self._assign(result)
        return self

    def __neg__(self, /) -> Array:
        return elementwise.negative(self)

    def __pos__(self, /) -> Array:
        return elementwise.positive(self)

    def __abs__(self, /) -> Array:
        return elementwise.abs(self)

    def __invert__(self, /) -> Array:
        return elementwise.bitwise_invert(self)

    def __getitem__(self, key: Any, /) -> Array:
        return indexing.getitem(self, key)

    def __setitem__(self, key: Any, value: Any, /) -> None:
        self._assign(indexing.setitem(self, key, value))

    def __index__(self, /) -> int:
        if self.dtype.kind != "i":
            raise TypeError(f"only an integer array is an index, not a {self.dtype.name} one")
        return operator.index(self.item())

    def __complex__(self, /) -> complex:
        return complex(self.item())


def namespace(api_version: str | None = None) -> Any:
    """The ``braze.array_api`` module, for ``__array_namespace__``."""
    import braze.array_api as module

    if api_version is not None and api_version not in module.SUPPORTED_VERSIONS:
        raise ValueError(
            f"braze.array_api implements versions {', '.join(module.SUPPORTED_VERSIONS)} of the standard, "
            f"not {api_version}"
        )
    return module


# The namespace functions the operators call are built on Array (a cycle through functions only).
from braze.array_api import elementwise, indexing, linear_algebra, manipulation  # noqa: E402
