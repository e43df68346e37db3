"""Drawing random programs: inputs of a few flavours (vectors and matrices, NHWC images
with HWIO filters, an int tensor now and then), then steps from a table of op families.

Operands are drawn with a bias toward recent values and values that already have readers,
so chains, shared subexpressions and values with many consumers are all common. Each
drawn step runs eagerly at once (``programs.run_step``); one that does not fit is drawn
again, so the families need not know every op's shape rule.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import braze as B
from braze.testing.programs import MAX_ELEMENTS, Input, Program, Step, make_arrays, run_step

DIMS = (1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 33)
UNARY = (
    "B.exp(B.clip({0}, -5.0, 5.0))",
    "B.tanh({0})",
    "B.sigmoid({0})",
    "B.log(B.abs({0}) + 0.5)",
    "B.sqrt(B.abs({0}) + 0.1)",
    "B.rsqrt(B.abs({0}) + 0.5)",
    "B.relu({0})",
    "B.abs({0})",
    "B.sign({0})",
    "-{0}",
    "{0} ** 2",
    "B.power(B.abs({0}) + 0.5, 1.5)",
    "B.clip({0}, -0.5, 0.75)",
    "B.sin({0})",
    "B.cos({0})",
    "B.tan(B.clip({0}, -1.2, 1.2))",
    "B.asin(B.clip({0}, -0.9, 0.9))",
    "B.acos(B.clip({0}, -0.9, 0.9))",
    "B.atan({0})",
    "B.sinh(B.clip({0}, -5.0, 5.0))",
    "B.cosh(B.clip({0}, -5.0, 5.0))",
    "B.asinh({0})",
    "B.acosh(B.abs({0}) + 1.25)",
    "B.atanh(B.clip({0}, -0.9, 0.9))",
    "B.log1p(B.abs({0}))",
    "B.expm1(B.clip({0}, -5.0, 5.0))",
)
BINARY_FLOAT = (
    "B.atan2({0}, {1})",
    "B.copysign({0}, {1})",
    "B.hypot({0}, B.abs({1}) + 0.5)",  # away from (0, 0), where its gradient is 0/0
    "B.fmod({0}, B.abs({1}) + 0.5)",
)
BINARY = (
    "{0} + {1}",
    "{0} - {1}",
    "{0} * {1}",
    "{0} / (B.abs({1}) + 0.5)",
    "B.maximum({0}, {1})",
    "B.minimum({0}, {1})",
)
INT_BINARY = (
    "{0} + {1}",
    "{0} - {1}",
    "{0} * {1}",
    "B.maximum({0}, {1})",
    "B.minimum({0}, {1})",
    "{0} // {1}",
    "{0} % {1}",
    "{0} & {1}",
    "{0} | {1}",
    "{0} ^ {1}",
    "{0} << ({1} & 15)",
    "{0} >> ({1} & 15)",
)
# Integers at the edges of int32, where C's signed arithmetic is undefined and NumPy wraps:
# overflowing sums and products, a comparison GCC would fold, INT_MIN (and, with the
# divisions above, INT_MIN // -1 and division by 0).
INT_EDGES = (
    "{0} + 2147483647",
    "{0} * 1000003 * 1000003",
    "-({0} - 2147483647 - 1)",
    "B.where({0} + 2147483647 < {0}, {0}, -{0})",
)
# Floats that no int32 holds (NaN, infinities, beyond 2^31), of inputs only: a computed
# value's rounding could move the truncation.
UNREPRESENTABLE = (
    "B.astype({0} * 1e12, B.int32)",
    "B.astype(B.sqrt({0}) * 1e10, B.int32)",
    "B.astype({0} / 0.0, B.int32)",
)
REDUCTIONS = ("B.sum", "B.max", "B.min", "B.mean", "B.var", "B.logsumexp")


class Drawer:
    """The state of one program being drawn: its values so far and the random stream."""

    def __init__(self, rng: np.random.Generator, inputs: tuple[Input, ...], seed: int) -> None:
        self.rng = rng
        self.inputs = inputs
        self.dtype = inputs[0].dtype
        self.values: list[B.Tensor] = [B.tensor(a) for a in make_arrays(inputs, seed)]
        self.steps: list[Step] = []
        self.reads = [0] * len(inputs)

    def shape(self, i: int) -> tuple[int, ...]:
        return tuple(self.values[i].shape)

    def integer(self, i: int) -> bool:
        return self.values[i].dtype.kind == "i"

    def pick(self, predicate: Callable[[int], bool] = lambda i: True, integer: bool = False) -> int | None:
        found = [i for i in range(len(self.values)) if self.integer(i) == integer and predicate(i)]
        if not found:
            return None
        roll = self.rng.random()
        if roll < 0.45:
            found = found[-3:]  # recent: chains
        elif roll < 0.65:
            found = [i for i in found if self.reads[i]] or found  # already read: many consumers
        return found[self.rng.integers(len(found))]

    def number(self) -> float:
        value = round(float(self.rng.uniform(-2, 2)), 2)
        return value if value else 1.25

    def choice(self, options):
        return options[self.rng.integers(len(options))]

    def add(self, template: str, args: tuple[int, ...], integer: bool = False) -> bool:
        namespace = {"B": B, **{f"t{i}": self.values[i] for i in set(args)}}
        value = run_step(template.format(*(f"t{a}" for a in args)), namespace)
        if value is None or (value.dtype.kind == "i") != integer:
            return False
        self.values.append(value)
        self.reads.append(0)
        for a in args:
            self.reads[a] += 1
        self.steps.append(Step(template, args, integer))
        return True


def draw_inputs(rng: np.random.Generator) -> tuple[Input, ...]:
    dtype = "float64" if rng.random() < 0.3 else "float32"
    flavour = rng.random()
    if flavour < 0.35:  # an NHWC image, an HWIO filter, sometimes a bias
        channels = int(rng.integers(1, 5))
        image = (int(rng.integers(1, 4)), int(rng.integers(1, 13)), int(rng.integers(1, 13)), channels)
        out = int(rng.choice([1, 2, channels]))
        shapes = [image, (int(rng.integers(1, 4)), int(rng.integers(1, 4)), channels, out)]
        if rng.random() < 0.5:
            shapes.append((out,))
    else:
        first = _dense_shape(rng)
        shapes = [first]
        for _ in range(int(rng.integers(0, 3))):
            roll = rng.random()
            if roll < 0.3 and first:  # broadcasts against the first: some dims become 1, or a suffix
                shapes.append(tuple(1 if rng.random() < 0.4 else d for d in first)[int(rng.integers(len(first))) :])
            elif roll < 0.5 and len(first) >= 1:  # fits a matmul after it
                shapes.append((first[-1], int(rng.choice(DIMS))))
            else:
                shapes.append(_dense_shape(rng))
    inputs = [Input(s, dtype, key) for key, s in enumerate(shapes)]
    if rng.random() < 0.2:
        inputs.append(Input(shapes[int(rng.integers(len(shapes)))], "int32", len(shapes)))
    return tuple(inputs)


def _dense_shape(rng: np.random.Generator) -> tuple[int, ...]:
    if rng.random() < 0.08:  # large: vectorized loops and their remainders
        return ((int(rng.integers(100, MAX_ELEMENTS)),), (int(rng.integers(20, 64)), int(rng.integers(20, 64))))[
            int(rng.integers(2))
        ]
    return tuple(int(rng.choice(DIMS)) for _ in range(int(rng.integers(0, 4))))


def draw_program(seed: int, max_steps: int = 12) -> Program:
    """The program of ``seed``: the same seed always gives the same program and inputs."""
    rng = np.random.default_rng(seed)
    inputs = draw_inputs(rng)
    drawer = Drawer(rng, inputs, seed)
    for _ in range(int(rng.integers(1, max_steps + 1))):
        for _attempt in range(10):
            family = FAMILIES[int(rng.choice(len(FAMILIES), p=WEIGHTS))]
            if family(drawer):
                break
    weights = tuple(0.0 if rng.random() < 0.15 else round(float(rng.uniform(0.5, 1.5)), 2) for _ in drawer.steps)
    total = len(drawer.values)
    returned = tuple(sorted({int(rng.integers(total)) for _ in range(int(rng.integers(0, 3)))}))
    if not any(weights) and drawer.steps:
        weights = (*weights[:-1], 1.0)
    update = round(float(rng.uniform(0.05, 0.5)), 2) if rng.random() < 0.25 else 0.0
    order = 2 if rng.random() < 0.2 else 1  # drawn last: the other draws of a seed stay as they were
    return Program(seed, inputs, tuple(drawer.steps), weights, returned, update, order)


# Op families: each draws one step (True when one was added).


def unary(d: Drawer) -> bool:
    x = d.pick()
    return x is not None and d.add(d.choice(UNARY), (x,))


def scalar(d: Drawer) -> bool:
    x = d.pick()
    c = d.number()
    template = d.choice((f"{{0}} * {c!r}", f"{{0}} + {c!r}", f"{c!r} - {{0}}", f"{{0}} / {c!r}"))
    return x is not None and d.add(template, (x,))


def binary(d: Drawer) -> bool:
    x = d.pick()
    if x is None:
        return False
    y = d.pick(lambda i: _broadcasts(d.shape(x), d.shape(i)))
    return y is not None and d.add(d.choice(BINARY if d.rng.random() < 0.8 else BINARY_FLOAT), (x, y))


def integers(d: Drawer) -> bool:
    x = d.pick(integer=True)
    if x is None:
        return False
    roll = d.rng.random()
    if roll < 0.4:
        y = d.pick(lambda i: _broadcasts(d.shape(x), d.shape(i)), integer=True)
        return y is not None and d.add(d.choice(INT_BINARY), (x, y), integer=True)
    if roll < 0.6:
        return d.add(d.choice(("B.abs({0})", "-{0}", "{0} * 3", "{0} - 2", "~{0}")), (x,), integer=True)
    if roll < 0.75 and d.shape(x):
        return d.add(f"B.sum({{0}}, axis={int(d.rng.integers(len(d.shape(x))))})", (x,), integer=True)
    f = d.pick(lambda i: _broadcasts(d.shape(x), d.shape(i)))
    if f is None or roll < 0.8:
        return d.add(f"B.astype({{0}}, B.{d.dtype})", (x,))
    if roll < 0.85:  # through bfloat16 (the integer's float32 value, rounded to nearest even)
        return d.add(f"B.astype(B.astype({{0}}, B.bfloat16), B.{d.dtype})", (x,))
    return d.add("B.where({0} > 0, {1}, {1} * 0.5)", (x, f))


def integer_edges(d: Drawer) -> bool:
    if d.rng.random() < 0.6:
        x = d.pick(integer=True)
        return x is not None and d.add(d.choice(INT_EDGES), (x,), integer=True)
    f = d.pick(lambda i: i < len(d.inputs))
    return f is not None and d.add(d.choice(UNREPRESENTABLE), (f,), integer=True)


def compare(d: Drawer) -> bool:
    """A mask from comparing inputs (never computed values: rounding would flip ties)."""
    x = d.pick(lambda i: i < len(d.inputs))
    if x is None:
        return False
    y = d.pick(lambda i: _broadcasts(d.shape(x), d.shape(i)))
    if y is None:
        return False
    op = d.choice(("<", ">", "<=", ">="))
    if d.rng.random() < 0.5:
        return d.add(f"B.astype({{0}} {op} 0.25, B.{d.dtype}) * {{1}}", (x, y))
    return d.add(f"B.where({{0}} {op} 0.25, {{1}}, -{{1}})", (x, y))


def reduce(d: Drawer) -> bool:
    x = d.pick()
    if x is None:
        return False
    rank = len(d.shape(x))
    axis = _axis(d, rank)
    keepdims = bool(d.rng.random() < 0.4)
    return d.add(f"{d.choice(REDUCTIONS)}({{0}}, axis={axis}, keepdims={keepdims})", (x,))


def scan(d: Drawer) -> bool:
    """Running sums and products, sorts, and the positions that sort (of inputs only:
    rounding would reorder ties), and rounding to integers (of inputs, for the same reason)."""
    x = d.pick(lambda i: len(d.shape(i)) >= 1)
    if x is None:
        return False
    axis = int(d.rng.integers(-len(d.shape(x)), len(d.shape(x))))
    roll = d.rng.random()
    if roll < 0.3:
        return d.add(f"B.cumsum({{0}}, axis={axis})", (x,))
    if roll < 0.45:
        return d.add(f"B.cumprod(B.clip({{0}}, 0.5, 1.5), axis={axis})", (x,))
    if roll < 0.55:
        return d.add(f"B.prod(B.clip({{0}}, 0.5, 1.5), axis={axis})", (x,))
    if roll < 0.8:
        return d.add(f"B.sort({{0}}, axis={axis}, descending={bool(d.rng.random() < 0.4)})", (x,))
    source = d.pick(lambda i: i < len(d.inputs) and len(d.shape(i)) >= 1)
    if source is None:
        return False
    if roll < 0.9:
        return d.add(f"B.argsort({{0}}, axis={axis % len(d.shape(source))})", (source,), integer=True)
    rounding = d.choice(("B.floor", "B.ceil", "B.round", "B.trunc"))
    return d.add(f"{rounding}({{0}} * 4.0) * {{0}}", (source,))


def loop(d: Drawer) -> bool:
    """A loop node: a scan along the leading axis (a nonlinear running carry, its steps
    stacked), reversed or not, or a fori_loop of a few steps."""
    x = d.pick(lambda i: len(d.shape(i)) >= 1)
    if x is None:
        return False
    c = d.number()
    roll = d.rng.random()
    if roll < 0.5:
        return d.add(f"B.lax.scan(lambda c, x: (B.tanh(c * {c!r} + x), c * x), {{0}}[0], {{0}})[1]", (x,))
    if roll < 0.75:
        return d.add("B.lax.scan(lambda c, x: (c + B.sin(x), c), {0}[0], {0}, reverse=True)[1]", (x,))
    return d.add(f"B.lax.fori_loop(0, 3, lambda i, v: B.sin(v) * {c!r} + 0.5, {{0}})", (x,))


# Functions of each row that compile to one row kernel on the CPU when they normalize the
# last axis (passes/row_fusion.py): reductions, then elementwise work reading their results.
ROW_FUNCTIONS = (
    "B.softmax({x}, axis={axis})",
    "B.log_softmax({x}, axis={axis})",
    "B.nn.functional.layer_norm(B.swapaxes({x}, {axis}, -1), {size})",
)


def softmax(d: Drawer) -> bool:
    """A softmax, log-softmax or layer norm (of the axis moved last) along a random axis."""
    x = d.pick(lambda i: len(d.shape(i)) >= 1)
    if x is None:
        return False
    axis = int(d.rng.integers(-len(d.shape(x)), len(d.shape(x))))
    template = d.choice(ROW_FUNCTIONS).format(x="{0}", axis=axis, size=d.shape(x)[axis])
    return d.add(template, (x,))


# Functions that a lazy device replays as one expression with one gradient record
# (braze.function_replay), the layer norm above besides.
REPLAYED_FUNCTIONS = (
    "B.nn.functional.gelu({0})",
    "B.nn.functional.gelu({0}, approximate='tanh')",
    "B.nn.functional.scaled_dot_product_attention({0}, {1}, {1})",
    "B.nn.functional.scaled_dot_product_attention({0}, {1}, {1}, causal=True)",
)


def replayed(d: Drawer) -> bool:
    """A GELU, or an attention of queries over keys and values of their shape (the same
    tensor, or another), of rank 2 at least."""
    template = d.choice(REPLAYED_FUNCTIONS)
    if "{1}" not in template:
        x = d.pick()
        return x is not None and d.add(template, (x,))
    x = d.pick(lambda i: len(d.shape(i)) >= 2)
    if x is None:
        return False
    y = d.pick(lambda i: d.shape(i) == d.shape(x))
    return y is not None and d.add(template, (x, y))


def reshape(d: Drawer) -> bool:
    x = d.pick(lambda i: True, integer=bool(d.rng.random() < 0.15))
    if x is None:
        return False
    size = int(np.prod(d.shape(x), dtype=np.int64))
    factors = _factors(size)
    d.rng.shuffle(factors)
    cuts = sorted(d.rng.choice(len(factors) + 1, size=int(d.rng.integers(0, 3)), replace=True).tolist())
    groups = [int(np.prod(part, dtype=np.int64)) for part in np.split(np.array(factors, dtype=np.int64), cuts)]
    if d.rng.random() < 0.2:
        groups.insert(int(d.rng.integers(len(groups) + 1)), 1)
    if d.rng.random() < 0.4:
        groups[int(d.rng.integers(len(groups)))] = -1
    return d.add(f"B.reshape({{0}}, {tuple(groups)!r})", (x,), d.integer(x))


def transpose(d: Drawer) -> bool:
    x = d.pick(lambda i: len(d.shape(i)) >= 2, integer=bool(d.rng.random() < 0.15))
    if x is None:
        return False
    if len(d.shape(x)) == 2 and d.rng.random() < 0.3:
        return d.add("{0}.T", (x,), d.integer(x))
    permutation = tuple(int(p) for p in d.rng.permutation(len(d.shape(x))))
    if d.rng.random() < 0.25:
        return d.add(f"B.flip({{0}}, {_axis(d, len(permutation))})", (x,), d.integer(x))
    return d.add(f"B.transpose({{0}}, {permutation!r})", (x,), d.integer(x))


def dims(d: Drawer) -> bool:
    x = d.pick()
    if x is None:
        return False
    shape = d.shape(x)
    roll = d.rng.random()
    if roll < 0.3:
        return d.add(f"B.expand_dims({{0}}, {int(d.rng.integers(-len(shape) - 1, len(shape) + 1))})", (x,))
    if roll < 0.5 and 1 in shape:
        return d.add(f"B.squeeze({{0}}, {shape.index(1)})", (x,))
    target = tuple(int(d.rng.integers(2, 5)) if s == 1 and d.rng.random() < 0.7 else s for s in shape)
    if d.rng.random() < 0.5:
        target = (int(d.rng.integers(1, 4)), *target)
    return d.add(f"B.broadcast_to({{0}}, {target!r})", (x,))


def index(d: Drawer) -> bool:
    x = d.pick(lambda i: len(d.shape(i)) >= 1, integer=bool(d.rng.random() < 0.15))
    if x is None:
        return False
    parts = []
    for size in d.shape(x):
        roll = d.rng.random()
        if roll < 0.3:
            parts.append(":")
        elif roll < 0.45:
            parts.append(str(int(d.rng.integers(-size, size))))
        else:
            start = int(d.rng.integers(-size, size)) if d.rng.random() < 0.6 else None
            stop = int(d.rng.integers(-size, size + 1)) if d.rng.random() < 0.4 else None
            step = int(d.choice((1, 1, 2, 3, -1, -2)))
            parts.append(f"{'' if start is None else start}:{'' if stop is None else stop}:{step}")
        if d.rng.random() < 0.5:
            break
    if d.rng.random() < 0.1:
        parts.insert(0, "None")
    return d.add(f"{{0}}[{', '.join(parts)}]", (x,), d.integer(x))


def gather(d: Drawer) -> bool:
    """Elements picked by integer arrays (take, take_along_axis, ``x[i]``), whose gradients
    add up where indices repeat: constant lists holding duplicates and both ends of the axis,
    negative ones among them, or indices computed from an input (exactly: never from a
    computed value, whose rounding could move an index)."""
    x = d.pick(lambda i: len(d.shape(i)) >= 1 and 0 not in d.shape(i), integer=bool(d.rng.random() < 0.1))
    if x is None:
        return False
    shape = d.shape(x)
    axis = int(d.rng.integers(len(shape)))
    n = shape[axis]
    roll = d.rng.random()
    if roll < 0.45:
        count = int(d.rng.integers(1, 7))
        edges = (0, n - 1, -n, -1)
        picks = [int(d.choice(edges) if d.rng.random() < 0.5 else d.rng.integers(-n, n)) for _ in range(count)]
        if count >= 4 and d.rng.random() < 0.4:
            picks = [picks[: count // 2], picks[count // 2 : 2 * (count // 2)]]
        if d.rng.random() < 0.5:
            return d.add(f"B.take({{0}}, {picks!r}, axis={axis})", (x,), d.integer(x))
        return d.add(f"{{0}}[{':, ' * axis}{picks!r}]", (x,), d.integer(x))
    source = d.pick(lambda i: i < len(d.inputs), integer=bool(d.rng.random() < 0.5))
    if source is None:
        return False
    exact = f"{{1}} % {n}" if d.integer(source) else f"B.astype(B.abs({{1}}) * 3.0, B.int32) % {n}"
    if roll < 0.75 or len(d.shape(source)) != len(shape):
        return d.add(f"B.take({{0}}, {exact}, axis={axis})", (x, source), d.integer(x))
    return d.add(f"B.take_along_axis({{0}}, {exact}, axis={axis})", (x, source), d.integer(x))


def join(d: Drawer) -> bool:
    x = d.pick(lambda i: len(d.shape(i)) >= 1)
    if x is None:
        return False
    shape = d.shape(x)
    axis = int(d.rng.integers(len(shape)))
    roll = d.rng.random()
    if roll < 0.35:
        y = d.pick(lambda i: _same_but(d.shape(i), shape, axis))
        return y is not None and d.add(f"B.concatenate([{{0}}, {{1}}], axis={axis})", (x, y))
    if roll < 0.6:
        return d.add(f"B.concatenate([{{0}}, {{0}} * 0.5, {{0}}], axis={axis - len(shape)})", (x,))
    if roll < 0.75:
        y = d.pick(lambda i: d.shape(i) == shape)
        return y is not None and d.add(f"B.stack([{{0}}, {{1}}], axis={axis})", (x, y))
    pairs = tuple((int(d.rng.integers(0, 3)), int(d.rng.integers(0, 3))) for _ in shape)
    return d.add(f"B.pad({{0}}, {pairs!r}, value={d.number()!r})", (x,))


def matmul(d: Drawer) -> bool:
    x = d.pick(lambda i: len(d.shape(i)) >= 1)
    if x is None:
        return False
    k = d.shape(x)[-1]
    roll = d.rng.random()
    # mixed precision (bfloat16 operands, float32 accumulation) for a quarter of the products,
    # by the roll's lower digits: no extra draw, so every seed keeps the program it had
    mixed = roll * 16 % 1 < 0.25
    # a product read twice at each element (p * |p| - p / 2) for a quarter of them, by other
    # digits: the loop reading it joins the product's epilogue (passes/epilogue_loops.py)
    twice = "(lambda p: p * B.abs(p) - p * 0.5)({})" if roll * 64 % 1 < 0.25 else "{}"
    if roll < 0.3 and len(d.shape(x)) == 2:
        y = d.pick(lambda i: len(d.shape(i)) == 2 and d.shape(i)[1] == k)
        product = "B.autocast()(lambda a, b: a @ b.T)({0}, {1})" if mixed else "{0} @ {1}.T"
        return y is not None and d.add(twice.format(product), (x, y))
    if d.rng.random() < 0.3 and len(d.shape(x)) >= 3:
        # a batched product with a transposed right operand, as attention's q @ k^T
        batch = d.shape(x)[:-2]
        if roll * 256 % 1 < 0.25 and k >= 2:
            # its operands x's heads, by other digits of the roll: two of x's channels each
            # (a slice, a reshape and a transpose), which the CPU's products read in place
            t, half = d.shape(x)[-2], k // 2
            heads = f"B.swapaxes(B.reshape({{0}}[..., :{2 * half}], {(*batch, t, 2, half)!r}), -2, -3)"
            return d.add(twice.format(f"(lambda h: h @ B.swapaxes(h, -1, -2))({heads})"), (x,))
        y = d.pick(lambda i: d.shape(i)[:-2] == batch and len(d.shape(i)) == len(batch) + 2 and d.shape(i)[-1] == k)
        return y is not None and d.add(twice.format("{0} @ B.swapaxes({1}, -1, -2)"), (x, y))
    y = d.pick(lambda i: len(d.shape(i)) >= 1 and d.shape(i)[-2 if len(d.shape(i)) >= 2 else 0] == k)
    product = "B.autocast()(lambda a, b: a @ b)({0}, {1})" if mixed else "{0} @ {1}"
    return y is not None and d.add(twice.format(product), (x, y))


def conv(d: Drawer) -> bool:
    x = d.pick(lambda i: len(d.shape(i)) == 4)
    if x is None:
        return False
    w = d.pick(lambda i: len(d.shape(i)) == 4 and d.shape(i)[2] == d.shape(x)[3])
    if w is None:
        return False
    strides = (1, 1, 2, (1, 2), (2, 1))
    # the second unit stride under autocast (bfloat16 operands, float32 accumulation): the
    # draw choice makes, so every seed keeps the program it had, a fifth of them mixed
    pick = int(d.rng.integers(len(strides)))
    stride, mixed = strides[pick], pick == 1
    padding = d.choice(('"SAME"', '"VALID"', "((1, 0), (0, 2))", "1"))
    dilation = d.choice((1, 1, 2, (1, 2)))
    if pick == 0 and padding == '"SAME"' and dilation == 1:
        # A 3x3 convolution of 32 channels and more, which Winograd's kernel computes where
        # the image has even sides: the image repeated along its channels, the filter drawn
        # from a sine scaled by the drawn filter's mean (so gradients reach both); no extra
        # draw, so the programs of other draws stay as they were.
        copies = -(-32 // d.shape(x)[3])
        taps = (3, 3, copies * d.shape(x)[3], 32)
        sequence = f"B.arange({np.prod(taps)}, dtype={{1}}.dtype, device={{1}}.device)"
        filters = f"B.mean({{1}}) * B.reshape(B.sin({sequence} * 0.37), {taps})"
        return d.add(f'B.conv2d(B.concatenate([{{0}}] * {copies}, axis=-1), {filters}, padding="SAME")', (x, w))
    options = f"stride={stride!r}, padding={padding}, dilation={dilation!r}"
    call = f"B.autocast()(lambda a, b: B.conv2d(a, b, {options}))" if mixed else "B.conv2d"
    return d.add(f"{call}({{0}}, {{1}}{'' if mixed else ', ' + options})", (x, w))


def pool(d: Drawer) -> bool:
    x = d.pick(lambda i: len(d.shape(i)) == 4)
    if x is None:
        return False
    size = d.choice((2, 2, 3, (2, 1), (1, 3)))
    stride = d.choice((None, None, 1, 2, (1, 2)))
    padding = d.choice(('"VALID"', '"SAME"'))
    kind = d.choice(("B.max_pool2d", "B.avg_pool2d"))
    return d.add(f"{kind}({{0}}, {size!r}, stride={stride!r}, padding={padding})", (x,))


def sources(d: Drawer) -> bool:
    """Values made on the spot: ranges, one-hot codes, argmax indices, seeded random numbers."""
    roll = d.rng.random()
    if roll < 0.3:
        x = d.pick(lambda i: len(d.shape(i)) >= 1)
        if x is None:
            return False
        count = d.shape(x)[-1]
        return d.add(f"{{0}} + B.arange({count}, dtype={{0}}.dtype, device={{0}}.device) * 0.25", (x,))
    if roll < 0.5:
        labels = d.pick(integer=True)
        return labels is not None and d.add(f"B.one_hot({{0}}, 4, dtype=B.{d.dtype})", (labels,))
    if roll < 0.7:
        # of an input only: computed values may tie differently after rounding
        x = d.pick(lambda i: i < len(d.inputs) and len(d.shape(i)) >= 1)
        axis = "None" if x is None or d.rng.random() < 0.3 else str(int(d.rng.integers(len(d.shape(x)))))
        return x is not None and d.add(f"B.argmax({{0}}, axis={axis})", (x,), integer=True)
    x = d.pick()
    seed = int(d.rng.integers(1000))
    kind = d.choice(("B.rand", "B.randn"))
    return x is not None and d.add(
        f"{{0}} * {kind}({{0}}.shape, dtype={{0}}.dtype, seed={seed}, device={{0}}.device)", (x,)
    )


def again(d: Drawer) -> bool:
    """A step drawn before, once more: a shared subexpression that CSE should merge."""
    if not d.steps:
        return False
    step = d.steps[int(d.rng.integers(len(d.steps)))]
    return d.add(step.template, step.args, step.integer)


def _broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    try:
        return int(np.prod(np.broadcast_shapes(a, b), dtype=np.int64)) <= MAX_ELEMENTS
    except ValueError:
        return False


def _same_but(a: tuple[int, ...], b: tuple[int, ...], axis: int) -> bool:
    return len(a) == len(b) and all(x == y for i, (x, y) in enumerate(zip(a, b, strict=True)) if i != axis)


def _axis(d: Drawer, rank: int) -> str:
    roll = d.rng.random()
    if rank == 0 or roll < 0.25:
        return "None"
    if roll < 0.8 or rank == 1:
        return str(int(d.rng.integers(-rank, rank)))
    return repr(tuple(sorted(int(a) for a in d.rng.choice(rank, size=2, replace=False))))


def _factors(n: int) -> list[int]:
    found, p = [], 2
    while p * p <= n:
        while n % p == 0:
            found.append(p)
            n //= p
        p += 1
    return found + ([n] if n > 1 else [])


FAMILIES_AND_WEIGHTS: tuple[tuple[Callable[[Drawer], bool], float], ...] = (
    (unary, 3),
    (scalar, 1.5),
    (binary, 3),
    (integers, 1),
    (integer_edges, 0.4),
    (compare, 0.5),
    (reduce, 1.5),
    (scan, 0.8),
    (loop, 0.6),
    (softmax, 0.7),
    (replayed, 0.5),
    (reshape, 1),
    (transpose, 1),
    (dims, 0.8),
    (index, 1.2),
    (gather, 0.8),
    (join, 1.2),
    (matmul, 1.5),
    (conv, 1.5),
    (pool, 1),
    (sources, 0.6),
    (again, 0.6),
)
FAMILIES = tuple(f for f, _ in FAMILIES_AND_WEIGHTS)
WEIGHTS = np.array([w for _, w in FAMILIES_AND_WEIGHTS]) / sum(w for _, w in FAMILIES_AND_WEIGHTS)
