"""``tensorflow.keras.backend``: only what session state braze has."""

from braze.nn.names import reset_names


def clear_session() -> None:
    """Start layer names over (the next model's first Dense is ``dense`` again), as Keras
    does; braze keeps no other per-session state (compiled steps are cached by structure)."""
    reset_names()


__all__ = ["clear_session"]
