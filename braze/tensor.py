"""The user-facing Tensor and the one function every op goes through: ``bind``.

A Tensor holds a backend value (a NumPy array on the eager CPU, a device array on an eager
GPU, a pending trace node on a lazy device), its abstract value (shape and dtype), its
device and, when it takes part in a gradient computation, the ``GradNode`` that produced
it, and its tangents while a forward-mode derivative is being taken. ``bind`` checks the op
with the primitive's shape rule (so errors are raised where the user wrote the op, in both
modes), asks the device's executor for the result, records the gradient edge and pushes
the tangents (``braze.tangents``). Eager ops run on the backend that the registry (``runtime.backend``)
gives the device's kind; this module names none.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from braze.ir.dtypes import DType, readable, storage_array
from braze.ir.errors import BrazeError, DeviceError
from braze.ir.graph import exact_attributes
from braze.ir.primitive import Aval, Primitive, current_binder, set_binder
from braze.runtime.backend import home_backend
from braze.runtime.cache import BoundedCache
from braze.runtime.device import Device, default_device
from braze.tangents import LEVELS, push
from braze.torch_methods import TorchMethods, ValuesIndices, axis_keywords, divisor_correction

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def user_location() -> str:
    """``file:line`` of the innermost stack frame outside the braze package."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def user_error(cls: type[BrazeError], message: str) -> BrazeError:
    """An error of ``cls`` whose message ends with the user's source line."""
    return cls(f"{message} (at {user_location()})")


class Executor(Protocol):
    """How one backend runs primitives and moves values to and from NumPy."""

    def apply(
        self, primitive: Primitive, values: list, attrs: dict, aval: Aval, device: Device, signature: int | None
    ) -> Any: ...

    def from_numpy(self, array: np.ndarray, device: Device) -> Any: ...

    def to_numpy(self, value: Any, device: Device) -> np.ndarray: ...

    def track(self, tensor: Tensor, previous: Any = None) -> None: ...


class EagerExecutor:
    """Runs every primitive at once on the backend of the device's kind: with its NumPy twin
    on NumPy arrays on the CPU, as a single-op kernel on device arrays on a GPU (copied to
    the host only when read)."""

    def apply(
        self, primitive: Primitive, values: list, attrs: dict, aval: Aval, device: Device, signature: int | None
    ) -> Any:
        return home_backend(device.kind).apply(primitive, values, attrs, aval)

    def from_numpy(self, array: np.ndarray, device: Device) -> Any:
        home = home_backend(device.kind)
        return array if home.host_memory else home.upload(array)

    def to_numpy(self, value: Any, device: Device) -> np.ndarray:
        return home_backend(device.kind).download(value)

    def track(self, tensor: Tensor, previous: Any = None) -> None:
        """Eager values are never pending: nothing to track."""


_EXECUTORS: dict[str, Executor] = {"EAGER": EagerExecutor()}


class TensorMarks:
    """A set of tensors by identity, held weakly: an entry goes when its tensor does. (A
    ``WeakSet`` compares by ``==``, which on tensors is elementwise.)"""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref] = {}

    def add(self, tensor: Tensor) -> None:
        key = id(tensor)
        if key not in self._refs:
            self._refs[key] = weakref.ref(tensor, lambda _: self._refs.pop(key, None))

    def __contains__(self, tensor: Tensor) -> bool:
        ref = self._refs.get(id(tensor))
        return ref is not None and ref() is tensor

    def __len__(self) -> int:
        return len(self._refs)


# Tensors made trainable by requires_grad_(): a module keeps such a tensor in its state
# (saved, loaded, moved) after it is frozen.
_TRAINABLE = TensorMarks()


def was_trainable(tensor: Tensor) -> bool:
    """Whether ``tensor`` was made to require grad by ``requires_grad_()`` (a parameter, even
    one frozen since)."""
    return tensor in _TRAINABLE


def register_executor(backend: str, executor: Executor) -> None:
    """Install the executor of a device backend (the lazy module installs ``LAZY``)."""
    _EXECUTORS[backend] = executor


def executor_for(device: Device) -> Executor:
    found = _EXECUTORS.get(device.backend)
    if found is None:
        raise DeviceError(f"the {device.backend} backend is not available (device {device!r})")
    return found


class _GradMode(threading.local):
    enabled = True


GRAD_MODE = _GradMode()


def gradient_parent(t: Tensor) -> GradNode | Tensor | None:
    """Where a gradient reaching ``t`` goes on: to the record that computed it, to ``t``
    itself when it is a leaf that takes gradients, else nowhere."""
    return t._grad_node if t._grad_node is not None else (t if t.requires_grad else None)


