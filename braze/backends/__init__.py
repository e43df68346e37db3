"""Backends: the reference NumPy interpreter (the correctness oracle) and native code
generators for the CPU and GPUs. Importing this package registers each of them
(``braze.runtime.backend``), which is how the core finds them."""

from braze.backends import cpu, gpu, reference

__all__ = ["cpu", "gpu", "reference"]
