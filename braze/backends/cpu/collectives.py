"""Collectives inside a compiled step: the entry function calls the transport back.

A compiled step is one native call, all-reduces included: where the graph has an
``all_reduce``, the entry function calls ``braze_collective`` with the operand's and the
result's buffers, a function pointer that the library is given when it is loaded. It
points at a Python callback handing the buffer to the transport the runtime installed
(MPI), so the generated code needs no MPI headers or libraries and runs, as one replica,
where there is no MPI at all. A failing transport makes the callback return nonzero; the
entry function then stops, and the executable raises the transport's error.
"""

from __future__ import annotations

import ctypes
import math
import threading

import numpy as np

from braze.ir.dtypes import ALL_DTYPES
from braze.ir.graph import Node
from braze.ir.prims.collectives import REDUCE_OPS, transport

# Declared in every translation unit: the parts of a long entry function that call it may
# sit in any of them. Hidden, so that two loaded libraries never share the pointer.
DECLARATION = """\
typedef int (*braze_collective_fn)(int64_t op, int64_t dtype, const void* in, void* out,
                                   const int64_t* shape, int64_t ndim);
extern braze_collective_fn braze_collective __attribute__((visibility("hidden")));
"""
# Defined once, in the unit holding the entry functions.
SUPPORT = """\
braze_collective_fn braze_collective;
void braze_set_collective(braze_collective_fn fn) { braze_collective = fn; }
"""

_SIGNATURE = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_int64),
    ctypes.c_int64,
)


class _Failure(threading.local):
    error: BaseException | None = None


_FAILURE = _Failure()


def _view(address: int | None, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    size = math.prod(shape) * dtype.itemsize
    if size == 0:
        return np.empty(shape, dtype)
    return np.frombuffer((ctypes.c_char * size).from_address(address), dtype).reshape(shape)


def _all_reduce(op: int, dtype: int, source: int, result: int, shape, ndim: int) -> int:
    try:
        dims = tuple(shape[k] for k in range(ndim))
        numpy_dtype = ALL_DTYPES[dtype].numpy
        reduced = transport()(_view(source, dims, numpy_dtype), REDUCE_OPS[op])
        np.copyto(_view(result, dims, numpy_dtype), reduced)
        return 0
    except BaseException as error:  # noqa: BLE001 - it must not unwind through C frames
        _FAILURE.error = error
        return 1


_CALLBACK = _SIGNATURE(_all_reduce)


def install(library: ctypes.CDLL) -> None:
    """Give a loaded library the callback its entry functions call."""
    library.braze_set_collective.argtypes = [_SIGNATURE]
    library.braze_set_collective.restype = None
    library.braze_set_collective(_CALLBACK)


def raise_failure() -> None:
    """Raise the transport's error if a collective of the last call failed."""
    error, _FAILURE.error = _FAILURE.error, None
    if error is not None:
        raise error


def emit_call(node: Node, operand: str, result: str, shape_name: str) -> tuple[str, str]:
    """(the shape array's definition, the entry function's statement) for one all-reduce."""
    dims = ", ".join(str(d) for d in node.shape) or "0"
    definition = f"static const int64_t {shape_name}[{max(len(node.shape), 1)}] = {{{dims}}};"
    op = REDUCE_OPS.index(node.attr("op"))
    dtype = ALL_DTYPES.index(node.dtype)
    call = (
        f"if (braze_collective({op}, {dtype}, (const void*){operand}, (void*){result}, "
        f"{shape_name}, {len(node.shape)})) return;"
    )
    return definition, call