class GradNode:
    """One recorded primitive application: what its VJP needs and where cotangents go.

    ``parents[i]`` is the GradNode that produced input i, the leaf Tensor itself when the
    input is a leaf that requires grad, or None when no gradient flows there. Input and
    output values are kept (not the tensors), so a later in-place update of a tensor never
    changes a gradient already recorded. ``tangents`` keeps the inputs' and the output's
    tangents when a forward-mode derivative was being taken (the VJP rules then push them:
    a forward-mode derivative of a gradient, as a Hessian-vector product is).
    """

    __slots__ = (
        "primitive",
        "attrs",
        "in_values",
        "in_avals",
        "out_value",
        "out_aval",
        "device",
        "parents",
        "tangents",
    )

    def __init__(self, primitive, attrs, inputs, in_values, out_value, out_aval, device) -> None:
        """The record of ``primitive`` applied to the tensors ``inputs``, whose values the
        caller has at hand (``in_values``: the record keeps that list, which the caller must
        not change; the backward pass releases it)."""
        self.primitive = primitive
        self.attrs = attrs
        self.in_values = in_values
        self.in_avals = [t._aval for t in inputs]
        self.out_value = out_value
        self.out_aval = out_aval
        self.device = device
        self.parents = [gradient_parent(t) for t in inputs]
        self.tangents: tuple[list, dict | None] | None = None

    @classmethod
    def over(
        cls,
        primitive: Any,
        attrs: dict,
        in_values: list,
        in_avals: Sequence,
        parents: list,
        out_value: Any,
        out_aval: Aval,
        device: Device,
    ) -> GradNode:
        """A record whose inputs' values, types and parents are given as they are (a replayed
        call's, which reads values that no tensor holds)."""
        node = object.__new__(cls)
        node.primitive, node.attrs, node.device, node.tangents = primitive, attrs, device, None
        node.in_values, node.in_avals, node.parents = in_values, in_avals, parents
        node.out_value, node.out_aval = out_value, out_aval
        return node


# Shape rule results by (primitive, input avals, attributes), each with a *signature*: a
# number naming that triple, never reused in this process (an evicted triple gets a new
# one). A lazy trace's key is made of signatures, which hash and compare as numbers.
_AVALS: BoundedCache[tuple, tuple[Aval, int]] = BoundedCache(4096, recency=False)
_SIGNATURES = itertools.count()


def _abstract_eval(primitive: Primitive, args: tuple, attrs: dict) -> tuple[Aval, int | None]:
    """The primitive's output type and signature (None for an unhashable attribute value);
    shape rules are pure, so a training step, which applies the same ops to the same types
    every time, finds each one remembered."""
    avals = tuple([t._aval for t in args])
    try:
        # A float attribute by its bits: pad(x, value=-0.0) is not pad(x, value=0.0).
        key: tuple | None = (primitive, avals, exact_attributes(tuple(attrs.items())))
        found = _AVALS.get(key)
    except TypeError:  # an unhashable attribute value
        key = found = None
    if found is None:
        try:
            aval = primitive.shape_rule(*avals, **attrs)
        except BrazeError as error:
            raise type(error)(f"{error} (at {user_location()})") from None
        if key is None:
            return aval, None
        found = _AVALS.put(key, (aval, next(_SIGNATURES)))
    return found


def bind(primitive: Primitive, args: tuple, attrs: dict, like: Any = None) -> Tensor:
    """Apply a primitive to tensors: check shapes, run or record it, record the gradient edge."""
    if args:
        device = args[0].device
        for other in args[1:]:
            if other.device is not device and other.device != device:
                raise user_error(
                    DeviceError,
                    f"{primitive.name}: operands are on different devices: {device!r} and "
                    f"{other.device!r}; move one with .to(device)",
                )
    else:
        device = like if isinstance(like, Device) else default_device()
    aval, signature = _abstract_eval(primitive, args, attrs)
    return bind_typed(primitive, args, attrs, aval, signature, device)


def bind_typed(
    primitive: Primitive, args: tuple, attrs: dict, aval: Aval | tuple, signature: int | None, device: Device
) -> Tensor:
    """``bind`` once the operands are known to be on ``device`` and the output's type and
    signature are known (a replay of ops recorded on operands of the same types)."""
    executor = _EXECUTORS.get(device.backend) or executor_for(device)
    values = [t._value for t in args]  # an executor reads them; a gradient record keeps them
    value = executor.apply(primitive, values, attrs, aval, device, signature)
    out = Tensor._view(value, aval, device)
    if isinstance(aval, Aval):
        executor.track(out)  # a lazy barrier must find every live pending tensor
    elif not any(a.dtype.kind == "f" for a in aval):
        return out  # a loop's results, each read by a get_element that is tracked itself
    if isinstance(aval, Aval) and aval.dtype.kind != "f":
        return out
    node = None
    if GRAD_MODE.enabled and primitive.vjp is not None:
        for t in args:
            if t.requires_grad:
                out.requires_grad = True
                node = out._grad_node = GradNode(primitive, attrs, args, values, value, aval, device)
                break
    if LEVELS.open:
        push(primitive, args, attrs, out)
        if node is not None and (out._tangents or any([t._tangents for t in args])):
            node.tangents = ([t._tangents for t in args], out._tangents)
    return out


set_binder(bind)


def unheard() -> bool:
    """Whether this thread's binds go straight to ``bind``: no recorder listens (a loop body
    being traced, a program being recorded), which code binding past ``bind`` would bypass."""
    return current_binder() is bind


