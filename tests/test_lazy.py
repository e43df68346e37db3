"""Lazy tensors: the same values as eager mode, one compile per distinct step graph,
reads that leave the trace intact, trace-time errors, and the executable cache."""

from __future__ import annotations

import importlib
import re
import weakref

import numpy as np
import pytest
from op_cases import CASES

import braze
from braze import lazy
from braze.data import DataLoader, load_mnist
from braze.ir.graph import Graph, Node, parameter
from braze.ir.primitive import Aval
from braze.ir.prims.elementwise import neg
from braze.models import LeNet
from braze.nn import Statistics, softmax_cross_entropy
from braze.optim import SGD
from braze.runtime import metrics
from braze.runtime.cache import BoundedCache, ExecutableCache

LAZY = braze.LAZY_CPU


@pytest.fixture(autouse=True)
def fresh_metrics(monkeypatch):
    """These tests pin lazy semantics on the reference interpreter (the native backend has
    its own tests under tests/backends, against the same oracle)."""
    monkeypatch.setenv("BRAZE_BACKEND", "reference")
    metrics.reset()
    yield
    braze.barrier()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_op_gives_the_same_values_lazily(case):
    arrays = case.inputs()
    eager = case.fn(*[braze.tensor(a) for a in arrays])
    traced = case.fn(*[braze.tensor(a, device=LAZY) for a in arrays])
    assert traced.device == LAZY and traced._value.pending
    np.testing.assert_allclose(traced.numpy(), eager.numpy(), rtol=1e-6, atol=1e-7)


def lenet_steps(device, batches, steps=20):
    model = LeNet(seed=0).to(device)
    optimizer = SGD(model, lr=0.1)
    for x, y in batches[:steps]:
        optimizer.zero_grad()
        loss = softmax_cross_entropy(model(braze.tensor(x, device=device)), braze.tensor(y, device=device))
        loss.backward()
        optimizer.step()
        if device.is_lazy:
            braze.barrier(device)
    return model


@pytest.fixture(scope="module")
def mnist_batches():
    data = load_mnist()
    images = data.train_images[: 128 * 20, ..., None].astype(np.float32) / 255
    return list(DataLoader((images, data.train_labels[: 128 * 20]), 128))


def test_lenet_trained_lazily_matches_eager(mnist_batches):
    eager = lenet_steps(braze.CPU, mnist_batches)
    traced = lenet_steps(LAZY, mnist_batches)
    for p, q in zip(eager.parameters(), traced.parameters(), strict=True):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-5, atol=1e-5)
    assert metrics.counter("Compile") == 1, metrics.report()
    assert metrics.counter("CacheHit") == 19


def test_lenet_trained_on_native_code_matches_eager(mnist_batches, monkeypatch, tmp_path):
    from braze.backends import cpu

    if not cpu.available():
        pytest.skip("no C compiler")
    monkeypatch.setenv("BRAZE_BACKEND", "cpu")
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path))
    # A process-wide cache may hold this step already (braze bench lenet compiles it too).
    monkeypatch.setattr(lazy.EXECUTOR, "cache", ExecutableCache())
    monkeypatch.setattr(lazy.EXECUTOR, "traces", lazy.TraceCache())
    eager = lenet_steps(braze.CPU, mnist_batches)
    native = lenet_steps(LAZY, mnist_batches)
    for p, q in zip(eager.parameters(), native.parameters(), strict=True):
        # float32 sums in another order (a bias gradient in blocks of vectors, with double
        # partial sums, where NumPy adds row after row in float32): one step's gradients
        # agree to about 1e-7, and the trajectories part by a few 1e-4 over 20 steps of SGD.
        # A wrong gradient parts them by 1e-2 and more.
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-3, atol=1e-3)
    assert metrics.counter("Compile") == 1 and metrics.counter("DiskCacheMiss") == 1


