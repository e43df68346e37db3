"""The op library: every public op, built on the primitives, importable from ``braze``."""

from braze.ops.core import as_tensor, astype, broadcast_to
from braze.ops.creation import arange, full, full_like, one_hot, ones, ones_like, tensor, zeros, zeros_like
from braze.ops.linalg import matmul
from braze.ops.math import (
    abs,
    add,
    clip,
    divide,
    equal,
    exp,
    floor_divide,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    power,
    relu,
    rsqrt,
    sigmoid,
    sign,
    sqrt,
    subtract,
    tanh,
    where,
)
from braze.ops.nn import avg_pool2d, conv2d, max_pool2d
from braze.ops.random import Generator, manual_seed, normal_quantile, rand, randn, uniform
from braze.ops.reduction import argmax, log_softmax, logsumexp, max, mean, min, softmax, sum, var
from braze.ops.shape import concatenate, expand_dims, flatten, getitem, pad, reshape, squeeze, stack, transpose

__all__ = [
    "Generator", "abs", "add", "arange", "argmax", "as_tensor", "astype", "avg_pool2d", "broadcast_to",
    "clip", "concatenate", "conv2d", "divide", "equal", "exp", "expand_dims", "flatten", "floor_divide",
    "full", "full_like", "getitem", "greater", "greater_equal", "less", "less_equal", "log",
    "log_softmax", "logical_and", "logical_not", "logical_or", "logsumexp", "manual_seed", "matmul",
    "max", "max_pool2d", "maximum", "mean", "min", "minimum", "multiply", "negative", "normal_quantile",
    "not_equal", "one_hot", "ones", "ones_like", "pad", "power", "rand", "randn", "relu", "reshape",
    "rsqrt", "sigmoid", "sign", "softmax", "sqrt", "squeeze", "stack", "subtract", "sum", "tanh",
    "tensor", "transpose", "uniform", "var", "where", "zeros", "zeros_like",
]
