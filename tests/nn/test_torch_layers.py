"""PyTorch's CNN layers (braze.nn.torch_layers) against NumPy transcriptions of PyTorch's
formulas (torch_references.py): convolutions, poolings and batch norm over several training
steps then in evaluation, eagerly, on the lazy device and under braze.jit; their parameter
names, layouts and initial values; a state_dict in PyTorch's layout loaded by name; dropout,
flatten and the small layers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import assert_gradients_match
from torch_references import (
    MODES,
    adaptive_avg_pool2d,
    assert_within_rounding,
    batch_norm_steps,
    conv2d,
    pool2d,
    run_layer,
)

import braze
from braze.nn import Dropout, Flatten, Module
from braze.nn.torch_layers import (
    AdaptiveAvgPool2d,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    Conv2d,
    Identity,
    LogSoftmax,
    MaxPool2d,
    SiLU,
    Softplus,
)

RNG = np.random.default_rng(0)


def images(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# Conv2d ------------------------------------------------------------------------------------

CONVS = {
    # name: (Conv2d's arguments after in_channels, out_channels, kernel_size; explicit pads)
    "plain": ({}, ((0, 0), (0, 0))),
    "stride_padding": ({"stride": (2, 1), "padding": 1}, ((1, 1), (1, 1))),
    "pair_padding_dilation": ({"padding": (2, 0), "dilation": 2}, ((2, 2), (0, 0))),
    # kernel (3, 2) dilated (2, 1): 4 rows and 1 column of padding in all, the odd one after
    "same": ({"padding": "same", "dilation": (2, 1)}, ((2, 2), (0, 1))),
    "valid_no_bias": ({"padding": "valid", "bias": False}, ((0, 0), (0, 0))),
    "groups": ({"groups": 2, "padding": 1}, ((1, 1), (1, 1))),
    "depthwise": ({"groups": 4, "stride": 2}, ((0, 0), (0, 0))),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", CONVS)
def test_conv2d_is_the_direct_nchw_convolution(name, mode):
    options, pads = CONVS[name]
    out_channels = 8 if name == "depthwise" else 6
    layer = Conv2d(4, out_channels, (3, 2), **options)
    x = images(2, 4, 9, 8)
    got = run_layer(mode, layer, x)
    w = layer.weight.numpy().astype(np.float64)
    b = None if layer.bias is None else layer.bias.numpy().astype(np.float64)
    stride, dilation = options.get("stride", 1), options.get("dilation", 1)
    stride = (stride, stride) if isinstance(stride, int) else stride
    dilation = (dilation, dilation) if isinstance(dilation, int) else dilation
    groups = options.get("groups", 1)
    exact = conv2d(x, w, b, stride, pads, dilation, groups)
    magnitude = conv2d(abs(x), abs(w), None if b is None else abs(b), stride, pads, dilation, groups)
    assert got.shape == exact.shape
    terms = w.shape[1] * w.shape[2] * w.shape[3] + 1  # the products and the bias
    assert_within_rounding(got, exact, magnitude, terms + 1)


@pytest.mark.parametrize(
    ("padding_mode", "numpy_mode"), [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")]
)
def test_conv2d_padding_modes_pad_the_input_as_numpy_does(padding_mode, numpy_mode):
    layer = Conv2d(3, 2, 3, padding=(2, 1), padding_mode=padding_mode)
    x = images(2, 3, 5, 6)
    got = layer(braze.tensor(x)).numpy()
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (2, 2), (1, 1)), mode=numpy_mode)
    w, b = layer.weight.numpy().astype(np.float64), layer.bias.numpy().astype(np.float64)
    magnitude = conv2d(abs(padded), abs(w), abs(b))
    assert_within_rounding(got, conv2d(padded, w, b), magnitude, 3 * 3 * 3 + 2)


def test_conv2d_parameters_have_pytorchs_names_layouts_and_initial_values():
    layer = Conv2d(16, 32, (3, 5), groups=2)
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]
    assert layer.weight.shape == (32, 8, 3, 5) and layer.bias.shape == (32,)
    bound = 1 / math.sqrt(8 * 3 * 5)  # kaiming_uniform_(a=sqrt(5)) over fan_in = in / groups * kH * kW
    for values in (layer.weight.numpy(), layer.bias.numpy()):
        assert np.abs(values).max() <= bound
    weights = layer.weight.numpy()
    assert np.abs(weights).max() > 0.95 * bound  # 3840 draws fill the interval
    # A uniform's standard deviation is bound / sqrt(3); 3840 draws give it within 5%
    # (the sample's own relative spread is about 1 / sqrt(2 * 3840) = 1.1%).
    assert abs(weights.std() / (bound / math.sqrt(3)) - 1) < 0.05
    assert Conv2d(2, 3, 1, bias=False).bias is None
    first, second = Conv2d(2, 3, 3, generator=braze.Generator(7)), Conv2d(2, 3, 3, generator=braze.Generator(7))
    np.testing.assert_array_equal(first.weight.numpy(), second.weight.numpy())


def test_conv2d_takes_an_unbatched_image():
    layer = Conv2d(3, 4, 3, padding=1)
    x = images(3, 6, 5)
    batched = layer(braze.tensor(x[None])).numpy()
    np.testing.assert_array_equal(layer(braze.tensor(x)).numpy(), batched[0])


def test_conv2d_refuses_what_pytorch_refuses():
    with pytest.raises(ValueError, match="divisible by groups"):
        Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode"):
        Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="expected input.*to have 3 channels"):
        Conv2d(3, 4, 3)(braze.tensor(images(1, 2, 5, 5)))


# Pooling -----------------------------------------------------------------------------------

POOLS = {
    # name: (layer, reference kind, kernel, stride, padding, keyword arguments of the reference)
    "max": (MaxPool2d(2), "max", (2, 2), (2, 2), (0, 0), {}),
    "max_stride_padding": (MaxPool2d(3, 2, 1), "max", (3, 3), (2, 2), (1, 1), {}),
    # 9 x 8 images: ceil_mode adds a window on both axes (7 / 2 and 7 / 2 rounded up) ...
    "max_ceil_mode": (
        MaxPool2d((2, 3), 2, (0, 1), ceil_mode=True),
        "max",
        (2, 3),
        (2, 2),
        (0, 1),
        {"ceil_mode": True},
    ),
    # ... and here drops the one that would start in the bottom padding (row 10 of 0..10).
    "max_ceil_mode_dropping": (MaxPool2d(2, 2, 1, ceil_mode=True), "max", (2, 2), (2, 2), (1, 1), {"ceil_mode": True}),
    "avg": (AvgPool2d(2), "avg", (2, 2), (2, 2), (0, 0), {}),
    "avg_counting_padding": (AvgPool2d(3, 2, 1), "avg", (3, 3), (2, 2), (1, 1), {}),
    "avg_not_counting_padding": (
        AvgPool2d((3, 2), 1, (1, 1), count_include_pad=False),
        "avg",
        (3, 2),
        (1, 1),
        (1, 1),
        {"count_include_pad": False},
    ),
    "avg_divisor": (AvgPool2d(3, 2, 1, divisor_override=5), "avg", (3, 3), (2, 2), (1, 1), {"divisor": 5}),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", POOLS)
def test_pooling_takes_pytorchs_windows(name, mode):
    layer, kind, kernel, stride, padding, options = POOLS[name]
    x = images(2, 3, 9, 8)
    got = run_layer(mode, layer, x)
    exact = pool2d(x.astype(np.float64), kind, kernel, stride, padding, **options)
    assert got.shape == exact.shape
    if kind == "max":
        np.testing.assert_array_equal(got, exact)  # a maximum is one of the inputs, exactly
    else:
        magnitude = pool2d(abs(x).astype(np.float64), kind, kernel, stride, padding, **options)
        assert_within_rounding(got, exact, magnitude, kernel[0] * kernel[1] + 3)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", [1, (3, 2), (4, 3), (None, 5)])
def test_adaptive_average_pooling_averages_pytorchs_bins(size, mode):
    x = images(2, 3, 9, 8)
    got = run_layer(mode, AdaptiveAvgPool2d(size), x)
    oh, ow = (size, size) if isinstance(size, int) else (size[0] or 9, size[1])
    exact = adaptive_avg_pool2d(x.astype(np.float64), oh, ow)
    assert got.shape == exact.shape == (2, 3, oh, ow)
    # Sums of a bin's rows, then of its columns (at most 9 + 8 terms), and the divisions.
    assert_within_rounding(got, exact, adaptive_avg_pool2d(abs(x).astype(np.float64), oh, ow), 9 + 8 + 4)


def test_pooling_refuses_what_it_does_not_compute():
    x = braze.tensor(images(1, 1, 6, 6))
    with pytest.raises(ValueError, match="at most half"):
        MaxPool2d(2, padding=2)(x)
    with pytest.raises(NotImplementedError, match="return_indices"):
        MaxPool2d(2, return_indices=True)(x)
    with pytest.raises(NotImplementedError, match="dilation"):
        MaxPool2d(2, dilation=2)(x)


# Batch norm --------------------------------------------------------------------------------


def _bn_bound(x, weight, bias):
    """The magnitude and count of roundings the normalized ``x`` is within. Its mean and
    variance per channel are sums of n values, off by (n + 1) u * mean|x| and (n + 4) u
    relative; with s the standard deviation and y the normalized value, y is off by at most
    (n + 8) u * (mean|x| / s + |y| + |y| mean|x| / s) < (n + 8) u * (1 + mean|x| / s)(1 + |y|),
    then scaled by |weight|, plus the bias's rounding."""
    axes = (0, *range(2, x.ndim))
    spread = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    deviation = np.sqrt(x.var(axes)).reshape(spread)
    y = (x - x.mean(axes).reshape(spread)) / deviation
    ratio = np.abs(x).mean(axes).reshape(spread) / deviation
    magnitude = (1 + ratio) * (1 + np.abs(y)) * np.abs(weight).reshape(spread) + np.abs(bias).reshape(spread)
    return magnitude, x.size // x.shape[1] + 8


