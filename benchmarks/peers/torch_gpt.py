"""nanoGPT's GPT in PyTorch, written as nanoGPT's ``model.py`` writes it
(``F.scaled_dot_product_attention`` with ``is_causal=True``, the head tied to the token
embedding, ``torch.optim.AdamW`` over nanoGPT's two groups, ``clip_grad_norm_``), from the
shared initial weights; eager, or the whole step under ``torch.compile``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .gpt_common import ADAMW_EPS, BETAS, GRAD_CLIP, LN_EPS, LR, SEED, WEIGHT_DECAY, init_params, make_batch, spec


def gpt_model(name: str, seed: int = SEED):
    import torch
    import torch.nn.functional as F
    from torch import nn

    s = spec(name)

    class CausalSelfAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c_attn = nn.Linear(s.n_embd, 3 * s.n_embd, bias=False)
            self.c_proj = nn.Linear(s.n_embd, s.n_embd, bias=False)

        def forward(self, x):
            B, T, C = x.size()  # noqa: N806 - nanoGPT's names
            q, k, v = self.c_attn(x).split(s.n_embd, dim=2)
            k = k.view(B, T, s.n_head, C // s.n_head).transpose(1, 2)
            q = q.view(B, T, s.n_head, C // s.n_head).transpose(1, 2)
            v = v.view(B, T, s.n_head, C // s.n_head).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c_fc = nn.Linear(s.n_embd, 4 * s.n_embd, bias=False)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * s.n_embd, s.n_embd, bias=False)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(s.n_embd, eps=LN_EPS, bias=False)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(s.n_embd, eps=LN_EPS, bias=False)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = nn.ModuleDict(
                dict(
                    wte=nn.Embedding(s.vocab_size, s.n_embd),
                    wpe=nn.Embedding(s.block_size, s.n_embd),
                    h=nn.ModuleList([Block() for _ in range(s.n_layer)]),
                    ln_f=nn.LayerNorm(s.n_embd, eps=LN_EPS, bias=False),
                )
            )
            self.lm_head = nn.Linear(s.n_embd, s.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying

        def forward(self, idx, targets):
            pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    model = GPT()
    with torch.no_grad():
        own = dict(model.named_parameters())
        for key, value in init_params(name, seed).items():
            if key.endswith(".kernel"):  # braze's (in, out) kernel is PyTorch's (out, in) weight
                key, value = key[: -len("kernel")] + "weight", np.ascontiguousarray(value.T)
            own[key].copy_(torch.from_numpy(value))
    return model


def configure_optimizer(model, lr: float = LR):
    """nanoGPT's ``configure_optimizers``: 2-D parameters decay, the others do not."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": WEIGHT_DECAY},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=BETAS, eps=ADAMW_EPS)


def make_gpt_step(
    name: str, mode: str, threads: int, device: str = "cpu", autocast: bool = False
) -> tuple[Callable[[], float], str]:
    """One nanoGPT training step per call; with ``autocast``, its forward under
    ``torch.autocast(dtype=torch.bfloat16)`` as nanoGPT's train.py runs it."""
    import torch

    torch.set_num_threads(threads)
    on = torch.device(device)
    images, labels = make_batch(name)
    x, y = torch.from_numpy(images).long().to(on), torch.from_numpy(labels).long().to(on)
    model = gpt_model(name).to(on)
    optimizer = configure_optimizer(model)

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(on.type, dtype=torch.bfloat16, enabled=autocast):
            loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        optimizer.step()
        return loss.detach()

    what = "eager nanoGPT model (F.scaled_dot_product_attention) + AdamW groups + clip_grad_norm_"
    if mode == "compile":
        train_step = torch.compile(train_step)
        what = "torch.compile(step) of the nanoGPT model (Inductor), AdamW groups, clip_grad_norm_"

    def step() -> float:
        return float(train_step())

    return step, f"{what}, {threads} threads"
