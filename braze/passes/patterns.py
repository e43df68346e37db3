"""Small queries the passes share: what a node is, and the value of a scalar splat."""

from __future__ import annotations

from braze.ir.graph import Node
from braze.ir.primitive import Aval, Literal

UNARY = {"neg", "exp", "log", "sqrt", "rsqrt", "tanh", "logistic", "abs", "sign", "relu"}
BINARY = {"add", "sub", "mul", "div", "pow", "max", "min"}
COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
ELEMENTWISE = UNARY | BINARY | COMPARE | {"select", "convert"}
COMMUTATIVE = {"add", "mul", "max", "min", "eq", "ne"}
MOVEMENT = {"broadcast_in_dim", "reshape", "transpose", "rev", "slice", "pad", "concatenate"}
SOURCES = {"iota", "constant", "rng_uniform"}
REDUCTIONS = {"reduce_sum", "reduce_max"}
CONTRACTIONS = {"dot_general", "conv", "conv_grad_input", "conv_grad_filter"}
WINDOWED = {"reduce_window", "select_and_scatter_add", "select_and_gather_add"}
# Ops that exchange data with the other replicas: each is a call into the transport, never a loop.
COLLECTIVES = {"all_reduce"}


MAX_UNROLLED_TAPS = 25  # window taps a kernel writes out one by one


def nhwc_pool_windows(node: Node) -> bool:
    """Windows over H and W only, without padding, of at most MAX_UNROLLED_TAPS taps."""
    windows, steps = node.attr("window_dimensions"), node.attr("window_strides")
    return (
        len(windows) == 4
        and windows[0] == windows[3] == steps[0] == steps[3] == 1
        and windows[1] * windows[2] <= MAX_UNROLLED_TAPS
        and not any(low or high for low, high in node.attr("padding"))
    )


def tiling_windows(node: Node) -> bool:
    """NHWC pool windows that do not overlap: each element is in at most one window."""
    return nhwc_pool_windows(node) and tuple(node.attr("window_dimensions")) == tuple(node.attr("window_strides"))


def scatters_once(node: Node) -> bool:
    """A select_and_scatter_add whose windows tile its operand exactly: every element is
    written once (the window's cotangent or 0), so elementwise readers can join its kernel
    as an epilogue, as they join a dot's or a conv's."""
    if node.op != "select_and_scatter_add" or not tiling_windows(node):
        return False
    windows = node.attr("window_dimensions")
    return node.shape[1] % windows[1] == 0 and node.shape[2] % windows[2] == 0


def splat_value(node: Node) -> float | int | bool | None:
    """The value of a 0-d constant, or of a broadcast of one; None for anything else."""
    if node.op == "broadcast_in_dim":
        node = node.inputs[0]
    if node.op == "constant":
        literal: Literal = node.attr("value")
        if literal.array.ndim == 0:
            return literal.array.item()
    return None


def splat(value: float | int | bool, aval: Aval) -> Node:
    """A node holding ``value`` everywhere in ``aval`` (a broadcast 0-d constant)."""
    scalar = Node.make("constant", (), {"value": Literal(value, aval.dtype)}, Aval((), aval.dtype))
    if not aval.shape:
        return scalar
    return Node.make("broadcast_in_dim", (scalar,), {"shape": aval.shape, "broadcast_dimensions": ()}, aval)
