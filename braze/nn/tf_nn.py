"""``tf.nn``'s functions, so that ``import braze as tf`` reads ``tf.nn.relu`` and
``tf.nn.sparse_softmax_cross_entropy_with_logits``. The cross-entropies return one value
per example (or per element), as TensorFlow's do; ``tf.reduce_mean`` averages them."""

from __future__ import annotations

from typing import Any

from braze import ops
from braze.nn import activations, keras_random
from braze.nn.losses import binary_cross_entropy_elements, cross_entropy
from braze.ops.tensorflow import gather
from braze.tensor import Tensor


def relu(features: Any) -> Tensor:
    """``max(features, 0)``: ``tf.nn.relu``."""
    return ops.relu(ops.as_tensor(features))


def sigmoid(x: Any) -> Tensor:
    """``1 / (1 + exp(-x))``: ``tf.nn.sigmoid``."""
    return ops.sigmoid(ops.as_tensor(x))


def tanh(x: Any) -> Tensor:
    """The hyperbolic tangent: ``tf.nn.tanh``."""
    return ops.tanh(ops.as_tensor(x))


def gelu(features: Any, approximate: bool = False, name: str | None = None) -> Tensor:
    """``features * Phi(features)``, exact (by erf) or by its tanh approximation: ``tf.nn.gelu``."""
    return activations.gelu(ops.as_tensor(features), approximate)


def silu(features: Any, beta: float = 1.0) -> Tensor:
    """``features * sigmoid(beta * features)``: ``tf.nn.silu`` (``tf.nn.swish``)."""
    x = ops.as_tensor(features)
    return x * ops.sigmoid(x * beta) if beta != 1.0 else activations.silu(x)


def softmax(logits: Any, axis: int = -1) -> Tensor:
    """The softmax over ``axis``: ``tf.nn.softmax``."""
    return ops.softmax(logits, axis)


def log_softmax(logits: Any, axis: int = -1) -> Tensor:
    """The log of the softmax over ``axis``, computed stably: ``tf.nn.log_softmax``."""
    return ops.log_softmax(logits, axis)


def moments(x: Any, axes: Any, keepdims: bool = False) -> tuple[Tensor, Tensor]:
    """The mean and (biased) variance of ``x`` over ``axes``."""
    x = ops.as_tensor(x)
    mean = ops.mean(x, axis=tuple(axes), keepdims=True)
    variance = ops.mean((x - mean) * (x - mean), axis=tuple(axes), keepdims=keepdims)
    return (mean if keepdims else mean.reshape(variance.shape)), variance


def _nhwc_pair(value: Any) -> Any:
    """TensorFlow's strides or dilations (an int, a pair or NHWC's four values) as a pair."""
    if value is None:
        return 1
    value = list(value) if isinstance(value, (list, tuple)) else value
    return tuple(value[1:3]) if isinstance(value, list) and len(value) == 4 else value


def _nhwc(op: str, data_format: str) -> None:
    if data_format != "NHWC":
        raise NotImplementedError(f"tf.nn.{op}: data_format={data_format!r}: braze is NHWC")


def conv2d(
    input: Any,  # noqa: A002 - TensorFlow's name
    filters: Any,
    strides: Any = 1,
    padding: Any = "VALID",
    data_format: str = "NHWC",
    dilations: Any = None,
    name: str | None = None,
) -> Tensor:
    """``tf.nn.conv2d`` over NHWC inputs and HWIO filters; strides and dilations as an int,
    a pair or NHWC's four values."""
    _nhwc("conv2d", data_format)
    return ops.conv2d(input, filters, stride=_nhwc_pair(strides), padding=padding, dilation=_nhwc_pair(dilations))


def conv2d_transpose(
    input: Any,  # noqa: A002 - TensorFlow's name
    filters: Any,
    output_shape: Any,
    strides: Any,
    padding: Any = "SAME",
    data_format: str = "NHWC",
    dilations: Any = None,
    name: str | None = None,
) -> Tensor:
    """``tf.nn.conv2d_transpose``: NHWC inputs through filters of shape (height, width,
    output channels, input channels) into ``output_shape`` (batch, height, width, channels)."""
    _nhwc("conv2d_transpose", data_format)
    shape = [int(v) for v in (output_shape.tolist() if hasattr(output_shape, "tolist") else output_shape)]
    x, w = ops.as_tensor(input), ops.as_tensor(filters)
    if len(shape) != 4 or shape[0] != x.shape[0] or shape[3] != w.shape[2]:
        raise ValueError(
            f"tf.nn.conv2d_transpose: output_shape {shape} must be (batch {x.shape[0]}, height, width, "
            f"the filters' {w.shape[2]} output channels)"
        )
    return ops.conv2d_transpose(x, w, shape[1:3], _nhwc_pair(strides), padding, _nhwc_pair(dilations))


