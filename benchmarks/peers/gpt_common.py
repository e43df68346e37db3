"""What every GPT peer shares: nanoGPT's two configurations, the synthetic batch of tokens
and the initial weights, so that every framework trains the same model from the same start.

The weights are nanoGPT's distribution drawn with NumPy from a seed, by braze's parameter
names and in braze's layouts (a linear layer's ``kernel`` is ``(in, out)``); braze's
``GPT(config, seed)`` draws the very same (a test checks it). A framework that stores a
linear layer's weight as ``(out, in)`` (PyTorch) transposes it once in its setup.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .common import WORKLOADS, Workload


@dataclass(frozen=True)
class GptSpec:
    block_size: int
    n_layer: int
    n_head: int
    n_embd: int
    batch: int
    vocab_size: int = 65  # Tiny Shakespeare's characters


# nanoGPT's CPU run of the Shakespeare character model, and the model of its GPU run on
# batches of 8; no biases, no dropout (nanoGPT's train.py defaults).
SPECS = {
    "gpt": GptSpec(block_size=64, n_layer=4, n_head=4, n_embd=128, batch=12),
    "gpt-wide": GptSpec(block_size=256, n_layer=6, n_head=6, n_embd=384, batch=8),
}
LR = 1e-3
BETAS = (0.9, 0.99)
ADAMW_EPS = 1e-8
WEIGHT_DECAY = 0.1  # on the matrices (linear kernels, embeddings), none on the layer norms
GRAD_CLIP = 1.0
LN_EPS = 1e-5
SEED = 0

for _name, _spec in SPECS.items():
    WORKLOADS[_name] = Workload(
        name=_name,
        title=(
            f"GPT, {_spec.n_layer} layers, {_spec.n_head} heads, {_spec.n_embd} wide, batch {_spec.batch} x "
            f"{_spec.block_size} tokens, AdamW lr {LR}, clip {GRAD_CLIP}"
        ),
        batch=_spec.batch,
        image=(),
        layers=(),
        loss="causal_lm",
        optimizer="adamw",
        lr=LR,
        default_steps=10 if _name == "gpt" else 3,
    )


def spec(name: str) -> GptSpec:
    return SPECS[name]


def make_batch(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Random tokens, int32 ``(batch, block)``: the inputs, and the targets one token later."""
    s = spec(name)
    tokens = np.random.default_rng(SEED).integers(0, s.vocab_size, (s.batch, s.block_size + 1))
    return tokens[:, :-1].astype(np.int32), tokens[:, 1:].astype(np.int32)


def init_params(name: str, seed: int = SEED) -> dict[str, np.ndarray]:
    """The initial weights by name: embeddings and kernels normal with std 0.02 (the
    residual projections ``c_proj`` 0.02 / sqrt(2 n_layer)), drawn in that order from
    ``default_rng(seed)``; layer-norm weights one."""
    s = spec(name)
    rng = np.random.default_rng(seed)
    c = s.n_embd
    params = {}
    params["transformer.wte.weight"] = rng.normal(0.0, 0.02, (s.vocab_size, c)).astype(np.float32)
    params["transformer.wpe.weight"] = rng.normal(0.0, 0.02, (s.block_size, c)).astype(np.float32)
    residual = 0.02 / np.sqrt(2 * s.n_layer)
    for i in range(s.n_layer):
        block = f"transformer.h.{i}."
        params[block + "ln_1.weight"] = np.ones(c, np.float32)
        params[block + "ln_2.weight"] = np.ones(c, np.float32)
        for layer, shape, std in (
            ("attn.c_attn", (c, 3 * c), 0.02),
            ("attn.c_proj", (c, c), residual),
            ("mlp.c_fc", (c, 4 * c), 0.02),
            ("mlp.c_proj", (4 * c, c), residual),
        ):
            params[block + layer + ".kernel"] = rng.normal(0.0, std, shape).astype(np.float32)
    params["transformer.ln_f.weight"] = np.ones(c, np.float32)
    return params
