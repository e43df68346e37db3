"""``braze bench gpt``: nanoGPT's Shakespeare run trained eagerly, then under ``braze.jit``,
side by side in one process, as ``braze bench lenet`` compares its two modes.

Eager training is slow, so it runs ``eager_iters`` iterations (the first ones of the same
run: same initial weights, same batches) and its time for all of them is extrapolated from
its mean iteration, labelled so. The summary shows both runs' first losses (they agree to
float32 rounding), their iteration times, the speed-up, each mode's step memory (see
:mod:`braze.bench.memory`) and the graphs the compiled run compiled.
"""

from __future__ import annotations

import functools
import json
import statistics
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from braze.bench import memory
from braze.bench.compare import MIB, machine
from braze.bench.gpt import TrainResult, TrainSettings, train_gpt
from braze.bench.steps import gpt_workload
from braze.models.gpt import GPTConfig
from braze.runtime import metrics

SHOWN_LOSSES = 5


@dataclass
class GptMode:
    mode: str
    iterations: int
    first_step_seconds: float
    step_seconds: float  # the mean of the iterations after the first
    losses: list[float]  # the first iterations' training losses
    val_loss: float
    compiles: int
    step_bytes: int = 0
    peak_rss_bytes: int = 0

    @classmethod
    def of(cls, result: TrainResult) -> GptMode:
        steady = result.step_seconds[1:] or result.step_seconds
        return cls(
            result.mode,
            len(result.losses),
            result.step_seconds[0],
            statistics.mean(steady),
            result.losses[:SHOWN_LOSSES],
            result.val_loss,
            result.compiles,
        )

    def seconds_for(self, iterations: int) -> float:
        return self.first_step_seconds + self.step_seconds * (iterations - 1)


@dataclass
class GptComparison:
    settings: dict
    modes: list[GptMode] = field(default_factory=list)
    metrics_report: str = ""

    def summary(self) -> str:
        eager, compiled = self.modes
        lines = ["Summary (gpt):"]
        for m in self.modes:
            lines.append(
                f"  {m.mode:>8}: {m.iterations} iterations, {1000 * m.step_seconds:.1f} ms per iteration after the "
                f"first ({m.first_step_seconds:.2f} s); val loss {m.val_loss:.4f} after {m.iterations}"
            )
        shown = min(len(eager.losses), len(compiled.losses))
        gap = max(abs(a - b) / abs(a) for a, b in zip(eager.losses[:shown], compiled.losses[:shown], strict=True))
        lines.append(
            f"  the first {shown} losses, eager | compiled: {' '.join(f'{v:.5f}' for v in eager.losses[:shown])} | "
            f"{' '.join(f'{v:.5f}' for v in compiled.losses[:shown])} (largest relative difference {gap:.1e})"
        )
        lines.append(f"  steady-state speed-up: {eager.step_seconds / compiled.step_seconds:.2f}x")
        total_eager, total_compiled = eager.seconds_for(compiled.iterations), compiled.seconds_for(compiled.iterations)
        label = f"{total_eager:.1f} s"
        if eager.iterations < compiled.iterations:
            label += f" (extrapolated to {compiled.iterations} iterations from the {eager.iterations} run)"
        lines.append(f"  time in training steps: eager {label}, compiled {total_compiled:.1f} s")
        lines.append(
            f"  step memory: eager {eager.step_bytes / MIB:.1f} MiB (live arrays + parameters), compiled "
            f"{compiled.step_bytes / MIB:.1f} MiB (arena + scratch + parameters); peak RSS: eager "
            f"{eager.peak_rss_bytes / MIB:.0f} MiB, compiled {compiled.peak_rss_bytes / MIB:.0f} MiB"
        )
        lines.append(f"  graphs compiled by the jitted run: {compiled.compiles} (the training step and the evaluation)")
        return "\n".join(lines)

    def save(self, out: Path) -> list[Path]:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(asdict(self) | {"machine": machine()}, indent=2) + "\n")
        return [out]


def bench_gpt(
    settings: TrainSettings | None = None,
    config: GPTConfig | None = None,
    eager_iters: int | None = None,
    data: str | None = None,
) -> GptComparison:
    settings = settings or TrainSettings()
    comparison = GptComparison({"training": asdict(settings), "model": asdict(config or GPTConfig())})
    workload = functools.partial(gpt_workload, batch_size=settings.batch_size, config=config)
    for mode, name, label in (
        ("eager", "eager", "eager (op by op, NumPy)"),
        ("jit", "compiled", "compiled (braze.jit)"),
    ):
        print(f"--- {label}")
        iters = min(eager_iters or settings.iters, settings.iters) if mode == "eager" else settings.iters
        run_settings = replace(settings, iters=iters, eval_interval=min(settings.eval_interval, iters))
        metrics.reset()
        memory.reset_peak_rss()
        _, _, result = train_gpt(config, run_settings, mode, data)
        record = replace(GptMode.of(result), mode=name, peak_rss_bytes=memory.peak_rss_bytes())
        comparison.metrics_report = metrics.report()  # the compiled run's, kept from the last mode
        step_bytes = memory.eager_step_bytes if mode == "eager" else memory.compiled_step_bytes
        record.step_bytes = step_bytes(workload)
        comparison.modes.append(record)
    return comparison
