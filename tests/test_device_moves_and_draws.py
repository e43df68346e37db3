"""Moving tensors between devices keeps what can be kept and refuses what cannot (a
gradient graph); random normal draws and weighted draws are the same numbers, or the same
errors, eagerly and compiled."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import ops
from braze.ir.errors import DeviceError


def test_a_result_with_a_gradient_graph_does_not_move_silently():
    w = braze.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(DeviceError, match="detach"):
        (w * 2).to("lazy")
    with braze.no_grad():
        np.testing.assert_array_equal((w * 2).to("lazy").numpy(), [2.0, 4.0])
    np.testing.assert_array_equal((w * 2).detach().to("lazy").numpy(), [2.0, 4.0])
    # A leaf moves as a leaf of the device: its gradients gather there.
    moved = w.to("lazy")
    (moved * braze.tensor([3.0, 4.0], device="lazy")).sum().backward()
    np.testing.assert_array_equal(moved.grad.numpy(), [3.0, 4.0])


def test_a_bfloat16_tensor_moves_as_bfloat16():
    values = np.array([1.5, 2.25, -3.0], np.float32)  # exact in bfloat16
    moved = braze.tensor(values, dtype=braze.bfloat16).to("lazy")
    assert moved.dtype == braze.bfloat16
    np.testing.assert_array_equal(moved.numpy(), values)


def test_a_backward_seed_on_another_device_is_a_device_error():
    w = braze.tensor([1.0, 2.0], device="lazy", requires_grad=True)
    with pytest.raises(DeviceError, match="the gradient is on"):
        (w * w).backward(braze.tensor([1.0, 10.0]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_draws_are_the_same_numbers_eagerly_lazily_and_jitted(dtype):
    draw = lambda device=None: braze.randn((20_000,), dtype, generator=braze.Generator(5), device=device)  # noqa: E731
    eager = draw().numpy()
    # Computed in float64 either way: a compiled kernel may round a multiply-add once where
    # NumPy rounds twice, and the quantile's rational functions magnify that to ~1e-12 of a
    # float64 result; a float32 one (the float64 value rounded) moves almost never. Before,
    # computed in float32, they differed by up to 1,300 ulp.
    for compiled in (draw("lazy").numpy(), braze.jit(lambda: draw())().numpy()):
        if dtype == "float32":
            np.testing.assert_array_max_ulp(compiled, eager, maxulp=1)
        else:
            np.testing.assert_allclose(compiled, eager, rtol=1e-11, atol=1e-11)
    # And they are normal: the mean and spread of 20,000 draws, within five standard errors.
    assert abs(float(eager.mean())) < 5 / np.sqrt(eager.size)
    assert abs(float(eager.std()) - 1.0) < 5 / np.sqrt(2 * eager.size)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([0.2, np.nan, 0.8], "finite and not negative"),
        ([1.0, -1.0, 1.0], "finite and not negative"),
        ([1.0, np.inf, 1.0], "finite and not negative"),
        ([0.0, 0.0, 0.0], "sums to 0"),
    ],
    ids=["nan", "negative", "inf", "zeros"],
)
def test_eager_multinomial_refuses_weights_it_cannot_draw_from(weights, message):
    with pytest.raises(ValueError, match=message):
        ops.multinomial(braze.tensor([weights]), 1, generator=braze.Generator(0))


def test_item_assignment_says_what_to_do_instead():
    x = braze.tensor([1.0, 2.0, 3.0, 4.0])
    for index in (braze.tensor([0, 2]), slice(0, 2), 0):
        with pytest.raises(TypeError, match="does not support item assignment"):
            x[index] = 5.0
