"""A compiled graph loaded into the process: one ctypes call runs a whole step."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import weakref
from collections.abc import Sequence

import numpy as np

from braze.backends.cpu import collectives
from braze.backends.cpu.emit import ModulePlan, scratch_layout
from braze.backends.cpu.loader import Library
from braze.ir.graph import Graph

# BRAZE_GUARD=1 surrounds every output buffer and the arena with guard bytes and checks
# them after each call: a debugging aid for code generation (a kernel writing out of bounds).
GUARD = os.environ.get("BRAZE_GUARD") == "1"
_GUARD_BYTES = 256
_PATTERN = 0xA5


def _guarded(shape: tuple[int, ...], dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    raw = np.full(size + 2 * _GUARD_BYTES, _PATTERN, dtype=np.uint8)
    return raw[_GUARD_BYTES : _GUARD_BYTES + size].view(dtype).reshape(shape), raw


def aligned_zeros(size: int) -> np.ndarray:
    """``size`` zero bytes at a 64-byte boundary (MemoryError, naming the size, when the
    system has not that much)."""
    try:
        raw = np.zeros(size + 64, dtype=np.uint8)
    except MemoryError:
        raise MemoryError(f"braze: cannot allocate {size:,} bytes ({size / 2**30:.1f} GiB) of kernel scratch") from None
    offset = -raw.ctypes.data % 64
    return raw[offset : offset + size]


def _check(guards: list[tuple[int, np.ndarray]], arena_guard: np.ndarray, entry: str) -> None:
    for k, raw in guards:
        if (raw[:_GUARD_BYTES] != _PATTERN).any() or (raw[-_GUARD_BYTES:] != _PATTERN).any():
            raise RuntimeError(f"{entry}: a kernel wrote outside output buffer {k}")
    if (arena_guard != _PATTERN).any():
        raise RuntimeError(f"{entry}: a kernel wrote past the end of the temporary arena")


# Pause loops a thread spins through for new work before it sleeps (libgomp's
# GOMP_SPINCOUNT): tens of microseconds, enough to span the gap between one parallel kernel
# of a step and the next. Waking a sleeping thread took about 40 us on a 2-core virtual
# Xeon, as long as a 48-head attention product. nanoGPT's jitted step there: 36.5 ms
# sleeping at once, 32 ms with 3,000 spins, 31.3 ms with 10,000; beside a process spinning
# on one of the two cores 51, 58 and 76 ms (libgomp's own 300,000 made LeNet's step 4-80x
# slower beside busy processes).
SPIN_BEFORE_SLEEP = 3000


def openmp_defaults(cores: int) -> None:
    """Thread settings for the OpenMP runtime, which reads them once, when the first kernel
    library loads it; a user's own OMP_WAIT_POLICY, GOMP_SPINCOUNT and OMP_NUM_THREADS are
    kept. Threads waiting for work spin briefly, then sleep (``SPIN_BEFORE_SLEEP``): beside
    busy processes on two cores, a thread spinning for milliseconds held the core its
    partner needed for a time slice, and the jitted LeNet step went from about 4 ms to
    15-320 ms (3.7-8.5 ms with passive waiting). As many threads as the cores this process
    may use (affinity and cgroup quota)."""
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "passive"
        os.environ.setdefault("GOMP_SPINCOUNT", str(SPIN_BEFORE_SLEEP))
    os.environ.setdefault("OMP_NUM_THREADS", str(cores))


# Output buffers a call may take back from the calls before once nothing else holds them,
# up to this many bytes an executable (two per result: a step's state is held until the
# next step's replaces it).
RECYCLED_BYTES = 64 << 20


def _references(entry: tuple[np.ndarray, int]) -> int:
    """The references to an entry's buffer, counted the same way wherever it is asked."""
    buffer = entry[0]
    return sys.getrefcount(buffer)


# What ``_references`` says of a buffer that only its entry holds: measured, not assumed,
# since what a call's argument and a local variable count differs between Python versions.
_UNHELD = _references((np.empty(0), 0))


