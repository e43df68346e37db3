"""ResNet-20 in JAX, as JAX users write it: parameters and batch-norm statistics as pytrees,
a pure forward function, and the whole step (loss, grad, SGD with momentum, the moving
statistics' update) in one ``jax.jit``."""

from __future__ import annotations

from collections.abc import Callable

from .common import BN_EPS, BN_MOMENTUM, make_batch, resnet_blocks, resnet_params, workload


def make_resnet_step() -> tuple[Callable[[], float], str]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    w = workload("resnet")
    images, labels = make_batch("resnet")
    x, y = jnp.asarray(images), jnp.asarray(labels)
    kernels = {k: jnp.asarray(v) for k, v in resnet_params().items()}
    norms = [k for k in kernels if k != "dense.kernel" and k != "dense.bias"]
    params = {
        "kernels": kernels,
        "gamma": {k: jnp.ones(kernels[k].shape[-1]) for k in norms},
        "beta": {k: jnp.zeros(kernels[k].shape[-1]) for k in norms},
    }
    moving = {k: (jnp.zeros(kernels[k].shape[-1]), jnp.ones(kernels[k].shape[-1])) for k in norms}

    def conv_bn(params, stats, name, x, stride):
        y = lax.conv_general_dilated(
            x, params["kernels"][name], (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        mean = y.mean((0, 1, 2))
        var = ((y - mean) ** 2).mean((0, 1, 2))
        stats[name] = (mean, var)
        return (y - mean) * lax.rsqrt(var + BN_EPS) * params["gamma"][name] + params["beta"][name]

    def forward(params, x):
        stats = {}
        x = jax.nn.relu(conv_bn(params, stats, "stem", x, 1))
        for i, (c_in, c_out, stride) in enumerate(resnet_blocks()):
            out = jax.nn.relu(conv_bn(params, stats, f"block{i}.conv1", x, stride))
            out = conv_bn(params, stats, f"block{i}.conv2", out, 1)
            if stride != 1 or c_in != c_out:
                x = conv_bn(params, stats, f"block{i}.projection", x, stride)
            x = jax.nn.relu(out + x)
        logits = x.mean((1, 2)) @ params["kernels"]["dense.kernel"] + params["kernels"]["dense.bias"]
        return logits, stats

    def loss_fn(params, x, y):
        logits, stats = forward(params, x)
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1)), stats

    @jax.jit
    def train_step(params, velocity, moving, x, y):
        (loss, stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, x, y)
        velocity = jax.tree_util.tree_map(lambda v, g: w.momentum * v + g, velocity, grads)
        params = jax.tree_util.tree_map(lambda p, v: p - w.lr * v, params, velocity)
        moving = {
            k: (m * BN_MOMENTUM + stats[k][0] * (1 - BN_MOMENTUM), v * BN_MOMENTUM + stats[k][1] * (1 - BN_MOMENTUM))
            for k, (m, v) in moving.items()
        }
        return params, velocity, moving, loss

    state = [params, jax.tree_util.tree_map(jnp.zeros_like, params), moving]

    def step() -> float:
        *new, loss = train_step(*state, x, y)
        jax.block_until_ready((new, loss))
        state[:] = new
        return float(loss)

    where = jax.devices()[0].platform
    return step, f"jax.jit(ResNet-20 loss + grad + SGD momentum + moving statistics), NHWC, on {where}"
