"""``braze bench``: each case study trained eagerly, then compiled, side by side in one run.

``lenet`` reproduces the X10 tutorial (LeNet-5, MNIST, batch 128, SGD 0.1, eager then on the
lazy device); ``cnn`` reproduces the XLA article (its CNN on a two-class image folder, Adam,
batch 64, 13 steps per epoch, eager then with ``set_jit(True)``). Both print one line per
epoch, then a summary with each mode's step memory (see :mod:`braze.bench.memory`), and
write a JSON record and (with matplotlib) a plot of seconds and validation accuracy per
epoch. Eager training is slow: ``eager_epochs`` runs fewer eager epochs than compiled ones,
and the summary extrapolates eager's wall time from them, saying so.
"""

from __future__ import annotations

import functools
import json
import platform
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from braze import config
from braze.bench import memory
from braze.bench.steps import cnn_workload, lenet_workload
from braze.runtime import metrics
from braze.runtime.device import CPU, LAZY_CPU

MIB = 2**20


@dataclass
class ModeResult:
    mode: str
    seconds_per_epoch: list[float]
    accuracy_per_epoch: list[float]  # validation/test accuracy after each epoch, in percent
    compile_seconds: float = 0.0
    step_bytes: int = 0  # see braze.bench.memory: live arrays (eager), arena + scratch (compiled), + parameters
    peak_rss_bytes: int = 0
    accuracy: float = field(init=False)  # the last epoch's

    def __post_init__(self) -> None:
        self.accuracy = self.accuracy_per_epoch[-1]


@dataclass
class Comparison:
    workload: str
    settings: dict
    epochs: int = 0
    modes: list[ModeResult] = field(default_factory=list)
    metrics_report: str = ""

    def summary(self) -> str:
        eager, compiled = self.modes
        lines = [f"Summary ({self.workload}):"]
        for m in self.modes:
            per_epoch = ", ".join(f"{s:.1f}" for s in _shown(m.seconds_per_epoch))
            accuracy = ", ".join(f"{a:.1f}" for a in _shown(m.accuracy_per_epoch))
            lines.append(
                f"  {m.mode:>8}: seconds per epoch {per_epoch}; accuracy per epoch (%) {accuracy}; "
                f"final accuracy {m.accuracy:.1f}% after {len(m.seconds_per_epoch)} epochs"
            )
        steady_eager = _steady(eager.seconds_per_epoch)
        steady_compiled = _steady(compiled.seconds_per_epoch)
        overhead = compiled.seconds_per_epoch[0] - steady_compiled
        lines.append(
            f"  compile overhead in the first compiled epoch: {overhead:.1f} s "
            f"(compiler time {compiled.compile_seconds:.1f} s)"
        )
        which = "epochs after the first" if len(compiled.seconds_per_epoch) > 1 else "one epoch, compiling included"
        lines.append(f"  steady-state speed-up ({which}): {steady_eager / steady_compiled:.2f}x")
        total_eager, total_compiled = sum(eager.seconds_per_epoch), sum(compiled.seconds_per_epoch)
        eager_label = f"{total_eager:.1f} s"
        if len(eager.seconds_per_epoch) < len(compiled.seconds_per_epoch):
            # Every eager epoch costs the same (nothing to compile), so the mean carries over.
            total_eager = statistics.mean(eager.seconds_per_epoch) * len(compiled.seconds_per_epoch)
            eager_label = (
                f"{total_eager:.1f} s (extrapolated to {len(compiled.seconds_per_epoch)} epochs from the "
                f"{len(eager.seconds_per_epoch)} run)"
            )
        change = 1 - total_compiled / total_eager
        saved = f"{100 * change:.0f}% less" if change >= 0 else f"{total_compiled / total_eager:.1f}x longer"
        lines.append(f"  wall time: eager {eager_label}, compiled {total_compiled:.1f} s ({saved})")
        lines.append(
            f"  step memory: eager {eager.step_bytes / MIB:.1f} MiB (live arrays + parameters), compiled "
            f"{compiled.step_bytes / MIB:.1f} MiB (arena + scratch + parameters); peak RSS: eager "
            f"{eager.peak_rss_bytes / MIB:.0f} MiB, compiled {compiled.peak_rss_bytes / MIB:.0f} MiB"
        )
        return "\n".join(lines)

    def save(self, out: Path) -> list[Path]:
        out.parent.mkdir(parents=True, exist_ok=True)
        record = asdict(self) | {"machine": machine()}
        out.write_text(json.dumps(record, indent=2) + "\n")
        written = [out]
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return written
        figure, (seconds, accuracy) = plt.subplots(1, 2, figsize=(11, 4))
        for m in self.modes:
            epochs = range(1, len(m.seconds_per_epoch) + 1)
            seconds.plot(epochs, m.seconds_per_epoch, marker="o", label=m.mode)
            accuracy.plot(epochs, m.accuracy_per_epoch, marker="o", label=m.mode)
        seconds.set_ylabel("seconds per epoch")
        accuracy.set_ylabel("validation accuracy (%)")
        for axis in (seconds, accuracy):
            axis.set_xlabel("epoch")
            axis.legend()
        figure.suptitle(f"braze bench {self.workload}")
        figure.tight_layout()
        figure.savefig(out.with_suffix(".png"))
        written.append(out.with_suffix(".png"))
        return written


