"""The CPU's element emitter: the C-family one (``cstyle``) with what the CPU's kernels add:
the target they are for, the tiling choices an autotuner may time (``choice``), and the
scratch buffers a kernel takes from its executable."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from braze.backends.cpu.target import CpuTarget
from braze.backends.cstyle import CEmitter
from braze.ir.graph import Node
from braze.ir.primitive import Primitive

_C_SIZES = {"float": 4, "double": 8, "int32_t": 4, "int64_t": 8, "uint16_t": 2}
# Below this many multiply-adds a kernel's tiling choices are not timed: they differ by
# microseconds, less than timing them costs (every op-table and fuzzer shape is below it).
AUTOTUNE_MIN_WORK = 1 << 21


def whole_cache_lines(nbytes: int) -> int:
    """``nbytes`` rounded up to whole 64-byte cache lines: where a buffer placed after
    another starts (the arena's loop buffers, the shared scratch's temporaries)."""
    return -(-nbytes // 64) * 64


class ScratchBuffer(NamedTuple):
    """A kernel's scratch array (Emitter.scratch_buffer)."""

    ctype: str
    name: str
    nbytes: int
    per_thread: bool
    temporary: bool


class Emitter(CEmitter):
    """The body of one CPU kernel for ``target``, with the autotuner's ``tuning`` if any."""

    def __init__(
        self,
        rules: Mapping[Primitive, Any],
        inputs: dict[int, str],
        constants: Callable[[Node], str],
        target: CpuTarget,
        indent: str = "    ",
        tuning: dict[str, int] | None = None,
    ) -> None:
        super().__init__(rules, inputs, constants, indent)
        self.target = target
        self.tuning = tuning or {}  # the autotuner's pick for each choice below, by name
        self.menu: dict[str, int] = {}  # the choices worth timing: how many options each has
        self.choices = 0
        self.menu_work = 0  # the multiply-adds of the biggest choice offered
        self.scratch: list[ScratchBuffer] = []
        self.preamble: list[str] = []  # top-level C the kernel's function needs before it (guarded)
        self.keep_branches = False  # compile the kernel without if-conversion (emit.py says why)
        # The lowering's branches all enclose loops (none is inside an innermost loop, the only
        # ones if-conversion touches), so its "if" lines need not turn if-conversion off.
        self.branches_enclose_loops = False

    def scratch_buffer(
        self, ctype: str, name: str, count: int, per_thread: bool = False, temporary: bool = False
    ) -> None:
        """``name``: a scratch array of ``count`` elements (that many per thread when
        ``per_thread``), owned by the executable and passed to the kernel: zeroed once, when
        the executable is made, then kept between calls, so a kernel that always writes the
        same positions finds the rest still zero, and a big buffer is not faulted in again
        every step. Kernels allocate nothing themselves. ``temporary``: the kernel writes
        every element before it reads it, on every call, so the buffer is one region that
        all the executable's kernels share (they run one at a time): the memory is the
        largest kernel's, not the sum of all (200 MB for ResNet-20's step), and what one
        kernel packs lands where the last one's packing left the cache warm."""
        self.scratch.append(ScratchBuffer(ctype, name, count * _C_SIZES[ctype], per_thread, temporary))

    def choice(self, name: str, options: int, work: int) -> int:
        """Which of ``options`` ways to emit something (0, the emitter's own prediction,
        unless the autotuner picked another); the choice is offered for timing only when
        ``work`` (multiply-adds) is big enough for the options to differ measurably."""
        name = f"{name} {self.choices}"
        self.choices += 1
        if options > 1 and work >= AUTOTUNE_MIN_WORK:
            self.menu[name] = options
            self.menu_work = max(self.menu_work, work)
        picked = self.tuning.get(name, 0)
        return (
            picked if type(picked) is int and 0 <= picked < options else 0
        )  # a stale or edited record: the prediction


def pick(condition: str, a: str, b: str, dtype) -> str:
    """``condition ? a : b``; for floats a blend of bits (vmath's braze_pick), since GCC
    vectorizes a chain of float ternaries only where the target has masked operations
    (the max-pool gradient stayed scalar for AVX2), and not always there (a cross
    entropy's clamp of its logits and their row maximum stayed scalar for AVX-512)."""
    if not dtype.is_float:
        return f"({condition} ? {a} : {b})"
    return f"braze_pick{'f' if dtype.itemsize == 4 else ''}({condition}, {a}, {b})"
