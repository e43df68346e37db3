"""A review of braze's PyTorch face against PyTorch 2.13: ``nn.init``'s refusals, the
containers' key order and updates, PyTorch's state_dict names of a Sequential, Adadelta,
RMSprop and Adagrad's ``maximize`` and implementation options, and TensorDataset /
DataLoader samples. References are NumPy transcriptions of PyTorch's rules, or literal
values computed with torch 2.13 (said so where they are)."""

from __future__ import annotations

from collections import OrderedDict
from functools import partial

import numpy as np
import optim_references as references
import pytest

import braze
from braze import nn
from braze.data import DataError, DataLoader, TensorDataset
from braze.nn import init
from braze.optim import Adadelta, Adagrad, RMSprop

# nn.init: PyTorch refuses reversed bounds and a negative std (RuntimeError there) ----------


@pytest.mark.parametrize(
    ("fill", "message"),
    [
        (lambda t: init.uniform_(t, 1.0, 0.0), "lower bound 1.0 is above"),
        (lambda t: init.xavier_uniform_(t, gain=-1.0), "lower bound"),  # bound -gain * ...
        (lambda t: init.normal_(t, 0.0, -1.0), "std must be 0 or more"),
        (lambda t: init.xavier_normal_(t, gain=-1.0), "std must be 0 or more"),
        (lambda t: init.trunc_normal_(t, a=1.0, b=0.0), "lower bound a=1.0 is above"),
    ],
    ids=["uniform", "xavier_uniform", "normal", "xavier_normal", "trunc_normal"],
)
def test_reversed_bounds_and_negative_spreads_are_refused_as_pytorch_refuses_them(fill, message):
    t = braze.zeros((3, 4))
    with pytest.raises(ValueError, match=message):
        fill(t)
    np.testing.assert_array_equal(t.numpy(), np.zeros((3, 4)))  # nothing was drawn into it


# Containers ---------------------------------------------------------------------------------


def _zeros() -> braze.Tensor:
    return braze.zeros((1,))


def test_a_parameter_dict_of_a_plain_dict_takes_its_keys_in_sorted_order_as_pytorch():
    # PyTorch's ParameterDict.update sorts a plain dict's items (torch 2.13, container.py);
    # an OrderedDict's, a ParameterDict's and pairs' keep their order.
    class Holder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.pd = nn.ParameterDict({"w": _zeros(), "b": _zeros(), "a": _zeros()})

    holder = Holder()
    assert list(holder.pd.keys()) == ["a", "b", "w"]
    assert [name for name, _ in holder.named_parameters()] == ["pd.a", "pd.b", "pd.w"]
    assert list(holder.state_dict()) == ["pd.a", "pd.b", "pd.w"]
    holder.pd.update({"z": _zeros(), "c": _zeros()})
    holder.pd.update([("y", _zeros()), ("d", _zeros())])
    assert list(holder.pd.keys()) == ["a", "b", "w", "c", "z", "y", "d"]
    ordered = nn.ParameterDict(OrderedDict([("w", _zeros()), ("b", _zeros())]))
    assert list(ordered.keys()) == ["w", "b"]
    assert list(nn.ParameterDict(ordered).keys()) == ["w", "b"]
    # A ModuleDict keeps a plain dict's order (PyTorch's does not sort there).
    assert list(nn.ModuleDict({"w": nn.ReLU(), "b": nn.ReLU()}).keys()) == ["w", "b"]


def test_a_module_dict_or_parameter_dict_updates_from_another():
    first = nn.ModuleDict({"w": nn.ReLU(), "b": nn.Tanh()})
    copy = nn.ModuleDict(first)
    assert list(copy.keys()) == ["w", "b"] and copy["b"] is first["b"]
    first.update(nn.ModuleDict({"z": nn.ReLU(), "c": nn.ReLU()}))
    assert list(first.keys()) == ["w", "b", "z", "c"]
    params = nn.ParameterDict(OrderedDict([("w", _zeros()), ("b", _zeros())]))
    other = nn.ParameterDict()
    other.update(params)
    assert list(other.keys()) == ["w", "b"] and other["w"] is params["w"]


def test_a_parameter_dicts_setdefault_makes_a_parameter_once():
    pd = nn.ParameterDict()
    made = pd.setdefault("e", braze.zeros((2,)))
    assert made.requires_grad and made.shape == (2,)
    assert pd.setdefault("e", braze.ones((3,))) is made


def test_a_list_containers_float_index_is_a_type_error_as_a_lists():
    # PyTorch's: TypeError: 'float' object cannot be interpreted as an integer (not a KeyError)
    with pytest.raises(TypeError, match="integer"):
        nn.ModuleList([nn.ReLU(), nn.Tanh()])[1.0]
    with pytest.raises(TypeError, match="integer"):
        nn.ParameterList([_zeros(), _zeros()])[0.0]


# PyTorch's state_dict names of a Sequential -------------------------------------------------


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Sequential(nn.Flatten(), nn.Linear(8, 3))
        )
        self.out = nn.Linear(3, 2)