def _assert_running_statistics(layer, batches, running_mean, running_var):
    """Each step's mean is off by (n + 1) roundings of max|x|, its unbiased variance by n + 4
    of (2 max|x|)^2 n / (n - 1) (each centered value below 2 max|x|), and the update adds 3."""
    n = batches[0].size // batches[0].shape[1]
    scale = max(float(np.abs(b).max()) for b in batches)
    steps = len(batches) * (n + 8)
    assert_within_rounding(layer.running_mean.numpy(), running_mean, scale, steps)
    assert_within_rounding(layer.running_var.numpy(), running_var, (2 * scale) ** 2 * n / (n - 1), steps)


@pytest.mark.parametrize("mode", MODES)
def test_batch_norm2d_trains_on_batch_statistics_then_evaluates_on_running_ones(mode):
    layer = BatchNorm2d(3, momentum=0.3)
    weight, bias = RNG.uniform(0.5, 2.0, 3), RNG.standard_normal(3)
    layer.load_state_dict({**layer.state_dict(), "weight": weight, "bias": bias})
    weight, bias = layer.weight.numpy().astype(np.float64), layer.bias.numpy().astype(np.float64)
    batches = [(images(4, 3, 5, 2) * 2 + 1).astype(np.float32) for _ in range(3)]
    outputs, running_mean, running_var = batch_norm_steps(
        [b.astype(np.float64) for b in batches], 0.3, 1e-5, weight, bias
    )
    for x, expected in zip(batches, outputs, strict=True):
        assert_within_rounding(run_layer(mode, layer, x), expected, *_bn_bound(x.astype(np.float64), weight, bias))
    assert layer.num_batches_tracked.numpy() == 3 and layer.num_batches_tracked.dtype == braze.int64
    _assert_running_statistics(layer, batches, running_mean, running_var)
    layer.eval()
    x = batches[0]
    stored_mean, stored_var = layer.running_mean.numpy(), layer.running_var.numpy()
    spread = (1, 3, 1, 1)
    exact = (x - stored_mean.reshape(spread)) / np.sqrt(stored_var.reshape(spread) + 1e-5)
    exact = exact * weight.reshape(spread) + bias.reshape(spread)
    # A subtraction, an inverse square root (at most 2 roundings), 3 products and a sum.
    magnitude = (abs(x) + abs(stored_mean).reshape(spread)) / np.sqrt(stored_var.reshape(spread))
    magnitude = magnitude * abs(weight).reshape(spread) + abs(bias).reshape(spread)
    assert_within_rounding(run_layer(mode, layer, x), exact, magnitude, 8)
    np.testing.assert_array_equal(layer.running_mean.numpy(), stored_mean)  # evaluation moves nothing
    assert layer.num_batches_tracked.numpy() == 3