def test_one_compile_per_distinct_step_over_an_epoch(mnist_batches, capsys, monkeypatch):
    monkeypatch.setenv("BRAZE_DEBUG", "1")
    model = LeNet(seed=0).to(LAZY)
    optimizer = SGD(model, lr=0.1)
    train_stats, test_stats = Statistics(LAZY), Statistics(LAZY)
    for x, y in mnist_batches[:6]:
        x, y = braze.tensor(x, device=LAZY), braze.tensor(y, device=LAZY)
        optimizer.zero_grad()
        logits = model(x)
        loss = softmax_cross_entropy(logits, y)
        loss.backward()
        train_stats.update(logits, y, loss)
        optimizer.step()  # ends with an automatic barrier on a lazy device
    assert metrics.counter("Barrier") == 6
    assert metrics.counter("Compile") == 1
    test_images = np.concatenate([b[0] for b in mnist_batches[:3]])[:300]
    test_labels = np.concatenate([b[1] for b in mnist_batches[:3]])[:300]
    with braze.no_grad():
        for x, y in DataLoader((test_images, test_labels), 128):  # 128, 128, then 44
            x, y = braze.tensor(x, device=LAZY), braze.tensor(y, device=LAZY)
            logits = model(x)
            test_stats.update(logits, y, softmax_cross_entropy(logits, y))
            braze.barrier()
    assert metrics.counter("Compile") == 3  # training step, evaluation step, last smaller batch
    assert train_stats.total == 6 * 128 and 0 <= test_stats.correct_count <= 300
    err = capsys.readouterr().err
    assert re.search(
        r"compiling again at .*test_lazy.py:\d+: input \d+ shape changed from f32\[128,28,28,1\] "
        r"to f32\[44,28,28,1\]",
        err,
    ), err


def test_reading_mid_step_runs_only_what_it_needs_and_keeps_the_step_graph(mnist_batches):
    model = LeNet(seed=0).to(LAZY)
    optimizer = SGD(model, lr=0.1)

    def step(x, y, read: bool):
        optimizer.zero_grad()
        logits = model(braze.tensor(x, device=LAZY))
        loss = softmax_cross_entropy(logits, braze.tensor(y, device=LAZY))
        if read:
            nodes_before = metrics.value("GraphNodes").samples
            value = loss.item()
            assert metrics.value("GraphNodes").samples == nodes_before + 1
            forward_only = metrics.value("GraphNodes").last
            assert np.isfinite(value)
        loss.backward()
        optimizer.step()
        braze.barrier()
        return forward_only if read else metrics.value("GraphNodes").last

    (x0, y0), (x1, y1), (x2, y2) = mnist_batches[:3]
    full_step = step(x0, y0, read=False)
    forward_only = step(x1, y1, read=True)
    assert forward_only < full_step / 2  # the read ran the forward pass, not the backward
    hits = metrics.counter("CacheHit")
    step(x2, y2, read=False)
    assert metrics.counter("CacheHit") == hits + 1
    assert metrics.counter("Compile") == 2  # the step graph and the forward-only read


def test_shape_errors_are_raised_at_trace_time_with_the_source_line():
    a = braze.ones((3, 4), device=LAZY)
    with pytest.raises(braze.ShapeError, match=rf"matmul: contracting dimensions differ.*{re.escape(__file__)}:\d+"):
        a @ a
    assert metrics.counter("Compile") == 0


def test_an_op_across_devices_names_both():
    with pytest.raises(
        braze.DeviceError,
        match=r"add: operands are on different devices: Device\(kind: \.CPU, ordinal: 0, backend: \.EAGER\) "
        r"and Device\(kind: \.CPU, ordinal: 0, backend: \.LAZY\)",
    ):
        braze.ones((2,)) + braze.ones((2,), device=LAZY)


