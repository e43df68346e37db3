"""Module emission: one C function per kernel and an entry function that runs a whole
graph's kernels in order over the buffers chosen by buffer assignment.

``braze_run(params, outputs, arena)`` takes the parameter buffers, the output buffers and
one temporary arena; each kernel result lives at its assigned arena offset, in an output
buffer, or (for a parameter updated in place) in the parameter's own buffer.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from braze.backends.cpu import collectives
from braze.backends.cpu.elemental import Emitter, ScratchBuffer, whole_cache_lines
from braze.backends.cpu.fusion import CPU_FUSION
from braze.backends.cpu.loops import emit_loop_kernel, needs_dims
from braze.backends.cpu.lowering import LOWERINGS
from braze.backends.cpu.rows import emit_row_kernel
from braze.backends.cpu.target import CpuTarget
from braze.backends.cpu.vmath import VECTOR_MATH
from braze.backends.cstyle import BFLOAT16_HELPERS, CLanguage, c_literal, c_type
from braze.backends.layout import Output, lay_out
from braze.ir.dtypes import readable
from braze.ir.graph import Graph, Node
from braze.ir.primitive import ROOTS, Category
from braze.ir.prims.elementwise import pow_
from braze.ir.prims.fusion import fusion, get_element
from braze.ir.prims.sources import constant
from braze.ir.prims.structural import broadcast_in_dim
from braze.ir.text import kernel_label
from braze.passes import pipeline
from braze.passes.buffers import BufferAssignment, assign

_COMMON = """\
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t braze_mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
/* GCC 12 at -O3 -march=native vectorizes (double)(float)x into a plain copy, dropping the
   rounding; an empty asm on the narrowed value keeps the conversion. */
static inline float braze_narrow(double x) {
  float r = (float)x;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __asm__("" : "+x"(r));
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__("" : "+w"(r));
#else
  volatile float v = r;
  r = v;
#endif
  return r;
}
/* Kernels read folded constant arrays through a pointer the optimizer cannot see through:
   GCC 12 with AVX-512 folds the loads of a copy of such an array into vector constants and
   built a wrong one (a 13-value copy of 1 0 1 0 1 0 1 0 1 0 0 0 0 stored 1 0 ... 1 0 1). */
