"""Run under ``mpiexec -n 2``: all_reduce, its gradient, broadcast, sharding and operand
mismatches, each checked against NumPy on both ranks' inputs (which every rank can
rebuild from their seeds), eagerly, lazily, jitted and on the reference interpreter.
Prints "ok" on each rank when every check passed."""

import os

import numpy as np

import braze
import braze.distributed as dist
from braze.data import DataLoader
from braze.optim import SGD
from braze.runtime.collectives import ReplicaMismatchError, joined
from braze.runtime.cores import available_cores

threads_given = "OMP_NUM_THREADS" in os.environ
world = dist.init()
rank, size = dist.rank(), dist.size()
if not threads_given:  # each rank's OpenMP threads default to its share of the cores
    assert os.environ["OMP_NUM_THREADS"] == str(max(1, available_cores() // size)), os.environ["OMP_NUM_THREADS"]
OPS = {"sum": lambda a: a.sum(0), "mean": lambda a: a.mean(0), "max": lambda a: a.max(0)}


def inputs(seed: int) -> np.ndarray:
    """Every rank's array (ties between ranks included, for the maximum's gradient)."""
    return np.random.default_rng(seed).integers(-3, 4, (size, 3, 4)).astype(np.float32)


def expected_gradient(op: str, x: np.ndarray, c: np.ndarray) -> np.ndarray:
    """d/dx_rank of sum_s sum(all_reduce(x)_s * c_s), from NumPy."""
    if op == "sum":
        return c.sum(0)
    if op == "mean":
        return c.sum(0) / size
    winners = (x == x.max(0)).astype(np.float32)
    return winners[rank] * c.sum(0) / winners.sum(0)


def reduce(op: str, mode: str, x: np.ndarray) -> np.ndarray:
    device = braze.CPU if mode == "eager" else braze.LAZY_CPU
    t = braze.tensor(x, device=device)
    if mode == "jit":
        return braze.jit(lambda a: dist.all_reduce(a, op))(t).numpy()
    return dist.all_reduce(t, op).numpy()


def gradient(op: str, mode: str, x: np.ndarray, c: np.ndarray) -> np.ndarray:
    device = braze.CPU if mode == "eager" else braze.LAZY_CPU
    t = braze.tensor(x, device=device, requires_grad=True)
    (dist.all_reduce(t, op) * braze.tensor(c, device=device)).sum().backward()
    return t.grad.numpy()


for backend in ("cpu", "reference"):  # native steps call the transport back; the interpreter calls it
    os.environ["BRAZE_BACKEND"] = backend
    for k, (op, numpy_op) in enumerate(OPS.items()):
        x, c = inputs(k), inputs(10 + k)
        for mode in ("eager", "lazy", "jit"):
            np.testing.assert_allclose(reduce(op, mode, x[rank]), numpy_op(x), rtol=1e-6, err_msg=f"{op} {mode}")
        for mode in ("eager", "lazy"):
            got = gradient(op, mode, x[rank], c[rank])
            np.testing.assert_allclose(got, expected_gradient(op, x, c), rtol=1e-6, err_msg=f"{op} gradient {mode}")

# Trees, numbers and arrays (metrics) reduce too.
tree = dist.all_reduce({"n": rank + 1, "v": [np.full(2, rank, np.float64)]}, "sum")
assert tree["n"] == size * (size + 1) // 2 and tree["v"][0].tolist() == [sum(range(size))] * 2, tree

# Arrays in any memory order reduce element by element; the mean of counts is a float.
x = inputs(20)
transposed = dist.all_reduce(x[rank].T, "sum")
np.testing.assert_array_equal(transposed, x.sum(0).T, err_msg="transposed operand")
counts = dist.all_reduce({"n": rank + 1, "v": np.array([rank, 2 * rank])}, "mean")
np.testing.assert_array_equal(counts["v"], np.mean([[r, 2 * r] for r in range(size)], axis=0))
assert counts["n"] == np.mean(np.arange(1, size + 1)), counts
for mode in ("eager", "lazy"):  # an integer tensor's mean too, as braze.mean gives it (float32)
    device = braze.CPU if mode == "eager" else braze.LAZY_CPU
    mean = dist.all_reduce(braze.tensor([rank, 2 * rank + 1], dtype=braze.int32, device=device), "mean")
    assert mean.dtype is braze.float32, mean.dtype
    np.testing.assert_array_equal(mean.numpy(), np.mean([[r, 2 * r + 1] for r in range(size)], axis=0))

# A 0-d tensor (a statistic) keeps its shape.
for mode in ("eager", "lazy"):
    scalar = braze.tensor(float(rank), device=braze.CPU if mode == "eager" else braze.LAZY_CPU)
    total = dist.all_reduce(scalar, "sum").numpy()
    assert total.shape == () and total == sum(range(size)), (mode, total)

# Broadcast: every rank ends with rank 0's values, tensors updated in place.
w = braze.tensor(np.full(5, rank, np.float32), requires_grad=True)
scale = braze.tensor(float(rank + 1), requires_grad=True)
dist.broadcast([w, scale], root=0)
assert w.numpy().tolist() == [0.0] * 5, w
assert scale.shape == () and scale.numpy().shape == () and scale.numpy() == 1.0, scale
stepped = dist.broadcast({"step": 10 + rank})
assert stepped == {"step": 10} and type(stepped["step"]) is int, stepped  # a number, as all_reduce gives

# DistributedOptimizer: a learning rate set on the wrapper is the one step() uses.
p = braze.tensor(np.zeros(3, np.float32), requires_grad=True)
optimizer = dist.DistributedOptimizer(SGD([p], lr=1.0))
optimizer.lr = 0.25
g = inputs(30)
(p * braze.tensor(g[rank, 0, :3])).sum().backward()
optimizer.step()
assert optimizer.optimizer.lr == 0.25
np.testing.assert_allclose(p.numpy(), -0.25 * g[:, 0, :3].mean(0), rtol=1e-6, err_msg="SGD step with lr 0.25")

# PyTorch's step(closure): the closure's gradients are averaged over the ranks, its loss returned.
optimizer.zero_grad(set_to_none=False)
assert p.grad.numpy().tolist() == [0.0] * 3, p.grad
before = p.numpy().copy()


def closure():
    optimizer.zero_grad()
    loss = (p * braze.tensor(g[rank, 1, :3])).sum()
    loss.backward()
    return loss


loss = optimizer.step(closure)
np.testing.assert_allclose(loss.numpy(), (before * g[rank, 1, :3]).sum(), rtol=1e-6, err_msg="closure's loss")
np.testing.assert_allclose(p.numpy(), before - 0.25 * g[:, 1, :3].mean(0), rtol=1e-6, err_msg="step(closure)")

# An unbound optimizer, wrapped and then bound as compile(optimizer=...) binds it: rank 0's
# parameters everywhere, and the wrapper is what binding returns.
p = braze.tensor(np.full(3, rank, np.float32), requires_grad=True)
optimizer = dist.DistributedOptimizer(SGD(lr=1.0))
assert optimizer.bind([p]) is optimizer and optimizer.params == [p]
assert p.numpy().tolist() == [0.0] * 3, p
# Moving it keeps the wrapper (it once returned the wrapped optimizer, which averages nothing).
assert optimizer.to(braze.LAZY_CPU) is optimizer

# Parameters with gradients on some ranks only (a branch each rank's batch took): each
# gradient is averaged with the others' zeros, never with another parameter's gradient;
# a parameter no rank used keeps no gradient.
a, b, unused = (braze.tensor(np.zeros(3, np.float32), requires_grad=True) for _ in range(3))
optimizer = dist.DistributedOptimizer(SGD([a, b, unused], lr=1.0))
g = inputs(31)
((a, b)[rank % 2] * braze.tensor(g[rank, 0, :3])).sum().backward()
optimizer.average_gradients()
for k, param in enumerate((a, b)):
    users = [r for r in range(size) if r % 2 == k]
    np.testing.assert_allclose(param.grad.numpy(), g[users, 0, :3].sum(0) / size, rtol=1e-6, err_msg=f"param {k}")
assert unused.grad is None

# Sharding: disjoint shares of equal length that together are the epoch.
loader = DataLoader(np.arange(11), batch_size=2, shuffle=True, seed=3, shard=True, prefetch=0)
mine = np.concatenate([b for (b,) in loader])
shares = world.comm.allgather(mine.tolist())
assert len({len(s) for s in shares}) == 1 and len(loader) == 3, shares
assert sorted(set(sum(shares, []))) == list(range(11)), shares


class NumbersOnly:
    """A communicator whose object methods (mpi4py's lowercase ones, which pickle) fail: the
    ranks must exchange numeric buffers only, since an unpickled object can run code."""

    PICKLING = {"allgather", "allreduce", "alltoall", "bcast", "gather", "irecv", "isend", "recv", "reduce"}
    PICKLING |= {"scatter", "send", "sendrecv"}

    def __init__(self, comm):
        self._comm = comm

    def __getattr__(self, name):
        if name in self.PICKLING:
            raise AssertionError(f"comm.{name} exchanges pickled objects")
        return getattr(self._comm, name)


joined().comm = NumbersOnly(joined().comm)

# Operands that disagree across ranks: a clear error on every rank, naming each one's.
MISMATCHES = [((3,), "float32", (4,), "float32"), ((3,), "float32", (3,), "float64")]
for mode in ("eager", "lazy"):
    device = braze.CPU if mode == "eager" else braze.LAZY_CPU
    for *rank0, shape1, dtype1 in MISMATCHES:
        shape, dtype = (rank0, (shape1, dtype1))[rank]
        try:
            dist.all_reduce(braze.zeros(shape, dtype=dtype, device=device)).numpy()
        except ReplicaMismatchError as error:
            expected = f"rank 0 has sum of float32(3,); rank 1 has sum of {dtype1}({shape1[0]},)"
            assert expected in str(error), error
        else:
            raise AssertionError(f"{mode}: no error for ranks reducing {shape} {dtype} differently")
print("ok", flush=True)
