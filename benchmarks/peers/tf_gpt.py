"""nanoGPT's GPT in TensorFlow on raw ops and ``tf.Variable`` s (as ``tf_impl`` writes its
models): ``tf.gather`` embeddings, causal attention with a ``band_part`` mask, the head tied
to the token embedding, ``tf.clip_by_global_norm`` and AdamW over nanoGPT's two groups
written by hand, eagerly, under ``tf.function`` or ``tf.function(jit_compile=True)``."""

from __future__ import annotations

import math
from collections.abc import Callable

from .gpt_common import ADAMW_EPS, BETAS, GRAD_CLIP, LN_EPS, LR, WEIGHT_DECAY, init_params, make_batch, spec


def make_gpt_step(tf, name: str, mode: str) -> tuple[Callable[[], float], str]:
    s = spec(name)
    tokens, targets = (tf.constant(a) for a in make_batch(name))
    params = {k: tf.Variable(v, name=k.replace(".", "_")) for k, v in init_params(name).items()}
    names = list(params)
    variables = [params[k] for k in names]
    heads, size, t = s.n_head, s.n_embd // s.n_head, s.block_size
    causal = tf.linalg.band_part(tf.ones((t, t), tf.bool), -1, 0)

    def layer_norm(x, weight):
        mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
        return (x - mean) * tf.math.rsqrt(var + LN_EPS) * weight

    def split_heads(a):
        return tf.transpose(tf.reshape(a, (s.batch, t, heads, size)), (0, 2, 1, 3))

    def loss_fn():
        p = params
        x = tf.gather(p["transformer.wte.weight"], tokens) + p["transformer.wpe.weight"]
        for i in range(s.n_layer):
            block = f"transformer.h.{i}."
            h = layer_norm(x, p[block + "ln_1.weight"]) @ p[block + "attn.c_attn.kernel"]
            q, k, v = (split_heads(a) for a in tf.split(h, 3, axis=-1))
            scores = tf.matmul(q, k, transpose_b=True) / math.sqrt(size)
            weights = tf.nn.softmax(tf.where(causal, scores, float("-inf")), axis=-1)
            y = tf.reshape(tf.transpose(weights @ v, (0, 2, 1, 3)), (s.batch, t, s.n_embd))
            x = x + y @ p[block + "attn.c_proj.kernel"]
            h = tf.nn.gelu(layer_norm(x, p[block + "ln_2.weight"]) @ p[block + "mlp.c_fc.kernel"], approximate=False)
            x = x + h @ p[block + "mlp.c_proj.kernel"]
        logits = tf.matmul(layer_norm(x, p["transformer.ln_f.weight"]), p["transformer.wte.weight"], transpose_b=True)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits))

    b1, b2 = BETAS
    step_count = tf.Variable(0.0)
    ms = [tf.Variable(tf.zeros_like(v)) for v in variables]
    vs = [tf.Variable(tf.zeros_like(v)) for v in variables]
    decays = [len(v.shape) >= 2 for v in variables]

    def train_step():
        with tf.GradientTape() as tape:
            loss = loss_fn()
        grads, _ = tf.clip_by_global_norm(tape.gradient(loss, variables), GRAD_CLIP)
        step_count.assign_add(1.0)
        c1, c2 = 1 - tf.pow(b1, step_count), 1 - tf.pow(b2, step_count)
        for p, g, m, v, decay in zip(variables, grads, ms, vs, decays, strict=True):
            if decay:
                p.assign(p * (1 - LR * WEIGHT_DECAY))
            m.assign(b1 * m + (1 - b1) * g)
            v.assign(b2 * v + (1 - b2) * g * g)
            p.assign_sub(LR * (m / c1) / (tf.sqrt(v / c2) + ADAMW_EPS))
        return loss

    what = "eager GradientTape step"
    if mode == "function":
        train_step, what = tf.function(train_step), "tf.function(step)"
    elif mode == "xla":
        train_step, what = tf.function(train_step, jit_compile=True), "tf.function(step, jit_compile=True)"

    def step() -> float:
        return float(train_step().numpy())

    return step, f"{what} of the nanoGPT model on raw ops, AdamW groups, clip_by_global_norm"