def _numpy_reduction_input(x: Tensor, name: str, numpy: dict[str, Any]) -> Tensor:
    """``x`` for ``x.<name>(...)`` called by NumPy's ``np.<name>(x, ...)``, which passes its
    own keywords: ``dtype`` converts ``x`` first, ``out=None`` and ``where=True`` are its
    defaults; an ``out`` array, a ``where`` mask or ``initial`` is a TypeError saying so."""
    dtype = numpy.pop("dtype", None)
    if numpy.pop("out", None) is not None:
        raise TypeError(f"{name}: out= is not supported: braze returns a new tensor, use it")
    if numpy.pop("where", True) is not True:
        raise TypeError(f"{name}: where= is not supported; mask the tensor with braze.where() first")
    if numpy:
        raise TypeError(f"{name}: unsupported keyword argument(s) {', '.join(sorted(numpy))}")
    return x if dtype is None else x.astype(dtype)


def _names_a_dtype(value: Any) -> bool:
    """Whether ``value`` is a dtype rather than a device (a DType, a NumPy dtype or scalar type)."""
    return isinstance(value, (DType, np.dtype)) or (isinstance(value, type) and issubclass(value, np.generic))


def _refuse_others(name: str, keywords: dict[str, Any]) -> None:
    if keywords:
        raise TypeError(f"{name}: unsupported keyword argument(s) {', '.join(sorted(keywords))}")


