"""nanoGPT's Shakespeare character model trained as nanoGPT's ``train.py`` trains it.

The CPU run of nanoGPT's README: 4 layers, 4 heads, 128-wide embeddings, blocks of 64
characters, batches of 12, no dropout, AdamW (lr 1e-3, betas (0.9, 0.99), weight decay 0.1
on the matrices only), 100 warm-up iterations and a cosine decay to 1e-4 at iteration
2,000, gradients clipped at norm 1.0; every ``eval_interval`` iterations the mean loss of
``eval_iters`` random batches of each split is printed as nanoGPT prints it. The step runs
eagerly, on the lazy device, or under ``braze.jit`` (the default); the learning rate is
computed in the step from the optimizer's step count, so it never recompiles. A checkpoint
is a folder: ``model.safetensors`` (the parameters, readable by the safetensors library)
and ``config.json`` (the model's settings, the vocabulary, the iterations and losses).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from braze import ops
from braze.autodiff import no_grad
from braze.data import BlockSampler, CharTokenizer, Shakespeare, load_shakespeare
from braze.data.errors import DataError
from braze.jit import jit
from braze.models.gpt_config import GPTConfig
from braze.nn.checkpoint import CheckpointError, read_start
from braze.nn.utils import clip_grad_norm_
from braze.optim import Optimizer
from braze.optim.schedules import CosineDecay
from braze.runtime.device import CPU, LAZY_CPU
from braze.tensor import Tensor

if TYPE_CHECKING:
    from braze.models.gpt import GPT

MODES = ("eager", "lazy", "jit")
MODEL_FILE, CONFIG_FILE = "model.safetensors", "config.json"
_SMALLEST_FLOAT = 2  # bytes per stored parameter at least (bfloat16)


@dataclass(frozen=True)
class TrainSettings:
    """nanoGPT's ``train.py`` settings of the CPU run (``config/train_shakespeare_char.py``
    with the README's command-line overrides)."""

    iters: int = 2000
    batch_size: int = 12
    learning_rate: float = 1e-3
    min_lr: float = 1e-4
    warmup_iters: int = 100
    lr_decay_iters: int = 2000
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.99)
    grad_clip: float = 1.0
    eval_interval: int = 250
    eval_iters: int = 20
    log_interval: int = 10
    seed: int = 1337

    def schedule(self) -> CosineDecay:
        """nanoGPT's ``get_lr``: ``lr * (it + 1) / (warmup + 1)`` while warming up, then a
        cosine from ``lr`` to ``min_lr`` at ``lr_decay_iters``, then ``min_lr``."""
        if not 0 <= self.warmup_iters < self.lr_decay_iters:
            raise ValueError(f"warmup_iters {self.warmup_iters} must be below lr_decay_iters {self.lr_decay_iters}")
        return CosineDecay(
            self.learning_rate / (self.warmup_iters + 1),
            decay_steps=self.lr_decay_iters - self.warmup_iters,
            alpha=self.min_lr / self.learning_rate,
            warmup_target=self.learning_rate,
            warmup_steps=self.warmup_iters,
        )


@dataclass
class Evaluation:
    iteration: int
    train_loss: float
    val_loss: float

    def line(self) -> str:
        return f"step {self.iteration}: train loss {self.train_loss:.4f}, val loss {self.val_loss:.4f}"


@dataclass
class TrainResult:
    mode: str
    losses: list[float] = field(default_factory=list)  # every iteration's training loss
    evaluations: list[Evaluation] = field(default_factory=list)
    seconds: float = 0.0  # the whole run, evaluations included
    step_seconds: list[float] = field(default_factory=list)
    compiles: int = 0  # graphs compiled by the jitted step and evaluation

    @property
    def val_loss(self) -> float:
        return self.evaluations[-1].val_loss