@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 5)])
def test_batch_norm1d_with_a_cumulative_average(shape):
    layer = BatchNorm1d(4, momentum=None, eps=1e-3)
    batches = [RNG.standard_normal(shape).astype(np.float32) for _ in range(3)]
    outputs, running_mean, running_var = batch_norm_steps(
        [b.astype(np.float64) for b in batches], None, 1e-3, np.ones(4), np.zeros(4)
    )
    for x, expected in zip(batches, outputs, strict=True):
        magnitude, steps = _bn_bound(x.astype(np.float64), np.ones(4), np.zeros(4))
        assert_within_rounding(layer(braze.tensor(x)).numpy(), expected, magnitude, steps)
    _assert_running_statistics(layer, batches, running_mean, running_var)


def test_batch_norm_without_affine_or_running_statistics():
    plain = BatchNorm2d(3, affine=False, track_running_stats=False)
    assert plain.weight is None and plain.running_mean is None
    assert list(plain.state_dict()) == []
    x = images(4, 3, 2, 2)
    (expected,), _, _ = batch_norm_steps([x.astype(np.float64)], 0.1, 1e-5, np.ones(3), np.zeros(3))
    plain.eval()  # without running statistics, evaluation normalizes by the batch too (PyTorch's)
    magnitude, steps = _bn_bound(x.astype(np.float64), np.ones(3), np.zeros(3))
    assert_within_rounding(plain(braze.tensor(x)).numpy(), expected, magnitude, steps)