def test_moving_between_eager_and_lazy_counts_transfers():
    x = braze.tensor([1.0, 2.0]).to(LAZY)
    y = (x * 3.0).to(braze.CPU)
    assert y.device == braze.CPU and y.tolist() == [3.0, 6.0]
    assert metrics.counter("TransferToDevice") == 1 and metrics.counter("TransferFromDevice") == 1


def test_scalars_that_change_between_steps_do_not_recompile():
    x = braze.ones((3,), device=LAZY)
    for lr in (0.1, 0.2, 0.3):
        (x * lr).numpy()
    assert metrics.counter("Compile") == 1 and metrics.counter("CacheHit") == 2


def test_barrier_turns_pending_tensors_into_device_data():
    x = braze.ones((2,), device=LAZY)
    y = x + 1.0
    assert y._value.pending
    braze.barrier()
    assert not y._value.pending and y.tolist() == [2.0, 2.0]


def test_a_barrier_that_fails_leaves_the_step_pending_for_the_next(monkeypatch):
    x = braze.tensor(np.arange(3, dtype=np.float32), device=LAZY)
    w = braze.tensor(np.ones(3, np.float32), device=LAZY)
    w -= x * 0.5  # an in-place update, as an optimizer's
    compile_for_target = lazy.compile_for_target
    failures = []

    def failing_once(graph, target):
        if not failures:
            failures.append(target)
            raise MemoryError("no memory for the step")
        return compile_for_target(graph, target)

    monkeypatch.setattr(lazy, "compile_for_target", failing_once)
    with pytest.raises(MemoryError):
        braze.barrier()
    assert w._value.pending
    braze.barrier()  # runs the same step again
    assert not w._value.pending and failures
    np.testing.assert_array_equal(w.numpy(), 1 - 0.5 * np.arange(3, dtype=np.float32))


def test_cache_evicts_the_least_recently_used_graph():
    cache = ExecutableCache(max_size=2)

    def graph(n: int) -> Graph:
        p = parameter(0, Aval((n,), braze.float32))
        return Graph((p,), (Node.make(neg, (p,), {}, p.aval),))

    compiled = []
    for n in (1, 2, 1, 3, 2):
        cache.get_or_compile(graph(n), "reference", lambda g: compiled.append(g) or g)
    assert len(compiled) == 4  # 1, 2 compiled; 1 hit; 3 evicts 2; 2 compiled again
    assert metrics.counter("CacheHit") == 1 and metrics.counter("CacheEvict") == 2
    assert lazy.cache_size() >= 0


def test_parameters_are_updated_in_place_unless_someone_still_holds_the_old_value():
    model = LeNet(seed=0).to(LAZY)
    optimizer = SGD(model, lr=0.1)
    x = braze.tensor(np.random.default_rng(0).random((8, 28, 28, 1), dtype=np.float32), device=LAZY)
    y = braze.tensor(np.arange(8) % 10, device=LAZY)
    kernel = model.parameters()[0]

    def step():
        optimizer.zero_grad()
        softmax_cross_entropy(model(x), y).backward()
        optimizer.step()
        braze.barrier()

    buffer = weakref.ref(kernel._value.data)  # held strongly, the test would hold the old value too
    step()
    assert kernel._value.data is buffer()  # written in place, not copied
    assert metrics.counter("DonatedBuffers") == len(model.parameters()) + 1  # and the optimizer's step count
    old = np.array(kernel.numpy())
    alias = kernel.detach()
    step()
    np.testing.assert_array_equal(alias.numpy(), old)  # the alias keeps the value it saw
    assert not np.array_equal(kernel.numpy(), old)


def test_backward_releases_saved_values_unless_retained():
    x = braze.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 8.0])
    with pytest.raises(RuntimeError, match="backward through a graph a second time"):
        y.backward()


# The trace cache: a repeated step finds its graph by the recorded ops --------------------


@pytest.fixture
def empty_caches():
    lazy.EXECUTOR.cache.clear()
    lazy.EXECUTOR.traces.clear()


