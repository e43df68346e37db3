"""``jit_state.read_again``: a jitted call that finds everything its last walk met as it
was skips the walk. Whatever changed between the calls, what it returns must be what the
walk returns (the key, the tensors in order, their paths and the input numbers), or None."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import braze
from braze import jit_state

OFFSET = 1.0
DEFAULTS: list[float] = [1.0]


class Holder:
    """A user-written class: its public class attributes and its call's globals are read."""

    scale = 2.0
    jit_inputs = ("lr",)

    def __call__(self, x):
        return x * self.scale + OFFSET


class Slotted:
    __slots__ = ("a", "b")


def _tensor(shape=(2, 3), seed=0, requires_grad=False) -> braze.Tensor:
    t = braze.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
    if requires_grad:
        t.requires_grad_()
    return t


def _state() -> tuple[Holder, list[tuple[str, object]]]:
    cell = [3.0]

    def loss(x, extra=DEFAULTS):
        return x * cell[0] + extra[0] + OFFSET

    state = Holder()
    state.lr = 0.1
    state.betas = [0.9, 0.99]
    state.weights = _tensor(requires_grad=True)
    state.weights.grad = _tensor(seed=1)
    state.items = [1.0, _tensor(seed=2), np.arange(3.0)]
    state.table = {"k": 3, "t": _tensor(seed=3)}
    state.big = np.zeros(100)
    state.slotted = Slotted()
    state.slotted.a, state.slotted.b = 1.5, _tensor(seed=4)
    state.loss = loss
    state.cell = cell
    state._private = 0
    return state, [("args[0]", state), ("args[1]", _tensor(seed=5)), ("args[2]", 0.5)]


def _set_root(roots: list, k: int, value: object) -> None:
    roots[k] = (roots[k][0], value)


def _set_slot(obj: Slotted, name: str, value: object) -> None:
    setattr(obj, name, value)


def _clear_slot(obj: Slotted) -> None:
    del obj.b


def _set_class_scale(value: float) -> Callable[[], None]:
    def undo() -> None:
        Holder.scale = 2.0

    Holder.scale = value
    return undo


CHANGES: dict[str, Callable[[Holder, list], object]] = {
    "nothing": lambda s, r: None,
    "a list item set in place": lambda s, r: s.items.__setitem__(0, 2.0),
    "a list grown": lambda s, r: s.items.append(3),
    "a list item replaced by the same object": lambda s, r: s.items.__setitem__(1, s.items[1]),
    "a dict value set": lambda s, r: s.table.__setitem__("k", 4),
    "a dict key added": lambda s, r: s.table.__setitem__("new", 1),
    "a small array written in place": lambda s, r: s.items[2].__setitem__(0, 7.0),
    "a big array written in place": lambda s, r: s.big.__setitem__(5, 1.0),
    "an array reshaped in place": lambda s, r: setattr(s.big, "shape", (10, 10)),
    "a slot set": lambda s, r: _set_slot(s.slotted, "a", 2.5),
    "a slot cleared": lambda s, r: _clear_slot(s.slotted),
    "an attribute replaced": lambda s, r: setattr(s, "lr", 0.2),
    "an attribute added": lambda s, r: setattr(s, "extra", 1),
    "a private attribute changed": lambda s, r: setattr(s, "_private", 1),
    "a lifted list's number set in place": lambda s, r: s.betas.__setitem__(1, 0.999),
    "a lifted number made zero": lambda s, r: setattr(s, "lr", 0.0),
    "a closed-over list changed": lambda s, r: s.cell.__setitem__(0, 4.0),
    "a default list changed": lambda s, r: DEFAULTS.__setitem__(0, 5.0),
    "the object's class changed": lambda s, r: setattr(s, "__class__", type("Other", (Holder,), {})),
    "a tensor frozen": lambda s, r: s.weights.requires_grad_(False),
    "a tensor of another shape in an attribute": lambda s, r: setattr(s, "weights", _tensor((3, 2))),
    "a gradient of the same kind": lambda s, r: setattr(s.weights, "grad", _tensor(seed=6)),
    "a gradient of another shape": lambda s, r: setattr(s.weights, "grad", _tensor((3, 3))),
    "a gradient dropped": lambda s, r: setattr(s.weights, "grad", None),
    "a gradient given where there was none": lambda s, r: setattr(s.items[1], "grad", _tensor(seed=7)),
    "a gradient that is another tensor of the walk": lambda s, r: setattr(s.weights, "grad", s.items[1]),
    "a gradient shared by two tensors": lambda s, r: (
        setattr(s.weights, "grad", _tensor(seed=8)),
        setattr(s.items[1], "grad", s.weights.grad),
    ),
    "an argument tensor of the same kind": lambda s, r: _set_root(r, 1, _tensor(seed=9)),
    "an argument tensor of another shape": lambda s, r: _set_root(r, 1, _tensor((4,))),
    "an argument tensor that the state holds": lambda s, r: _set_root(r, 1, s.items[1]),
    "an argument tensor that requires grad": lambda s, r: _set_root(r, 1, _tensor(seed=9, requires_grad=True)),
    "an argument number": lambda s, r: _set_root(r, 2, 0.75),
    "an argument that is no tensor": lambda s, r: _set_root(r, 1, 1.0),
    "the state replaced": lambda s, r: _set_root(r, 0, _state()[0]),
}


