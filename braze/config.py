"""Global switches, as TensorFlow users know them.

``set_jit(True)`` is ``tf.config.optimizer.set_jit(True)``: from then on new tensors and
models live on the lazy device, so a training loop is traced, compiled once and replayed,
with no other change to user code (optimizer steps and Keras ``fit`` batches end with a
barrier automatically).
"""

from __future__ import annotations

from braze.runtime.device import CPU, LAZY_CPU, default_device, set_default_device


def set_jit(enabled: bool) -> None:
    set_default_device(LAZY_CPU if enabled else CPU)


def jit_enabled() -> bool:
    return default_device().is_lazy