def run_lazily(fn, *arrays):
    """``fn`` of lazy tensors, computed at a barrier; its value and the eager one."""
    result = fn(*[braze.tensor(a, device=LAZY) for a in arrays])
    braze.barrier()
    return result.numpy(), fn(*[braze.tensor(a) for a in arrays]).numpy()


def test_a_repeated_step_finds_its_graph_by_the_recorded_ops(empty_caches):
    rng = np.random.default_rng(0)
    for _ in range(3):
        got, expected = run_lazily(lambda w, x: ((w @ x).tanh() * 0.3 - w.sum(axis=1)).exp(), *rng.random((2, 4, 4)))
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert metrics.counter("TraceCacheMiss") == 1 and metrics.counter("TraceCacheHit") == 2
    assert metrics.counter("Compile") == 1 and metrics.counter("CacheHit") == 2


def test_a_repeated_step_keeps_its_trace_key_while_other_work_fills_the_shape_rule_cache(empty_caches, monkeypatch):
    """A trace's key is made of the shape-rule cache's signatures: entries a step reads every
    time must stay while eager work of ever new shapes fills the cache between steps."""
    tensor_module = importlib.import_module("braze.tensor")
    monkeypatch.setattr(tensor_module, "_AVALS", BoundedCache(64, recency=False))
    w, x = np.random.default_rng(0).random((2, 4, 4))
    for step in range(6):
        got, expected = run_lazily(lambda a, b: ((a @ b).tanh() * 0.3 - a.sum(axis=1)).exp(), w, x)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
        for n in range(30):
            braze.tensor(np.ones(1 + n + 30 * step, np.float32)).exp()
    assert metrics.counter("TraceCacheMiss") == 1 and metrics.counter("TraceCacheHit") == 5


def test_another_shape_another_trace(empty_caches):
    for n in (3, 4, 3):
        got, expected = run_lazily(lambda x: x * 2.5 + 1.0, np.arange(n, dtype=np.float32))
        np.testing.assert_array_equal(got, expected)
    assert metrics.counter("TraceCacheMiss") == 2 and metrics.counter("TraceCacheHit") == 1
    assert metrics.counter("Compile") == 2


def test_a_new_python_scalar_is_a_new_input_to_the_same_graph(empty_caches):
    x = np.array([1.0, -2.0, 4.0], dtype=np.float32)
    for lr in (0.1, 0.2, 0.3):
        got, _ = run_lazily(lambda t, lr=lr: t - t * lr, x)
        np.testing.assert_allclose(got, x - x * np.float32(lr), rtol=1e-6)
    assert metrics.counter("TraceCacheHit") == 2 and metrics.counter("Compile") == 1


def test_zero_one_and_negative_zero_stay_constants_of_their_own_graphs(empty_caches):
    x = np.array([1.0, -1.0], dtype=np.float32)
    one, zero, negative_zero, zero_again = (run_lazily(lambda t, f=f: t * f, x)[0] for f in (1.0, 0.0, -0.0, 0.0))
    np.testing.assert_array_equal(one, x)
    assert list(np.signbit(zero)) == list(np.signbit(zero_again)) == [False, True]
    assert list(np.signbit(negative_zero)) == [True, False]
    assert metrics.counter("TraceCacheMiss") == 3 and metrics.counter("TraceCacheHit") == 1


def test_an_attribute_or_a_branch_changes_the_trace(empty_caches):
    square = np.arange(9, dtype=np.float32).reshape(3, 3)
    for axis in (0, 1, 0):
        got, expected = run_lazily(lambda t, axis=axis: t.sum(axis=axis), square)
        np.testing.assert_array_equal(got, expected)
    for flag in (True, False, True):
        got, expected = run_lazily(lambda t, flag=flag: t * 3.0 if flag else t + 3.0, square)
        np.testing.assert_array_equal(got, expected)
    assert metrics.counter("TraceCacheMiss") == 4 and metrics.counter("TraceCacheHit") == 2