def _assert_reads_as_the_walk(snapshot: jit_state.Snapshot, roots: list) -> jit_state.Reads | None:
    again = jit_state.read_again(snapshot, roots)
    walked = jit_state.read(roots)
    if again is not None:
        assert again.key == walked.key
        assert [id(t) for t in again.tensors] == [id(t) for t in walked.tensors]
        assert again.paths == walked.paths
        assert again.numbers == walked.numbers
        assert [(id(h.owner), h.name, h.index) for h in again.holders] == [
            (id(h.owner), h.name, h.index) for h in walked.holders
        ]
    return again


@pytest.mark.parametrize("change", list(CHANGES))
def test_read_again_returns_what_the_walk_returns(change):
    DEFAULTS[0] = 1.0
    state, roots = _state()
    snapshot = jit_state.read(roots).snapshot
    try:
        CHANGES[change](state, roots)
        again = _assert_reads_as_the_walk(snapshot, roots)
    finally:
        DEFAULTS[0] = 1.0
    # What nothing, or only a loose tensor of the same kind, changed is found without a walk.
    if change in ("nothing", "a list item replaced by the same object", "a gradient of the same kind"):
        assert again is not None
    if change == "an argument tensor of the same kind":
        assert again is not None and again.tensors[len(again.tensors) - 1] is roots[1][1]


def test_a_class_attribute_changed_is_read_again():
    state, roots = _state()
    snapshot = jit_state.read(roots).snapshot
    undo = _set_class_scale(3.0)
    try:
        assert _assert_reads_as_the_walk(snapshot, roots) is None
    finally:
        undo()


def test_a_global_changed_is_read_again():
    global OFFSET
    state, roots = _state()
    snapshot = jit_state.read(roots).snapshot
    OFFSET = 2.0
    try:
        assert _assert_reads_as_the_walk(snapshot, roots) is None
    finally:
        OFFSET = 1.0


def test_a_jitted_training_loop_walks_once():
    """A steady training loop (new batches, new gradients each call) walks its model and
    optimizer on the first call only; the results are eager execution's."""
    rng = np.random.default_rng(0)
    models = [braze.nn.Linear(4, 3, generator=braze.Generator(1)) for _ in range(2)]
    optimizers = [braze.optim.AdamW(m.parameters(), lr=0.01) for m in models]

    def step(model, optimizer, x):
        optimizer.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        optimizer.step()
        return loss

    jitted = braze.jit(step)
    walks = 0
    walk = jit_state.read

    def counted(roots):
        nonlocal walks
        walks += 1
        return walk(roots)

    jit_state.read = counted
    try:
        for _ in range(6):
            x = rng.standard_normal((5, 4)).astype(np.float32)
            eager = step(models[0], optimizers[0], braze.tensor(x)).item()
            compiled = jitted(models[1], optimizers[1], braze.tensor(x)).item()
            np.testing.assert_allclose(compiled, eager, rtol=2e-5, atol=1e-6)
    finally:
        jit_state.read = walk
    # The first call walks before and after tracing; the second too (the optimizer's
    # state, made by the first step, is new to it); from the third on nothing is new.
    assert walks <= 5
    for p, q in zip(models[0].parameters(), models[1].parameters(), strict=True):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=2e-5, atol=1e-6)


def test_a_tensor_met_twice_is_expected_again_in_both_places():
    """A walk meets a tensor once: met again, as a second argument or as a gradient held
    elsewhere too, it is skipped. A call that passes another tensor at the first place
    only must not take the second place for the same tensor."""
    x, y = _tensor(seed=1), _tensor(seed=2)
    roots = [("args[0]", x), ("args[1]", x)]
    snapshot = jit_state.read(roots).snapshot
    assert _assert_reads_as_the_walk(snapshot, [("args[0]", y), ("args[1]", x)]) is None

    state, roots = _state()
    state.held = state.weights.grad  # the gradient is also an attribute, walked after it
    snapshot = jit_state.read(roots).snapshot
    state.weights.grad = _tensor(seed=6)
    assert _assert_reads_as_the_walk(snapshot, roots) is None