def train_step(model: GPT, optimizer: Optimizer, x: Tensor, y: Tensor, grad_clip: float) -> Tensor:
    """One iteration of nanoGPT's loop: forward, backward, clip, step."""
    optimizer.zero_grad()
    _, loss = model(x, y)
    loss.backward()
    if grad_clip:
        clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    return loss


def evaluate_batch(model: GPT, x: Tensor, y: Tensor) -> Tensor:
    with no_grad():
        return model(x, y)[1]


def split_loss(model: GPT, tokens: np.ndarray, blocks_per_batch: int = 256) -> float:
    """The model's mean loss over every whole block of ``tokens`` laid side by side (each
    target the next token): the split's loss itself, of which ``estimate_loss``'s
    ``eval_iters`` random batches are a sample. Run eagerly on the model's device."""
    block = model.config.block_size
    count = (len(tokens) - 1) // block
    if count < 1:
        raise DataError(f"split_loss: {len(tokens)} tokens hold no block of {block} with its next token")
    tokens = np.asarray(tokens, np.int32)
    inputs = tokens[: count * block].reshape(count, block)
    targets = tokens[1 : count * block + 1].reshape(count, block)
    device, training = model.parameters()[0].device, model.training
    model.eval()
    total = 0.0
    try:
        for start in range(0, count, blocks_per_batch):
            rows = slice(start, start + blocks_per_batch)
            x, y = ops.tensor(inputs[rows], device=device), ops.tensor(targets[rows], device=device)
            total += evaluate_batch(model, x, y).item() * len(inputs[rows])  # every block is as long
    finally:
        model.train(training)
    return total / count


class Trainer:
    """A model, its optimizer and the Shakespeare samplers, stepped in one ``mode``."""

    def __init__(self, model: GPT, settings: TrainSettings, tokens: tuple[Any, Any], mode: str = "jit") -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}: expected one of {MODES}")
        self.mode, self.settings, self.device = mode, settings, LAZY_CPU if mode == "lazy" else CPU
        self.model = model.to(self.device)
        self.optimizer = model.configure_optimizers(settings.weight_decay, settings.schedule(), settings.betas)
        block, batch = model.config.block_size, settings.batch_size
        self.batches = BlockSampler(tokens[0], block, batch, settings.seed)
        self.evaluation = {
            split: BlockSampler(data, block, batch, settings.seed + 1 + i)
            for i, (split, data) in enumerate(zip(("train", "val"), tokens, strict=True))
        }
        # The model and the optimizer are donated, as a JAX training loop donates its state:
        # AdamW writes each matrix and its moments over the old ones (PyTorch's in-place
        # update), where new buffers would alternate with the old (a GPT step 2.6% slower).
        self._step = jit(train_step, donate_argnums=(0, 1)) if mode == "jit" else train_step
        self._evaluate = jit(evaluate_batch) if mode == "jit" else evaluate_batch

    def tensors(self, arrays: tuple[Any, Any]) -> tuple[Tensor, Tensor]:
        return ops.tensor(arrays[0], device=self.device), ops.tensor(arrays[1], device=self.device)

    def step(self) -> float:
        x, y = self.tensors(self.batches.sample())
        return self._step(self.model, self.optimizer, x, y, self.settings.grad_clip).item()

    def estimate_loss(self, iteration: int) -> Evaluation:
        """nanoGPT's ``estimate_loss``: the mean loss of ``eval_iters`` batches of each split."""
        self.model.eval()
        means = []
        for split in ("train", "val"):
            losses = [
                self._evaluate(self.model, *self.tensors(self.evaluation[split].sample())).item()
                for _ in range(self.settings.eval_iters)
            ]
            means.append(sum(losses) / len(losses))
        self.model.train()
        return Evaluation(iteration, *means)

    @property
    def compiles(self) -> int:
        return sum(getattr(f, "compiles", 0) for f in (self._step, self._evaluate))