def test_parameters_are_numbered_by_first_use_so_swapped_operands_share_a_graph(empty_caches):
    a, b = np.array([5.0, 1.0], dtype=np.float32), np.array([2.0, 3.0], dtype=np.float32)
    np.testing.assert_array_equal(run_lazily(lambda x, y: x - y, a, b)[0], a - b)
    np.testing.assert_array_equal(run_lazily(lambda x, y: y - x, a, b)[0], b - a)
    assert metrics.counter("TraceCacheHit") == 1 and metrics.counter("Compile") == 1


def test_an_input_read_twice_and_two_inputs_of_its_type_are_different_traces(empty_caches):
    a, b = np.array([5.0, 1.0], dtype=np.float32), np.array([2.0, 3.0], dtype=np.float32)
    np.testing.assert_array_equal(run_lazily(lambda x: x * x, a)[0], a * a)
    np.testing.assert_array_equal(run_lazily(lambda x, y: x * y, a, b)[0], a * b)
    np.testing.assert_array_equal(run_lazily(lambda x, y: y * (x * x), a, b)[0], b * (a * a))
    np.testing.assert_array_equal(run_lazily(lambda x, y: (x * y) * y, a, b)[0], a * b * b)
    assert metrics.counter("TraceCacheMiss") == 4 and metrics.counter("Compile") == 4


def test_which_values_are_results_is_part_of_the_trace(empty_caches):
    """The same ops with another set of live results (an intermediate kept) are another
    graph: each result is computed."""
    x = np.array([1.0, 2.0], dtype=np.float32)
    for keep in ("last", "both", "last"):
        t = braze.tensor(x, device=LAZY)
        u = t * 3.0
        v = u + 2.0
        kept = {"last": [v], "both": [u, v]}[keep]
        del u, v
        braze.barrier()
        expected = {"last": [x * 3 + 2], "both": [x * 3, x * 3 + 2]}[keep]
        for found, value in zip(kept, expected, strict=True):
            np.testing.assert_array_equal(found.numpy(), value)
    assert metrics.counter("TraceCacheMiss") == 2 and metrics.counter("TraceCacheHit") == 1


def test_an_unhashable_attribute_is_traced_without_the_cache(empty_caches):
    from braze.ir.prims import structural

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for _ in range(2):
        got, expected = run_lazily(lambda t: structural.transpose.bind(t, permutation=[1, 0]), x)
        np.testing.assert_array_equal(got, x.T)
    assert metrics.counter("TraceCacheHit") == metrics.counter("TraceCacheMiss") == 0
    assert metrics.counter("Compile") == 1 and metrics.counter("CacheHit") == 1


def test_donating_or_not_is_part_of_the_trace(empty_caches):
    w = braze.tensor(np.ones(3, dtype=np.float32), device=LAZY)
    for step in range(3):
        alias = w.detach() if step == 1 else None  # someone holds the old value: no donation
        with braze.no_grad():
            w -= w * 0.5
        braze.barrier()
        if alias is not None:
            np.testing.assert_array_equal(alias.numpy(), [0.5] * 3)
    np.testing.assert_array_equal(w.numpy(), [0.125] * 3)
    assert metrics.counter("DonatedBuffers") == 2
    assert metrics.counter("TraceCacheMiss") == 2 and metrics.counter("TraceCacheHit") == 1


def test_lenet_steps_hit_the_trace_cache_and_match_eager(mnist_batches, empty_caches):
    eager = lenet_steps(braze.CPU, mnist_batches, steps=4)
    traced = lenet_steps(LAZY, mnist_batches, steps=4)
    for p, q in zip(eager.parameters(), traced.parameters(), strict=True):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-5, atol=1e-5)
    assert metrics.counter("TraceCacheMiss") == 1 and metrics.counter("TraceCacheHit") == 3


