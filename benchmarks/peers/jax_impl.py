"""JAX peer: the whole training step (loss, grad, SGD/Adam update, written by hand) under ``jax.jit``.

Parameters and optimizer state go in and come out of the jitted function; the step blocks
on all of its outputs before it returns.
"""

from __future__ import annotations

from collections.abc import Callable

from .common import ADAM_BETA1, ADAM_BETA2, ADAM_EPS, BCE_EPS, init_params, make_batch, workload
from .gpt_common import SPECS as GPT_SPECS
from .jax_gpt import make_gpt_step
from .jax_resnet import make_resnet_step

MODES = ("jit",)


def version() -> str:
    import jax
    import jaxlib

    return f"{jax.__version__} (jaxlib {jaxlib.__version__})"


def _forward(name: str):
    import jax.numpy as jnp
    from jax import lax

    specs = workload(name).layers

    def forward(params, x):
        it = iter(params)
        for spec in specs:
            kind = spec[0]
            if kind == "conv":
                kernel, bias = next(it)
                x = lax.conv_general_dilated(x, kernel, (1, 1), spec[4], dimension_numbers=("NHWC", "HWIO", "NHWC"))
                x = x + bias
                if spec[5] == "relu":
                    x = jnp.maximum(x, 0)
            elif kind == "avgpool":
                x = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") * 0.25
            elif kind == "maxpool":
                x = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
            elif kind == "flatten":
                x = x.reshape(x.shape[0], -1)
            elif kind == "dense":
                kernel, bias = next(it)
                x = x @ kernel + bias
                if spec[3] == "relu":
                    x = jnp.maximum(x, 0)
        return x

    return forward


def make_step(name: str, mode: str = "jit") -> tuple[Callable[[], float], str]:
    import jax
    import jax.numpy as jnp

    if mode not in MODES:
        raise ValueError(f"jax modes are {MODES}, not {mode!r}")
    if name in GPT_SPECS:
        return make_gpt_step(name)
    if name == "resnet":
        return make_resnet_step()
    w = workload(name)
    images, labels = make_batch(name)
    x, y = jnp.asarray(images), jnp.asarray(labels)
    forward = _forward(name)

    def loss_fn(params, x, y):
        out = forward(params, x)
        if w.loss == "sparse_softmax_ce":
            logp = jax.nn.log_softmax(out)
            return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))
        p = jnp.clip(jax.nn.sigmoid(out[:, 0]), BCE_EPS, 1 - BCE_EPS)
        return -jnp.mean(y * jnp.log(p) + (1 - y) * jnp.log(1 - p))

    params = [(jnp.asarray(k), jnp.asarray(b)) for k, b in init_params(name)]
    lr = w.lr
    if w.optimizer == "sgd":
        opt_state = ()

        def update(params, grads, opt_state):
            return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), opt_state
    else:
        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        opt_state = (jnp.zeros((), jnp.int32), zeros, zeros)

        def update(params, grads, opt_state):
            t, m, v = opt_state
            t = t + 1
            m = jax.tree_util.tree_map(lambda m, g: ADAM_BETA1 * m + (1 - ADAM_BETA1) * g, m, grads)
            v = jax.tree_util.tree_map(lambda v, g: ADAM_BETA2 * v + (1 - ADAM_BETA2) * g * g, v, grads)
            tf = t.astype(jnp.float32)
            c1, c2 = 1 - ADAM_BETA1**tf, 1 - ADAM_BETA2**tf
            params = jax.tree_util.tree_map(
                lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + ADAM_EPS), params, m, v
            )
            return params, (t, m, v)

    @jax.jit
    def train_step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        params, opt_state = update(params, grads, opt_state)
        return params, opt_state, loss

    state = [params, opt_state]

    def step() -> float:
        params, opt_state, loss = train_step(state[0], state[1], x, y)
        jax.block_until_ready((params, opt_state, loss))
        state[0], state[1] = params, opt_state
        return float(loss)

    return step, f"jax.jit(loss + grad + {w.optimizer} update), NHWC, on {jax.devices()[0].platform}"
