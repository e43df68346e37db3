"""nanoGPT's GPT in JAX, as JAX users write it: a pure function of a parameter dict with
``jax.nn.dot_product_attention(is_causal=True)``, the head tied to the token embedding, and
the whole step (loss, grad, clipping by the global norm, AdamW over nanoGPT's two groups,
written by hand: optax is not installed) under ``jax.jit``."""

from __future__ import annotations

from collections.abc import Callable

from .gpt_common import ADAMW_EPS, BETAS, GRAD_CLIP, LN_EPS, LR, WEIGHT_DECAY, init_params, make_batch, spec


def make_gpt_step(name: str) -> tuple[Callable[[], float], str]:
    import jax
    import jax.numpy as jnp

    s = spec(name)
    tokens, targets = (jnp.asarray(a) for a in make_batch(name))
    params = {k: jnp.asarray(v) for k, v in init_params(name).items()}

    def layer_norm(x, weight):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + LN_EPS) * weight

    def loss_fn(p, idx, y):
        b, t = idx.shape
        x = p["transformer.wte.weight"][idx] + p["transformer.wpe.weight"][:t]
        heads, size = s.n_head, s.n_embd // s.n_head
        for i in range(s.n_layer):
            block = f"transformer.h.{i}."
            h = layer_norm(x, p[block + "ln_1.weight"]) @ p[block + "attn.c_attn.kernel"]
            q, k, v = (a.reshape(b, t, heads, size) for a in jnp.split(h, 3, axis=-1))  # (B, T, N, H)
            y_att = jax.nn.dot_product_attention(q, k, v, is_causal=True).reshape(b, t, s.n_embd)
            x = x + y_att @ p[block + "attn.c_proj.kernel"]
            h = jax.nn.gelu(layer_norm(x, p[block + "ln_2.weight"]) @ p[block + "mlp.c_fc.kernel"], approximate=False)
            x = x + h @ p[block + "mlp.c_proj.kernel"]
        logits = layer_norm(x, p["transformer.ln_f.weight"]) @ p["transformer.wte.weight"].T
        log_probs = jax.nn.log_softmax(logits)
        return -jnp.take_along_axis(log_probs, y[..., None], axis=-1).mean()

    decays = {k: v.ndim >= 2 for k, v in params.items()}
    b1, b2 = BETAS

    @jax.jit
    def train_step(p, m, v, t, idx, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, idx, y)
        norm = jnp.sqrt(sum(jnp.sum(g * g) for g in grads.values()))
        scale = jnp.minimum(GRAD_CLIP / (norm + 1e-6), 1.0)
        t = t + 1
        new_p, new_m, new_v = {}, {}, {}
        for key, g in grads.items():
            g = g * scale
            new_m[key] = b1 * m[key] + (1 - b1) * g
            new_v[key] = b2 * v[key] + (1 - b2) * g * g
            m_hat, v_hat = new_m[key] / (1 - b1**t), new_v[key] / (1 - b2**t)
            decayed = p[key] * (1 - LR * WEIGHT_DECAY) if decays[key] else p[key]
            new_p[key] = decayed - LR * m_hat / (jnp.sqrt(v_hat) + ADAMW_EPS)
        return new_p, new_m, new_v, t, loss

    zeros = {k: jnp.zeros_like(v) for k, v in params.items()}
    state = [params, zeros, dict(zeros), jnp.zeros((), jnp.float32)]

    def step() -> float:
        *new_state, loss = train_step(*state, tokens, targets)
        jax.block_until_ready((new_state, loss))
        state[:] = new_state
        return float(loss)

    return step, f"jax.jit(loss + grad + clip + AdamW), jax.nn.dot_product_attention, on {jax.devices()[0].platform}"
