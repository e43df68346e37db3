"""Stateful programs for the fuzzer: a small model trained and evaluated over several calls
of ``@braze.jit`` functions while its Python state changes between the calls, as training
scripts change it (the learning rate and the other hyperparameters, a weight decay turned
off and on, the train/eval mode with dropout, the default generator's seed, a loss scale
that the functions close over as a number, hold in a slotted settings object, read from a
NumPy array written into in place, or from a list default value changed in place).

Each program runs eagerly and jitted from the same start. After every call the loss and
every parameter must agree, to float64 rounding (a value frozen at trace time is off by
far more), and each jitted function must have been traced once per distinct guarded state
it met (mode, a zero weight decay, the scale, whether the parameters hold gradients), never
for a new hyperparameter or random key.
Program ``i`` of a run with seed ``K`` is drawn from seed ``K + i``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import braze as B

OPTIMIZERS = ("sgd", "momentum", "nesterov", "adam", "adamw")
HOLDERS = ("closure", "slot", "array", "default")  # where the loss scale lives
ARRAY_SIZE = 96  # past jit_state.SMALL_ARRAY: the array's guard is a digest of its bytes
RTOL = 1e-9  # float64: the two runs differ by the order of a few sums, over a few steps


@dataclass(frozen=True)
class Call:
    """One call and what is set before it."""

    train: bool  # the training step (else the evaluation)
    training: bool  # the model's mode
    hyper: tuple[tuple[str, Any], ...]  # optimizer attributes set before the call
    scale: float  # the loss scale, held where the program's ``holder`` says
    reseed: int | None  # braze.manual_seed before the call


@dataclass(frozen=True)
class StatefulProgram:
    seed: int
    widths: tuple[int, ...]  # of the hidden layers
    dropout: float
    dropout_seed: int | None  # None: the dropout draws from the default generator
    optimizer: str
    start: tuple[tuple[str, Any], ...]  # the optimizer's hyperparameters when it is made
    calls: tuple[Call, ...]
    holder: str = "closure"  # one of HOLDERS

    def describe(self) -> str:
        lines = [
            f"stateful program {self.seed}: widths {list(self.widths)}, dropout {self.dropout} "
            f"(seed {self.dropout_seed}), {self.optimizer} {dict(self.start)}, loss scale in a {self.holder}"
        ]
        lines += [f"  call {k}: {call}" for k, call in enumerate(self.calls)]
        return "\n".join(lines)


def draw_stateful(seed: int, calls: int = 7) -> StatefulProgram:
    rng = np.random.default_rng([seed, 24])
    optimizer = OPTIMIZERS[int(rng.integers(len(OPTIMIZERS)))]
    adam = optimizer.startswith("adam")

    def learning_rate() -> float:
        return round(float(rng.uniform(0.01, 0.1 if adam else 0.5)), 4)

    def weight_decay() -> float:
        return 0.0 if rng.random() < 0.4 else round(float(rng.uniform(0.001, 0.1)), 4)

    start: dict[str, Any] = {"lr": learning_rate(), "weight_decay": weight_decay()}
    if optimizer in ("momentum", "nesterov"):
        start["momentum"] = round(float(rng.uniform(0.5, 0.95)), 3)
    made = []
    scale = 1.0
    for k in range(calls):
        hyper: dict[str, Any] = {}
        if k and rng.random() < 0.6:
            hyper["lr"] = learning_rate()
        if k and rng.random() < 0.3:
            hyper["weight_decay"] = weight_decay()
        if k and "momentum" in start and rng.random() < 0.3:
            hyper["momentum"] = round(float(rng.uniform(0.5, 0.95)), 3)
        if k and adam and rng.random() < 0.3:
            hyper["betas"] = (round(float(rng.uniform(0.7, 0.95)), 3), round(float(rng.uniform(0.9, 0.9999)), 4))
            hyper["eps"] = float(10.0 ** rng.integers(-8, -3))
        if k and rng.random() < 0.2:
            scale = float(rng.choice([0.5, 1.0, 2.0]))
        train = k == 0 or rng.random() < 0.7
        training = bool(train or rng.random() < 0.3)
        reseed = int(rng.integers(100)) if rng.random() < 0.2 else None
        made.append(Call(train, training, tuple(hyper.items()), scale, reseed))
    widths = tuple(int(w) for w in rng.integers(3, 9, int(rng.integers(1, 3))))
    dropout = 0.0 if rng.random() < 0.25 else round(float(rng.uniform(0.1, 0.6)), 2)
    dropout_seed = None if rng.random() < 0.5 else int(rng.integers(1000))
    holder = HOLDERS[int(rng.integers(len(HOLDERS)))]  # drawn last: the earlier draws are as they were
    return StatefulProgram(seed, widths, dropout, dropout_seed, optimizer, tuple(start.items()), tuple(made), holder)


def _model(program: StatefulProgram) -> B.nn.Sequential:
    g = B.Generator(program.seed)
    layers: list[Any] = []
    inputs = 4
    for width in program.widths:
        layers.append(B.nn.Dense(width, activation="tanh", input_dim=inputs, generator=g))
        if program.dropout:
            layers.append(B.nn.Dropout(program.dropout, seed=program.dropout_seed))
        inputs = width
    layers.append(B.nn.Dense(3, input_dim=inputs, generator=g))
    model = B.nn.Sequential(*layers)
    # In float64, so that rounding stays far below any real difference between the runs.
    for _, module in model.named_modules():
        for name, value in list(vars(module).items()):
            if isinstance(value, B.Tensor) and value.requires_grad:
                setattr(module, name, B.tensor(value.numpy().astype(np.float64)).requires_grad_())
    return model


def _optimizer(program: StatefulProgram, model: B.nn.Sequential) -> Any:
    start = dict(program.start)
    if program.optimizer.startswith("adam"):
        kind = B.optim.AdamW if program.optimizer == "adamw" else B.optim.Adam
        return kind(model, **start)
    return B.optim.SGD(model, nesterov=program.optimizer == "nesterov", **start)


def _data(program: StatefulProgram) -> tuple[B.Tensor, B.Tensor]:
    rng = np.random.default_rng([program.seed, 25])
    return B.tensor(rng.standard_normal((6, 4))), B.tensor(rng.integers(0, 3, 6).astype(np.int32))


class Settings:
    """A settings object as scripts write one with ``__slots__`` (it has no __dict__)."""

    __slots__ = ("scale",)

    def __init__(self, scale: float) -> None:
        self.scale = scale


@dataclass
class Run:
    """What one run gave after each call: the loss, then (after a training step) every parameter."""

    values: list[list[np.ndarray]]
    compiles: dict[str, int]


def run_stateful(program: StatefulProgram, jitted: bool) -> Run:
    model = _model(program)
    optimizer = _optimizer(program, model)
    x, y = _data(program)
    scale = 1.0
    settings = Settings(1.0)
    scales = np.ones(ARRAY_SIZE)

    def loss_scale(default: list[float] = [1.0]) -> Any:  # noqa: B006 (a default changed in place)
        if program.holder == "default":
            return default[0]
        if program.holder == "slot":
            return settings.scale
        if program.holder == "array":
            return B.tensor(scales).mean()  # exact: the mean of equal binary fractions
        return scale

    def train_step(model: Any, optimizer: Any, x: B.Tensor, y: B.Tensor) -> B.Tensor:
        optimizer.zero_grad()
        loss = B.nn.softmax_cross_entropy(model(x), y) * loss_scale()
        loss.backward()
        optimizer.step()
        return loss

    def evaluate(model: Any, x: B.Tensor, y: B.Tensor) -> B.Tensor:
        return B.nn.softmax_cross_entropy(model(x), y) * loss_scale()

    train = B.jit(train_step) if jitted else train_step
    test = B.jit(evaluate) if jitted else evaluate
    values = []
    for call in program.calls:
        for name, value in call.hyper:
            setattr(optimizer, name, value)
        # Only the program's holder changes: another one changing alike would be a guard of its own.
        if program.holder == "slot":
            settings.scale = call.scale
        elif program.holder == "array":
            scales[:] = call.scale
        elif program.holder == "default":
            loss_scale.__defaults__[0][0] = call.scale
        else:
            scale = call.scale
        if call.reseed is not None:
            B.manual_seed(call.reseed)
        model.train(call.training)
        if call.train:
            values.append([train(model, optimizer, x, y).numpy(), *(p.numpy() for p in model.parameters())])
        else:
            values.append([test(model, x, y).numpy()])
    compiles = {"train": train.traces, "evaluate": test.traces} if jitted else {}
    return Run(values, compiles)


def expected_compiles(program: StatefulProgram) -> dict[str, int]:
    """One trace per distinct guarded state each function met: its mode, the loss scale and
    whether the parameters hold gradients (from a training step before), and for the
    training step whether the weight decay is zero."""
    decay = dict(program.start)["weight_decay"]
    states: dict[str, set] = {"train": set(), "evaluate": set()}
    trained = False
    for call in program.calls:
        decay = dict(call.hyper).get("weight_decay", decay)
        if call.train:
            states["train"].add((call.training, call.scale, decay == 0, trained))
            trained = True
        else:
            states["evaluate"].add((call.training, call.scale, trained))
    return {name: len(seen) for name, seen in states.items()}


def check_stateful(program: StatefulProgram) -> str | None:
    """Why the jitted run differs from the eager one, or None."""
    B.manual_seed(program.seed)
    eager = run_stateful(program, jitted=False)
    B.manual_seed(program.seed)
    jitted = run_stateful(program, jitted=True)
    for k, (want, got) in enumerate(zip(eager.values, jitted.values, strict=True)):
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            scale = float(np.abs(a).max(initial=1.0))
            if not np.allclose(b, a, rtol=RTOL, atol=RTOL * scale):
                what = "the loss" if i == 0 else f"parameter {i - 1}"
                worst = float(np.abs(b - a).max())
                return f"call {k}: {what} differs by {worst:.3g} (of {scale:.3g}) from eager"
    expected = expected_compiles(program)
    if jitted.compiles != expected:
        return f"traced {jitted.compiles} times, expected {expected} (one per distinct guarded state)"
    return None