def train_gpt(
    config: GPTConfig | None = None,
    settings: TrainSettings | None = None,
    mode: str = "jit",
    data: str | Shakespeare | None = None,
    report: Callable[[str], None] = print,
) -> tuple[GPT, CharTokenizer, TrainResult]:
    """Train nanoGPT's Shakespeare model on ``data`` (the text's path, or the loaded
    text); print the evaluations (at iteration 0, every ``eval_interval`` and at the end)
    and every ``log_interval``-th iteration's loss."""
    settings = settings or TrainSettings()
    shakespeare = data if isinstance(data, Shakespeare) else load_shakespeare(data)
    from braze.models.gpt import GPT

    config = replace(config or GPTConfig(), vocab_size=shakespeare.tokenizer.vocab_size)
    model = GPT(config, seed=settings.seed)
    report(f"number of parameters: {model.num_params() / 1e6:.2f}M")
    trainer = Trainer(model, settings, (shakespeare.train, shakespeare.val), mode)
    result = TrainResult(mode)
    start = time.perf_counter()
    for iteration in range(settings.iters + 1):
        if iteration % settings.eval_interval == 0 or iteration == settings.iters:
            result.evaluations.append(trainer.estimate_loss(iteration))
            report(result.evaluations[-1].line())
        if iteration == settings.iters:
            break
        began = time.perf_counter()
        loss = trainer.step()
        result.step_seconds.append(time.perf_counter() - began)
        result.losses.append(loss)
        if iteration % settings.log_interval == 0:
            report(f"iter {iteration}: loss {loss:.4f}, time {result.step_seconds[-1] * 1000:.2f}ms")
    result.seconds = time.perf_counter() - start
    result.compiles = trainer.compiles
    return model.to(CPU), shakespeare.tokenizer, result


def save_checkpoint(
    folder: str | Path, model: GPT, tokenizer: CharTokenizer, result: TrainResult | None = None
) -> Path:
    """Write ``model.safetensors`` and ``config.json`` into ``folder``; return the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save(folder / MODEL_FILE)
    record = {"model": model.config.to_dict(), "vocabulary": "".join(tokenizer.itos)}
    if result is not None:
        record |= {"iterations": len(result.losses), "evaluations": [asdict(e) for e in result.evaluations]}
    (folder / CONFIG_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return folder


def load_checkpoint(folder: str | Path) -> tuple[GPT, CharTokenizer]:
    """The model and tokenizer that :func:`save_checkpoint` wrote into ``folder``."""
    folder = Path(folder)
    try:
        if (folder / CONFIG_FILE).exists():
            read_start(folder / CONFIG_FILE, 0)  # a regular file: a FIFO would block the read
        record = json.loads((folder / CONFIG_FILE).read_text())
        config = GPTConfig.from_dict(record["model"])
        tokenizer = CharTokenizer(list(record["vocabulary"]))
    except FileNotFoundError:
        raise CheckpointError(f"{folder}: no {CONFIG_FILE}: not a checkpoint of braze train gpt") from None
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, RecursionError) as error:
        raise CheckpointError(f"{folder / CONFIG_FILE}: not a GPT checkpoint's settings ({error})") from None
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(
            f"{folder / CONFIG_FILE}: {tokenizer.vocab_size} characters for a vocabulary of {config.vocab_size}"
        )
    weights = folder / MODEL_FILE
    stored = weights.stat().st_size if weights.is_file() else None
    if stored is not None and config.parameter_count() * _SMALLEST_FLOAT > stored:
        # Checked before the model is built: settings of a model far bigger than its weights
        # (n_embd 8192) would allocate gigabytes before the weights were compared with it.
        raise CheckpointError(
            f"{folder / CONFIG_FILE}: the settings declare a model of {config.parameter_count():,} parameters, "
            f"more than {weights} ({stored:,} bytes) can hold"
        )
    from braze.models.gpt import GPT

    model = GPT(config)
    model.load(folder / MODEL_FILE)
    return model, tokenizer