class _Addresses:
    """The addresses of the buffers that executables gave out, by the buffers' identity,
    held weakly: a step's state comes back as the next call's arguments (to this
    executable or another: a training step's parameters to the evaluation's), whose
    addresses NumPy would take a microsecond each to tell."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[weakref.ref, int]] = {}

    def note(self, buffer: np.ndarray, address: int) -> None:
        key = id(buffer)  # dropped as the buffer dies, before its identity can be reused
        self._known[key] = (weakref.ref(buffer, lambda _: self._known.pop(key, None)), address)

    def of(self, array: np.ndarray) -> int:
        found = self._known.get(id(array))
        return found[1] if found is not None and found[0]() is array else array.ctypes.data


_ADDRESSES = _Addresses()


class _Spares:
    """The buffers an executable gave out for one result, with their addresses: a call takes
    back one nothing else holds any more (the step's state that the next step's replaced),
    so a training step neither allocates its results (whose pages, returned to the system
    by the allocator, cost a page fault each time: 372 a GPT step) nor asks NumPy for their
    addresses, which takes a microsecond each."""

    __slots__ = ("held", "keep")

    def __init__(self, keep: bool) -> None:
        self.held: list[tuple[np.ndarray, int]] = []
        self.keep = keep  # within the executable's RECYCLED_BYTES

    def take(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[np.ndarray, int]:
        for entry in self.held:
            if _references(entry) == _UNHELD:  # a tensor, a view or a caller holding it adds one
                return entry
        buffer = np.empty(shape, dtype)
        entry = (buffer, buffer.ctypes.data)
        _ADDRESSES.note(buffer, entry[1])
        if self.keep:
            self.held = [*self.held[-1:], entry]
        return entry


class CpuExecutable:
    target = "cpu"

    def __init__(self, graph: Graph, plan: ModulePlan, library: Library) -> None:
        self.graph = graph
        self.plan = plan
        self.library = library  # held: the library is unloaded when its last executable goes
        self._library = library.cdll
        self._entry = getattr(self._library, plan.entry)
        self._entry.restype = None
        self._entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        if plan.collectives:
            collectives.install(self._library)
        # Kernels' scratch buffers, made on the first call and freed with the executable.
        self._scratch: list[np.ndarray] | None = None
        self._scratch_pointers = (ctypes.c_void_p * max(len(plan.scratch), 1))()
        # One call at a time: the arena, the scratch and the argument arrays are the executable's.
        self._lock = threading.Lock()
        self._params = (ctypes.c_void_p * max(len(graph.params), 1))()
        self._outputs = (ctypes.c_void_p * max(len(plan.buffers), 1))()
        raw = np.empty(plan.arena_bytes + 64 + _GUARD_BYTES, dtype=np.uint8)
        offset = -raw.ctypes.data % 64
        self._arena = raw[offset : offset + plan.arena_bytes + _GUARD_BYTES]
        self._arena_guard = self._arena[plan.arena_bytes :]
        self._arena_pointer = self._arena.ctypes.data
        self._param_types = [(p.aval.shape, p.aval.dtype.numpy) for p in graph.params]
        # The parameters whose buffers the kernels overwrite with a result (donated ones):
        # callers hand over a buffer nobody else holds there (``lazy.run``, ``braze.jit``).
        self.overwritten = frozenset(plan.in_place.values())
        self._overwrites = [i in self.overwritten for i in range(len(graph.params))]
        # Overwritten parameters that are also results (a value returned as it was given,
        # x.T.T, beside x's update): their old value is copied out before the kernels run.
        self._returned_overwritten = sorted(
            {out.index for out in plan.outputs if out.kind == "param" and out.index in self.overwritten}
        )
        # The arrays of the last call, whose checks and addresses a call given the same
        # arrays skips (an array's shape, dtype and address never change), held weakly: an
        # executable holding a buffer would count as one more holder of it, and a donated
        # buffer that someone else holds is copied rather than overwritten.
        self._last_args: list[weakref.ref | None] = [None] * len(graph.params)
        self._spares: list[_Spares] = []
        budget = RECYCLED_BYTES
        for k, (shape, dtype) in enumerate(plan.buffers):
            nbytes = 2 * int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            keep = k not in plan.in_place and nbytes <= budget
            budget -= nbytes if keep else 0
            self._spares.append(_Spares(keep))
        self._seconds = (
            (ctypes.c_double * max(plan.kernels, 1)).in_dll(self._library, f"{plan.entry}_seconds")
            if plan.profiled
            else None
        )

    def kernel_seconds(self) -> list[tuple[str, float]]:
        """Each kernel's label and the seconds spent in it over all calls so far; the graph
        must have been compiled with BRAZE_PROFILE=1."""
        if self._seconds is None:
            raise RuntimeError("kernel times are recorded only when compiled with BRAZE_PROFILE=1")
        return list(zip(self.plan.labels, self._seconds[: self.plan.kernels], strict=True))

    def _make_scratch(self) -> None:
        """A buffer of its own for each kept scratch buffer, and one region for all the
        temporaries, each call's laid side by side from its start (ScratchSlot)."""
        threads = int(ctypes.CFUNCTYPE(ctypes.c_int64)(("braze_max_threads", self._library))())
        kept, offsets, region = scratch_layout(self.plan.scratch, threads)
        self._scratch = []
        for k, nbytes in kept.items():
            self._scratch.append(aligned_zeros(nbytes))
            self._scratch_pointers[k] = self._scratch[-1].ctypes.data
        self._scratch.append(aligned_zeros(region))
        for k, offset in offsets.items():
            self._scratch_pointers[k] = self._scratch[-1].ctypes.data + offset

    def __call__(self, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        with self._lock:
            return self._call(args)

    run = __call__  # its memory is the host's

    def _call(self, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        if len(args) != len(self._param_types):
            raise ValueError(f"the graph takes {len(self._param_types)} arguments, got {len(args)}")
        arrays, last, refs, overwrites = [], self._last_args, [], self._overwrites
        for i, (arg, (shape, dtype)) in enumerate(zip(args, self._param_types, strict=True)):
            ref = last[i]
            # The last call's array (a parameter updated in place): checked, its address set.
            if ref is not None and ref() is arg and (not overwrites[i] or arg.flags.writeable):
                arrays.append(arg)
                refs.append(ref)
                continue
            array = arg if (arg.dtype == dtype and arg.flags.c_contiguous) else np.ascontiguousarray(arg, dtype)
            if array.shape != shape:
                raise ValueError(f"argument {i} has shape {array.shape}, the graph expects {shape}")
            if overwrites[i] and not array.flags.writeable:  # read-only memory is never written: a copy is
                array = np.array(array)
            arrays.append(array)
            refs.append(weakref.ref(array))
            self._params[i] = _ADDRESSES.of(array)
        self._last_args = refs
        kept = {i: arrays[i].copy() for i in self._returned_overwritten} if self._returned_overwritten else None
        buffers, guards = [], []
        for k, (shape, dtype) in enumerate(self.plan.buffers):
            target = self.plan.in_place.get(k)
            if target is not None:
                buffers.append(arrays[target])
                self._outputs[k] = self._params[target]  # the input's address, read above
                continue
            if GUARD:
                buffer, guard = _guarded(shape, dtype)
                guards.append((k, guard))
                address = buffer.ctypes.data
            else:
                buffer, address = self._spares[k].take(shape, dtype)
            buffers.append(buffer)
            self._outputs[k] = address
        if GUARD:
            self._arena_guard[:] = _PATTERN
        if self._scratch is None:
            self._make_scratch()
        self._entry(self._params, self._outputs, self._arena_pointer, self._scratch_pointers)
        collectives.raise_failure()
        if GUARD:
            _check(guards, self._arena_guard, self.plan.entry)
        results = []
        for out in self.plan.outputs:
            if out.kind == "param":
                results.append(kept[out.index] if kept and out.index in kept else arrays[out.index])
            elif out.kind == "constant":
                results.append(out.array.copy())
            else:
                results.append(buffers[out.index])
        return results
