"""Buffers that lazy steps and jitted calls write in place: a value computed lazily or by a
compiled call is what eager code computes, whoever else holds the buffer it came from or
went into (another tensor, a NumPy array of yours, a value read before the step), and the
in-place operators update the tensor itself, as NumPy's and PyTorch's do."""

from __future__ import annotations

import operator
import weakref

import numpy as np
import pytest

import braze
import braze.array_api as xp
from braze.models import LeNet
from braze.nn import softmax_cross_entropy
from braze.optim import SGD, AdamW
from braze.runtime import metrics

LAZY = braze.LAZY_CPU
MATRIX = [[1.0, 2.0], [3.0, 4.0]]


@pytest.fixture(params=["cpu", "reference"], autouse=True)
def backend(request, monkeypatch):
    """Native code writes donated buffers in its kernels, the interpreter copies results
    into them: both must leave every other holder alone."""
    monkeypatch.setenv("BRAZE_BACKEND", request.param)
    metrics.reset()
    yield request.param
    braze.barrier()


# 1. A result that simplifies to an input -------------------------------------------------

SAME_AS_INPUT = {
    "T.T": lambda x: x.T.T,
    "times one": lambda x: x * 1.0,
    "negated twice": lambda x: x.__neg__().__neg__(),
    "reshaped and back": lambda x: x.reshape(4).reshape(2, 2),
}


@pytest.mark.parametrize("fn", SAME_AS_INPUT.values(), ids=SAME_AS_INPUT.keys())
@pytest.mark.parametrize("barrier_between", [False, True], ids=["one step", "two steps"])
def test_a_lazy_result_equal_to_its_input_keeps_the_inputs_old_value(fn, barrier_between):
    results = []
    for device in (braze.CPU, LAZY):
        x = braze.tensor(MATRIX, device=device)
        braze.barrier()
        w = fn(x)
        if barrier_between:
            braze.barrier()
        x += 1.0
        braze.barrier()
        results.append((w.tolist(), x.tolist()))
    assert results[1] == results[0] == (MATRIX, [[2.0, 3.0], [4.0, 5.0]])


def test_an_array_read_before_the_step_keeps_what_it_read():
    x = braze.tensor(MATRIX, device=LAZY)
    braze.barrier()
    y = x.T.T  # pending: its value is x's buffer
    read = y.numpy()
    x += 1.0
    braze.barrier()
    assert read.tolist() == MATRIX
    assert y.tolist() == MATRIX and x.tolist() == [[2.0, 3.0], [4.0, 5.0]]


def test_a_jitted_call_returning_a_donated_inputs_old_value_returns_the_old_value():
    def update(x):
        old = x.T.T
        x += 1.0
        return old

    eager_x = braze.tensor(MATRIX)
    eager_old = update(eager_x)
    step = braze.jit(update, donate_argnums=(0,))
    for _ in range(2):  # traced, then replayed
        x = braze.tensor(MATRIX)
        old = step(x)
        assert old.tolist() == eager_old.tolist() == MATRIX
        assert x.tolist() == eager_x.tolist()


@pytest.mark.parametrize("device", [braze.CPU, LAZY], ids=["eager", "lazy"])
def test_updating_a_jitted_result_equal_to_the_argument_leaves_the_argument(device):
    same = braze.jit(lambda t: t.T.T)
    for _ in range(2):
        x = braze.tensor([1.0, 2.0], device=device)
        braze.barrier()
        r = same(x)
        r += 1.0
        braze.barrier()
        assert x.tolist() == [1.0, 2.0] and r.tolist() == [2.0, 3.0]


# 2. Arrays of yours that a lazy tensor was made from --------------------------------------


def test_asarray_on_a_lazy_device_never_writes_into_your_array():
    a = np.arange(4.0, dtype=np.float32)
    x = xp.asarray(a, device=LAZY)
    x[0] = 100.0
    braze.barrier()
    x += 1.0
    braze.barrier()
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert x.tolist() == [101.0, 2.0, 3.0, 4.0]
    eager = xp.asarray(a)
    eager[0] = 100.0
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]  # as eager code leaves it


