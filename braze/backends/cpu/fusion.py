"""The CPU's fusion hooks: where GCC and the CPU kernels' own limits refuse what the
target-independent policy would fuse (XLA's ``CpuInstructionFusion::ShouldFuse``)."""

from __future__ import annotations

from braze.backends.cpu.bf16_conv import conv_reads_bfloat16
from braze.backends.cpu.bf16_dot import reads_bfloat16
from braze.backends.cpu.gemm import float_gemm
from braze.ir.graph import Node
from braze.ir.prims.linalg import dot_general
from braze.ir.prims.reductions import reduce_max, reduce_prod, reduce_sum
from braze.ir.prims.structural import rev
from braze.ir.prims.window import nhwc_pool_windows, reduce_window
from braze.passes.fusion_policy import YES, Decision, FusionPolicy, no
from braze.passes.operand_views import View

MAX_SUMMED_CHANNELS = 4096  # a pooling-gradient kernel's per-thread sums live on each thread's stack


class CpuFusionPolicy(FusionPolicy):
    # The reductions loops.emit_reduction_kernel accumulates several of in one loop nest.
    sibling_reductions = frozenset({reduce_sum, reduce_prod, reduce_max})
    row_kernels = True  # rows.emit_row_kernel

    def should_fuse(self, producer: Node, members: list[Node], kind: str, readers_in_group: list[Node]) -> Decision:
        if producer.op is rev and kind == "input":
            # GCC 12.2 at -O3 miscompiles a sum whose loop nest reads an inner axis backwards
            # (outer-loop vectorization of the in-order reduction; found by braze fuzz): a
            # reversal is cheap to write out and rare, so reductions read it from memory.
            return no(
                f"{producer.op} {producer.aval}: reductions read reversed axes from memory, never through a fused rev"
            )
        return super().should_fuse(producer, members, kind, readers_in_group)

    def takes_epilogue(self, node: Node) -> bool:
        # Unrolled NHWC pooling stores each window's result once, through the epilogue: under
        # autocast the pooled activation is written once, already rounded to bfloat16 for
        # the next convolution, not in float32 and then converted by a kernel of its own.
        return super().takes_epilogue(node) or (node.op is reduce_window and nhwc_pool_windows(node))

    def epilogue_takes_loops(self, root: Node) -> bool:
        # A product's store loop computes its fusion's results at each element (store_results).
        return root.op is dot_general

    def reads_operand_views(self, root: Node, views: tuple[View | None, ...]) -> Decision:
        # The tiled GEMM of float operands reads A and B at any strides (gemm.float_gemm);
        # other products read buffers.
        name = f"{root.op} {root.aval}"
        if any(view is None for view in views):
            return no(f"{name} reads an operand from memory: a reshape above it merges dimensions that do not nest")
        if float_gemm(root, views) is None:  # type: ignore[arg-type]
            return no(f"{name} reads its operands from memory as they lie: it is no float GEMM through these views")
        return YES

    def contracts_bfloat16(self, node: Node) -> bool:
        return reads_bfloat16(node) or conv_reads_bfloat16(node)

    def epilogue_sum(self, root: Node, last: Node, users: list[Node]) -> Node | None:
        if not last.shape or last.shape[-1] > MAX_SUMMED_CHANNELS:  # a scalar has no channels to sum
            return None
        return super().epilogue_sum(root, last, users)


CPU_FUSION = CpuFusionPolicy()