class Tensor(TorchMethods):
    """An n-dimensional array on a device, with operators, NumPy interop and autodiff;
    NumPy's methods, and PyTorch's where they do not contradict them (``TorchMethods``)."""

    __slots__ = (
        "_value",
        "_aval",
        "device",
        "requires_grad",
        "grad",
        "_grad_node",
        "_tangents",
        "_keras_mask",
        "_keras_path",
        "__weakref__",
    )
    __array_priority__ = 1000  # NumPy defers `ndarray op Tensor` to the Tensor's reflected op

    @classmethod
    def _make(cls, value: Any, aval: Aval, device: Device) -> Tensor:
        t = cls._view(value, aval, device)
        if device.backend == "LAZY":
            _EXECUTORS["LAZY"].track(t)  # a barrier must find every live pending tensor
        return t

    @classmethod
    def _view(cls, value: Any, aval: Aval, device: Device) -> Tensor:
        """A tensor over a value that other tensors or gradient records hold (autodiff's
        operands), never tracked: a barrier computes the value through its holders."""
        t = object.__new__(cls)
        t._value = value
        t._aval = aval
        t.device = device
        t.requires_grad = False
        t.grad = None
        t._grad_node = None
        t._tangents = None  # {level: tangent} while forward-mode derivatives are taken
        t._keras_mask = None  # Keras's mask over the leading axes, set by the layer that made it
        t._keras_path = None  # a Keras layer's weight: "layer/weight", set by the layer
        return t

    @classmethod
    def from_numpy(cls, array: np.ndarray, device: Device | None = None) -> Tensor:
        """Wrap a NumPy array whose dtype braze supports (no copy on the eager CPU); a uint16
        array holds bfloat16 bit patterns."""
        from braze.ir.dtypes import storage_dtype

        device = device or default_device()
        aval = Aval(tuple(array.shape), storage_dtype(array.dtype))
        return cls._make(executor_for(device).from_numpy(array, device), aval, device)

    # Abstract properties ------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self._aval.shape

    @property
    def dtype(self) -> DType:
        return self._aval.dtype

    @property
    def ndim(self) -> int:
        return len(self._aval.shape)

    @property
    def size(self) -> ElementCount:
        """The number of elements, as NumPy's ``ndarray.size``; called, the shape, as
        PyTorch's ``size()`` (``size(dim)``: the length of one dimension)."""
        return ElementCount(self._aval.size, self._aval.shape)

    def dim(self) -> int:
        """The number of dimensions (PyTorch's name of ``ndim``)."""
        return len(self._aval.shape)

    def numel(self) -> int:
        """The number of elements (PyTorch's name of ``size``)."""
        return self._aval.size

    @property
    def aval(self) -> Aval:
        return self._aval

    @property
    def is_leaf(self) -> bool:
        return self._grad_node is None

    @property
    def trainable(self) -> bool:
        """Whether training updates it (TensorFlow's ``Variable.trainable``): ``requires_grad``."""
        return self.requires_grad

    @property
    def name(self) -> str | None:
        """A Keras layer's weight's name (Keras's ``Variable.name``: ``"kernel"``); None for
        other tensors."""
        return None if self._keras_path is None else self._keras_path.rsplit("/", 1)[-1]

    @property
    def path(self) -> str | None:
        """A Keras layer's weight's path, ``"dense/kernel"`` (Keras's ``Variable.path``)."""
        return self._keras_path

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # Values ------------------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """The value as a read-only NumPy array (materialises a lazy tensor); a bfloat16
        tensor reads as its float32 values (NumPy has no bfloat16)."""
        array = readable(executor_for(self.device).to_numpy(self._value, self.device), self.dtype)
        view = array.view()
        view.flags.writeable = False
        return view

    def item(self) -> bool | int | float:
        if self.size != 1:
            raise ValueError(f"item(): only a one-element tensor has an item, this one has shape {self.shape}")
        return self.numpy().reshape(()).item()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy 2's protocol: ``copy=True`` copies, ``copy=False`` refuses what needs a copy
        (another dtype) with a ValueError, ``copy=None`` copies only when it must."""
        array = self.numpy()
        if dtype is not None and np.dtype(dtype) != array.dtype:
            if copy is False:
                raise ValueError(f"__array__: copy=False, but a {self.dtype.name} tensor becomes {dtype} by a copy")
            return array.astype(dtype)
        return array.copy() if copy else array

    def __dlpack__(
        self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None
    ) -> Any:
        """Share this tensor's buffer through DLPack (``torch.from_dlpack(t)``); a lazy
        tensor is materialized first, and a GPU tensor's value is downloaded (the consumer
        shares that copy, not the device buffer)."""
        from braze.interop import exported_array

        return exported_array(self).__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        """The Array API namespace of braze tensors, :mod:`braze.array_api`, whose
        functions take tensors and give ``braze.array_api.Array`` (a Tensor)."""
        from braze.array_api.array_object import namespace

        return namespace(api_version)

    def __dlpack_device__(self) -> tuple[int, int]:
        from braze.interop import KDL_CPU

        return (KDL_CPU, 0)  # a GPU tensor is shared as a host copy of its value

    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in "ib":
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype.name}")
        return int(self.item())

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(")
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor({body}, dtype={self.dtype.name}, device={self.device!r}{grad})"

    def __str__(self) -> str:
        return np.array2string(self.numpy(), separator=", ")

    def __format__(self, spec: str) -> str:
        """``f"{loss:.4f}"`` formats a one-element tensor's value, as for a number."""
        if spec and self.size == 1:
            return format(self.item(), spec)
        return format(str(self), spec)

    __hash__ = object.__hash__

    # Devices and autodiff ------------------------------------------------------------

    def to(self, device: Device | str | None = None, dtype: Any = None) -> Tensor:
        """This tensor on another device (and/or of another dtype, also given alone, as
        PyTorch's ``to(dtype)``, or both of another tensor, ``to(other)``); itself when
        nothing changes.
        A leaf that requires grad moves as a new leaf of the device (its gradients gather
        there); a result that carries a gradient graph cannot move with it (the gradient
        would stop at the move): that is an error, where ``detach()`` first moves its value."""
        from braze.runtime.device import as_device

        if dtype is None and _names_a_dtype(device):
            device, dtype = None, device  # PyTorch's to(dtype)
        elif isinstance(device, Tensor):
            device, dtype = device.device, device.dtype  # PyTorch's to(other): its dtype and device
        out = self
        if dtype is not None:
            out = ops.astype(out, dtype)
        target = as_device(device) if device is not None else out.device
        if target == out.device:
            return out
        if out._grad_node is not None and GRAD_MODE.enabled:
            raise user_error(
                DeviceError,
                f"to({target!r}): this tensor is the result of ops whose gradient is recorded, which cannot "
                "follow it to another device: move the tensors it is computed from (the parameters and "
                "inputs), or detach() it to move its value alone",
            )
        moved = Tensor.from_numpy(out._stored_copy(), target)
        moved.requires_grad = out.requires_grad and out.is_leaf
        if out._tangents:  # inside braze.jvp: a move is linear, its tangents move with it
            moved._tangents = {level: tangent.to(target) for level, tangent in out._tangents.items()}
        return moved

    def _stored_copy(self) -> np.ndarray:
        """A writable copy of the value as stored (bfloat16 as its bits), for another
        device, which may update it in place."""
        return np.array(executor_for(self.device).to_numpy(self._value, self.device))

    def move_(self, device: Device | str) -> Tensor:
        """Move this tensor's storage to ``device`` in place (X10's ``move(to:)``).

        Unlike :meth:`to`, the tensor keeps its identity, so every module and optimizer that
        holds it sees the move; its gradient, which lives on the old device, is dropped.
        """
        from braze.runtime.device import as_device

        target = as_device(device)
        if target == self.device:
            return self
        array = self._stored_copy()
        self.device = target
        self._value = executor_for(target).from_numpy(array, target)
        self.grad = None
        return self

    def _load(self, array: Any) -> None:
        """Replace the value by ``array`` (in this tensor's dtype and shape) as data on its
        device: restoring saved state, not an op a lazy device traces."""
        array = np.asarray(array)
        if array.dtype != self.dtype.numpy:
            array = storage_array(array, self.dtype)
        array = np.require(array, requirements="C")
        if array.shape != self.shape:
            raise ValueError(f"cannot load an array of shape {array.shape} into a tensor of shape {self.shape}")
        self._value = executor_for(self.device).from_numpy(array, self.device)

    def cpu(self) -> Tensor:
        from braze.runtime.device import CPU

        return self.to(CPU)

    def detach(self) -> Tensor:
        """The same value, cut from the gradient graph."""
        return Tensor._make(self._value, self._aval, self.device)

    @property
    def data(self) -> Tensor:
        """PyTorch's ``.data``: the values, cut from the gradient graph, whose in-place
        updates (``p.data.mul_(0.5)``, ``m.weight.data.normal_(0, 0.02)``) update this
        tensor too, outside any gradient computation."""
        return _DataAlias.of(self)

    @data.setter
    def data(self, value: Any) -> None:
        _DataAlias.of(self)._assign(ops.as_tensor(value, like=self))

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if requires_grad and not self.dtype.is_float:
            raise TypeError(f"only float tensors can require gradients, not {self.dtype.name}")
        if not self.is_leaf:
            raise RuntimeError("requires_grad_() can only be set on a leaf tensor; use .detach() first")
        self.requires_grad = requires_grad
        if requires_grad:
            _TRAINABLE.add(self)
        return self

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Sequence[Tensor] | None = None,
    ) -> None:
        """Accumulate d(self)/d(leaf) into ``.grad`` of every leaf that requires grad (of
        ``inputs`` only, when given), as PyTorch's ``backward``; with ``create_graph`` the
        gradients are themselves differentiable (a second derivative)."""
        from braze.autodiff import backward

        backward(self, gradient, retain_graph, create_graph, inputs)

    def zero_grad(self) -> None:
        self.grad = None

    def _assign(self, other: Tensor) -> Tensor:
        """Replace this tensor's value in place (the meaning of ``+=`` and of optimizer steps)."""
        if self.requires_grad and GRAD_MODE.enabled:
            raise RuntimeError(
                "in-place update of a tensor that requires grad (a parameter): wrap it in `with braze.no_grad():`, "
                "or let an optimizer update it"
            )
        if other._aval != self._aval or (other.device is not self.device and other.device != self.device):
            raise ValueError(
                f"in-place update must keep shape, dtype and device: {self.dtype.name}{self.shape} on "
                f"{self.device!r} cannot take {other.dtype.name}{other.shape} on {other.device!r}"
            )
        previous, self._value = self._value, other._value
        self._tangents = other._tangents
        if self.device.backend == "LAZY":
            _EXECUTORS["LAZY"].track(self, previous)
        if not self.requires_grad:
            self._grad_node = other._grad_node
            self.requires_grad = other.requires_grad
        return self

    def assign(self, value: Any) -> Tensor:
        """Set this tensor's value in place, recording no gradient (TensorFlow's
        ``Variable.assign``: a trainable weight takes it too); the value is converted to
        this tensor's dtype, as Keras's ``assign`` converts it."""
        return self._assign_without_grad(lambda mine, new: new.detach().astype(mine.dtype), value)

    def assign_add(self, value: Any) -> Tensor:
        """``self += value`` in place, recording no gradient (``Variable.assign_add``)."""
        return self._assign_without_grad(ops.add, value)

    def assign_sub(self, value: Any) -> Tensor:
        """``self -= value`` in place, recording no gradient (``Variable.assign_sub``)."""
        return self._assign_without_grad(ops.subtract, value)

    def _take_value(self, source: Tensor) -> None:
        """Hold ``source``'s value from now on, outside any gradient computation: the update
        an alias of this tensor (``.data``, a layer's transposed view) hands to it."""
        previous, self._value = self._value, source._value
        if self.device.backend == "LAZY":
            _EXECUTORS["LAZY"].track(self, previous)

    def _assign_without_grad(self, op: Any, value: Any) -> Tensor:
        previous, GRAD_MODE.enabled = GRAD_MODE.enabled, False
        try:
            return self._assign(op(self, ops.as_tensor(value, like=self)))
        finally:
            GRAD_MODE.enabled = previous

    # Operators -----------------------------------------------------------------------

    def __add__(self, other: Any) -> Tensor:
        return ops.add(self, other)

    def __radd__(self, other: Any) -> Tensor:
        return ops.add(other, self)

    def __sub__(self, other: Any) -> Tensor:
        return ops.subtract(self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return ops.subtract(other, self)

    def __mul__(self, other: Any) -> Tensor:
        return ops.multiply(self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return ops.multiply(other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return ops.divide(self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return ops.divide(other, self)

    def __floordiv__(self, other: Any) -> Tensor:
        return ops.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return ops.floor_divide(other, self)

    def __mod__(self, other: Any) -> Tensor:
        return ops.remainder(self, other)

    def __rmod__(self, other: Any) -> Tensor:
        return ops.remainder(other, self)

    def __pow__(self, other: Any) -> Tensor:
        return ops.power(self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return ops.power(other, self)

    def __matmul__(self, other: Any) -> Tensor:
        return ops.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return ops.matmul(other, self)

    def __neg__(self) -> Tensor:
        return ops.negative(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return ops.abs(self)

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        if other is None:  # Python's identity answer (False), as PyTorch gives, not an error
            return NotImplemented
        return ops.equal(self, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        if other is None:
            return NotImplemented
        return ops.not_equal(self, other)

    def __lt__(self, other: Any) -> Tensor:
        return ops.less(self, other)

    def __le__(self, other: Any) -> Tensor:
        return ops.less_equal(self, other)

    def __gt__(self, other: Any) -> Tensor:
        return ops.greater(self, other)

    def __ge__(self, other: Any) -> Tensor:
        return ops.greater_equal(self, other)

    def __and__(self, other: Any) -> Tensor:
        return ops.bitwise_and(self, other)

    def __rand__(self, other: Any) -> Tensor:
        return ops.bitwise_and(other, self)

    def __or__(self, other: Any) -> Tensor:
        return ops.bitwise_or(self, other)

    def __ror__(self, other: Any) -> Tensor:
        return ops.bitwise_or(other, self)

    def __xor__(self, other: Any) -> Tensor:
        return ops.bitwise_xor(self, other)

    def __rxor__(self, other: Any) -> Tensor:
        return ops.bitwise_xor(other, self)

    def __lshift__(self, other: Any) -> Tensor:
        return ops.bitwise_left_shift(self, other)

    def __rlshift__(self, other: Any) -> Tensor:
        return ops.bitwise_left_shift(other, self)

    def __rshift__(self, other: Any) -> Tensor:
        return ops.bitwise_right_shift(self, other)

    def __rrshift__(self, other: Any) -> Tensor:
        return ops.bitwise_right_shift(other, self)

    def __invert__(self) -> Tensor:
        return ops.bitwise_not(self)

    def __iadd__(self, other: Any) -> Tensor:
        return self._in_place(ops.add, other)

    def __isub__(self, other: Any) -> Tensor:
        return self._in_place(ops.subtract, other)

    def __imul__(self, other: Any) -> Tensor:
        return self._in_place(ops.multiply, other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self._in_place(ops.divide, other)

    def __ifloordiv__(self, other: Any) -> Tensor:
        return self._in_place(ops.floor_divide, other)

    def __imod__(self, other: Any) -> Tensor:
        return self._in_place(ops.remainder, other)

    def __ipow__(self, other: Any) -> Tensor:
        return self._in_place(ops.power, other)

    def __imatmul__(self, other: Any) -> Tensor:
        """``x @= y`` as NumPy's: in place when the product keeps ``x``'s shape (a square
        ``y``), an error otherwise."""
        return self._in_place(ops.matmul, other)

    def __iand__(self, other: Any) -> Tensor:
        return self._in_place(ops.bitwise_and, other)

    def __ior__(self, other: Any) -> Tensor:
        return self._in_place(ops.bitwise_or, other)

    def __ixor__(self, other: Any) -> Tensor:
        return self._in_place(ops.bitwise_xor, other)

    def __ilshift__(self, other: Any) -> Tensor:
        return self._in_place(ops.bitwise_left_shift, other)

    def __irshift__(self, other: Any) -> Tensor:
        return self._in_place(ops.bitwise_right_shift, other)

    def _in_place(self, op: Any, other: Any) -> Tensor:
        """``x op= y``: in place for data (statistics, parameters under ``no_grad``); for a
        tensor computed in a gradient computation, a new tensor, as TensorFlow's immutable
        tensors make ``x -= y`` mean ``x = x - y`` (an update in place would cut the
        gradient's path)."""
        result = op(self, other)
        if self._grad_node is not None and GRAD_MODE.enabled:
            return result
        return self._assign(result)

    def __getitem__(self, index: Any) -> Tensor:
        return ops.getitem(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        # Without it, Python would convert an integer-tensor index through __index__ first
        # and report that conversion's error instead.
        raise TypeError(
            "braze.Tensor does not support item assignment (x[i] = v): compute a new tensor, "
            "braze.where(mask, value, x) for a mask, or use braze.array_api arrays, which do"
        )

    # Methods that mirror the op library ---------------------------------------------

    def reshape(self, *shape: Any) -> Tensor:
        return ops.reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)

    def transpose(self, *axes: Any) -> Tensor:
        """NumPy's ``transpose``: the axes reversed (no arguments) or permuted (a permutation,
        as a tuple or one int per axis); and PyTorch's ``transpose(dim0, dim1)``, a swap of
        two axes, for two ints on a tensor of other than two dimensions (``transpose(-2, -1)``
        on a batch of matrices). On a matrix the two readings of ``transpose(0, 1)`` differ
        (no change for NumPy, a swap for PyTorch): that is an error naming both."""
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            return ops.transpose(self, axes[0])
        if len(axes) == 2 and self.ndim != 2:
            return ops.swapaxes(self, *axes)
        if len(axes) == 2 and self.ndim == 2 and [a % 2 if -2 <= a < 2 else a for a in axes] == [0, 1]:
            raise user_error(
                ValueError,
                f"transpose{tuple(axes)} of a matrix: NumPy reads it as a permutation that changes nothing, "
                "PyTorch as a swap of the two axes; write x.T or x.swapaxes(0, 1) for the swap, "
                "x.transpose((0, 1)) for the permutation",
            )
        return ops.transpose(self, axes or None)

    def swapaxes(self, axis1: int, axis2: int) -> Tensor:
        """Exchange two axes (``np.swapaxes``; PyTorch's ``swapaxes``, ``transpose(a, b)``)."""
        return ops.swapaxes(self, axis1, axis2)

    def permute(self, *dims: Any) -> Tensor:
        """The axes in the order ``dims`` (a permutation, as ints or one tuple), as PyTorch's ``permute``."""
        return ops.transpose(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], (int, np.integer)) else dims)

    def view(self, *shape: Any) -> Tensor:
        """PyTorch's ``view``: the same elements in ``shape`` (one size may be -1); braze
        tensors are always contiguous, so it is ``reshape``."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer, tuple, list)):
            raise user_error(
                TypeError, f"view: expected a shape, got {shape[0]!r} (a view as another dtype is not supported)"
            )
        return self.reshape(*shape)

    def contiguous(self) -> Tensor:
        """The tensor itself: braze tensors are always laid out contiguously (PyTorch's ``contiguous``)."""
        return self

    def unsqueeze(self, dim: int) -> Tensor:
        """A new axis of size 1 at ``dim`` (PyTorch's name of ``expand_dims``)."""
        return ops.expand_dims(self, dim)

    def squeeze(self, axis: Any = None) -> Tensor:
        """Remove axes of size 1: all of them, or those in ``axis``, which must be of size 1
        (NumPy's rule; PyTorch leaves a longer axis as it is, braze names it in an error)."""
        return ops.squeeze(self, axis)

    def split(self, split_size_or_sections: int | list[int], dim: int = 0) -> list[Tensor]:
        """Pieces along ``dim`` of ``split_size_or_sections`` elements each, or of the sizes
        listed, as PyTorch's ``split`` (NumPy has no such method)."""
        return ops.shape.split(self, split_size_or_sections, dim)

    def chunk(self, chunks: int, dim: int = 0) -> list[Tensor]:
        """At most ``chunks`` pieces along ``dim``, as PyTorch's ``chunk``."""
        return ops.chunk(self, chunks, dim)

    def masked_fill(self, mask: Any, value: Any) -> Tensor:
        """``value`` where ``mask`` is true, this tensor's elements elsewhere (PyTorch's ``masked_fill``)."""
        return ops.masked_fill(self, mask, value)

    def tril(self, diagonal: int = 0) -> Tensor:
        """The lower triangle of the last two axes (``braze.tril``)."""
        return ops.tril(self, diagonal)

    def triu(self, diagonal: int = 0) -> Tensor:
        """The upper triangle of the last two axes (``braze.triu``)."""
        return ops.triu(self, diagonal)

    def topk(self, k: int, dim: int = -1, largest: bool = True) -> tuple[Tensor, Tensor]:
        """The ``k`` largest elements along ``dim`` and their indices (``braze.topk``)."""
        return ops.topk(self, k, dim, largest)

    def multinomial(self, num_samples: int = 1, replacement: bool = False, **kwargs: Any) -> Tensor:
        """Indices drawn from the rows of these weights (``braze.multinomial``)."""
        return ops.multinomial(self, num_samples, replacement, **kwargs)

    @property
    def T(self) -> Tensor:  # noqa: N802 - NumPy's name
        return ops.transpose(self)

    def astype(self, dtype: Any) -> Tensor:
        return ops.astype(self, dtype)

    # The reductions take the keywords NumPy's functions pass (np.sum(t) calls
    # t.sum(axis=None, dtype=None, out=None)): see _numpy_reduction_input; and PyTorch's dim
    # and keepdim (braze.torch_methods).
    def sum(self, axis: Any = None, keepdims: bool = False, **keywords: Any) -> Tensor:
        axis, keepdims, _ = axis_keywords("sum", axis, keepdims, keywords)
        return ops.sum(_numpy_reduction_input(self, "sum", keywords), axis, keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False, **keywords: Any) -> Tensor:
        axis, keepdims, _ = axis_keywords("mean", axis, keepdims, keywords)
        return ops.mean(_numpy_reduction_input(self, "mean", keywords), axis, keepdims)

    def var(self, axis: Any = None, *, keepdims: bool = False, ddof: Any = None, **keywords: Any) -> Tensor:
        """The variance, dividing by the count less ``ddof`` (NumPy's 0 by default), or less
        PyTorch's ``correction`` (1 by default where the call names ``dim``). ``keepdims`` is
        a keyword: a second positional argument is NumPy's dtype, PyTorch's ``unbiased``."""
        axis, keepdims, named = axis_keywords("var", axis, keepdims, keywords)
        ddof = divisor_correction("var", ddof, keywords, named)
        return ops.var(_numpy_reduction_input(self, "var", keywords), axis, keepdims, ddof)

    def max(self, axis: Any = None, keepdims: bool = False, **keywords: Any) -> Any:
        """The maximum along ``axis``; along a ``dim``, PyTorch's ``(values, indices)``."""
        return self._extreme("max", axis, keepdims, keywords)

    def min(self, axis: Any = None, keepdims: bool = False, **keywords: Any) -> Any:
        """The minimum along ``axis``; along a ``dim``, PyTorch's ``(values, indices)``."""
        return self._extreme("min", axis, keepdims, keywords)

    def _extreme(self, name: str, axis: Any, keepdims: bool, keywords: dict[str, Any]) -> Any:
        if isinstance(axis, Tensor):
            raise TypeError(f"{name}(tensor): the elementwise {name}imum of two tensors is braze.{name}imum")
        axis, keepdims, named = axis_keywords(name, axis, keepdims, keywords)
        x = _numpy_reduction_input(self, name, keywords)
        if not named:
            return getattr(ops, name)(x, axis, keepdims)
        if not isinstance(axis, (int, np.integer)):
            raise TypeError(f"{name}(dim=...) takes one dim, got {axis!r}: amax/amin reduce several")
        # PyTorch's values along a dim are the elements at its indices: a tie's gradient
        # goes to the one index returned, where a maximum's shares it among the ties.
        indices = getattr(ops, f"arg{name}")(x, axis, True)
        values = ops.take_along_axis(x, indices, axis)
        indices = ops.astype(indices, "int64")  # PyTorch's index dtype (a target's, compared with it)
        if keepdims:
            return ValuesIndices(values, indices)
        return ValuesIndices(ops.squeeze(values, axis), ops.squeeze(indices, axis))

    def argmax(self, axis: Any = None, keepdims: bool = False, **keywords: Any) -> Tensor:
        """The positions of the maxima (braze's index dtype, int32; int64, PyTorch's, where
        the call names ``dim``, so they compare with a PyTorch program's int64 targets)."""
        return self._position("argmax", axis, keepdims, keywords)

    def argmin(self, axis: Any = None, keepdims: bool = False, **keywords: Any) -> Tensor:
        """The positions of the minima (int64 where the call names ``dim``, as ``argmax``)."""
        return self._position("argmin", axis, keepdims, keywords)

    def _position(self, name: str, axis: Any, keepdims: bool, keywords: dict[str, Any]) -> Tensor:
        axis, keepdims, named = axis_keywords(name, axis, keepdims, keywords)
        _refuse_others(name, keywords)
        found = getattr(ops, name)(self, axis, keepdims)
        return ops.astype(found, "int64") if named else found

    def prod(self, axis: Any = None, keepdims: bool = False, **keywords: Any) -> Tensor:
        axis, keepdims, _ = axis_keywords("prod", axis, keepdims, keywords)
        return ops.prod(_numpy_reduction_input(self, "prod", keywords), axis, keepdims)

    def cumsum(self, axis: int | None = None, **keywords: Any) -> Tensor:
        axis, _, _ = axis_keywords("cumsum", axis, False, keywords)
        _refuse_others("cumsum", keywords)
        return ops.cumsum(self, axis)

    def sort(self, axis: int | None = None, descending: bool = False, **keywords: Any) -> Any:
        """This tensor sorted along ``axis`` (last by default; a new tensor, unlike NumPy's
        in-place sort); along a ``dim``, PyTorch's ``(values, indices)``."""
        axis, _, named = axis_keywords("sort", axis, False, keywords)
        keywords.pop("stable", None)  # braze's sort is stable
        _refuse_others("sort", keywords)
        axis = -1 if axis is None else axis
        values = ops.sort(self, axis, descending)
        return ValuesIndices(values, self.argsort(dim=axis, descending=descending)) if named else values

    def argsort(self, axis: int | None = None, descending: bool = False, **keywords: Any) -> Tensor:
        """The order that sorts along ``axis`` (int64, PyTorch's, where the call names ``dim``)."""
        axis, _, named = axis_keywords("argsort", axis, False, keywords)
        keywords.pop("stable", None)
        _refuse_others("argsort", keywords)
        order = ops.argsort(self, -1 if axis is None else axis, descending)
        return ops.astype(order, "int64") if named else order

    def exp(self) -> Tensor:
        return ops.exp(self)

    def log(self) -> Tensor:
        return ops.log(self)

    def sqrt(self) -> Tensor:
        return ops.sqrt(self)

    def tanh(self) -> Tensor:
        return ops.tanh(self)

    def sin(self) -> Tensor:
        return ops.sin(self)

    def cos(self) -> Tensor:
        return ops.cos(self)

    def floor(self) -> Tensor:
        return ops.floor(self)

    def ceil(self) -> Tensor:
        return ops.ceil(self)

    def round(self) -> Tensor:
        return ops.round(self)

    def erf(self) -> Tensor:
        return ops.erf(self)

    def sigmoid(self) -> Tensor:
        return ops.sigmoid(self)

    def relu(self) -> Tensor:
        return ops.relu(self)

    def abs(self) -> Tensor:
        return ops.abs(self)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        return ops.flatten(self, start_dim, end_dim)


class _DataAlias(Tensor):
    """``owner.data``: a detached tensor of the owner's value that hands every in-place
    update of its own to the owner as well (an optimizer step written as PyTorch's older
    code writes it, or an initialization), without the owner's gradient check."""

    __slots__ = ("_owner",)

    @classmethod
    def of(cls, owner: Tensor) -> _DataAlias:
        alias = cls._make(owner._value, owner._aval, owner.device)
        alias._owner = owner
        return alias

    def _assign(self, other: Tensor) -> Tensor:
        super()._assign(other)
        self._owner._take_value(self)
        return self


class ElementCount(int):
    """``tensor.size``: an int, the number of elements (NumPy's ``size``), that called gives
    the shape (PyTorch's ``size()``) or one dimension's length (``size(dim)``)."""

    def __new__(cls, count: int, shape: tuple[int, ...]) -> ElementCount:
        found = super().__new__(cls, count)
        found.shape = shape
        return found

    def __reduce__(self) -> tuple:
        return (int, (int(self),))  # saved, copied or pickled as the number it is

    def __call__(self, dim: int | None = None) -> tuple[int, ...] | int:
        if dim is None:
            return self.shape
        if not isinstance(dim, (int, np.integer)) or not -len(self.shape) <= dim < len(self.shape):
            raise IndexError(f"size({dim!r}): dimension out of range for a tensor of rank {len(self.shape)}")
        return self.shape[dim]


from braze import ops  # noqa: E402 - the op library is built on Tensor; methods above call it