def test_a_read_only_array_is_never_written():
    raw = np.arange(4, dtype=np.float32).tobytes()
    a = np.frombuffer(raw, dtype=np.float32)
    x = xp.asarray(a, device=LAZY)
    for _ in range(2):
        x += 1.0
        braze.barrier()
    assert np.frombuffer(raw, dtype=np.float32).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert x.tolist() == [2.0, 3.0, 4.0, 5.0]


def test_tensor_from_numpy_on_a_lazy_device_leaves_your_array():
    a = np.array([1.0, 2.0], np.float32)
    t = braze.Tensor.from_numpy(a, LAZY)
    for _ in range(2):
        t += 1.0
        braze.barrier()
    assert a.tolist() == [1.0, 2.0] and t.tolist() == [3.0, 4.0]


def lenet_step(model, optimizer, images, labels):
    optimizer.zero_grad()
    loss = softmax_cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    return loss


@pytest.fixture(scope="module")
def batch():
    rng = np.random.default_rng(0)
    return rng.standard_normal((8, 28, 28, 1)).astype(np.float32), (np.arange(8) % 10).astype(np.int32)


def test_a_loaded_optimizer_state_is_not_written_by_the_next_steps(batch):
    """Two optimizers loaded from one state_dict (its arrays taken without a copy) and the
    dict itself keep their values while one of them steps, as in eager code."""
    images, labels = (braze.tensor(a, device=LAZY) for a in batch)

    def made():
        model = LeNet(seed=0).to(LAZY)
        optimizer = SGD(model, lr=0.1, momentum=0.9)
        lenet_step(model, optimizer, images, labels)  # its slots exist: a load fills them
        return model, optimizer

    model, optimizer = made()
    saved = optimizer.state_dict()
    before = {i: {k: v.copy() for k, v in slots.items()} for i, slots in saved["state"].items()}
    (model2, optimizer2), (_, optimizer3) = made(), made()
    optimizer2.load_state_dict(saved)
    optimizer3.load_state_dict(saved)
    third = [{k: np.array(v.numpy()) for k, v in slots.items()} for slots in optimizer3.state]
    for _ in range(2):
        lenet_step(model2, optimizer2, images, labels)
    braze.barrier()
    for i, slots in before.items():
        for name, value in slots.items():
            np.testing.assert_array_equal(saved["state"][i][name], value)
            np.testing.assert_array_equal(optimizer3.state[i][name].numpy(), third[i][name])


def test_lazy_training_steps_still_write_their_own_parameters_in_place(batch):
    images, labels = (braze.tensor(a, device=LAZY) for a in batch)
    model = LeNet(seed=0).to(LAZY)
    optimizer = AdamW(model, lr=1e-3)
    for _ in range(2):
        lenet_step(model, optimizer, images, labels)
    kernel = model.parameters()[0]
    buffer = weakref.ref(kernel._value.data)  # held strongly, the test would be one more holder
    metrics.reset()
    for _ in range(3):
        lenet_step(model, optimizer, images, labels)
    assert kernel._value.data is buffer()
    assert metrics.counter("DonatedBuffers") > 0 and metrics.counter("DonatedBufferCopies") == 0


# 3. jit's donated arguments --------------------------------------------------------------


def increment(t):
    t += 1.0


def test_donating_a_tensor_leaves_every_other_holder_of_its_buffer():
    step = braze.jit(increment, donate_argnums=(0,))
    for _ in range(2):  # traced, then replayed
        holders = {}
        for mode in ("eager", "jit"):
            x = braze.tensor([1.0, 2.0])
            copy, alias, array = braze.tensor(x), x.detach(), x.numpy()
            (increment if mode == "eager" else step)(x)
            holders[mode] = (x.tolist(), copy.tolist(), alias.tolist(), array.tolist())
        assert holders["jit"] == holders["eager"] == ([2.0, 3.0], [1.0, 2.0], [1.0, 2.0], [1.0, 2.0])


