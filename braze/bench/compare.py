"""``braze bench``: each case study trained eagerly, then compiled, side by side in one run.

``lenet`` reproduces the X10 tutorial (LeNet-5, MNIST, batch 128, SGD 0.1, eager then on the
lazy device); ``cnn`` reproduces the XLA article (its CNN on a two-class image folder, Adam,
batch 64, 13 steps per epoch, eager then with ``set_jit(True)``). Both print one line per
epoch, then a summary, and write a JSON record and (with matplotlib) a plot.
"""

from __future__ import annotations

import json
import platform
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from braze import config
from braze.runtime import metrics
from braze.runtime.device import CPU, LAZY_CPU


@dataclass
class ModeResult:
    mode: str
    seconds_per_epoch: list[float]
    accuracy: float  # final validation/test accuracy, in percent
    compile_seconds: float = 0.0


@dataclass
class Comparison:
    workload: str
    settings: dict
    modes: list[ModeResult] = field(default_factory=list)
    metrics_report: str = ""

    def summary(self) -> str:
        eager, compiled = self.modes
        lines = [f"Summary ({self.workload}):"]
        for m in self.modes:
            per_epoch = ", ".join(f"{s:.1f}" for s in m.seconds_per_epoch)
            lines.append(f"  {m.mode:>8}: seconds per epoch {per_epoch}; final accuracy {m.accuracy:.1f}%")
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
        change = 1 - total_compiled / total_eager
        saved = f"{100 * change:.0f}% less" if change >= 0 else f"{total_compiled / total_eager:.1f}x longer"
        lines.append(f"  wall time: eager {total_eager:.1f} s, compiled {total_compiled:.1f} s ({saved})")
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
        figure, axis = plt.subplots(figsize=(6, 4))
        for m in self.modes:
            axis.plot(range(len(m.seconds_per_epoch)), m.seconds_per_epoch, marker="o", label=m.mode)
        axis.set_xlabel("epoch")
        axis.set_ylabel("seconds per epoch")
        axis.set_title(f"braze bench {self.workload}")
        axis.legend()
        figure.tight_layout()
        figure.savefig(out.with_suffix(".png"))
        written.append(out.with_suffix(".png"))
        return written


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


def _timed_mode(mode: str, run: Callable[[], tuple[list[float], float]]) -> ModeResult:
    metrics.reset()
    seconds, accuracy = run()
    return ModeResult(mode, seconds, accuracy, metrics.timing("CompileTime").total)


def bench_lenet(
    epochs: int = 5, batch_size: int = 128, data: str | None = None, seed: int = 1, steps_per_epoch: int | None = None
) -> Comparison:
    from braze.bench.lenet import train_lenet

    comparison = Comparison("lenet", {"epochs": epochs, "batch_size": batch_size, "optimizer": "SGD 0.1"})
    for mode, device in (("eager", CPU), ("compiled", LAZY_CPU)):
        print(f"--- {mode} ({device!r})")

        def run(device=device) -> tuple[list[float], float]:
            _, results = train_lenet(device, epochs, batch_size, 0.1, data, seed, steps_per_epoch)
            return [r.seconds for r in results], results[-1].test.accuracy

        comparison.modes.append(_timed_mode(mode, run))
    comparison.metrics_report = metrics.report()
    return comparison


def bench_cnn(
    epochs: int = 3,
    batch_size: int = 64,
    data: str | None = None,
    seed: int = 0,
    steps_per_epoch: int | None = None,
    image_size: int = 150,
) -> Comparison:
    from braze.bench.cnn import train_cnn

    comparison = Comparison(
        "cnn", {"epochs": epochs, "batch_size": batch_size, "optimizer": "Adam 1e-3", "image_size": image_size}
    )
    for mode in ("eager", "compiled"):
        print(f"--- {mode}" + (" (braze.config.set_jit(True))" if mode == "compiled" else ""))

        def run(mode=mode) -> tuple[list[float], float]:
            config.set_jit(mode == "compiled")
            try:
                _, history = train_cnn(
                    LAZY_CPU if mode == "compiled" else CPU,
                    epochs,
                    batch_size,
                    1e-3,
                    data,
                    seed,
                    steps_per_epoch,
                    image_size,
                )
            finally:
                config.set_jit(False)
            return history.history["seconds"], 100 * history.history["val_accuracy"][-1]

        comparison.modes.append(_timed_mode(mode, run))
    comparison.metrics_report = metrics.report()
    return comparison
