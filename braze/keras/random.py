"""``keras.random``."""

from braze.nn.keras_random import SeedGenerator, dropout, normal, randint, truncated_normal, uniform

__all__ = ["SeedGenerator", "dropout", "normal", "randint", "truncated_normal", "uniform"]