def test_donating_a_lazy_tensor_leaves_its_detached_alias():
    step = braze.jit(increment, donate_argnums=(0,))
    for _ in range(2):
        x = braze.tensor([1.0, 2.0], device=LAZY)
        braze.barrier()
        alias = x.detach()
        step(x)
        assert alias.tolist() == [1.0, 2.0] and x.tolist() == [2.0, 3.0]


@pytest.mark.parametrize("share", [xp.asarray, braze.from_dlpack], ids=["asarray", "from_dlpack"])
def test_donating_a_tensor_over_a_read_only_array_never_writes_it(share):
    b = np.arange(4, dtype=np.float32)
    b.setflags(write=False)
    step = braze.jit(increment, donate_argnums=(0,))
    y = share(b)
    step(y)
    step(y)
    assert b.tolist() == [0.0, 1.0, 2.0, 3.0] and y.tolist() == [2.0, 3.0, 4.0, 5.0]


def test_a_donated_training_step_still_writes_its_parameters_in_place(batch):
    images, labels = (braze.tensor(a) for a in batch)
    model = LeNet(seed=0)
    optimizer = AdamW(model, lr=1e-3)
    step = braze.jit(lenet_step, donate_argnums=(0, 1))
    evaluate = braze.jit(lambda model, images: model(images))  # its executable reads the same buffers
    for _ in range(2):
        step(model, optimizer, images, labels)
    evaluate(model, images)
    kernel = model.parameters()[0]
    buffer = weakref.ref(kernel._value)  # held strongly, the test would be one more holder
    metrics.reset()
    for _ in range(3):
        step(model, optimizer, images, labels)
    assert kernel._value is buffer()
    assert metrics.counter("DonatedBufferCopies") == 0


# 4. In-place operators -------------------------------------------------------------------

IN_PLACE = [
    (operator.ifloordiv, "float32", 2.0),
    (operator.ifloordiv, "int32", 2),
    (operator.imod, "float32", 2.5),
    (operator.imod, "int32", 3),
    (operator.ipow, "float32", 2.0),
    (operator.iand, "int32", 6),
    (operator.ior, "int32", 8),
    (operator.ixor, "int32", 5),
    (operator.ilshift, "int32", 2),
    (operator.irshift, "int32", 1),
    (operator.iand, "bool", True),
    (operator.imatmul, "float32", np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)),
]


@pytest.mark.parametrize("device", [braze.CPU, LAZY], ids=["eager", "lazy"])
@pytest.mark.parametrize(("op", "dtype", "other"), IN_PLACE, ids=lambda v: getattr(v, "__name__", None))
def test_in_place_operators_update_the_tensor_itself(device, op, dtype, other):
    start = np.array([[4, 7], [1, 3]]).astype(dtype)
    expected = op(start.copy(), other)  # NumPy's in-place result
    t = braze.tensor(start, device=device)
    alias = t
    operand = braze.tensor(other, device=device) if isinstance(other, np.ndarray) else other
    result = op(alias, operand)
    assert result is t
    braze.barrier()
    np.testing.assert_array_equal(t.numpy(), expected)
    assert t.dtype.name == dtype


@pytest.mark.parametrize(
    ("op", "other"), [(operator.ipow, 0.5), (operator.ifloordiv, 2.5), (operator.imatmul, np.ones((2, 1), np.int32))]
)
def test_an_in_place_operator_that_would_change_the_dtype_or_shape_is_an_error(op, other):
    t = braze.tensor([[1, 2], [3, 4]])
    operand = braze.tensor(other) if isinstance(other, np.ndarray) else other
    with pytest.raises((ValueError, TypeError)):
        op(t, operand)
    assert t.tolist() == [[1, 2], [3, 4]]


def test_an_in_place_operator_on_a_result_with_a_gradient_rebinds_as_the_others_do():
    x = braze.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    z = y
    z **= 2.0
    assert z is not y and y.tolist() == [2.0, 4.0] and z.tolist() == [4.0, 16.0]
    z.sum().backward()
    assert x.grad.tolist() == [8.0, 16.0]
