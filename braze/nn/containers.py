"""PyTorch's parameter and module containers: ``Parameter``, ``ModuleList``, ``ModuleDict``,
``ParameterList`` and ``ParameterDict``.

A braze Module finds its parameters and sub-modules in its public attributes (see
:mod:`braze.nn.module`), and so does ``braze.jit`` when it guards what a step reads. So a
container keeps each entry as a public attribute of its own named by the entry's key:
``"0"``, ``"1"``... in a list, the key in a dict (PyTorch's ``_modules`` does the same).
Held as ``self.layers``, a ModuleList's entries are found and named as PyTorch names them,
``layers.0.weight``; ``train()``, ``eval()``, ``to()``, ``state_dict()`` and
``functional_call`` reach them as any other attribute.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from braze import ops
from braze.nn.module import Module
from braze.tensor import Tensor, was_trainable


class _ParameterType(type):
    def __instancecheck__(cls, value: Any) -> bool:
        # Any leaf tensor a module trains (or froze) is a parameter to braze: see Parameter.
        return isinstance(value, Tensor) and value.is_leaf and (value.requires_grad or was_trainable(value))


class Parameter(metaclass=_ParameterType):
    """``torch.nn.Parameter(data, requires_grad=True)``: a new leaf tensor over ``data``'s
    values (an empty float32 tensor without data) that a Module holding it registers as a
    parameter. braze registers any tensor that requires grad, so a Parameter is a plain
    ``Tensor``; ``isinstance(t, Parameter)`` holds for every leaf tensor that requires grad
    or was made to and frozen since. With ``requires_grad=False`` it is a frozen parameter:
    saved in ``state_dict`` but left out of ``parameters()`` (PyTorch lists it there too)."""

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Tensor:
        parameter = (ops.zeros((0,)) if data is None else ops.as_tensor(data)).detach()
        if not parameter.dtype.is_float:
            if requires_grad:
                raise TypeError(f"Parameter: only floating tensors can require gradients, not {parameter.dtype.name}")
            return parameter
        # Made trainable first, then frozen if asked: a frozen one stays in its module's state.
        return parameter.requires_grad_(True).requires_grad_(requires_grad)


def _as_parameter(value: Any) -> Any:
    """A value of a ParameterList or ParameterDict: a tensor as a parameter (one already
    is kept, identity included, as an optimizer may hold it); other values as they are."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _as_module(container: str, value: Any) -> Module:
    if not isinstance(value, Module):
        raise TypeError(f"{container}: {type(value).__name__} is not a Module")
    return value


class _Entries(Module):
    """Entries held as public attributes under their keys, in ``_keys``'s order."""

    def __init__(self) -> None:
        super().__init__()
        self._keys: list[str] = []

    def _put(self, key: str, value: Any) -> None:
        key = str(key)
        if key not in self._keys:
            # A key may not hide what the container is: an attribute or method of its own.
            if key.startswith("_") or "." in key or not key or hasattr(self, key):
                raise KeyError(
                    f"{type(self).__name__}: {key!r} cannot be a key: it is empty, has a '.', starts with '_' "
                    "or names an attribute of the container"
                )
            self._keys.append(key)
        vars(self)[key] = value

    def _drop(self, key: str) -> Any:
        self._keys.remove(key)
        return vars(self).pop(key)

    def _values(self) -> list[Any]:
        return [vars(self)[key] for key in self._keys]

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        inside = "".join(f"\n  ({key}): {vars(self)[key]!r}" for key in self._keys)
        return f"{type(self).__name__}({inside}\n)" if inside else f"{type(self).__name__}()"