def sparse_softmax_cross_entropy_with_logits(labels: Any = None, logits: Any = None) -> Tensor:
    """``-log softmax(logits)[label]`` for each example; labels are integers."""
    logits = ops.as_tensor(logits)
    return cross_entropy("sparse_softmax_cross_entropy_with_logits", logits, labels, True, per_example=True)


def softmax_cross_entropy_with_logits(labels: Any = None, logits: Any = None, axis: int = -1) -> Tensor:
    """The cross-entropy of each example's target distribution under ``softmax(logits)``."""
    logits = ops.as_tensor(logits)
    labels = ops.as_tensor(labels, dtype=logits.dtype, device=logits.device)
    return -ops.sum(labels * ops.log_softmax(logits, axis), axis)


def sigmoid_cross_entropy_with_logits(labels: Any = None, logits: Any = None) -> Tensor:
    """Elementwise binary cross-entropy of 0/1 (or soft) labels against logits."""
    logits = ops.as_tensor(logits)
    labels = ops.as_tensor(labels, dtype=logits.dtype, device=logits.device)
    return binary_cross_entropy_elements(logits, labels, from_logits=True)


def embedding_lookup(params: Any, ids: Any, max_norm: float | None = None, name: str | None = None) -> Tensor:
    """The rows of ``params`` at ``ids`` (``tf.gather`` along axis 0): ``tf.nn.embedding_lookup``.
    A list of one table is that table; tables sharded over several, and ``max_norm``, are
    not supported."""
    if max_norm is not None:
        raise NotImplementedError("tf.nn.embedding_lookup: max_norm is not supported")
    if isinstance(params, (list, tuple)) and params and all(isinstance(p, Tensor) for p in params):
        if len(params) != 1:
            raise NotImplementedError("tf.nn.embedding_lookup: a table sharded over several tensors is not supported")
        params = params[0]
    return gather(params, ids)


def dropout(x: Any, rate: float, noise_shape: Any = None, seed: Any = None, name: str | None = None) -> Tensor:
    """TensorFlow's ``tf.nn.dropout``: a fraction ``rate`` zeroed, the rest scaled by 1 / (1 - rate)."""
    return keras_random.dropout(x, rate, noise_shape, seed)


def _block_size(op: str, x: Tensor, block_size: int, data_format: str) -> int:
    if data_format != "NHWC":
        raise NotImplementedError(f"tf.nn.{op}: data_format {data_format!r}: only NHWC is supported")
    if x.ndim != 4 or int(block_size) != block_size or block_size < 2:
        raise ValueError(f"tf.nn.{op}: takes (batch, height, width, channels) and a block_size of at least 2")
    return int(block_size)


def depth_to_space(input: Any, block_size: int, data_format: str = "NHWC", name: str | None = None) -> Tensor:  # noqa: A002 - TensorFlow's name
    """TensorFlow's pixel shuffle: ``out[n, h*b + i, w*b + j, c] = in[n, h, w, (i*b + j)*C + c]``
    for blocks of ``b = block_size``, ``C`` the output's channels."""
    x = ops.as_tensor(input)
    b = _block_size("depth_to_space", x, block_size, data_format)
    n, h, w, channels = x.shape
    if channels % (b * b):
        raise ValueError(f"tf.nn.depth_to_space: {channels} channels are not a multiple of block_size**2 = {b * b}")
    blocks = ops.reshape(x, (n, h, w, b, b, channels // (b * b)))
    return ops.reshape(ops.transpose(blocks, (0, 1, 3, 2, 4, 5)), (n, h * b, w * b, channels // (b * b)))


def space_to_depth(input: Any, block_size: int, data_format: str = "NHWC", name: str | None = None) -> Tensor:  # noqa: A002 - TensorFlow's name
    """The inverse of :func:`depth_to_space`: each ``b x b`` block becomes ``b * b`` times
    the channels."""
    x = ops.as_tensor(input)
    b = _block_size("space_to_depth", x, block_size, data_format)
    n, h, w, channels = x.shape
    if h % b or w % b:
        raise ValueError(f"tf.nn.space_to_depth: height {h} and width {w} must be multiples of block_size {b}")
    blocks = ops.reshape(x, (n, h // b, b, w // b, b, channels))
    return ops.reshape(ops.transpose(blocks, (0, 1, 3, 2, 4, 5)), (n, h // b, w // b, b * b * channels))
