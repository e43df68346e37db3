"""Fusion policy: which producers join which kernels, and why not when they don't.

``FusionPolicy`` is the target-independent base (XLA's ``InstructionFusion``): every
decision returns a ``Decision``, and a refusal carries a sentence that the dump after the
fusion pass shows, so a missed fusion can be read rather than guessed. A backend whose code
generator has limits of its own overrides the hooks (``should_fuse``, ``epilogue_sum``),
as XLA's CPU and GPU fusion passes override ``ShouldFuse``. The mechanics that carry the
decisions out live in ``fuse.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from braze.ir.graph import Node
from braze.ir.primitive import ROOTS, Category, Primitive
from braze.ir.prims.elementwise import (
    abs_,
    add,
    convert,
    div,
    eq,
    ge,
    gt,
    le,
    lt,
    max_,
    min_,
    mul,
    ne,
    neg,
    relu,
    select,
    sign,
    sub,
)
from braze.ir.prims.fusion import get_element
from braze.ir.prims.indexing import gather
from braze.ir.prims.reductions import reduce_sum
from braze.ir.prims.sources import constant, iota
from braze.ir.prims.structural import broadcast_in_dim, reshape, transpose
from braze.ir.prims.window import scatters_once, select_and_scatter_add
from braze.passes.patterns import splat_value

if TYPE_CHECKING:
    from braze.passes.operand_views import View


@dataclass(frozen=True)
class Decision:
    ok: bool
    reason: str = ""


YES = Decision(True)


def no(reason: str) -> Decision:
    return Decision(False, reason)


# What a fused kernel can compute at any element: the rest are kernels of their own.
_FUSIBLE = frozenset({Category.MOVEMENT, Category.SOURCE})
_FREE_TO_DUPLICATE = frozenset({constant, iota})
_CHEAP_MOVES = frozenset({broadcast_in_dim, reshape, transpose, convert})
# Arithmetic of a few cycles an element, which a memory-bound loop recomputes for less than
# it costs to write the value out and read it back (transcendentals are not among them).
_CHEAP_ARITHMETIC = frozenset({abs_, add, div, eq, ge, gt, le, lt, max_, min_, mul, ne, neg, relu, select, sign, sub})
# Operands read from memory, never from a fused producer: a collective hands its operand's
# buffer to the transport, a scan reads each line many times over.
_READS_BUFFERS = frozenset({Category.CONTRACTION, Category.WINDOW, Category.SCAN, Category.COLLECTIVE, Category.LOOP})


def recomputed_cheaply(node: Node) -> bool:
    """Whether computing ``node`` again at an element costs about what reading it back does:
    movement and arithmetic of a few cycles an element, not a transcendental."""
    return node.op in _FREE_TO_DUPLICATE or node.op in _CHEAP_MOVES or node.op in _CHEAP_ARITHMETIC


def _broadcast_of_smaller(node: Node) -> bool:
    return node.op is broadcast_in_dim and node.inputs[0].aval.size < node.aval.size


class FusionPolicy:
    """The decisions every target shares; ``max_fused_ops`` bounds a kernel's size."""

    max_fused_ops = 96
    max_recomputations = 8
    # Distinct positions per element at which a kernel may compute one fused value (a 3x3
    # stencil of slices reads its input at 9): see ``fuse.Positions``.
    max_positions = 16
    # Reductions a backend's reduction kernel computes several of in one loop over their
    # input (a batch norm's gradient sums its cotangent and two products of it): none here.
    sibling_reductions: frozenset[Primitive] = frozenset()
    # Whether the backend writes row kernels (row_fusion.py): reductions over the last axis
    # and their per-row readers in one loop over each row.
    row_kernels = False

    def epilogue_takes_loops(self, root: Node) -> bool:
        """Whether a whole loop kernel reading the result of ``root`` (an output kernel's
        root) may join its epilogue (``epilogue_loops``): a backend whose epilogue computes
        any graph of elementwise ops at the stored element, several results among them."""
        return False

    def cheap_in_epilogue(self, node: Node) -> bool:
        """Whether ``node``, of a loop kernel that would join a product's epilogue, costs the
        store little: movement and arithmetic of a few cycles an element. A loop of
        transcendentals is bound by its arithmetic, not by the product it reads back, and
        the arithmetic is no cheaper at each stored element (a GELU's derivative in the
        epilogue of the GPT's g @ W^T: 0.31 + 0.17 ms apart, 0.56 ms joined, on a Xeon)."""
        return recomputed_cheaply(node)

    def takes_epilogue(self, node: Node) -> bool:
        """Kernels that apply elementwise readers of their result as they store it."""
        return node.op.category is Category.CONTRACTION or scatters_once(node)

    def kind_of_root(self, node: Node) -> str:
        if self.takes_epilogue(node):
            return "output"
        if node.op.category in ROOTS:
            return "input"
        if node.op.category is Category.COLLECTIVE:
            return "collective"
        if node.op.category is Category.LOOP:
            return "control"
        return "loop"

    def is_free_to_duplicate(self, node: Node) -> bool:
        """Sources, and movement of a parameter or a constant: recomputing them in every
        kernel that reads them costs nothing but index arithmetic and keeps them out of memory."""
        if node.op in _FREE_TO_DUPLICATE:
            return True
        if node.op in _CHEAP_MOVES:
            source = node.inputs[0]
            return source.op.category is Category.PARAMETER or source.op is constant or splat_value(source) is not None
        return False

    def contracts_bfloat16(self, node: Node) -> bool:
        """Whether the backend's kernel for contraction ``node``, on bfloat16 operands with
        a float32 result, multiplies them as bfloat16 (else the operands are converted to
        float32 first: see ``passes/bfloat16.py``)."""
        return False

    def recomputes_in_readers(self, node: Node, users: list[Node], kernels: int) -> bool:
        """Whether ``node``, read by ``users`` in ``kernels`` kernels (none of which reads
        materialized operands), is computed in each of them rather than once into memory, as
        XLA duplicates cheap producers into every consumer: a cheap movement of any value
        (index arithmetic into its buffer), or cheap arithmetic whose readers take no more
        elements than it has (a small value broadcast to a large reader would be recomputed
        per element of it). With one operand of its own size, each reader reads that operand
        instead of the result, no more memory traffic, so it may be recomputed for up to
        ``max_recomputations`` kernels (a movement or a gather for as many); with more, each
        reader would read them all, so for two at most. A batch norm's centred input, read
        by its variance, its normalisation and the reductions of its gradient, is then never
        written out."""
        if node.op in _CHEAP_MOVES or node.op is gather:
            # A gather too: each reader reads the table's element (and its index) instead of
            # the gathered one, so an embedding lookup is computed where it is added to the
            # position embedding, in every kernel that reads the sum.
            return kernels <= self.max_recomputations
        if node.op not in _CHEAP_ARITHMETIC or any(u.multi_output or u.aval.size > node.aval.size for u in users):
            return False
        full_size = sum(1 for i in node.inputs if i.aval.size == node.aval.size and not _broadcast_of_smaller(i))
        return kernels <= (self.max_recomputations if full_size <= 1 else 2)

    def reads_buffers(self, node: Node) -> bool:
        """Contractions, windowed ops, scans and collectives read their operands from memory."""
        return node.op.category in _READS_BUFFERS

    def reads_operand_views(self, root: Node, views: tuple[View | None, ...]) -> Decision:
        """May contraction ``root`` read each operand as its view (``operand_views``: None for
        a chain that is not one), through the movement ops above the value in memory,
        rather than from a buffer written by a kernel of its own?"""
        return no(f"{root.op} {root.aval} reads its operands from memory as they lie")

    def should_fuse(self, producer: Node, members: list[Node], kind: str, readers_in_group: list[Node]) -> Decision:
        """May ``producer`` be computed inside a kernel of ``kind`` whose nodes ``readers_in_group`` read it?"""
        name = f"{producer.op} {producer.aval}"
        if producer.op.category in ROOTS:
            return no(f"{name} is a kernel of its own: inside a consumer it would be recomputed per element")
        if producer.op.category is Category.COLLECTIVE:
            return no(f"{name} exchanges data with the other replicas: a call into the transport, not a loop")
        if producer.op.category is Category.LOOP or producer.op is get_element:
            return no(f"{name} runs a body graph step after step: its kernels are its own")
        if not producer.op.elementwise and producer.op.category not in _FUSIBLE:
            return no(f"{name} cannot be fused")
        if len(members) >= self.max_fused_ops:
            return no(f"{name}: the consumer kernel already holds {self.max_fused_ops} ops")
        roots = [r for r in readers_in_group if self.reads_buffers(r)]
        if roots:
            return no(f"{name} is an operand of {roots[0].op}, which reads materialized operands")
        return YES

    def epilogue(
        self,
        producer: Node,
        users: list[Node],
        is_output: bool,
        independent: Callable[[Node], bool],
        kernel_of: Callable[[Node], Node | None],
    ) -> tuple[Node | None, Decision]:
        """The elementwise op that may join the epilogue of a dot, conv or tiled pooling-gradient
        kernel, after ``producer``. Its other operands are recomputed per element (free ones) or
        must not depend on the kernel (``independent``): those are read at the element being
        stored, or computed there when producer fusion later pulls them into the kernel. A reader
        already in the epilogue of another kernel (``kernel_of`` gives that kernel's root) stays
        there: in both kernels it would make each read the other's result, a cycle."""
        name = f"{producer.op} {producer.aval}"
        if is_output:
            return None, no(f"epilogue stops at {name}: it is a result of the graph")
        if len(users) != 1:
            return None, no(f"epilogue stops at {name}: it has {len(users)} readers")
        user = users[0]
        if not user.op.elementwise or user.multi_output or user.aval.shape != producer.aval.shape:
            return None, no(f"epilogue stops at {name}: its reader {user.op} {user.aval} is not elementwise on it")
        root = kernel_of(user)
        if root is not None:
            return None, no(
                f"epilogue stops before {user.op} {user.aval}: it is in the epilogue of {root.op} {root.aval}"
            )
        for other in user.inputs:
            if other is not producer and not self.is_free_to_duplicate(other) and not independent(other):
                return None, no(
                    f"epilogue stops before {user.op}: its operand {other.op} {other.aval} must be computed first"
                )
        return user, YES

    def epilogue_sum(self, root: Node, last: Node, users: list[Node]) -> Node | None:
        """A bias gradient that may join a pooling-gradient kernel: the float sum, over every
        axis but the last, of its epilogue's result ``last`` (``root`` itself when it has none).
        The kernel adds each element into per-channel sums as it stores it, which spares a
        pass over a tensor the size of the pooled input (350 MB for the XLA article's CNN)."""
        if root.op is not select_and_scatter_add or not scatters_once(root):
            return None
        for user in users:
            if (
                user.op is reduce_sum
                and user.inputs[0] is last
                and user.dtype.is_float
                and tuple(user.attr("axes")) == tuple(range(len(last.shape) - 1))
            ):
                return user
        return None

    def sibling_key(self, kind: str, root: Node) -> tuple | None:
        """What sibling kernels (kernels reading one input) must have in common to share one
        loop: loop kernels their shape; reductions whose op the backend accumulates several
        of in one loop (``sibling_reductions``) their op, axes, input shape and type; None
        for kernels that never share a loop with a sibling."""
        if kind == "loop":
            return ("loop", root.aval.shape)
        if kind == "input" and root.op in self.sibling_reductions and not root.multi_output:
            return ("reduction", root.op, tuple(sorted(root.attr("axes"))), root.inputs[0].shape, root.dtype)
        return None

    def siblings(self, shape: tuple[int, ...], ops: int, connected: Callable[[], bool]) -> Decision:
        """May two kernels of ``shape`` that read one input share a loop (one kernel with two
        results), holding ``ops`` ops together? ``connected()`` says whether one reads the
        other's results, directly or through other kernels (it walks the kernel graph, so it
        is asked last). A bound on the merged kernel's size keeps a fan of a thousand sums of
        one input from becoming one loop body that the C compiler takes seconds over."""
        if ops > self.max_fused_ops:
            return no(f"sibling kernels of shape {shape} would hold more than {self.max_fused_ops} ops together")
        if connected():
            return no("sibling kernels depend on each other")
        return YES


def per_element_ops(members: Iterable[Node]) -> int:
    """The ops a kernel computes at each element of its loop, which bound its size: not its
    scalar arithmetic, computed once before the loop (AdamW's bias corrections, two per
    parameter), nor broadcasts, which only index their operand; at least one (its store),
    so that kernels of broadcasts alone do not merge without bound."""
    ops = sum(1 for m in members if m.op is not broadcast_in_dim and not (m.shape == () and m.op.elementwise))
    return max(ops, 1)


def unlike_shapes(first: tuple[int, ...], second: tuple[int, ...]) -> Decision:
    """Sibling kernels of different shapes: one loop cannot compute both."""
    return no(f"sibling kernels of shapes {first} and {second} do not share a loop")


TARGET_INDEPENDENT = FusionPolicy()