static inline const void* braze_opaque(const void* p) {
#if defined(__GNUC__)
  __asm__("" : "+r"(p));
#endif
  return p;
}
/* Where the compiler miscompiles permutations of 512-bit double vectors, modules prefer
   256-bit vectors (compiler.py); a kernel of flat loops over 4-byte values, which permute
   nothing, asks for the full width back (a GELU's erf: 25% quicker on AVX-512). */
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#define BRAZE_WIDE_VECTORS __attribute__((target("prefer-vector-width=512")))
#else
#define BRAZE_WIDE_VECTORS
#endif
static inline double braze_clock(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
#ifdef _OPENMP
#include <omp.h>
static inline int64_t braze_threads(void) { return omp_get_max_threads(); }
static inline int64_t braze_thread(void) { return omp_get_thread_num(); }
#else
static inline int64_t braze_threads(void) { return 1; }
static inline int64_t braze_thread(void) { return 0; }
#endif
static inline float braze_uniform32(uint64_t key, uint64_t i) {
  return (float)(braze_mix(braze_mix(key) + i) >> 40) * 0x1p-24f;
}
static inline double braze_uniform64(uint64_t key, uint64_t i) {
  return (double)(braze_mix(braze_mix(key) + i) >> 11) * 0x1p-53;
}
"""


_STREAM = """\
/* n floats to dst with non-temporal stores where dst allows (a whole number of aligned
   vectors), else a plain copy; a thread calls braze_fence() after its last one. GCC's
   builtins, not <immintrin.h>, whose parsing took a fifth of a small module's compile. */
#if defined(__GNUC__) && !defined(__clang__)
static inline void braze_stream(float* dst, const float* src, int64_t n) {
  if (((uintptr_t)dst & (sizeof(braze_vf32) - 1)) == 0 && n % BRAZE_F32_LANES == 0) {
    for (int64_t i = 0; i < n; i += BRAZE_F32_LANES) {
      braze_vf32 v;
      memcpy(&v, src + i, sizeof(v));
      STREAM_STORE(dst + i, v);
    }
  } else {
    memcpy(dst, src, sizeof(float) * (size_t)n);
  }
}
static inline void braze_fence(void) { __builtin_ia32_sfence(); }
#else
"""

_PLAIN_STREAM = """\
static inline void braze_stream(float* dst, const float* src, int64_t n) {
  memcpy(dst, src, sizeof(float) * (size_t)n);
}
static inline void braze_fence(void) {}
"""

# GCC's non-temporal store of one float vector, per vector width.
_STREAM_STORES = {64: "__builtin_ia32_movntps512", 32: "__builtin_ia32_movntps256", 16: "__builtin_ia32_movntps"}


# GCC's fused multiply-add of one x86 vector, by element type and vector bytes, and the
# macro that says the target has it.
_X86_VECTOR_FMA = {
    ("f32", 64): ("__AVX512F__", "__builtin_ia32_vfmaddps512_mask(a, b, c, (unsigned short)-1, 4)"),
    ("f64", 64): ("__AVX512F__", "__builtin_ia32_vfmaddpd512_mask(a, b, c, (unsigned char)-1, 4)"),
    ("f32", 32): ("__FMA__", "__builtin_ia32_vfmaddps256(a, b, c)"),
    ("f64", 32): ("__FMA__", "__builtin_ia32_vfmaddpd256(a, b, c)"),
    ("f32", 16): ("__FMA__", "__builtin_ia32_vfmaddps(a, b, c)"),
    ("f64", 16): ("__FMA__", "__builtin_ia32_vfmaddpd(a, b, c)"),
}
_NEON_FMA = {"f32": ("float32x4_t", "vfmaq_f32"), "f64": ("float64x2_t", "vfmaq_f64")}


def _vector_fma(short: str, scalar: str, nbytes: int, lanes: int) -> str:
    """``braze_fmav32(a, b, c)`` (``64`` for doubles): a * b + c of braze's vectors, fused
    where the target can (clang's elementwise builtin, GCC's x86 builtins, NEON's), else a
    product and a sum, as vmath.py's ``braze_fmaf`` is for scalars; ``braze_fmav32s(a, s,
    c)`` takes a scalar ``s`` for ``b``. The modules are compiled with -ffp-contract=off
    (compiler.py), so that elementwise code rounds each product as eager mode does; the
    accumulations of matrix products and convolutions ask for these (tiles.accumulate)."""
    vector, name = f"braze_v{short}", f"braze_fmav{short[1:]}"
    x86 = _X86_VECTOR_FMA.get((short, nbytes))
    neon_type, neon = _NEON_FMA[short]
    branches = [
        "#if defined(__clang__) && defined(BRAZE_ELEMENTWISE_FMA)",
        "  return __builtin_elementwise_fma(a, b, c);",
    ]
    if x86:
        branches += [f"#elif !defined(__clang__) && defined(__x86_64__) && defined({x86[0]})", f"  return {x86[1]};"]
    if nbytes == 16:
        branches += [
            "#elif !defined(__clang__) && defined(__aarch64__)",
            f"  return ({vector}){neon}(({neon_type})c, ({neon_type})a, ({neon_type})b);",
        ]
    branches += ["#else", "  return a * b + c;", "#endif"]
    body = "\n".join(branches)
    broadcast = ", ".join(["s"] * lanes)
    return (
        f"static inline __attribute__((always_inline)) {vector} {name}({vector} a, {vector} b, {vector} c) {{\n"
        f"{body}\n}}\n"
        f"static inline __attribute__((always_inline)) {vector} {name}s({vector} a, {scalar} s, {vector} c) {{\n"
        f"  return {name}(a, ({vector}){{{broadcast}}}, c);\n}}\n"
    )


def fma_helpers(target: CpuTarget) -> str:
    """The fused multiply-adds of contractions' accumulations (``tiles.accumulate``) on
    ``target``'s vectors (whose types the prelude declares before them)."""
    arm = "#if !defined(__clang__) && defined(__aarch64__)\n#include <arm_neon.h>\n#endif\n"
    clang = (  # (without the instruction it would call fmaf for each lane)
        "#if defined(__clang__) && defined(__has_builtin) && (defined(__FMA__) || defined(__ARM_FEATURE_FMA))\n"
        "#if __has_builtin(__builtin_elementwise_fma)\n#define BRAZE_ELEMENTWISE_FMA 1\n#endif\n#endif\n"
    )
    return (
        (arm if target.vector_bytes == 16 else "")
        + clang
        + _vector_fma("f32", "float", target.vector_bytes, target.lanes(4))
        + _vector_fma("f64", "double", target.vector_bytes_for(8), target.lanes(8))
    )


def prelude(target: CpuTarget) -> str:
    """What every generated module starts with: helpers, and vector types as wide as the
    target's registers. The target's features are kept in the library as a string, so a
    library can be checked against a host before it is loaded."""
    store = _STREAM_STORES.get(target.vector_bytes) if target.level.startswith("x86-64") else None
    stream = _STREAM.replace("STREAM_STORE", store) + _PLAIN_STREAM + "#endif\n" if store else _PLAIN_STREAM
    vectors = (
        f"typedef float braze_vf32 __attribute__((vector_size({target.vector_bytes})));\n"
        f"typedef double braze_vf64 __attribute__((vector_size({target.vector_bytes_for(8)})));\n"
        f"#define BRAZE_F32_LANES {target.lanes(4)}\n"
    )
    record = f"{target.macros_digest} {' '.join(sorted(target.features))}"
    marker = f'__attribute__((used)) static const char braze_target_features[] = "{FEATURES_MARKER}{record}";\n'
    fused = fma_helpers(target)
    return _COMMON + BFLOAT16_HELPERS.format(fn="static inline") + VECTOR_MATH + vectors + fused + stream + marker


FEATURES_MARKER = "braze-target:"

# The CPU's C: kernels are plain functions of host pointers. noinline: each kernel's
# restrict pointers hold only within that kernel; inlined into the entry function, GCC 12
# let a kernel read an output of the kernel before it ahead of its store (a transpose of a
# slice read stale data; found by the random-graph test). Hidden: the kernels of one
# library may sit in several translation units.
C = CLanguage(name="c", source_suffix=".c", kernel='__attribute__((noinline, visibility("hidden")))')


# How many threads a kernel may run on, for sizing per-thread scratch buffers.
_MAX_THREADS = "int64_t braze_max_threads(void) { return braze_threads(); }\n"


def translation_units(preamble: str, plans: list[ModulePlan], units: int) -> list[str]:
    """The C sources of one library holding ``plans``, its kernels spread over at most
    ``units`` translation units of about equal size (compiled in parallel), the entry
    functions in the first."""
    declared = [preamble, collectives.DECLARATION]
    shared = "\n".join([*declared, *(line for p in plans for line in [*p.constants, *p.declarations])])
    kernels = sorted((k for p in plans for k in p.kernel_sources), key=len, reverse=True)
    entries = [_MAX_THREADS, collectives.SUPPORT, *(p.entry_source for p in plans)]
    bins: list[list[str]] = [entries] + [[] for _ in range(max(units, 1) - 1)]
    for kernel in kernels:  # largest first, each to the smallest unit so far
        min(bins, key=lambda b: sum(map(len, b))).append(kernel)
    return ["\n".join([shared, "", *b]) for b in bins if b]


class ScratchSlot(NamedTuple):
    """One scratch buffer of one kernel call: its bytes (per thread when ``per_thread``),
    whether it is ``temporary`` (Emitter.scratch_buffer), and whether it is the first of its
    call's (``opens_call``): one call's temporaries are laid side by side, never shared."""

    nbytes: int
    per_thread: bool
    temporary: bool
    opens_call: bool


def scratch_layout(slots: list[ScratchSlot], threads: int) -> tuple[dict[int, int], dict[int, int], int]:
    """Where ``slots`` live when ``threads`` threads run the kernels: the bytes of each kept
    one (a buffer of its own), the offset of each temporary in the one region they share
    (each call's side by side from its start), and that region's bytes (the largest call's)."""
    kept: dict[int, int] = {}
    offsets: dict[int, int] = {}
    region = end = 0
    for k, slot in enumerate(slots):
        nbytes = slot.nbytes * (threads if slot.per_thread else 1)
        if slot.opens_call:
            end = 0
        if slot.temporary:
            offsets[k] = end
            end += whole_cache_lines(nbytes)
            region = max(region, end)
        else:
            kept[k] = nbytes
    return kept, offsets, region


@dataclass
class ModulePlan:
    """A graph's C code in parts, so that its kernels can be compiled in several translation
    units: each unit holds the prelude, every constant and declaration, and some kernels."""

    entry: str
    constants: list[str] = field(default_factory=list)  # file-scope arrays the kernels read
    declarations: list[str] = field(default_factory=list)  # one per distinct kernel
    kernel_sources: list[str] = field(default_factory=list)  # one definition per distinct kernel, in run order
    entry_source: str = ""  # the entry function (and its timers)
    scratch: list[ScratchSlot] = field(default_factory=list)  # kernels' scratch buffers, call by call
    buffers: list[tuple[tuple[int, ...], np.dtype]] = field(default_factory=list)  # result buffers, by slot
    outputs: list[Output] = field(default_factory=list)
    in_place: dict[int, int] = field(default_factory=dict)  # output buffer -> parameter written in place
    arena_bytes: int = 0
    kernels: int = 0
    labels: list[str] = field(default_factory=list)  # when profiled: what each kernel computes, in run order
    profiled: bool = False  # the entry adds each kernel's seconds to `<entry>_seconds`
    collectives: int = 0  # all-reduces, which call back into the transport


class ConstantPool:
    """File-scope arrays for the (small, folded) non-scalar constants kernels read."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.names: dict[object, str] = {}
        self.lines: list[str] = []

    def __call__(self, node: Node) -> str:
        literal = node.attr("value")
        if literal not in self.names:
            name = f"{self.prefix}_const{len(self.names)}"
            values = ", ".join(
                c_literal(v, node.dtype) for v in readable(literal.array, node.dtype).reshape(-1).tolist()
            )
            self.lines.append(f"static const {c_type(node.dtype)} {name}[{max(literal.array.size, 1)}] = {{{values}}};")
            self.names[literal] = f"((const {c_type(node.dtype)}*)braze_opaque({name}))"
        return self.names[literal]


class KernelSource(NamedTuple):
    """One fusion node's C function: declaration, definition, the scratch buffers it takes
    after its outputs (as Emitter.scratch lists them), the choices the autotuner may time
    (Emitter.menu) and the work they concern (Emitter.menu_work)."""

    declaration: str
    definition: str
    scratch: list[ScratchBuffer]
    menu: dict[str, int]
    menu_work: int


def _flat_narrow_loop(node: Node) -> bool:
    """Whether a kernel is elementwise loops over values of at most 4 bytes, each operand
    read at the element computed or broadcast from a scalar: code in which no vector of
    doubles (or of any 8-byte value) is permuted, whatever the vector width. A float32
    pow works in doubles (vmath's braze_powf), so its kernels keep the module's width."""
    computation: Graph = node.attr("computation")
    if node.attr("kind") != "loop" or needs_dims(computation):
        return False
    return all(
        (n.op.elementwise or n.op in (broadcast_in_dim, constant) or n.op.category is Category.PARAMETER)
        and n.op is not pow_
        and n.dtype.itemsize <= 4
        for n in computation.nodes()
        if n.shape
    )


def emit_kernel(
    name: str, node: Node, pool: ConstantPool, in_place: bool, target: CpuTarget, tuning: dict[str, int] | None = None
) -> KernelSource:
    """The C function computing one fusion node, with the autotuner's ``tuning`` if any."""
    computation: Graph = node.attr("computation")
    restrict = "" if in_place else " restrict"
    params = [f"{C.pointer(c_type(p.dtype), True)}{restrict} in{k}" for k, p in enumerate(computation.params)]
    params += [f"{C.pointer(c_type(o.dtype), False)}{restrict} out{k}" for k, o in enumerate(computation.outputs)]
    em = Emitter(LOWERINGS, {k: f"in{k}" for k in range(len(computation.params))}, pool, target, tuning=tuning)
    outputs = [f"out{k}" for k in range(len(computation.outputs))]
    roots = [n for n in computation.nodes() if n.op.category in ROOTS]
    if not any(output.aval.size for output in computation.outputs):
        pass  # every output is empty: nothing to compute or write
    elif node.attr("kind") == "row":
        emit_row_kernel(em, computation, outputs)
    elif roots:  # a reduction, contraction or window op: the kernel its lowering writes
        LOWERINGS[roots[0].op](em, computation, outputs, roots[0])
    else:
        emit_loop_kernel(em, computation, outputs)
    params += [f"{buffer.ctype}* restrict {buffer.name}" for buffer in em.scratch]
    body = "\n".join(em.lines)
    # GCC 12 at -O3 -march=native miscompiles loops whose branches load memory once it
    # if-converts them (NaN lanes of a branchy copy become 0; found by the random-graph
    # test), so kernels with such branches keep their branches, and so do the kernels
    # whose lowering asks (a convolution's loops over plain arrays, contractions.py).
    branchy = em.keep_branches or (
        not em.branches_enclose_loops and any(line.lstrip().startswith(("if (", "} else")) for line in em.lines)
    )
    attribute = '__attribute__((optimize("no-tree-loop-if-convert"))) ' if branchy else ""
    if target.narrow_doubles and not roots and _flat_narrow_loop(node):
        attribute += "BRAZE_WIDE_VECTORS "
    head = f"{C.kernel} void {name}({', '.join(params) or 'void'})"
    definition = "".join(em.preamble) + f"{attribute}{head} {{\n{body}\n}}\n"
    return KernelSource(f"{head};", definition, em.scratch, em.menu, em.menu_work)


def _writes_in_place_safely(kernel: Node, parameter_index: int, graph: Graph, position: dict[int, int]) -> bool:
    """A donated parameter may be overwritten by an elementwise loop kernel of its own shape
    that reads it only at the element it writes, when no later kernel reads it. A kernel
    of several results (an optimizer's update of a parameter and its moments, sibling
    loops merged) computes them all at an element before it stores any of them
    (``emit_loop_kernel``), so each may replace a parameter it read."""
    source = graph.params[parameter_index]
    if kernel.op is not fusion or kernel.attr("kind") != "loop":
        return False
    computation: Graph = kernel.attr("computation")
    # Every value computed from it, not only its direct readers: a transpose of its double
    # (the other operand of a sum with its update) reads it at other elements, which an
    # earlier element's store would have overwritten.
    reached = {id(computation.params[k]) for k, operand in enumerate(kernel.inputs) if operand is source}
    for node in computation.nodes():
        if node.op.category is Category.PARAMETER or not any(id(i) in reached for i in node.inputs):
            continue
        if not node.op.elementwise or node.shape != source.shape:
            return False
        reached.add(id(node))
    later = [
        n
        for n in graph.nodes()
        if n is not kernel and source in n.inputs and position.get(id(n), -1) >= position[id(kernel)]
    ]
    return not later


def emit_module(
    graph: Graph,
    assignment: BufferAssignment,
    target: CpuTarget,
    entry: str = "braze_run",
    profile: bool = False,
    tunings: dict[int, dict[str, int]] | None = None,
    emitted: dict[tuple, tuple[str, list]] | None = None,
    exported: bool = True,
) -> ModulePlan:
    """``profile``: time every kernel call (BRAZE_PROFILE=1), for finding the slow ones;
    ``tunings``: the autotuner's choices for kernels, by position in the schedule;
    ``emitted``: the C functions of kernels another plan of the library already has (a
    loop's body is a plan of its own that shares them); ``exported``: whether the entry
    is a symbol of the library (a loop body's is called only from within it, so it is
    hidden, declared in the plan, like a kernel)."""
    layout = lay_out(graph, assignment)
    kernels = layout.kernels
    position = {id(k): t for t, k in enumerate(kernels)}
    pool = ConstantPool(entry)
    plan = ModulePlan(
        entry=entry,
        arena_bytes=assignment.peak_bytes,
        kernels=len(kernels),
        labels=[kernel_label(k) for k in kernels] if profile else [],
        profiled=profile,
        buffers=[(r.shape, r.dtype.numpy) for r in layout.results],
        outputs=layout.outputs,
    )
    buffer_of: dict[int, str] = {id(p): f"params[{p.attr('index')}]" for p in graph.params}
    first_position = {}  # a result returned twice may take the donation of its first position
    for k, output in enumerate(graph.outputs):
        first_position.setdefault(id(output), k)
    for slot, result in enumerate(layout.results):
        buffer_of[id(result)] = f"outputs[{slot}]"
        donated = graph.donated.get(first_position[id(result)])
        producer = result.inputs[0] if result.op is get_element else result
        if donated is not None and _writes_in_place_safely(producer, donated, graph, position):
            plan.in_place[slot] = donated
            buffer_of[id(result)] = f"params[{donated}]"
    for node_id, offset in assignment.offsets.items():
        buffer_of.setdefault(node_id, f"(arena + {offset})")
    calls = []
    # One C function per distinct kernel, called where each runs.
    emitted = {} if emitted is None else emitted
    for t, kernel in enumerate(kernels):
        name = f"{entry}_kernel{t}"
        if kernel.attr("kind") == "collective":
            (reduce,) = kernel.attr("computation").outputs
            shape, call = LOWERINGS[reduce.op](
                reduce, buffer_of[id(kernel.inputs[0])], buffer_of[id(kernel)], f"{entry}_reduce{t}_shape"
            )
            pool.lines.append(shape)
            plan.collectives += 1
            calls.append(f"  {call}")
            continue
        if kernel.attr("kind") == "control":
            (loop,) = [n for n in kernel.attr("computation").nodes() if n.op.category is Category.LOOP]
            results = layout.results_of(kernel)
            compile_body = functools.partial(_compile_body, target=target, emitted=emitted)
            calls.append(LOWERINGS[loop.op](plan, f"{entry}_loop{t}", kernel, results, buffer_of, compile_body))
            continue
        results = [r for r in layout.results_of(kernel) if r is not None]
        in_place = any(buffer_of[id(r)].startswith("params[") for r in results)
        tuning = (tunings or {}).get(t)
        # Kernels of one structure (each step of an unrolled loop) differ only in their buffers.
        key = (kernel.attr("computation"), kernel.attr("kind"), in_place, tuple(sorted((tuning or {}).items())))
        if key not in emitted:
            declaration, definition, scratch, *_ = emit_kernel(name, kernel, pool, in_place, target, tuning)
            plan.declarations.append(declaration)
            plan.kernel_sources.append(definition)
            emitted[key] = (name, scratch)
        name, scratch = emitted[key]
        args = [f"(const {c_type(i.dtype)}*){buffer_of[id(i)]}" for i in kernel.inputs]
        args += [f"({c_type(r.dtype)}*){buffer_of[id(r)]}" for r in results]
        for k, buffer in enumerate(scratch):
            args.append(f"({buffer.ctype}*)scratch[{len(plan.scratch)}]")
            plan.scratch.append(ScratchSlot(buffer.nbytes, buffer.per_thread, buffer.temporary, k == 0))
        call = f"{name}({', '.join(args)});"
        if profile:
            call = f"{{ const double start = braze_clock(); {call} {entry}_seconds[{t}] += braze_clock() - start; }}"
        calls.append(f"  {call}")
    timers = [f"double {entry}_seconds[{max(len(kernels), 1)}]"] if profile else []
    plan.constants = [*pool.lines, *plan.constants]  # after them, what loops' bodies declare
    if len(calls) > CALLS_PER_FUNCTION:
        plan.declarations += [f"extern {t};" for t in timers]
        calls = _entry_parts(plan, entry, calls)
    head = f"void {entry}" if exported else f"{C.kernel} void {entry}"
    if not exported:
        plan.declarations.append(f"{head}({_ARGUMENTS});")
    plan.entry_source = "\n".join([*(f"{t};" for t in timers), _function(head, calls or [_UNUSED])])
    return plan


def _compile_body(body: Graph, name: str, target: CpuTarget, emitted: dict) -> ModulePlan:
    """A loop's body as a module plan of its own, entry ``name``: through the pipeline,
    fused as any graph, its kernels' C functions shared with the rest of the library."""
    optimized = pipeline.run(body, policy=CPU_FUSION, alignment=target.alignment)[0]
    buffers = optimized.annotations.get("buffers") or assign(optimized, target.alignment)
    return emit_module(optimized, buffers, target, name, emitted=emitted, exported=False)


def _entry_parts(plan: ModulePlan, entry: str, calls: list[str]) -> list[str]:
    """``calls`` moved into functions of a few calls each, spread over the translation units
    like kernels; the calls of those functions, in order."""
    steps = []
    for k in range(0, len(calls), CALLS_PER_FUNCTION):
        name = f"{entry}_part{len(steps)}"
        plan.declarations.append(f"{C.kernel} void {name}({_ARGUMENTS});")
        plan.kernel_sources.append(_function(f"{C.kernel} void {name}", [_UNUSED, *calls[k : k + CALLS_PER_FUNCTION]]))
        steps.append(f"  {name}(params, outputs, arena, scratch);")
    return steps


# Kernel calls per C function of the entry: the C compiler's time on one function grows
# faster than its length (a 10^5-node chain's 514 calls in one function took GCC 26 s; in
# functions of 32 calls, 3 s).
CALLS_PER_FUNCTION = 32
_ARGUMENTS = "void* const* params, void* const* outputs, char* arena, void* const* scratch"
_UNUSED = "  (void)params; (void)outputs; (void)arena; (void)scratch;"


def _function(head: str, lines: list[str]) -> str:
    body = "\n".join(lines)
    return f"{head}({_ARGUMENTS}) {{\n{body}\n}}\n"
