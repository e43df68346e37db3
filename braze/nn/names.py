"""Keras's automatic layer names: ``conv2d``, ``conv2d_1``, ``max_pooling2d``...

Names are numbered per kind in the order layers are made, from a process-wide count that
``braze.keras.backend.clear_session()`` resets, so a model built after it is named as the
same model in a fresh Keras session (what ``summary()`` prints).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

_counts: Counter[str] = Counter()


def snake_case(name: str) -> str:
    """``MaxPooling2D`` -> ``max_pooling2d``, with Keras's two rules."""
    words = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", words).lower()


def unique_name(kind: str) -> str:
    """``kind`` the first time, then ``kind_1``, ``kind_2``..."""
    number = _counts[kind]
    _counts[kind] += 1
    return kind if number == 0 else f"{kind}_{number}"


def reset_names() -> None:
    _counts.clear()


def missing_names(module: str, nearest: dict[str, str]) -> Callable[[str], object]:
    """A module's ``__getattr__`` for the names of Keras or TensorFlow that braze lacks: an
    AttributeError saying what comes nearest in braze, not only that the name is absent."""

    def missing(name: str) -> object:
        if name in nearest:
            raise AttributeError(f"{module} has no {name}: {nearest[name]}")
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return missing
