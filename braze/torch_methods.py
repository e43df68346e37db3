"""PyTorch's tensor methods, where they mean what NumPy's names would or NumPy has no such
name: a PyTorch program's ``x.float()``, ``x.clone()``, ``x.expand(B, -1, -1)``,
``x.gather(1, idx)`` or ``x.max(dim=1).values`` runs as it is written.

PyTorch's ``dim`` and ``keepdim`` keywords are NumPy's ``axis`` and ``keepdims`` on every
reduction (``axis_keywords``). A call that names ``dim`` is PyTorch's reading of the method
whole, where the two libraries differ: ``max``, ``min`` and ``sort`` along ``dim`` give
``(values, indices)``, and ``var`` and ``std`` along ``dim`` divide by N - 1 unless
``correction`` (or ``unbiased=False``) says otherwise. Without ``dim`` they are NumPy's:
``x.max(1)`` is the values, ``x.var()`` and ``x.std()`` divide by N (pass ``correction=1``
for PyTorch's default).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from braze.ir.dtypes import bfloat16, bool_, float32, float64, int32, int64
from braze.ir.errors import DTypeError, ShapeError
from braze.ir.prims import structural


class ValuesIndices(NamedTuple):
    """PyTorch's ``(values, indices)`` of ``max``, ``min`` and ``sort`` along a ``dim``."""

    values: Any
    indices: Any


def axis_keywords(name: str, axis: Any, keepdims: bool, keywords: dict[str, Any]) -> tuple[Any, bool, bool]:
    """(axis, keepdims, whether ``dim`` was given) with PyTorch's ``dim`` and ``keepdim``
    taken out of ``keywords`` as NumPy's ``axis`` and ``keepdims``."""
    named = "dim" in keywords
    if named:
        if axis is not None:
            raise TypeError(f"{name}: got both axis and dim (the same argument, NumPy's and PyTorch's name)")
        axis = keywords.pop("dim")
    if "keepdim" in keywords:
        keepdims = bool(keywords.pop("keepdim"))
    return axis, keepdims, named


def divisor_correction(name: str, ddof: Any, keywords: dict[str, Any], named_dim: bool) -> Any:
    """What ``var`` / ``std`` subtract from the count: NumPy's ``ddof`` (0 by default), or
    PyTorch's ``correction`` / ``unbiased``, whose default, when the call names ``dim`` or
    either of them, is PyTorch's 1."""
    correction = keywords.pop("correction", None)
    unbiased = keywords.pop("unbiased", None)
    given = [n for n, v in (("ddof", ddof), ("correction", correction), ("unbiased", unbiased)) if v is not None]
    if len(given) > 1:
        raise TypeError(f"{name}: got both {given[0]} and {given[1]} (each says what to divide by)")
    if unbiased is not None:
        return 1 if unbiased else 0
    if correction is not None:
        return correction
    if ddof is not None:
        return ddof
    return 1 if named_dim else 0