def _shown(values: list[float], most: int = 10) -> list[float]:
    """The first values of a long run and its last (all of them when there are few)."""
    return values if len(values) <= most else [*values[: most // 2], *values[-most // 2 :]]


def _steady(seconds: list[float]) -> float:
    return statistics.mean(seconds[1:]) if len(seconds) > 1 else seconds[0]


def machine() -> dict:
    import os

    return {
        "platform": platform.platform(),
        "processor": platform.processor(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def _timed_mode(
    mode: str, run: Callable[[], tuple[list[float], list[float]]], step_bytes: Callable[[], int]
) -> ModeResult:
    metrics.reset()
    memory.reset_peak_rss()
    seconds, accuracy = run()
    result = ModeResult(mode, seconds, accuracy, metrics.timing("CompileTime").total)
    result.peak_rss_bytes = memory.peak_rss_bytes()
    result.step_bytes = step_bytes()
    return result


def _mode_epochs(mode: str, epochs: int, eager_epochs: int | None) -> int:
    return min(epochs, eager_epochs) if mode == "eager" and eager_epochs else epochs


def bench_lenet(
    epochs: int = 5,
    batch_size: int = 128,
    data: str | None = None,
    seed: int = 1,
    steps_per_epoch: int | None = None,
    eager_epochs: int | None = None,
) -> Comparison:
    from braze.bench.lenet import train_lenet

    comparison = Comparison("lenet", {"epochs": epochs, "batch_size": batch_size, "optimizer": "SGD 0.1"}, epochs)
    workload = functools.partial(lenet_workload, batch_size=batch_size, seed=seed)
    for mode, device in (("eager", CPU), ("compiled", LAZY_CPU)):
        print(f"--- {mode} ({device!r})")

        def run(mode=mode, device=device) -> tuple[list[float], list[float]]:
            mode_epochs = _mode_epochs(mode, epochs, eager_epochs)
            _, results = train_lenet(device, mode_epochs, batch_size, 0.1, data, seed, steps_per_epoch)
            return [r.seconds for r in results], [r.test.accuracy for r in results]

        step_bytes = memory.eager_step_bytes if mode == "eager" else memory.compiled_step_bytes
        comparison.modes.append(_timed_mode(mode, run, functools.partial(step_bytes, workload)))
    comparison.metrics_report = metrics.report()
    return comparison


def bench_cnn(
    epochs: int = 3,
    batch_size: int = 64,
    data: str | None = None,
    seed: int = 0,
    steps_per_epoch: int | None = None,
    image_size: int = 150,
    eager_epochs: int | None = None,
) -> Comparison:
    from braze.bench.cnn import train_cnn

    comparison = Comparison(
        "cnn", {"epochs": epochs, "batch_size": batch_size, "optimizer": "Adam 1e-3", "image_size": image_size}, epochs
    )
    workload = functools.partial(cnn_workload, batch_size=batch_size, seed=seed, image_size=image_size)
    for mode in ("eager", "compiled"):
        print(f"--- {mode}" + (" (braze.config.set_jit(True))" if mode == "compiled" else ""))

        def run(mode=mode) -> tuple[list[float], list[float]]:
            mode_epochs = _mode_epochs(mode, epochs, eager_epochs)
            config.set_jit(mode == "compiled")
            try:
                _, history = train_cnn(
                    LAZY_CPU if mode == "compiled" else CPU,
                    mode_epochs,
                    batch_size,
                    1e-3,
                    data,
                    seed,
                    steps_per_epoch,
                    image_size,
                )
            finally:
                config.set_jit(False)
            return history.seconds, [100 * a for a in history.history["val_accuracy"]]

        step_bytes = memory.eager_step_bytes if mode == "eager" else memory.compiled_step_bytes
        comparison.modes.append(_timed_mode(mode, run, functools.partial(step_bytes, workload)))
    comparison.metrics_report = metrics.report()
    return comparison