# list(state_dict()) of the same _Net written with torch.nn, computed with torch 2.13.
_TORCH_NAMES = [
    "features.0.weight",
    "features.0.bias",
    "features.1.weight",
    "features.1.bias",
    "features.1.running_mean",
    "features.1.running_var",
    "features.1.num_batches_tracked",
    "features.3.1.weight",
    "features.3.1.bias",
    "out.weight",
    "out.bias",
]


def test_a_sequentials_layers_take_pytorchs_names_both_ways():
    net = _Net()
    torch_state = nn.to_torch_state_dict(net)
    assert list(torch_state) == _TORCH_NAMES
    assert torch_state["features.3.1.weight"].shape == (3, 8)  # PyTorch's (out, in)
    np.testing.assert_array_equal(
        torch_state["features.3.1.weight"], net.state_dict()["features.layers.3.layers.1.kernel"].T
    )
    loaded = _Net()
    loaded.load_state_dict(nn.from_torch_state_dict(loaded, torch_state))  # strict: every name found
    for name, value in net.state_dict().items():
        np.testing.assert_array_equal(loaded.state_dict()[name], value)


def test_a_pytorch_sequentials_state_gives_its_outputs():
    rng = np.random.default_rng(0)
    # torch.nn.Sequential(Linear(6, 4), ReLU(), Linear(4, 2)).state_dict(): PyTorch's names and layout
    state = {
        "0.weight": rng.standard_normal((4, 6)).astype(np.float32),
        "0.bias": rng.standard_normal(4).astype(np.float32),
        "2.weight": rng.standard_normal((2, 4)).astype(np.float32),
        "2.bias": rng.standard_normal(2).astype(np.float32),
    }
    net = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 2))
    net.load_state_dict(nn.from_torch_state_dict(net, state))
    x = rng.standard_normal((3, 6)).astype(np.float32)
    hidden = np.maximum(x @ state["0.weight"].T + state["0.bias"], 0)
    expected = hidden @ state["2.weight"].T + state["2.bias"]
    np.testing.assert_allclose(net(braze.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert list(nn.to_torch_state_dict(net)) == list(state)


def test_a_linear_model_of_its_own_has_pytorchs_names():
    linear = nn.Linear(3, 2)
    torch_state = nn.to_torch_state_dict(linear)
    assert list(torch_state) == ["weight", "bias"]  # torch.nn.Linear(3, 2).state_dict()
    assert torch_state["weight"].shape == (2, 3)
    fresh = nn.Linear(3, 2)
    fresh.load_state_dict(nn.from_torch_state_dict(fresh, torch_state))
    np.testing.assert_array_equal(fresh.state_dict()["kernel"], linear.state_dict()["kernel"])


# Adadelta, RMSprop, Adagrad: maximize and PyTorch's implementation options -------------------

W0 = np.random.default_rng(3).standard_normal(5).astype(np.float32)
GRADS = np.random.default_rng(4).standard_normal((5, 5)).astype(np.float32)
RTOL = 1e-5  # five steps of float32 arithmetic from values near 1: a few ulp each


# PyTorch's rules with maximize, from W0 (tests/optim_references.py).
adadelta, rmsprop, adagrad = (
    partial(rule, W0, maximize=True) for rule in (references.adadelta, references.rmsprop, references.adagrad)
)


MAXIMIZING = [
    (Adadelta, adadelta, {"lr": 0.5, "weight_decay": 0.1}),
    (RMSprop, rmsprop, {"centered": True, "momentum": 0.9, "weight_decay": 0.05}),
    (Adagrad, adagrad, {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.02}),
]


@pytest.mark.parametrize("mode", ["eager", "lazy", "jit"])
@pytest.mark.parametrize(("optimizer_class", "rule", "settings"), MAXIMIZING, ids=lambda c: getattr(c, "__name__", ""))
def test_maximize_ascends_as_pytorchs(optimizer_class, rule, settings, mode):
    device = braze.LAZY_CPU if mode == "lazy" else braze.CPU
    w = braze.tensor(W0.copy(), requires_grad=True, device=device)
    optimizer = optimizer_class([w], maximize=True, **settings)

    def step(g):
        w.grad = g
        optimizer.step()

    run = braze.jit(step) if mode == "jit" else step
    for g in GRADS:
        run(braze.tensor(g, device=device))
    np.testing.assert_allclose(w.to("cpu").numpy(), rule(GRADS, **settings), rtol=RTOL, atol=RTOL)


@pytest.mark.parametrize(("optimizer_class", "rule", "settings"), MAXIMIZING, ids=lambda c: getattr(c, "__name__", ""))
def test_maximize_is_a_group_setting_saved_and_restored(optimizer_class, rule, settings):
    w = braze.tensor(W0.copy(), requires_grad=True)
    optimizer = optimizer_class([{"params": [w], "maximize": True}], **settings)
    for g in GRADS[:2]:
        w.grad = braze.tensor(g)
        optimizer.step()
    saved = optimizer.state_dict()
    assert saved["param_groups"][0]["maximize"] is True
    resumed_w = braze.tensor(w.numpy(), requires_grad=True)
    resumed = optimizer_class([resumed_w], **settings)
    resumed.load_state_dict(saved)
    for g in GRADS[2:]:
        resumed_w.grad = braze.tensor(g)
        resumed.step()
    np.testing.assert_allclose(resumed_w.numpy(), rule(GRADS, **settings), rtol=RTOL, atol=RTOL)
    # A state saved before maximize was a setting has none: it minimized.
    older = {**saved, "param_groups": [{k: v for k, v in g.items() if k != "maximize"} for g in saved["param_groups"]]}
    resumed.load_state_dict(older)
    assert resumed.param_groups[0]["maximize"] is False


def test_pytorchs_positional_order_reaches_maximize():
    # RMSprop(params, lr, alpha, eps, weight_decay, momentum, centered, capturable, foreach, maximize)
    # and Adadelta(params, lr, rho, eps, weight_decay, foreach): torch 2.13's signatures.
    w = braze.tensor(W0.copy(), requires_grad=True)
    optimizer = RMSprop([w], 0.01, 0.99, 1e-8, 0.0, 0.0, False, False, None, True)
    assert optimizer.param_groups[0]["maximize"] is True
    Adadelta([w], 1.0, 0.9, 1e-6, 0.0, None)
    Adagrad([w], 0.01, 0.0, 0.0, 0.0, 1e-10, None)


@pytest.mark.parametrize(
    ("optimizer_class", "option"),
    [
        (Adadelta, "foreach"),
        (Adadelta, "capturable"),
        (Adadelta, "differentiable"),
        (RMSprop, "foreach"),
        (RMSprop, "capturable"),
        (RMSprop, "differentiable"),
        (Adagrad, "foreach"),
        (Adagrad, "differentiable"),
        (Adagrad, "fused"),
    ],
)
def test_pytorchs_implementation_options_are_refused_not_ignored(optimizer_class, option):
    w = braze.tensor(W0.copy(), requires_grad=True)
    with pytest.raises(NotImplementedError, match=f"{option}=True"):
        optimizer_class([w], **{option: True})
    optimizer_class([w], **{option: None if option in ("foreach", "fused") else False})  # the defaults ask for nothing


# TensorDataset and DataLoader ------------------------------------------------------------------


def _dataset() -> tuple[np.ndarray, np.ndarray, TensorDataset]:
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10, dtype=np.int64)
    return x, y, TensorDataset(braze.tensor(x), braze.tensor(y))


def test_a_tensor_datasets_sample_of_tensors_is_tensors():
    x, y, dataset = _dataset()
    features, label = dataset[-1]
    assert isinstance(features, braze.Tensor) and isinstance(label, braze.Tensor)
    assert features.shape == (2,) and label.shape == ()  # torch 2.13: (2,) and a 0-d int64 tensor
    np.testing.assert_array_equal(features.numpy(), x[-1])
    assert label.item() == 9
    assert all(isinstance(t, braze.Tensor) for t in dataset.tensors)
    rows, labels = dataset[2:4]
    np.testing.assert_array_equal(labels.numpy(), y[2:4])


def test_batch_size_none_yields_the_samples_unbatched():
    x, y, dataset = _dataset()
    loader = DataLoader(dataset, batch_size=None)
    samples = list(loader)
    assert len(loader) == len(samples) == 10
    assert all(isinstance(f, braze.Tensor) and f.shape == (2,) and label.shape == () for f, label in samples)
    np.testing.assert_array_equal(np.stack([f.numpy() for f, _ in samples]), x)
    shuffled = sorted(int(label.item()) for _, label in DataLoader(dataset, batch_size=None, shuffle=True, seed=0))
    assert shuffled == list(range(10))
    with pytest.raises(DataError, match="drop_last"):
        DataLoader(dataset, batch_size=None, drop_last=True)


@pytest.mark.parametrize("batch_size", [2.0, True])
def test_a_batch_size_that_is_not_a_whole_number_is_refused(batch_size):
    with pytest.raises(DataError, match="batch_size"):
        DataLoader(_dataset()[2], batch_size=batch_size)


class _TorchStyle:
    """A PyTorch program's dataset: a tensor of features and a Python int label."""

    def __len__(self) -> int:
        return 5

    def __getitem__(self, i: int):
        return braze.tensor(np.full(2, i, np.float32)), i


@pytest.mark.parametrize("prefetch", [0, 2])
def test_a_dataset_of_tensors_gives_batches_of_tensors(prefetch):
    batches = list(DataLoader(_TorchStyle(), batch_size=2, prefetch=prefetch))
    assert [len(b[1]) for b in batches] == [2, 2, 1]
    for features, labels in batches:
        # torch 2.13's default collation: a float32 tensor of features, an int64 tensor of labels
        assert isinstance(features, braze.Tensor) and features.dtype == braze.float32
        assert isinstance(labels, braze.Tensor) and labels.dtype == braze.int64
    np.testing.assert_array_equal(np.concatenate([b[1].numpy() for b in batches]), np.arange(5))