def test_tensors_that_died_pending_do_not_accumulate():
    x = braze.ones((2,), device=LAZY)
    kept = x + 1.0
    for _ in range(5000):
        x * 3.0  # noqa: B018 - a pending result nobody keeps
    assert len(lazy.EXECUTOR._live[LAZY]) < 2100
    braze.barrier()
    assert not kept._value.pending and kept.tolist() == [2.0, 2.0]


def _recorded(expr):
    """``expr``, its second operand and that operand's input (a broadcast number's
    constant), each as (primitive, attributes, type, signature)."""
    chain = [expr, expr.inputs[1], expr.inputs[1].inputs[0]]
    return [(e.primitive, e.attrs, e.aval, e.signature) for e in chain]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_number_operand_records_what_its_binds_record(dtype):
    """A number combined with a lazy tensor is recorded from a note of its first
    broadcast: the same expressions (so the same trace key) as the op library's binds, and a
    number differing in value, dtype or shape gets its own."""
    from braze.ops.core import broadcast_to, scalar

    x = braze.tensor(np.arange(6, dtype=dtype).reshape(2, 3), device=LAZY)
    for value in (0.0, 1.0, 2.5, -0.0, 2.5):  # 2.5 again: from the note of the first
        by_binds = x * broadcast_to(scalar(value, x.dtype, LAZY), x.shape)
        noted = x * value
        assert _recorded(noted._value) == _recorded(by_binds._value)
        assert lazy.Trace([noted._value]).key == lazy.Trace([by_binds._value]).key
        np.testing.assert_array_equal(noted.numpy(), np.arange(6, dtype=dtype).reshape(2, 3) * value)
    column = braze.tensor(np.ones((2, 1), dtype=dtype), device=LAZY)
    shapes = {(x * 2.5)._value.inputs[1].aval, (column * 2.5)._value.inputs[1].aval}
    literals = {(x * v)._value.inputs[1].inputs[0].attrs["value"] for v in (0.0, -0.0, 1.0, 2.5)}
    assert len(shapes) == 2 and len(literals) == 4
    assert {lit.array.dtype for lit in literals} == {np.dtype(dtype)}


def test_a_number_kept_pending_is_a_graph_input_at_the_barrier():
    x = braze.tensor(np.arange(3, dtype=np.float32), device=LAZY)
    half = braze.full((), 0.5, device=LAZY)  # a pending constant that is itself a root
    y = x * half
    roots = lazy.EXECUTOR.pending_roots(LAZY)
    trace = lazy.Trace(roots)
    assert [r.primitive.name for r in lazy._recorded_ops(roots)] == ["broadcast_in_dim", "mul"]
    assert len(trace.leaves) == 2 and any(leaf is half._value for leaf in trace.leaves)
    braze.barrier()
    assert half.item() == 0.5 and y.tolist() == [0.0, 0.5, 1.0]


def test_a_hand_written_tape_loop_without_a_barrier_compiles_graphs_of_a_few_steps():
    # Curve fitting as TensorFlow users write it: variables updated by assign_sub, no
    # optimizer, no value read until the end. The trace is cut as a tape block opens once
    # it is long, so the graphs stay small and one like the next, and the values are eager's.
    x = np.array([165.0, 330.0, 825.0, 1651.0], np.float32)
    y = np.array([0.81, 0.87, 0.90, 0.91], np.float32)
    results = {}
    for device in (braze.CPU, braze.LAZY_CPU):
        a = braze.tensor(np.float32(0.1), device=device)
        b = braze.tensor(np.float32(0.1), device=device)
        for _ in range(300):
            with braze.GradientTape() as tape:
                tape.watch([a, b])
                loss = ((a * braze.tensor(x, device=device) ** b - braze.tensor(y, device=device)) ** 2).mean()
            grad_a, grad_b = tape.gradient(loss, [a, b])
            a.assign_sub(grad_a * 0.01)
            b.assign_sub(grad_b * 0.01)
        results[device] = (a.item(), b.item())
    np.testing.assert_allclose(results[braze.LAZY_CPU], results[braze.CPU], rtol=1e-5)
    assert metrics.value("GraphNodes").maximum < 3 * lazy.LONG_TRACE  # not 300 steps' worth
    assert metrics.counter("Barrier") >= 300 * 20 // lazy.LONG_TRACE  # about one cut per LONG_TRACE expressions


