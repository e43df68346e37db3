"""``tensorflow.keras.backend``: only what session state braze has."""

from braze.nn.names import reset_names


def clear_session() -> None:
    """Start layer names over (the next model's first Dense is ``dense`` again), as Keras
    does; braze keeps no other per-session state (compiled steps are cached by structure)."""
    reset_names()


def epsilon() -> float:
    """Keras's fuzz factor, the 1e-7 its losses and metrics clip with."""
    return 1e-7


def floatx() -> str:
    return "float32"


__all__ = ["clear_session", "epsilon", "floatx"]
