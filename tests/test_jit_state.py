"""What a jitted function reads from Python is an input, a guard or an error, never a frozen
constant: each program runs eagerly and under ``@braze.jit`` over several calls, changing
state between the calls as a training script does, and the two runs must agree."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.nn import Dense, Dropout, Sequential, softmax_cross_entropy
from braze.optim import SGD, AdamW
from braze.runtime import metrics

# Both runs do the same float32 arithmetic, in other orders (native kernels): a few steps
# stay within a few units of float32 rounding of the values they update.
RTOL, ATOL = 2e-5, 1e-6


@pytest.fixture(autouse=True)
def private_cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("BRAZE_CACHE", str(tmp_path_factory.getbasetemp() / "jit-cache"))
    metrics.reset()


def batch(seed: int = 0, n: int = 8) -> tuple[braze.Tensor, braze.Tensor]:
    rng = np.random.default_rng(seed)
    return braze.tensor(rng.standard_normal((n, 5)).astype(np.float32)), braze.tensor(rng.integers(0, 3, n))


def network(dropout: float = 0.0) -> Sequential:
    g = braze.Generator(7)
    layers = [Dense(16, activation="relu", input_dim=5, generator=g)]
    if dropout:
        layers.append(Dropout(dropout, seed=11))
    return Sequential(*layers, Dense(3, generator=g))


def train_step(model, optimizer, x, y):
    optimizer.zero_grad()
    loss = softmax_cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def twins(make_optimizer, dropout: float = 0.0):
    """Two identical models and optimizers: one for the eager run, one for the jitted run."""
    pairs = []
    for _ in range(2):
        model = network(dropout)
        pairs.append((model, make_optimizer(model)))
    return pairs


def assert_same_parameters(a, b) -> None:
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=RTOL, atol=ATOL)


def test_a_learning_rate_set_between_calls_is_an_input():
    (em, eo), (jm, jo) = twins(lambda m: SGD(m, lr=1.0))
    step = braze.jit(train_step)
    x, y = batch()
    before = [p.numpy().copy() for p in jm.parameters()]
    for lr in (1.0, 1.0, 0.1, 0.01):
        eo.lr = jo.lr = lr
        expected = train_step(em, eo, x, y)
        np.testing.assert_allclose(step(jm, jo, x, y).item(), expected.item(), rtol=RTOL)
        assert_same_parameters(em, jm)
    assert step.compiles == 1
    # The last update moved the parameters by 0.01 times a gradient, not by 1 times it.
    after = [p.numpy() for p in jm.parameters()]
    assert any(np.abs(a - b).max() > 0 for a, b in zip(after, before, strict=True))


def test_a_learning_rate_tensor_set_between_calls_is_read_on_every_call():
    (em, eo), (jm, jo) = twins(lambda m: SGD(m, lr=0.5))
    step = braze.jit(train_step)
    x, y = batch()
    for lr in (0.5, 0.1, 0.01):
        eo.lr, jo.lr = braze.tensor(lr), braze.tensor(lr)
        np.testing.assert_allclose(step(jm, jo, x, y).item(), train_step(em, eo, x, y).item(), rtol=RTOL)
        assert_same_parameters(em, jm)
    # A number, then tensors: two signatures; a new tensor value is not a new signature.
    assert step.compiles == 1


def test_dropout_draws_a_new_mask_on_every_call_as_eagerly():
    model = Sequential(Dropout(0.5, seed=3))
    twin = Sequential(Dropout(0.5, seed=3))
    forward = braze.jit(lambda m, x: m(x))
    x = braze.ones((4, 64))
    masks = []
    for _ in range(3):
        expected = twin(x).numpy()
        got = forward(model, x).numpy()
        np.testing.assert_array_equal(got, expected)
        masks.append(got)
    assert not np.array_equal(masks[0], masks[1]) and not np.array_equal(masks[1], masks[2])
    assert forward.compiles == 1


def test_dropout_from_the_default_generator_follows_manual_seed():
    forward = braze.jit(lambda m, x: m(x))
    x = braze.ones((2, 32))
    runs = []
    for jitted in (False, True):
        braze.manual_seed(5)
        model = Sequential(Dropout(0.25))
        runs.append([(forward(model, x) if jitted else model(x)).numpy() for _ in range(3)])
    for eager, jitted in zip(*runs, strict=True):
        np.testing.assert_array_equal(jitted, eager)
    assert forward.compiles == 1


def test_eval_after_tracing_in_training_mode_turns_dropout_off():
    model = Sequential(Dropout(0.5, seed=3))
    forward = braze.jit(lambda m, x: m(x))
    x = braze.ones((4, 16))
    assert (forward(model, x).numpy() == 0).any()
    model.eval()
    np.testing.assert_array_equal(forward(model, x).numpy(), x.numpy())
    model.train()
    assert (forward(model, x).numpy() == 0).any()
    assert forward.compiles == 2  # one per mode: the mode is a guard


def test_a_cosine_schedule_with_warm_up_is_computed_in_the_compiled_step():
    schedule = braze.optim.schedules.CosineDecay(0.0, 6, warmup_target=0.5, warmup_steps=3)
    (em, eo), (jm, jo) = twins(lambda m: SGD(m, lr=schedule))
    step = braze.jit(train_step)
    x, y = batch()
    for _ in range(10):  # warm-up, decay, and past its end
        np.testing.assert_allclose(step(jm, jo, x, y).item(), train_step(em, eo, x, y).item(), rtol=RTOL)
        assert_same_parameters(em, jm)
    assert int(jo.iterations) == int(eo.iterations) == 10
    assert step.compiles == 1


def test_a_pytorch_warm_up_and_cosine_scheduler_sets_inputs_between_calls():
    from braze.optim.lr_scheduler import CosineAnnealingLR, LinearLR, SequentialLR

    (em, eo), (jm, jo) = twins(lambda m: SGD(m, lr=0.5, momentum=0.9))
    schedulers = [
        SequentialLR(o, [LinearLR(o, 0.1, total_iters=3), CosineAnnealingLR(o, 5)], milestones=[3]) for o in (eo, jo)
    ]
    step = braze.jit(train_step)
    x, y = batch()
    for _ in range(8):
        np.testing.assert_allclose(step(jm, jo, x, y).item(), train_step(em, eo, x, y).item(), rtol=RTOL)
        assert_same_parameters(em, jm)
        for scheduler in schedulers:
            scheduler.step()
    assert jo.lr == eo.lr and step.compiles == 1


def test_adamw_hyperparameters_changed_mid_run_are_inputs_and_a_zero_weight_decay_a_guard():
    (em, eo), (jm, jo) = twins(lambda m: AdamW(m, lr=0.01))
    step = braze.jit(train_step)
    x, y = batch()
    changes = [{}, {"lr": 0.05}, {"betas": (0.8, 0.99)}, {"eps": 1e-4}, {"weight_decay": 0.1}, {"lr": 0.002}]
    for change in changes + [{"weight_decay": 0.0}, {}, {"weight_decay": 0.3}]:
        for name, value in change.items():
            setattr(eo, name, value)
            setattr(jo, name, value)
        np.testing.assert_allclose(step(jm, jo, x, y).item(), train_step(em, eo, x, y).item(), rtol=RTOL)
        assert_same_parameters(em, jm)
        if change is changes[-1]:
            assert step.compiles == 1  # every value so far was an input
    assert step.compiles == 2  # a zero weight decay leaves its term out: one more graph, and no more


def test_momentum_turned_on_mid_run_starts_its_buffer_as_eagerly():
    (em, eo), (jm, jo) = twins(lambda m: SGD(m, lr=0.1))
    step = braze.jit(train_step)
    x, y = batch()
    for momentum in (0.0, 0.0, 0.9, 0.9, 0.5):
        eo.momentum = jo.momentum = momentum
        np.testing.assert_allclose(step(jm, jo, x, y).item(), train_step(em, eo, x, y).item(), rtol=RTOL)
        assert_same_parameters(em, jm)


def test_a_jitted_evaluation_after_training_runs_without_dropout():
    (em, eo), (jm, jo) = twins(lambda m: SGD(m, lr=0.1), dropout=0.5)
    step = braze.jit(train_step)
    evaluate = braze.jit(lambda model, x, y: softmax_cross_entropy(model(x), y))
    x, y = batch()
    for _ in range(3):
        np.testing.assert_allclose(step(jm, jo, x, y).item(), train_step(em, eo, x, y).item(), rtol=RTOL)
        # The same evaluation while training (dropout on) draws its own masks, as eagerly.
        np.testing.assert_allclose(evaluate(jm, x, y).item(), softmax_cross_entropy(em(x), y).item(), rtol=RTOL)
    assert_same_parameters(em, jm)
    em.eval()
    jm.eval()
    eager = softmax_cross_entropy(em(x), y).item()
    for _ in range(2):
        np.testing.assert_allclose(evaluate(jm, x, y).item(), eager, rtol=RTOL)
    assert evaluate.compiles == 2 and step.compiles == 1


def test_a_closure_over_a_python_float_is_a_guard():
    scale = 0.5

    def scaled(x):
        return x * scale

    jitted = braze.jit(scaled)
    x = braze.tensor([1.0, 2.0])
    for value in (0.5, 0.5, 3.0, 3.0, 0.5):
        scale = value
        np.testing.assert_array_equal(jitted(x).numpy(), [value, 2 * value])
    # Traced once per distinct value (the first is cached still); the value is an argument
    # of one executable, which both traces share.
    assert jitted.traces == 2 and jitted.compiles == 1


SHIFT = 1.0


def shifted(x):
    return x + SHIFT


def test_a_global_number_is_a_guard():
    global SHIFT
    jitted = braze.jit(shifted)
    x = braze.tensor([1.0])
    try:
        for value in (1.0, 5.0, 5.0):
            SHIFT = value
            assert jitted(x).tolist() == [1.0 + value]
    finally:
        SHIFT = 1.0
    assert jitted.compiles == 2


GAIN = 1.0


class Gained(braze.nn.Module):
    """A model whose method reads a global and a class attribute, and calls a layer that
    only a global holds."""

    offset = 0.0

    def __init__(self) -> None:
        super().__init__()
        self.dense = Dense(2, input_dim=3, generator=braze.Generator(0))

    def forward(self, x):
        return OUTSIDE(self.dense(x)) * GAIN + self.offset


OUTSIDE = Dense(2, input_dim=2, generator=braze.Generator(1))


def test_what_a_models_methods_read_from_globals_and_its_class_is_read_again():
    global GAIN
    model = Gained()
    jitted = braze.jit(lambda x: model(x))
    x = braze.tensor(np.ones((1, 3), np.float32))
    try:
        for gain, offset in ((1.0, 0.0), (3.0, 0.0), (3.0, 2.0), (3.0, 2.0)):
            GAIN, Gained.offset = gain, offset
            np.testing.assert_allclose(jitted(x).numpy(), model(x).numpy(), rtol=RTOL, atol=ATOL)
        with braze.no_grad():
            OUTSIDE.kernel *= 2.0  # the global layer's parameter: an input
        np.testing.assert_allclose(jitted(x).numpy(), model(x).numpy(), rtol=RTOL, atol=ATOL)
    finally:
        GAIN, Gained.offset = 1.0, 0.0
    assert jitted.compiles == 3


class Scaling:
    """A settings object with slots, which have no __dict__."""

    __slots__ = ("factor", "_calls")

    def __init__(self, factor: float) -> None:
        self.factor = factor


def test_a_number_in_a_slot_is_a_guard():
    settings = Scaling(2.0)

    def scaled(x):
        return x * settings.factor

    jitted = braze.jit(scaled)
    x = braze.tensor([1.0, 2.0])
    for value in (2.0, 5.0, 5.0, 2.0):
        settings.factor = value
        np.testing.assert_array_equal(jitted(x).numpy(), scaled(x).numpy())
    assert jitted.traces == 2


def test_default_values_changed_in_place_are_read_again():
    def shifted(x, scales=[2.0], *, offset={"by": 1.0}):  # noqa: B006 (the mutable defaults are the point)
        return x * scales[0] + offset["by"]

    jitted = braze.jit(shifted)
    x = braze.tensor([1.0, 2.0])
    for scale, by in ((2.0, 1.0), (5.0, 1.0), (5.0, 3.0), (2.0, 1.0)):
        shifted.__defaults__[0][0] = scale
        shifted.__kwdefaults__["offset"]["by"] = by
        np.testing.assert_array_equal(jitted(x).numpy(), shifted(x).numpy())
    assert jitted.traces == 3


@pytest.mark.parametrize("size", [8, 4096], ids=["small", "big"])
def test_a_numpy_array_written_into_between_calls_is_read_again(size):
    table = np.arange(size, dtype=np.float32)
    strided = np.zeros((size, 2), np.float32)[:, 0]  # not contiguous: its digest is of its elements

    def shifted(x):
        return x + braze.tensor(table) + braze.tensor(strided)

    jitted = braze.jit(shifted)
    x = braze.tensor(np.ones(size, np.float32))
    for fill in (None, 7.0, 7.0, None):
        table[:] = np.arange(size) if fill is None else fill
        strided[: size // 2] = 0.0 if fill is None else 1.0
        np.testing.assert_array_equal(jitted(x).numpy(), shifted(x).numpy())
    assert jitted.traces == 2  # once per distinct contents: the first trace is found again


def test_a_learning_rate_set_between_lazy_steps_is_a_graph_input_whatever_its_value():
    model = network().to(braze.LAZY_CPU)
    optimizer = SGD(model, lr=1.0)
    eager_model = network()
    eager_optimizer = SGD(eager_model, lr=1.0)
    x, y = batch()
    lx, ly = x.to(braze.LAZY_CPU), y.to(braze.LAZY_CPU)
    for lr in (1.0, 1.0, 0.1, 0.01, 0.0):
        optimizer.lr = eager_optimizer.lr = lr
        expected = train_step(eager_model, eager_optimizer, x, y).item()
        np.testing.assert_allclose(train_step(model, optimizer, lx, ly).item(), expected, rtol=RTOL)
    assert_same_parameters(eager_model, model)
    assert metrics.counter("CacheMiss") <= 1  # one graph for every learning rate, 1 and 0 included


def test_reading_a_value_while_tracing_is_an_error_that_says_what_to_do():
    def branchy(x):
        return x * 2.0 if x.sum().item() > 0 else x

    with pytest.raises(braze.TraceError, match=r"value was read while tracing .*test_jit_state.py.*braze.where"):
        braze.jit(branchy)(braze.ones(3))


def test_a_value_computed_from_python_numbers_alone_may_be_read_while_tracing():
    from braze.keras import ops

    def tiled(x):  # a shape computed with ops, as Keras programs do: TensorFlow folds it
        reps = ops.concatenate([ops.expand_dims(x.shape[0], -1), ops.convert_to_tensor([1])], axis=0)
        return ops.tile(x[:1], reps) + x

    x = braze.tensor(np.arange(6, dtype="float32").reshape(3, 2))
    np.testing.assert_array_equal(braze.jit(tiled)(x).numpy(), tiled(x).numpy())
    captured = braze.ones(3)

    def reads(what):
        def fn(x):
            return x * 2.0 if float(what(x).sum()) > 0 else x

        return fn

    for what in (
        lambda x: x,  # the input
        lambda x: captured,  # a tensor the function closes over
        lambda x: braze.rand((2,)) + ops.convert_to_tensor([1.0, 1.0]),  # a random draw
    ):
        with pytest.raises(braze.TraceError, match="value was read while tracing"):
            braze.jit(reads(what))(braze.ones(3))


def test_setting_an_input_number_inside_the_function_is_an_error():
    (model, optimizer), _ = twins(lambda m: SGD(m, lr=0.1))

    def decaying(model, optimizer, x, y):
        loss = train_step(model, optimizer, x, y)
        optimizer.lr = optimizer.lr * 0.5
        return loss

    with pytest.raises(braze.TraceError, match=r"set args\[1\]\.param_groups\[0\]\.lr, an input"):
        braze.jit(decaying)(model, optimizer, *batch())
    assert optimizer.lr == 0.1


def test_a_lazy_tensor_the_walk_cannot_reach_is_an_error():
    class Hidden:
        def __init__(self) -> None:
            self._offset = braze.tensor([1.0, 2.0], device=braze.LAZY_CPU)

    hidden = Hidden()
    with pytest.raises(braze.TraceError, match=r"float32 tensor of shape \[2\].*pass this tensor as an argument"):
        braze.jit(lambda x: x + hidden._offset)(braze.tensor([1.0, 1.0], device=braze.LAZY_CPU))


def test_an_eager_tensor_the_walk_cannot_reach_says_why_it_was_not_moved():
    class Hidden:
        def __init__(self) -> None:
            self._offset = braze.tensor([1.0, 2.0])

    hidden = Hidden()
    with pytest.raises(braze.DeviceError, match=r"different devices.*public attribute"):
        braze.jit(lambda x: x + hidden._offset)(braze.tensor([1.0, 1.0]))


def test_a_key_drawn_as_a_python_number_is_an_error():
    generator = braze.Generator(1)
    with pytest.raises(braze.TraceError, match=r"next_key\(\).*generator="):
        braze.jit(lambda x: x + braze.rand(x.shape, seed=generator.next_key()))(braze.ones(2))


def test_a_generator_seeded_inside_the_function_draws_the_same_numbers_on_every_call():
    def noisy(x):
        return x + braze.rand(x.shape, generator=braze.Generator(4))

    jitted = braze.jit(noisy)
    x = braze.zeros(5)
    expected = noisy(x).numpy()
    for _ in range(2):
        np.testing.assert_array_equal(jitted(x).numpy(), expected)


def test_a_python_side_effect_is_traced_on_every_call_and_a_recompile_storm_names_it(monkeypatch):
    monkeypatch.setattr(braze.config, "_RECOMPILE_LIMIT", 3)

    class Counter:
        def __init__(self) -> None:
            self.calls = 0

    counter = Counter()

    def counted(counter, x):
        counter.calls += 1
        return x * float(counter.calls)

    jitted = braze.jit(counted)
    with pytest.warns(braze.RecompileWarning, match=r"3 times again.*args\[0\]\.calls \(0, 1, 2, 3\)"):
        results = [jitted(counter, braze.ones(1)).item() for _ in range(4)]
    assert results == [1.0, 2.0, 3.0, 4.0] and counter.calls == 4  # as eagerly: never a replay without Python
    assert metrics.counter("JitRecompile(args[0].calls)") == 3


def test_braze_debug_names_the_value_that_changed(capsys, monkeypatch):
    monkeypatch.setenv("BRAZE_DEBUG", "1")
    model = Sequential(Dropout(0.5, seed=3))
    forward = braze.jit(lambda m, x: m(x))
    forward(model, braze.ones(4))
    model.eval()
    forward(model, braze.ones(4))
    assert "args[0].training changed from True to False" in capsys.readouterr().err
    assert metrics.counter("JitRecompile(args[0].training)") == 1


def test_a_jitted_function_called_while_another_is_traced_is_part_of_its_graph():
    inner = braze.jit(lambda x: x * 3.0)
    outer = braze.jit(lambda x: inner(x) + 1.0)
    assert outer(braze.ones(2)).tolist() == [4.0, 4.0]
    assert outer.compiles == 1 and inner.compiles == 0