def test_batch_norm_refuses_a_single_value_per_channel_and_wrong_ranks():
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        BatchNorm1d(3)(braze.tensor(images(1, 3)))
    with pytest.raises(ValueError, match="4-D input with 3 channels"):
        BatchNorm2d(3)(braze.tensor(images(2, 3)))
    with pytest.raises(ValueError, match="2-D or 3-D"):
        BatchNorm1d(3)(braze.tensor(images(2, 3, 2, 2)))
    single = BatchNorm1d(3).eval()  # one example is fine outside training
    assert single(braze.tensor(images(1, 3))).shape == (1, 3)


def test_batch_norm_gradients_match_finite_differences_in_float64():
    layer = BatchNorm2d(3, dtype="float64")

    def forward(x, weight, bias):
        layer.weight, layer.bias = weight, bias
        return layer(x)

    arrays = [RNG.standard_normal((3, 3, 2, 2)), RNG.uniform(0.5, 2, 3), RNG.standard_normal(3)]
    assert_gradients_match(forward, arrays, [0, 1, 2], rtol=1e-5, atol=1e-7)


# Loading PyTorch's state_dict ------------------------------------------------------------


class ConvBlock(Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = Conv2d(2, 3, 3, padding=1)
        self.bn = BatchNorm2d(3)

    def forward(self, x):
        return self.bn(self.conv(x))


def test_a_state_dict_in_pytorchs_layout_loads_by_name():
    block = ConvBlock()
    names = ["conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"]
    assert list(block.state_dict()) == [*names, "bn.num_batches_tracked"]  # PyTorch's names, in its order
    state = {
        "conv.weight": RNG.standard_normal((3, 2, 3, 3)).astype(np.float32),  # (out, in, kH, kW)
        "conv.bias": RNG.standard_normal(3).astype(np.float32),
        "bn.weight": RNG.uniform(0.5, 2, 3).astype(np.float32),
        "bn.bias": RNG.standard_normal(3).astype(np.float32),
        "bn.running_mean": RNG.standard_normal(3).astype(np.float32),
        "bn.running_var": RNG.uniform(0.5, 2, 3).astype(np.float32),
        "bn.num_batches_tracked": np.array(12, np.int64),
    }
    block.load_state_dict(state)
    block.eval()
    x = images(2, 2, 5, 4)
    s = {k: v.astype(np.float64) for k, v in state.items()}
    pads = ((1, 1), (1, 1))
    conv = conv2d(x, s["conv.weight"], s["conv.bias"], pads=pads)
    spread = (1, 3, 1, 1)
    scale = (s["bn.weight"] / np.sqrt(s["bn.running_var"] + 1e-5)).reshape(spread)
    exact = (conv - s["bn.running_mean"].reshape(spread)) * scale + s["bn.bias"].reshape(spread)
    conv_magnitude = conv2d(abs(x), abs(s["conv.weight"]), abs(s["conv.bias"]), pads=pads)
    magnitude = (conv_magnitude + abs(s["bn.running_mean"]).reshape(spread)) * abs(scale) + abs(s["bn.bias"]).reshape(
        spread
    )
    assert_within_rounding(block(braze.tensor(x)).numpy(), exact, magnitude, 2 * 9 + 10)
    assert int(block.bn.num_batches_tracked.numpy()) == 12


# Dropout, Flatten and the small layers -------------------------------------------------------


def test_dropout_takes_pytorchs_p_and_follows_train_and_eval():
    x = np.ones((200, 50), np.float32)
    layer = Dropout(0.2, generator=braze.Generator(3))
    assert Dropout().p == 0.5
    dropped = layer(braze.tensor(x)).numpy()  # a new layer trains, as PyTorch's
    assert set(np.unique(dropped)) == {0.0, np.float32(1 / 0.8)}  # the kept values scaled by 1 / (1 - p)
    # 10000 elements kept with probability 0.8: the kept share within 5 standard deviations (0.4%) of it
    assert abs((dropped != 0).mean() - 0.8) < 5 * math.sqrt(0.8 * 0.2 / x.size)
    layer.eval()
    np.testing.assert_array_equal(layer(braze.tensor(x)).numpy(), x)
    np.testing.assert_array_equal(Dropout(1.0)(braze.tensor(x)).numpy(), 0.0)
    with pytest.raises(ValueError, match=r"rate must be in \[0, 1\]"):
        Dropout(1.5)
    with pytest.raises(TypeError, match="not both"):
        Dropout(0.5, p=0.5)


@pytest.mark.parametrize("mode", ["lazy", "jit"])
def test_dropout_draws_anew_at_each_compiled_call_and_not_in_eval(mode):
    layer = Dropout(0.5, generator=braze.Generator(1))
    x = np.ones((64, 64), np.float32)
    first, second = run_layer(mode, layer, x), run_layer(mode, layer, x)
    assert (first == 0).any() and not np.array_equal(first, second)
    layer.eval()
    np.testing.assert_array_equal(run_layer(mode, layer, x), x)


def test_flatten_keeps_pytorchs_element_order():
    x = images(2, 3, 4, 5)
    np.testing.assert_array_equal(Flatten()(braze.tensor(x)).numpy(), x.reshape(2, 60))  # C, H, W per example
    np.testing.assert_array_equal(Flatten(0, 1)(braze.tensor(x)).numpy(), x.reshape(6, 4, 5))
    np.testing.assert_array_equal(Flatten(2)(braze.tensor(x)).numpy(), x.reshape(2, 3, 20))


def test_identity_log_softmax_silu_and_softplus_layers():
    x = images(3, 4) * 10
    t = braze.tensor(x)
    assert Identity(54, unused="argument")(t) is t
    x = x.astype(np.float64)
    shifted = x - x.max(1, keepdims=True)
    total = np.log(np.exp(shifted).sum(1, keepdims=True))
    # A subtraction, exponentials summed over 4 values (off by 6 roundings relative, so
    # their log by 6 roundings of 1), the log's own and another subtraction.
    assert_within_rounding(LogSoftmax(dim=1)(t).numpy(), shifted - total, abs(shifted) + total + 1, 4 + 8)
    # x times sigmoid(x), a value in (0, 1) within a few roundings of 1.
    assert_within_rounding(SiLU()(t).numpy(), x / (1 + np.exp(-x)), abs(x), 8)
    beta, threshold = 2.0, 6.0
    expected = np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)
    # beta * x is rounded before the softplus: off by u |beta x| relative to a softplus whose
    # slope is below 1, the rest a few roundings of the result.
    assert_within_rounding(Softplus(beta, threshold)(t).numpy(), expected, abs(expected) * (1 + abs(beta * x)), 8)
