"""PyTorch's containers (``braze.nn.containers``): ``Parameter``, ``ModuleList``,
``ModuleDict``, ``ParameterList`` and ``ParameterDict`` held by a module: their
parameters found and named as PyTorch names them (``layers.0.weight``), modes, moves,
checkpoints, optimizers and braze.jit reaching what they hold, and their list and dict
operations."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze import nn
from braze.nn.containers import ModuleDict, ModuleList, Parameter, ParameterDict, ParameterList
from braze.nn.functional_call import functional_call
from braze.optim import SGD


class Affine(nn.Module):
    def __init__(self, scale: float = 1.0) -> None:
        super().__init__()
        self.weight = Parameter(braze.ones((2, 2)) * scale)
        self.bias = Parameter(braze.zeros(2))

    def forward(self, x):
        return braze.matmul(x, self.weight) + self.bias


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = ModuleList([Affine(1.0), Affine(2.0)])
        self.heads = ModuleDict({"a": Affine(0.5), "b": Affine(3.0)})
        self.scales = ParameterList([braze.ones(2)])
        self.offsets = ParameterDict({"x": braze.zeros(2)})
        self.frozen = Parameter(braze.ones(2), requires_grad=False)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.heads["a"](x) * self.scales[0] + self.offsets["x"] + self.frozen


# As torch names the same model's parameters (its parameters() lists the frozen one too).
PARAMETERS = [
    "layers.0.weight",
    "layers.0.bias",
    "layers.1.weight",
    "layers.1.bias",
    "heads.a.weight",
    "heads.a.bias",
    "heads.b.weight",
    "heads.b.bias",
    "scales.0",
    "offsets.x",
]


def test_parameters_are_found_and_named_as_pytorch_names_them():
    net = Net()
    assert [name for name, _ in net.named_parameters()] == PARAMETERS
    assert sorted(net.state_dict()) == sorted([*PARAMETERS, "frozen"])
    assert [name for name, _ in net.named_modules()] == [
        "",
        "layers",
        "layers.0",
        "layers.1",
        "heads",
        "heads.a",
        "heads.b",
        "scales",
        "offsets",
    ]
    assert net.layers.parameters() == [
        net.layers[0].weight,
        net.layers[0].bias,
        net.layers[1].weight,
        net.layers[1].bias,
    ]


def test_train_and_eval_reach_the_modules_inside():
    net = Net()
    net.eval()
    assert not any(m.training for m in (net.layers, net.layers[1], net.heads, net.heads["b"]))
    net.train()
    assert all(m.training for m in (net.layers, net.layers[1], net.heads, net.heads["b"]))


def test_checkpoints_moves_and_functional_call_reach_the_entries():
    net, other = Net(), Net()
    for p in net.parameters():
        p.assign(braze.full(p.shape, 0.25))
    other.load_state_dict(net.state_dict())
    np.testing.assert_array_equal(other.heads["b"].weight.numpy(), np.full((2, 2), 0.25))
    other.to(braze.LAZY_CPU)
    assert all(t.device == braze.LAZY_CPU for t in other._state().values())
    x = braze.ones((3, 2))
    swapped = functional_call(net, {"layers.0.weight": braze.zeros((2, 2))}, (x,))
    w, b = np.full((2, 2), 0.25), np.full(2, 0.25)
    h = np.ones((3, 2)) @ np.zeros((2, 2)) + b  # layers.0 with the zero weight given
    h = (h @ w + b) @ w + b  # layers.1, heads.a
    np.testing.assert_allclose(swapped.numpy(), h * 0.25 + 0.25 + 1.0)  # scales, offsets, frozen (still 1)
    assert (net.layers[0].weight.numpy() == 0.25).all()  # put back after the call


@pytest.mark.parametrize("compiled", [False, True])
def test_an_optimizer_trains_what_the_containers_hold(compiled):
    net = Net()
    optimizer = SGD(net.parameters(), lr=1e-3)
    x, y = braze.ones((3, 2)), braze.zeros((3, 2))

    def step(net, optimizer, x, y):
        optimizer.zero_grad()
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        return loss

    step = braze.jit(step) if compiled else step
    before = {name: p.numpy().copy() for name, p in net.named_parameters()}
    losses = [float(step(net, optimizer, x, y)) for _ in range(3)]
    assert losses[2] < losses[0]
    changed = {name for name, p in net.named_parameters() if not np.array_equal(p.numpy(), before[name])}
    # heads.b is not on the loss's path; the frozen parameter is not the optimizer's
    assert changed == set(PARAMETERS) - {"heads.b.weight", "heads.b.bias"}
    assert (net.frozen.numpy() == 1).all()


def test_module_list_operations():
    first, second, third = Affine(), Affine(), Affine()
    layers = ModuleList()
    assert len(layers) == 0 and list(layers) == []
    layers.append(first).extend([second])
    layers += [third]
    assert list(layers) == [first, second, third] and layers[-1] is third
    assert isinstance(layers[1:], ModuleList) and list(layers[1:]) == [second, third]
    layers.insert(0, third)
    assert list(layers) == [third, first, second, third]
    assert [name for name, _ in layers.named_modules()][1:] == ["0", "1", "2"]  # a module held twice is found once
    del layers[0]
    assert layers.pop() is third and list(layers) == [first, second]
    layers[1] = third
    assert list(layers) == [first, third] and list(layers + ModuleList([second])) == [first, third, second]
    assert [name for name, _ in layers.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    with pytest.raises(IndexError):
        layers[2]
    with pytest.raises(TypeError, match="not a Module"):
        layers.append(braze.zeros(2))


def test_module_dict_operations():
    a, b, c = Affine(), Affine(), Affine()
    heads = ModuleDict([("a", a), ("b", b)])
    heads.update({"c": c})
    assert heads.keys() == ["a", "b", "c"] and list(heads) == ["a", "b", "c"]
    assert heads.values() == [a, b, c] and heads.items() == [("a", a), ("b", b), ("c", c)]
    assert "b" in heads and "d" not in heads and heads.get("d") is None and len(heads) == 3
    assert heads.pop("b") is b
    del heads["a"]
    assert heads.keys() == ["c"]
    with pytest.raises(KeyError):
        heads["a"]
    for key in ("training", "forward", "a.b", "", "_private"):
        with pytest.raises(KeyError, match="cannot be a key"):
            heads[key] = a
    with pytest.raises(TypeError, match="not a Module"):
        heads["d"] = 3
    heads.clear()
    assert len(heads) == 0 and heads.state_dict() == {}


def test_parameter_lists_and_dicts_make_tensors_parameters():
    mine = Parameter(braze.ones(3))
    values = ParameterList([braze.zeros(2), mine])
    assert values[1] is mine  # a parameter is kept as it is: an optimizer may hold it
    assert values[0].requires_grad and values[0].is_leaf
    values.append(np.ones(4, np.float32) * braze.ones(4))
    assert [name for name, _ in values.named_parameters()] == ["0", "1", "2"]
    table = ParameterDict({"w": braze.ones(2)})
    table["v"] = braze.zeros(3)
    assert table.keys() == ["w", "v"] and all(p.requires_grad for p in table.values())


def test_parameter_is_a_new_leaf_over_the_same_values():
    data = braze.tensor(np.arange(3, dtype=np.float32))
    p = Parameter(data)
    assert p is not data and p.requires_grad and p.is_leaf and not data.requires_grad
    np.testing.assert_array_equal(p.numpy(), data.numpy())
    derived = Parameter(p * 2.0)  # from a computed tensor: a leaf cut from that graph
    assert derived.is_leaf and derived.requires_grad
    assert Parameter().shape == (0,) and Parameter().dtype == braze.float32
    assert Parameter(np.ones(2)).requires_grad
    assert isinstance(p, Parameter) and not isinstance(data, Parameter) and not isinstance(p * 2.0, Parameter)
    frozen = Parameter(data, requires_grad=False)
    assert isinstance(frozen, Parameter) and not frozen.requires_grad
    labels = Parameter(np.arange(3), requires_grad=False)
    assert not labels.requires_grad
    with pytest.raises(TypeError, match="floating"):
        Parameter(np.arange(3))