class _List(_Entries):
    """A list whose item ``i`` is the attribute ``str(i)``; ``_entry`` checks or converts an item."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def _entry(self, value: Any) -> Any:
        raise NotImplementedError

    def _rewrite(self, values: list[Any]) -> None:
        """Hold ``values`` as items 0, 1... afresh, so that the attributes keep the list's order."""
        for key in list(self._keys):
            self._drop(key)
        for i, value in enumerate(values):
            self._put(str(i), value)

    def _index(self, index: int) -> int:
        index = operator.index(index)  # a TypeError for "1" or 1.0, as a list's (not a missing key)
        if not -len(self) <= index < len(self):
            raise IndexError(f"{type(self).__name__}: index {index} is out of range for {len(self)} items")
        return index % len(self)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return type(self)(self._values()[index])
        return vars(self)[str(self._index(index))]

    def __setitem__(self, index: int, value: Any) -> None:
        self._put(str(self._index(index)), self._entry(value))

    def __delitem__(self, index: int | slice) -> None:
        values = self._values()
        del values[index if isinstance(index, slice) else self._index(index)]
        self._rewrite(values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values())

    def __iadd__(self, values: Iterable[Any]) -> _List:
        return self.extend(values)

    def __add__(self, other: Iterable[Any]) -> _List:
        return type(self)([*self, *other])

    def append(self, value: Any) -> _List:
        self._put(str(len(self)), self._entry(value))
        return self

    def extend(self, values: Iterable[Any]) -> _List:
        for value in values:
            self.append(value)
        return self

    def insert(self, index: int, value: Any) -> None:
        values = self._values()
        values.insert(index, self._entry(value))
        self._rewrite(values)

    def pop(self, index: int = -1) -> Any:
        value = self[index]
        del self[index]
        return value


class _Dict(_Entries):
    """A dict whose entry ``key`` is the attribute ``key``; ``_entry`` checks or converts a value."""

    def __init__(self, values: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None) -> None:
        super().__init__()
        if values is not None:
            self.update(values)

    def _entry(self, value: Any) -> Any:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:
            raise KeyError(key)
        return vars(self)[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._put(key, self._entry(value))

    def __delitem__(self, key: str) -> None:
        if key not in self._keys:
            raise KeyError(key)
        self._drop(key)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._keys))

    def keys(self) -> list[str]:
        return list(self._keys)

    def values(self) -> list[Any]:
        return self._values()

    def items(self) -> list[tuple[str, Any]]:
        return list(zip(self._keys, self._values(), strict=True))

    def get(self, key: str, default: Any = None) -> Any:
        return vars(self)[key] if key in self._keys else default

    def pop(self, key: str) -> Any:
        value = self[key]
        self._drop(key)
        return value

    def clear(self) -> None:
        for key in list(self._keys):
            self._drop(key)

    def update(self, values: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        # A ModuleDict or ParameterDict is a mapping too (PyTorch's update takes one): iterated,
        # it would give its keys alone.
        pairs = values.items() if isinstance(values, (Mapping, _Dict)) else values
        for key, value in pairs:
            self[key] = value


class ModuleList(_List):
    """``torch.nn.ModuleList``: modules in a list (``append``, ``extend``, ``insert``,
    ``pop``, indexing, slicing, ``len``, iteration), registered with the module that holds
    it: ``self.layers = ModuleList(...)`` names their parameters ``layers.0.weight``."""

    def _entry(self, value: Any) -> Module:
        return _as_module("ModuleList", value)


class ModuleDict(_Dict):
    """``torch.nn.ModuleDict``: modules by name, in insertion order (``self.heads =
    ModuleDict({"a": ...})`` names their parameters ``heads.a.weight``). A key may not be
    empty, hold a '.', start with '_' (braze registers public attributes only) or name an
    attribute of the container (``"training"``, ``"forward"``...)."""

    def _entry(self, value: Any) -> Module:
        return _as_module("ModuleDict", value)


class ParameterList(_List):
    """``torch.nn.ParameterList``: tensors in a list, each made a :class:`Parameter` unless
    it is one already, registered as ``name.0``, ``name.1``..."""

    def _entry(self, value: Any) -> Any:
        return _as_parameter(value)


class ParameterDict(_Dict):
    """``torch.nn.ParameterDict``: tensors by name, each made a :class:`Parameter` unless
    it is one already; keys as :class:`ModuleDict`'s. As PyTorch's, a plain dict's entries
    are added in the order of their keys (an ``OrderedDict``'s, a ParameterDict's or
    pairs' in theirs)."""

    def _entry(self, value: Any) -> Any:
        return _as_parameter(value)

    def update(self, values: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        # PyTorch sorts a plain dict's keys: they order parameters(), which an optimizer's
        # state follows by position, and state_dict().
        if isinstance(values, Mapping) and not isinstance(values, OrderedDict):
            values = sorted(values.items(), key=lambda item: item[0])
        super().update(values)

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, set to ``default`` (made a parameter) first if it has none."""
        if key not in self:
            self[key] = default
        return self[key]
