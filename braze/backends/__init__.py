"""Backends: the reference NumPy interpreter (the correctness oracle) and native code generators."""
