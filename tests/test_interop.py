"""DLPack exchange: memory shared both ways with NumPy always, PyTorch and JAX where installed."""

from __future__ import annotations

import numpy as np
import pytest

import braze


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def test_numpy_array_is_shared_both_ways():
    source = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = braze.from_dlpack(source)
    assert t.shape == (2, 3) and t.dtype == braze.float32 and t.device == braze.CPU
    source[1, 2] = 50.0
    assert t.numpy()[1, 2] == 50.0
    view = np.from_dlpack(t)
    view[0, 0] = -1.0
    assert source[0, 0] == -1.0 and t.numpy()[0, 0] == -1.0
    np.testing.assert_array_equal((t * 2.0).numpy(), source * 2)


def test_exported_view_keeps_strides_and_dtype():
    t = braze.tensor(np.arange(12, dtype=np.int64).reshape(3, 4)).T
    np.testing.assert_array_equal(np.from_dlpack(t), np.arange(12).reshape(3, 4).T)
    assert t.__dlpack_device__() == (1, 0)


def test_lazy_tensor_is_materialized_first():
    lazy = braze.tensor([1.0, 2.0, 3.0], device=braze.LAZY_CPU) * 3.0 + 1.0
    np.testing.assert_array_equal(np.from_dlpack(lazy), [4.0, 7.0, 10.0])
    assert lazy.device == braze.LAZY_CPU
    np.testing.assert_array_equal((lazy - 1.0).numpy(), [3.0, 6.0, 9.0])


def test_unsupported_inputs_are_clear_errors():
    with pytest.raises(braze.DTypeError, match="from_dlpack: unsupported dtype 'float16'"):
        braze.from_dlpack(np.zeros(2, np.float16))
    with pytest.raises(TypeError, match="list does not support the DLPack protocol"):
        braze.from_dlpack([1.0, 2.0])

    class OnCuda:
        def __dlpack__(self, **kwargs):
            raise AssertionError("never asked for its data")

        def __dlpack_device__(self):
            return (2, 1)

    with pytest.raises(braze.DeviceError, match="lives on CUDA:1; braze can share CPU memory only"):
        braze.from_dlpack(OnCuda())


def test_torch_tensor_is_shared_both_ways():
    torch = pytest.importorskip("torch")
    source = torch.arange(4.0)
    t = braze.from_dlpack(source)
    assert t.dtype == braze.float32
    source[1] = 10.0
    np.testing.assert_array_equal(t.numpy(), [0.0, 10.0, 2.0, 3.0])
    x = braze.tensor([1.0, 2.0, 3.0])
    back = torch.from_dlpack(x)
    assert back.data_ptr() == _address(x.numpy())
    back[0] = 7.0
    np.testing.assert_array_equal(x.numpy(), [7.0, 2.0, 3.0])
    lazy = braze.tensor([1.0, 2.0], device=braze.LAZY_CPU) * 3.0
    np.testing.assert_array_equal(torch.from_dlpack(lazy).numpy(), [3.0, 6.0])


def test_jax_array_is_shared_both_ways():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    source = jnp.arange(8.0, dtype=jnp.float32)
    t = braze.from_dlpack(source)
    assert _address(t.numpy()) == source.unsafe_buffer_pointer()
    np.testing.assert_array_equal(t.numpy(), np.arange(8.0))
    # JAX arrays are immutable; a NumPy buffer shows writes. JAX shares a host buffer
    # only when it is 64-byte aligned (XLA's minimum), and copies it otherwise.
    raw = np.zeros(8 * 4 + 64, np.uint8)
    start = -_address(raw) % 64
    shared = raw[start : start + 32].view(np.float32)
    t = braze.from_dlpack(shared)
    back = jax.dlpack.from_dlpack(t)
    assert back.unsafe_buffer_pointer() == _address(shared)
    shared[3] = -3.0
    assert float(back[3]) == -3.0 and t.numpy()[3] == -3.0
