"""Whether this tree has the transformer layers the GPT is built from: ``braze.nn``'s
``Embedding``, ``LayerNorm`` and ``GELU`` and ``braze.nn.functional``'s
``scaled_dot_product_attention``. The GPT's tests need them, and say so where they are missing."""

from __future__ import annotations

import pytest

import braze.nn


def _missing() -> list[str]:
    missing = [name for name in ("Embedding", "LayerNorm", "GELU") if not hasattr(braze.nn, name)]
    try:
        from braze.nn.functional import scaled_dot_product_attention  # noqa: F401
    except ImportError:
        missing.append("functional.scaled_dot_product_attention")
    return missing


MISSING = _missing()
needs_transformer_layers = pytest.mark.skipif(
    bool(MISSING), reason=f"the GPT is built from braze.nn's transformer layers; this tree lacks {MISSING}"
)