@pytest.mark.parametrize("device", [braze.CPU, LAZY], ids=["eager", "lazy"])
@pytest.mark.parametrize(
    "loss, wanted",
    [
        (lambda a, b, x: ((a + b) * x * x).sum(), lambda x: [x * x, x * x]),  # one gradient for two leaves
        (lambda a, b, x: (a * x * x).sum() + (b * x * x).sum(), lambda x: [x * x, x * x]),  # two computed alike
        (lambda a, b, x: (a * x).sum() + (b * b).sum(), lambda x: [x, 2 * np.ones(3)]),  # one equal to an input
    ],
    ids=["shared", "alike", "an-input"],
)
def test_gradients_sharing_a_buffer_are_updated_in_place_one_at_a_time(device, loss, wanted):
    """Gradients that hold one buffer between them (or with an input) in a lazy step's
    results: scaling one in place (``a.grad *= 2``) leaves the other, and the input, as
    they were (NumPy's values), every step, as PyTorch's separate gradients behave."""
    x_np = np.array([1.0, 2.0, 3.0])
    a, b = (braze.tensor(np.ones(3), device=device, requires_grad=True) for _ in range(2))
    x = braze.tensor(x_np, device=device)
    for _ in range(3):
        a.grad = b.grad = None
        loss(a, b, x).backward()
        braze.barrier()
        with braze.no_grad():
            a.grad *= 2.0
        braze.barrier()
        grad_a, grad_b = wanted(x_np)
        np.testing.assert_array_equal(a.grad.numpy(), 2 * grad_a)
        np.testing.assert_array_equal(b.grad.numpy(), grad_b)
        np.testing.assert_array_equal(x.numpy(), x_np)


def test_an_array_read_with_numpy_keeps_its_values_through_a_lazy_step():
    """``.numpy()`` hands out the parameter's buffer (read-only); the optimizer's step that
    follows writes a new buffer instead of that one, so the array keeps what was read."""
    w = braze.tensor(np.ones(4, np.float32), device=LAZY, requires_grad=True)
    optimizer = SGD([w], lr=0.5)
    read = w.numpy()
    for _ in range(2):
        w.grad = braze.tensor(np.ones(4, np.float32), device=LAZY)
        optimizer.step()
    np.testing.assert_array_equal(read, np.ones(4, np.float32))
    np.testing.assert_array_equal(w.numpy(), np.zeros(4, np.float32))


def test_a_pending_lazy_tensor_deep_copies_as_its_value():
    """``copy.deepcopy`` of a model or tensor mid-step copies pending expressions: their
    primitives and replayed programs are the same objects (compared by identity), so the
    copy computes what the original does (NumPy's values)."""
    import copy

    x_np = np.array([1.0, 2.0, 3.0])
    x = braze.tensor(x_np, device=LAZY)
    y = x * 2.5 + 1
    copied = copy.deepcopy(y)
    assert copied._value.primitive is y._value.primitive
    np.testing.assert_allclose(copied.numpy(), x_np * 2.5 + 1)
    for _ in range(2):  # recorded, then replayed: the gradient is a program's result
        a = braze.tensor(x_np, device=LAZY, requires_grad=True)
        (a * a * x).sum().backward()
        copied = copy.deepcopy(a.grad)
        assert copied._value.primitive is a.grad._value.primitive
        np.testing.assert_allclose(copied.numpy(), 2 * x_np * x_np)