class TorchMethods:
    """Tensor methods under PyTorch's names (the module docstring says which reading wins)."""

    __slots__ = ()

    # Conversions -----------------------------------------------------------------------

    def float(self) -> Any:
        return self.astype(float32)

    def double(self) -> Any:
        return self.astype(float64)

    def long(self) -> Any:
        return self.astype(int64)

    def int(self) -> Any:
        return self.astype(int32)

    def bool(self) -> Any:
        return self.astype(bool_)

    def bfloat16(self) -> Any:
        return self.astype(bfloat16)

    def half(self) -> Any:
        raise DTypeError("half(): braze has no float16; bfloat16() is its 16-bit float (see braze.autocast)")

    def type_as(self, other: Any) -> Any:
        return self.astype(other.dtype)

    def is_floating_point(self) -> bool:
        return self.dtype.is_float

    def element_size(self) -> int:
        return self.dtype.itemsize

    def nelement(self) -> int:
        return self.size

    # Copies and new tensors --------------------------------------------------------------

    def clone(self) -> Any:
        """A tensor of the same values that gradients flow through (later in-place updates
        of either leave the other as it is)."""
        return structural.reshape.bind(self, new_sizes=tuple(self.shape))  # a new tensor, never self

    # PyTorch's new_* make a tensor of this one's dtype and device unless told others.
    def new_tensor(self, data: Any, *, dtype: Any = None, device: Any = None) -> Any:
        return _ops().tensor(data, dtype=_or(dtype, self.dtype), device=_or(device, self.device))

    def new_full(self, size: Sequence[int], fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
        return _ops().full(tuple(size), fill_value, _or(dtype, self.dtype), _or(device, self.device))

    def new_zeros(self, *size: Any, dtype: Any = None, device: Any = None) -> Any:
        return self.new_full(_sizes(size), 0, dtype=dtype, device=device)

    def new_ones(self, *size: Any, dtype: Any = None, device: Any = None) -> Any:
        return self.new_full(_sizes(size), 1, dtype=dtype, device=device)

    # In place, on tensors outside a gradient computation (``Tensor._assign``) ----------

    def zero_(self) -> Any:
        return self.fill_(0)

    def fill_(self, value: Any) -> Any:
        return self._assign(_ops().full(self.shape, value, self.dtype, self.device))

    def add_(self, other: Any, *, alpha: Any = 1) -> Any:
        return self._assign(self + (other if alpha == 1 else other * alpha))

    def sub_(self, other: Any, *, alpha: Any = 1) -> Any:
        return self._assign(self - (other if alpha == 1 else other * alpha))

    def mul_(self, other: Any) -> Any:
        return self._assign(self * other)

    def div_(self, other: Any) -> Any:
        return self._assign(self / other)

    def pow_(self, exponent: Any) -> Any:
        return self._assign(self**exponent)

    def neg_(self) -> Any:
        return self._assign(-self)

    def abs_(self) -> Any:
        return self._assign(_ops().abs(self))

    def sqrt_(self) -> Any:
        return self._assign(_ops().sqrt(self))

    def exp_(self) -> Any:
        return self._assign(_ops().exp(self))

    def clamp_(self, min: Any = None, max: Any = None) -> Any:  # noqa: A002 - PyTorch's names
        return self._assign(self.clamp(min, max))

    def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Any:
        """Values drawn uniformly from [a, b) (braze's seeded generator, or ``generator``)."""
        drawn = _ops().uniform(self.shape, a, b, self.dtype, generator=generator, device=self.device)
        return self._assign(drawn)

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Any:
        """Values drawn from a normal distribution of ``mean`` and ``std``."""
        drawn = _ops().randn(self.shape, self.dtype, generator=generator, device=self.device)
        return self._assign(drawn * std + mean)

    def copy_(self, source: Any) -> Any:
        """This tensor's values replaced by ``source``'s, broadcast and converted to its dtype."""
        source = _ops().as_tensor(source, like=self)
        return self._assign(_ops().broadcast_to(_ops().astype(source, self.dtype), self.shape))

    # Shapes ----------------------------------------------------------------------------

    def expand(self, *sizes: Any) -> Any:
        """This tensor broadcast to ``sizes``, where -1 keeps an axis's size (PyTorch's
        ``expand``; new axes go in front)."""
        sizes = _sizes(sizes)
        offset = len(sizes) - self.ndim
        if offset < 0:
            raise ShapeError(f"expand: {len(sizes)} sizes for a tensor of rank {self.ndim}")
        if any(s == -1 for s in sizes[:offset]):
            raise ShapeError(f"expand: -1 is not allowed for the new leading axes, got {sizes}")
        return _ops().broadcast_to(self, tuple(self.shape[d - offset] if s == -1 else s for d, s in enumerate(sizes)))

    def expand_as(self, other: Any) -> Any:
        return _ops().broadcast_to(self, other.shape)

    def view_as(self, other: Any) -> Any:
        return _ops().reshape(self, other.shape)

    def reshape_as(self, other: Any) -> Any:
        return _ops().reshape(self, other.shape)

    def tile(self, *dims: Any) -> Any:
        """This tensor repeated ``dims`` times along each axis (``np.tile``; PyTorch's
        ``tile``), fewer ``dims`` than axes counting from the last, more adding axes in front."""
        reps = _sizes(dims)
        x = _ops().reshape(self, (1,) * (len(reps) - self.ndim) + tuple(self.shape))
        return _ops().tensorflow.tile(x, (1,) * (x.ndim - len(reps)) + reps)

    def repeat(self, *repeats: Any, axis: int | None = None) -> Any:
        """NumPy's ``repeat`` with ``axis`` given: each element ``repeats`` times along it.
        Without one the libraries differ (PyTorch's ``repeat`` tiles the whole tensor,
        NumPy's repeats each element of the flattened one), so that is an error naming both."""
        if axis is None:
            raise TypeError(
                "repeat(): PyTorch's repeat tiles the tensor (write x.tile(...)), NumPy's repeats each element "
                "(write x.repeat(n, axis=k), or braze.repeat(x, n) for the flattened tensor)"
            )
        return _ops().tensorflow.repeat(self, *repeats, axis=axis)

    def t(self) -> Any:
        """The transpose of a matrix (a tensor of rank 0 or 1 as it is), as PyTorch's ``t``."""
        if self.ndim > 2:
            raise ShapeError(f"t(): expects a tensor of rank at most 2, got rank {self.ndim}; use x.mT or x.swapaxes")
        return _ops().transpose(self)

    @property
    def mT(self) -> Any:  # noqa: N802 - PyTorch's and the Array API's name
        """The last two axes swapped (a batch of matrices transposed)."""
        if self.ndim < 2:
            raise ShapeError(f"mT: expects a matrix or a batch of them, got a tensor of rank {self.ndim}")
        return _ops().swapaxes(self, -2, -1)

    def movedim(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
        return _ops().shape.moveaxis(self, source, destination, "movedim")

    def narrow(self, dim: int, start: int, length: int) -> Any:
        d = _ops().core.normalize_axis("narrow", dim, self.ndim)
        size = self.shape[d]
        first = start + size if start < 0 else start
        if length < 0:
            raise IndexError(f"narrow: the length must not be negative, got {length}")
        if not 0 <= first <= first + length <= size:  # the error names the start as given
            raise IndexError(f"narrow: {length} elements from {start} do not fit in axis {dim} of size {size}")
        return self[(slice(None),) * d + (slice(first, first + length),)]

    def select(self, dim: int, index: int) -> Any:
        d = _ops().core.normalize_axis("select", dim, self.ndim)
        return self[(slice(None),) * d + (index,)]

    def unbind(self, dim: int = 0) -> tuple[Any, ...]:
        d = _ops().core.normalize_axis("unbind", dim, self.ndim)
        return tuple(self.select(d, i) for i in range(self.shape[d]))

    def flip(self, dims: int | Sequence[int] | None = None, *more: int) -> Any:
        """This tensor reversed along ``dims``, given as one sequence or as ints
        (``flip((0, 1))``, ``flip(dims=[0])``, ``flip(0, 1)``), as PyTorch's ``flip``."""
        if dims is None:
            raise TypeError("flip() missing dims: the axes to reverse (flip(()) reverses none)")
        return _ops().flip(self, _ops().shape.ordered_axes("flip", _sizes((dims, *more)), self.ndim))

    def roll(self, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Any:
        """Elements shifted by ``shifts`` along ``dims``, wrapping around (of the flattened
        tensor when ``dims`` is None)."""
        if dims is None:
            return _ops().reshape(_ops().reshape(self, (self.size,)).roll(shifts, 0), self.shape)
        # A dim may come more than once: its shifts add up, as in PyTorch and NumPy.
        given = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
        axes = [_ops().core.normalize_axis("roll", a, self.ndim) for a in given]
        moves = [shifts] * len(axes) if np.ndim(shifts) == 0 else list(shifts)
        if len(moves) != len(axes):
            raise ShapeError(f"roll: {len(moves)} shifts for {len(axes)} dims")
        out = self
        for d, move in zip(axes, moves, strict=True):
            cut = self.shape[d] - int(move) % self.shape[d] if self.shape[d] else 0
            head = (slice(None),) * d
            out = _ops().concatenate([out[(*head, slice(cut, None))], out[(*head, slice(0, cut))]], d)
        return out

    # Indexing ----------------------------------------------------------------------------

    def gather(self, dim: int, index: Any) -> Any:
        """``out[i][j][k] = x[i][index[i][j][k]][k]`` along ``dim`` (PyTorch's ``gather``):
        ``index`` has this tensor's rank and at most its size on every other axis, and its
        entries lie in ``[0, size)`` (PyTorch's rule: no counting from the end)."""
        d = _ops().core.normalize_axis("gather", dim, self.ndim)
        index = _torch_indices("gather", index, self, d)
        if index.ndim != self.ndim or any(index.shape[a] > self.shape[a] for a in range(self.ndim) if a != d):
            raise ShapeError(
                f"gather: index {index.shape} needs the rank of the tensor {self.shape} and at most its size on "
                f"every axis but {dim}"
            )
        rows = self[tuple(slice(None) if a == d else slice(0, index.shape[a]) for a in range(self.ndim))]
        return _ops().take_along_axis(rows, index, d)

    def index_select(self, dim: int, index: Any) -> Any:
        """The slices at ``index`` (a vector, or a 0-d tensor read as one of length 1, as
        PyTorch's) along ``dim``, each in ``[0, size)``."""
        d = _ops().core.normalize_axis("index_select", dim, self.ndim)
        index = _torch_indices("index_select", index, self, d)
        if index.ndim > 1:
            raise ShapeError(f"index_select: the index must be 1-D, got shape {index.shape}")
        return _ops().take(self, _ops().reshape(index, (index.size,)), d)

    def nonzero(self, *, as_tuple: bool | None = None) -> Any:
        """The positions of the nonzero elements: PyTorch's (count, rank) tensor with
        ``as_tuple=False``, NumPy's tuple of one index tensor per axis with ``as_tuple=True``.
        Without it the libraries differ (PyTorch's default is the tensor, NumPy has only the
        tuple), so it must be given. Their number is read from the values (see boolean-mask
        indexing)."""
        if as_tuple is None:
            raise TypeError(
                "nonzero(): PyTorch returns a (count, rank) tensor, NumPy a tuple of index arrays: "
                "say which with as_tuple=False (PyTorch's) or as_tuple=True (NumPy's)"
            )
        from braze.ops import values

        array = values.read("nonzero", self)
        # PyTorch reads a 0-d tensor as a vector of one element (NumPy refuses it): its tuple
        # has that vector's positions, its tensor (count, 0) rows, the positions' columns cut
        # to the tensor's rank.
        found = np.nonzero(np.atleast_1d(array))
        if as_tuple:
            return tuple(values.constant_like(p.astype(np.int64), self) for p in found)
        return values.constant_like(np.stack(found, axis=1)[:, : array.ndim].astype(np.int64), self)

    def masked_select(self, mask: Any) -> Any:
        """The elements where ``mask`` (broadcast against this tensor) is true, as a 1-D
        tensor (its length is read from the mask: see boolean-mask indexing)."""
        if not isinstance(mask, TorchMethods):  # a constant mask stays one, as in x[mask] (it compiles)
            mask = np.asarray(mask)
        if mask.dtype.kind != "b":  # an integer mask would index by its values
            raise DTypeError(f"masked_select: the mask must be bool, got {mask.dtype.name}")
        shape = _ops().core.broadcast_shapes("masked_select", self.shape, mask.shape)
        widen = np.broadcast_to if isinstance(mask, np.ndarray) else _ops().broadcast_to
        return _ops().broadcast_to(self, shape)[widen(mask, shape)]

    # Arithmetic and comparisons ----------------------------------------------------------

    def pow(self, exponent: Any) -> Any:
        return self**exponent

    def square(self) -> Any:
        return self * self

    def rsqrt(self) -> Any:
        return 1.0 / _ops().sqrt(self)

    def reciprocal(self) -> Any:
        return 1.0 / self

    def neg(self) -> Any:
        return -self

    def sign(self) -> Any:
        return _ops().sign(self)

    def clamp(self, min: Any = None, max: Any = None) -> Any:  # noqa: A002 - PyTorch's names
        if min is None and max is None:
            raise TypeError("clamp: give min, max or both")
        return _ops().clip(self, min, max)

    clip = clamp

    def eq(self, other: Any) -> Any:
        return self == other

    def ne(self, other: Any) -> Any:
        return self != other

    def lt(self, other: Any) -> Any:
        return self < other

    def le(self, other: Any) -> Any:
        return self <= other

    def gt(self, other: Any) -> Any:
        return self > other

    def ge(self, other: Any) -> Any:
        return self >= other

    # PyTorch's logical ops take tensors of any dtype, read as True where nonzero.
    def logical_and(self, other: Any) -> Any:
        return _ops().logical_and(_truth(self, self), _truth(other, self))

    def logical_or(self, other: Any) -> Any:
        return _ops().logical_or(_truth(self, self), _truth(other, self))

    def logical_xor(self, other: Any) -> Any:
        return _truth(self, self) != _truth(other, self)

    def logical_not(self) -> Any:
        return _ops().logical_not(_truth(self, self))

    def isnan(self) -> Any:
        return self != self if self.dtype.is_float else _ops().full(self.shape, False, bool_, self.device)

    def isinf(self) -> Any:
        return _ops().abs(self) == np.inf if self.dtype.is_float else _ops().full(self.shape, False, bool_, self.device)

    def isfinite(self) -> Any:
        return _ops().abs(self) < np.inf if self.dtype.is_float else _ops().full(self.shape, True, bool_, self.device)

    def matmul(self, other: Any) -> Any:
        return _ops().matmul(self, other)

    def mm(self, other: Any) -> Any:
        return _ranked_product("mm", self, other, 2)

    def bmm(self, other: Any) -> Any:
        """Products of two batches of matrices of the same length (PyTorch's ``bmm`` does not
        broadcast; ``matmul`` does)."""
        other = _ops().as_tensor(other, like=self)
        if self.ndim == other.ndim == 3 and self.shape[0] != other.shape[0]:
            raise ShapeError(
                f"bmm: batches of {self.shape[0]} and {other.shape[0]} matrices, shapes {self.shape} and "
                f"{other.shape} (bmm does not broadcast; matmul does)"
            )
        return _ranked_product("bmm", self, other, 3)

    # Reductions --------------------------------------------------------------------------

    def softmax(self, dim: int) -> Any:
        return _ops().softmax(self, dim)

    def log_softmax(self, dim: int) -> Any:
        return _ops().log_softmax(self, dim)

    def logsumexp(self, dim: Any, keepdim: bool = False) -> Any:
        return _ops().logsumexp(self, dim, keepdim)

    def amax(self, dim: Any = None, keepdim: bool = False) -> Any:
        return _ops().max(self, dim, keepdim)

    def amin(self, dim: Any = None, keepdim: bool = False) -> Any:
        return _ops().min(self, dim, keepdim)

    def any(self, dim: Any = None, keepdim: bool = False) -> Any:
        return _ops().sum(_ops().astype(self != 0, int64), dim, keepdim) > 0

    def all(self, dim: Any = None, keepdim: bool = False) -> Any:
        return _ops().sum(_ops().astype(self == 0, int64), dim, keepdim) == 0

    def std(self, axis: Any = None, *, keepdims: bool = False, ddof: Any = None, **keywords: Any) -> Any:
        """The standard deviation: the square root of ``var`` with the same arguments."""
        return zero_safe_root(self.var(axis, keepdims=keepdims, ddof=ddof, **keywords))

    def norm(self, p: Any = 2, dim: Any = None, keepdim: bool = False) -> Any:
        """The vector norm over ``dim`` (all elements when None): p = 2 (or "fro"), 1, inf or -inf."""
        if p in (2, "fro"):
            return zero_safe_root(_ops().sum(self * self, dim, keepdim))
        if p == 1:
            return _ops().sum(_ops().abs(self), dim, keepdim)
        if p in (np.inf, -np.inf):
            return (_ops().max if p > 0 else _ops().min)(_ops().abs(self), dim, keepdim)
        raise ValueError(f"norm: p must be 2, 'fro', 1, inf or -inf, got {p!r}")


def _sizes(sizes: tuple[Any, ...]) -> tuple[int, ...]:
    """Sizes given as ints or as one sequence (``new_zeros(2, 3)``, ``new_zeros((2, 3))``)."""
    if len(sizes) == 1 and not isinstance(sizes[0], (int, np.integer)):
        sizes = tuple(sizes[0])
    return tuple(int(s) for s in sizes)


def _or(given: Any, default: Any) -> Any:
    return default if given is None else given


def zero_safe_root(total: Any, p: Any = 2) -> Any:
    """The p-th root of a sum of p-th powers (a norm's; a variance's square root), whose
    gradient is 0 where it is 0 (a zero vector's norm, a constant sample's std): PyTorch's
    subgradient there, where the root's own, inf, times the sum's, 0, would be NaN."""
    zero = total == 0
    safe = _ops().where(zero, _ops().ones_like(total), total)
    return _ops().where(zero, total, _ops().sqrt(safe) if p == 2 else safe ** (1.0 / p))


def _truth(value: Any, like: Any) -> Any:
    """``value`` as a bool tensor on ``like``'s device: True where it is nonzero (NaN too)."""
    if not isinstance(value, TorchMethods):
        value = np.asarray(value)
    value = _ops().as_tensor(value, like=like)
    return value if value.dtype == bool_ else value != 0


def _torch_indices(op: str, index: Any, x: Any, axis: int) -> Any:
    """``index`` as an integer tensor of positions along ``axis`` of ``x`` in ``[0, size)``:
    PyTorch's gather and index_select do not count from the end, so an eager negative
    index raises as one past the end does (lazy ones cannot be seen: braze.ops.indexing)."""
    indexing = _ops().indexing
    return indexing.checked(op, indexing.index_tensor(op, index, x.device), x.shape[axis], axis, negative=False)


def _ranked_product(op: str, x: Any, y: Any, rank: int) -> Any:
    y = _ops().as_tensor(y, like=x)
    if x.ndim != rank or y.ndim != rank:
        raise ShapeError(f"{op}: expects two tensors of rank {rank}, got shapes {x.shape} and {y.shape}")
    return _ops().matmul(x, y)


def _ops() -> ModuleType:
    """The op library, built on Tensor, whose class these methods join (imported at a call,
    once both exist)."""
    from braze import ops

    return ops
