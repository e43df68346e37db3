"""Keras's mixed-precision policies (``keras.mixed_precision``): ``"mixed_bfloat16"`` runs
every matrix product and convolution in bfloat16 with float32 accumulation (``braze.autocast``
for the whole program), while variables, optimizer state and every other op stay float32;
``"float32"`` is the default."""

from __future__ import annotations

from braze.ops.autocast import is_autocast_enabled, set_autocast

POLICIES = ("float32", "mixed_bfloat16")


class Policy:
    """A dtype policy: ``compute_dtype`` for products and convolutions, ``variable_dtype``
    for the weights."""

    def __init__(self, name: str) -> None:
        if name not in POLICIES:
            raise ValueError(f"dtype policy {name!r} is not supported; use one of {', '.join(POLICIES)}")
        self.name = name
        self.compute_dtype = "bfloat16" if name == "mixed_bfloat16" else "float32"
        self.variable_dtype = "float32"

    def __repr__(self) -> str:
        return f'<DTypePolicy "{self.name}">'


def set_global_policy(policy: str | Policy) -> None:
    """Set the policy every later step runs under (products and convolutions in bfloat16
    for ``"mixed_bfloat16"``)."""
    chosen = policy if isinstance(policy, Policy) else Policy(str(policy))
    set_autocast(chosen.name == "mixed_bfloat16")


def global_policy() -> Policy:
    """The policy in force: ``"mixed_bfloat16"`` while autocast is on, else ``"float32"``."""
    return Policy("mixed_bfloat16" if is_autocast_enabled() else "float32")