def test_a_jitted_function_given_one_tensor_twice_then_two():
    add = braze.jit(lambda a, b: a + b)
    x, y = braze.tensor(np.ones(3, np.float32)), braze.tensor(np.zeros(3, np.float32))
    np.testing.assert_array_equal(add(x, x).numpy(), np.full(3, 2.0, np.float32))
    np.testing.assert_array_equal(add(y, x).numpy(), np.ones(3, np.float32))


def test_a_slotted_object_whose_class_changed_is_read_again():
    class Other:
        __slots__ = ("a", "b")
        scale = 5.0

    state, roots = _state()
    snapshot = jit_state.read(roots).snapshot
    state.slotted.__class__ = Other
    assert _assert_reads_as_the_walk(snapshot, roots) is None


def test_a_batch_passed_as_a_tuple_or_dict_may_be_a_new_one():
    """Arguments' tuples, lists and dicts are new on every call of a training loop (Keras
    passes ``(x, y)``): another of the same kind and keys or length, holding tensors of the
    same kind, reads as the walk reads it; anything else in it must be the same object."""
    state, _ = _state()

    def roots(batch):
        return [("args[0]", state), ("args[1]", batch)]

    def batch(seed, scale=0.5):
        return ({"x": _tensor(seed=seed), "y": [_tensor((4,), seed=seed + 1)]}, scale)

    snapshot = jit_state.read(roots(batch(10))).snapshot
    assert _assert_reads_as_the_walk(snapshot, roots(batch(20))) is not None
    assert _assert_reads_as_the_walk(snapshot, roots(batch(20, scale=0.75))) is None
    assert _assert_reads_as_the_walk(snapshot, roots(({"x": _tensor(seed=1), "z": [_tensor((4,))]}, 0.5))) is None
    assert _assert_reads_as_the_walk(snapshot, roots(({"x": _tensor(seed=1), "y": []}, 0.5))) is None
    assert _assert_reads_as_the_walk(snapshot, roots(({"x": _tensor((3, 3)), "y": [_tensor((4,))]}, 0.5))) is None
    assert _assert_reads_as_the_walk(snapshot, roots(({"x": state.weights, "y": [_tensor((4,))]}, 0.5))) is None


def test_an_argument_list_that_the_state_holds_too_must_be_that_list():
    """A walk skips a list it met before: a new list given where the state's own was
    given would leave the state's list walked where the last walk skipped it."""
    state, _ = _state()
    roots = [("args[0]", state.items), ("args[1]", state)]
    snapshot = jit_state.read(roots).snapshot
    copy = list(state.items)
    assert _assert_reads_as_the_walk(snapshot, [("args[0]", copy), ("args[1]", state)]) is None
    assert _assert_reads_as_the_walk(snapshot, roots) is not None
    state.items[0] = 2.0  # that very list, changed: its items are read again
    assert _assert_reads_as_the_walk(snapshot, roots) is None


def test_a_new_argument_container_that_the_walk_would_meet_twice_is_read_again():
    """The walk skips a container the second time it meets it: a new argument container
    that is also held elsewhere (by another argument, by the state) reads as the walk reads
    it, or not at all."""
    snapshot = jit_state.read([("args[0]", ([], []))]).snapshot
    shared: list = []
    assert _assert_reads_as_the_walk(snapshot, [("args[0]", (shared, shared))]) is None

    state, _ = _state()
    state.sizes = (2, 3)
    snapshot = jit_state.read([("args[0]", state), ("args[1]", tuple([2, 3]))]).snapshot  # another tuple
    assert _assert_reads_as_the_walk(snapshot, [("args[0]", state), ("args[1]", state.sizes)]) is None


def test_dict_keys_that_are_equal_but_print_otherwise_are_read_again():
    x = _tensor(seed=1)
    snapshot = jit_state.read([("args[0]", {0.0: x})]).snapshot
    assert _assert_reads_as_the_walk(snapshot, [("args[0]", {-0.0: _tensor(seed=2)})]) is None
    assert _assert_reads_as_the_walk(snapshot, [("args[0]", {0.0: _tensor(seed=2)})]) is not None
