"""``keras.mixed_precision``: braze.nn's mixed-precision policies."""

from braze.nn.mixed_precision import Policy, global_policy, set_global_policy

DTypePolicy = Policy

__all__ = ["DTypePolicy", "Policy", "global_policy", "set_global_policy"]
