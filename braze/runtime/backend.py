"""Backends as registered objects, found through the device (tinygrad's ``Device``, JAX's
platforms): the core asks this registry for the backend of a device and never names one.

A backend says which device kinds it serves and whether it can run here; it compiles a
graph into an executable (its own pass pipeline, with its fusion policy), runs one
primitive eagerly, moves values between the host and its memory, and lowers each
primitive by its lowering table (``register_lowering(primitive, rule, platform=name)``,
as JAX's ``mlir.register_lowering``). Backends serving one device kind share its memory:
NumPy arrays on the CPU.

Each backend registers itself when its package is imported (``import braze`` imports
them all); ``$BRAZE_BACKEND`` picks one by name for the devices it serves.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np

from braze.ir.errors import ConfigError, DeviceError
from braze.ir.graph import Graph
from braze.ir.primitive import PRIMITIVES, Aval, Category, Primitive
from braze.passes import pipeline
from braze.passes.fusion_policy import TARGET_INDEPENDENT, FusionPolicy


class DeviceValue(Protocol):
    """A value in a backend's memory (NumPy arrays are the host's)."""

    aval: Aval

    def numpy(self) -> np.ndarray: ...


class Executable(Protocol):
    """A compiled graph: ``run`` takes and returns values in its backend's memory,
    ``__call__`` NumPy arrays (copied in and out where the memory is not the host's)."""

    graph: Graph

    def run(self, args: Sequence[Any]) -> list[Any]: ...

    def __call__(self, args: Sequence[np.ndarray]) -> list[np.ndarray]: ...


class NotLowered(NamedTuple):
    """A lowering-table entry saying that a backend does not compute a primitive, and why:
    a declared gap (the docs list it), never a forgotten primitive."""

    reason: str


class Backend:
    """What every backend provides; a backend subclasses it and registers an instance.

    ``kinds``: the device kinds it serves. ``priority``: the preferred of several available
    backends of a kind has the highest. ``host_memory``: its values are NumPy arrays.
    ``donates``: an output may be written into the buffer of the input it replaces.
    ``fusion_policy``: its fusion hooks. ``lowerings``: how it computes each primitive
    (what a rule is is the backend's own business; the reference interpreter's are the
    primitives' NumPy twins)."""

    name = ""
    kinds: tuple[str, ...] = ()
    priority = 0
    host_memory = True
    donates = True
    fusion_policy: FusionPolicy = TARGET_INDEPENDENT

    def __init__(self, lowerings: dict[Primitive, Any] | None = None) -> None:
        self._lowerings = {} if lowerings is None else lowerings  # the table its code generator reads

    @property
    def lowerings(self) -> Mapping[Primitive, Any]:
        return self._lowerings

    def register_lowering(self, primitive: Primitive, rule: Any) -> None:
        self._lowerings[primitive] = rule

    def available(self) -> bool:
        """Whether it can run on this machine (its compiler, runtime or device exists)."""
        return True

    @property
    def alignment(self) -> int:
        """Bytes each buffer of its executables starts at (its target description's)."""
        return pipeline.ALIGNMENT

    def optimize(
        self, graph: Graph, verify: bool | None = None, fusion: bool | None = None, dump_dir: str | None = None
    ) -> Graph:
        """``graph`` after this backend's pass pipeline: what ``lower`` is given."""
        return pipeline.run(graph, verify, dump_dir, fusion, self.fusion_policy, self.alignment)[0]

    def lower(self, optimized: Graph) -> Executable:
        """The executable of a graph ``optimize`` returned."""
        raise NotImplementedError(f"the {self.name} backend compiles no graphs")

    def compile(self, graph: Graph) -> Executable:
        return self.lower(self.optimize(graph))

    def apply(self, primitive: Primitive, values: list, attrs: dict, aval: Aval) -> Any:
        """``primitive`` applied at once to values in this backend's memory."""
        raise NotImplementedError(f"the {self.name} backend runs no single ops")

    def upload(self, array: np.ndarray) -> DeviceValue | np.ndarray:
        """``array`` in this backend's memory."""
        return array

    def download(self, value: DeviceValue | np.ndarray) -> np.ndarray:
        """A value of this backend's memory as a NumPy array (copied from a device's)."""
        return value if isinstance(value, np.ndarray) else value.numpy()

    def __repr__(self) -> str:
        return f"<backend {self.name}>"


_BACKENDS: dict[str, Backend] = {}
_HOME: dict[str, Backend] = {}  # per device kind: the backend that runs its eager ops


def register_backend(backend: Backend) -> Backend:
    if backend.name in _BACKENDS:
        raise ValueError(f"backend {backend.name!r} registered twice")
    _BACKENDS[backend.name] = backend
    _HOME.clear()
    return backend


def backends() -> list[Backend]:
    """Every registered backend, the most preferred first."""
    return sorted(_BACKENDS.values(), key=lambda b: -b.priority)


def backend_named(name: str) -> Backend:
    found = _BACKENDS.get(name)
    if found is None:
        raise KeyError(f"no backend named {name!r}; registered: {', '.join(sorted(_BACKENDS))}")
    return found


def register_lowering(primitive: Primitive, rule: Any, platform: str) -> None:
    """How the backend named ``platform`` computes ``primitive``."""
    backend_named(platform).register_lowering(primitive, rule)


def withdraw_lowerings(primitive: Primitive) -> None:
    """Forget how every backend lowers ``primitive`` (one declared for a while, as a test does)."""
    for backend in _BACKENDS.values():
        backend._lowerings.pop(primitive, None)


def missing_lowerings(backend: Backend) -> list[Primitive]:
    """The primitives ``backend`` has no lowering for (nor a reason not to have one)."""
    lowered = backend.lowerings
    return [p for p in PRIMITIVES.values() if p.category is not Category.FUSION and p not in lowered]


def coverage_table() -> str:
    """Which registered backend lowers which primitive, as a Markdown table (the design
    document lists it): "yes", or the reason a backend gives for not lowering one."""
    names = [b.name for b in backends()]
    lines = [f"| primitive | category | {' | '.join(names)} |", "| --- | --- |" + " --- |" * len(names)]
    order = list(Category)
    for primitive in sorted(PRIMITIVES.values(), key=lambda p: (order.index(p.category), p.name)):
        if primitive.category is Category.FUSION:
            continue  # every code generator walks a fusion's computation itself
        cells = [_coverage(b.lowerings.get(primitive)) for b in backends()]
        lines.append(f"| `{primitive.name}` | {primitive.category.value} | {' | '.join(cells)} |")
    return "\n".join(lines)


def _coverage(rule: Any) -> str:
    if rule is None:
        return "**missing**"
    return f"no: {rule.reason}" if isinstance(rule, NotLowered) else "yes"


def _requested() -> str:
    requested = os.environ.get("BRAZE_BACKEND", "").strip().lower()
    if requested and requested not in _BACKENDS:
        expected = " or ".join(repr(name) for name in sorted(_BACKENDS))
        raise ConfigError(f"unknown BRAZE_BACKEND {requested!r}: expected {expected}")
    return requested


def backend_for(kind: str) -> Backend:
    """The backend that compiles the graphs of a device of ``kind``: the one
    ``$BRAZE_BACKEND`` names if it serves that kind, else the preferred available one."""
    requested = _requested()
    serving = [b for b in backends() if kind in b.kinds]
    for backend in serving:
        if backend.name == requested:
            return backend
    for backend in serving:
        if backend.available():
            return backend
    raise DeviceError(f"no available backend serves {kind} devices")


def home_backend(kind: str) -> Backend:
    """The backend that holds the values of a device of ``kind`` and runs its eager ops
    (the preferred one serving it: each backend of a kind uses the kind's memory)."""
    found = _HOME.get(kind)
    return found if found is not None else _find_home(kind)


def _find_home(kind: str) -> Backend:
    serving = [b for b in backends() if kind in b.kinds]
    if not serving:
        raise DeviceError(f"no backend serves {kind} devices")
    _HOME[kind] = serving[0]
    return serving[0]


def kind_available(kind: str) -> bool:
    """Whether some registered backend can run devices of ``kind`` here."""
    return any(kind in b.kinds and b.available() for b in backends())
