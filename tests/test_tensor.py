"""Tensor creation, NumPy interop, devices and random numbers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import braze


def test_creation_and_interop():
    t = braze.tensor([[1, 2], [3, 4]])
    assert t.dtype == braze.int32 and t.shape == (2, 2)
    assert braze.tensor([1.5]).dtype == braze.float32
    assert braze.tensor(np.zeros(2)).dtype == braze.float64
    np.testing.assert_array_equal(np.asarray(t), [[1, 2], [3, 4]])
    assert t[1, 0].item() == 3
    assert float(braze.tensor(2.5)) == 2.5
    assert t.tolist() == [[1, 2], [3, 4]]
    np.testing.assert_array_equal(braze.arange(5).numpy(), np.arange(5))
    np.testing.assert_allclose(braze.arange(1.0, 2.0, 0.25).numpy(), np.arange(1.0, 2.0, 0.25))
    np.testing.assert_array_equal(braze.full((2, 3), 7).numpy(), np.full((2, 3), 7))
    np.testing.assert_array_equal(braze.zeros_like(t).numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(braze.ones_like(t, dtype="float64").numpy(), np.ones((2, 2)))
    assert "tensor([[1, 2]," in repr(t)


def test_numpy_view_is_read_only():
    t = braze.ones((3,))
    with pytest.raises(ValueError):
        t.numpy()[0] = 5


def test_device_naming_and_defaults():
    assert repr(braze.default_device()) == "Device(kind: .CPU, ordinal: 0, backend: .EAGER)"
    assert braze.device("cpu:0:lazy") == braze.Device("CPU", 0, "LAZY")
    assert braze.ones((2,)).device == braze.CPU
    with pytest.raises(braze.DeviceError, match="cannot parse device 'tpu'"):
        braze.device("tpu")


def test_gpu_request_falls_back_to_cpu_with_a_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        device = braze.Device("GPU", 0, "EAGER")
    if device.kind == "CPU":
        assert any("falling back to the CPU" in str(w.message) for w in caught)


def test_random_numbers_are_seeded_and_distributed():
    a = braze.rand((1000,), seed=3).numpy()
    b = braze.rand((1000,), seed=3).numpy()
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 0 and a.max() < 1 and abs(a.mean() - 0.5) < 0.05
    g = braze.Generator(7)
    first, second = braze.rand((4,), generator=g).numpy(), braze.rand((4,), generator=g).numpy()
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(braze.rand((4,), generator=braze.Generator(7)).numpy(), first)
    n = braze.randn((200_000,), seed=1).numpy()
    assert abs(n.mean()) < 0.01 and abs(n.std() - 1) < 0.01
    assert abs(np.mean(np.abs(n) > 1.96) - 0.05) < 0.005
    u = braze.uniform((1000,), -3.0, -1.0, seed=2).numpy()
    assert u.min() >= -3 and u.max() < -1


def test_normal_quantile_matches_known_values():
    p = braze.tensor(np.array([0.001, 0.025, 0.5, 0.8413447460685429, 0.999]))
    expected = [-3.090232306167813, -1.959963984540054, 0.0, 1.0, 3.090232306167813]
    np.testing.assert_allclose(braze.normal_quantile(p).numpy(), expected, atol=1e-8)


def test_argmax_of_booleans_and_comparison_dtype():
    assert (braze.ones((2,)) > 0).dtype == braze.bool_


def test_remembered_shape_rules_still_check_every_new_operand_type():
    a, b = braze.ones((2, 3)), braze.ones((3, 4))
    for _ in range(2):
        assert (a @ b).shape == (2, 4) and (a + a).shape == (2, 3)
    with pytest.raises(braze.ShapeError, match="matmul"):
        a @ a
    with pytest.raises(braze.DTypeError, match="dtypes differ"):
        a + braze.ones((2, 3), dtype="float64")
    assert braze.ones((5, 3)).reshape(15).shape == (15,)
    with pytest.raises(braze.ShapeError, match="reshape"):
        braze.ones((5, 3)).reshape(14)


def test_move_keeps_identity_value_and_drops_the_old_devices_gradient():
    x = braze.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.move_("cpu:0:lazy") is x
    assert x.device == braze.LAZY_CPU and x.grad is None and x.requires_grad
    np.testing.assert_array_equal((x * 2.0).numpy(), [2.0, -4.0, 6.0])
    x.move_(braze.CPU)
    assert x.device == braze.CPU
    np.testing.assert_array_equal(x.numpy(), [1.0, -2.0, 3.0])


@pytest.mark.parametrize("device", [braze.CPU, braze.LAZY_CPU])
def test_broadcast_sizes_given_as_floats_or_numpy_ints_become_ints(device):
    x = braze.tensor(np.arange(3, dtype=np.float32), device=device)
    for shape in [(2.0, 3), (np.int64(2), 3), (np.int32(2), np.int64(3))]:
        y = braze.ops.broadcast_to(x, shape)
        assert y.shape == (2, 3) and all(type(s) is int for s in y.shape), shape
        np.testing.assert_array_equal(y.numpy(), np.broadcast_to(np.arange(3, dtype=np.float32), (2, 3)))
