"""Global switches, as TensorFlow users know them.

``set_jit(True)`` is ``tf.config.optimizer.set_jit(True)`` (also spelled that way here, as
``braze.config.optimizer.set_jit``): from then on new tensors and models live on the lazy
device, so a training loop is traced, compiled once and replayed, with no other change to
user code (optimizer steps and Keras ``fit`` batches end with a barrier automatically).
"""

from __future__ import annotations

from types import SimpleNamespace

from braze.runtime.device import CPU, LAZY_CPU, default_device, set_default_device

_RECOMPILE_LIMIT = 8


def set_recompile_limit(limit: int) -> None:
    """Warn when one ``@braze.jit`` function has compiled again ``limit`` times (and every
    ``limit`` times more), naming the values that keep changing (torch.compile's
    ``recompile_limit``); 0 never warns. braze compiles on either way."""
    global _RECOMPILE_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"set_recompile_limit: expected a count of 0 or more, got {limit!r}")
    _RECOMPILE_LIMIT = limit


def recompile_limit() -> int:
    return _RECOMPILE_LIMIT


def set_jit(enabled: bool) -> None:
    set_default_device(LAZY_CPU if enabled else CPU)


def jit_enabled() -> bool:
    return default_device().is_lazy


_FUNCTIONS = {"eager": False}


def run_functions_eagerly(enabled: bool) -> None:
    """``tf.config.run_functions_eagerly``: ``braze.function`` steps run as plain Python
    (for debugging), not compiled."""
    _FUNCTIONS["eager"] = bool(enabled)


def functions_run_eagerly() -> bool:
    return _FUNCTIONS["eager"]


# TensorFlow's path to the same switch: tf.config.optimizer.set_jit / get_jit.
optimizer = SimpleNamespace(set_jit=set_jit, get_jit=jit_enabled)
