"""``keras.datasets``: MNIST, read from the IDX files braze ships (``data/mnist``) or finds.

Keras's other datasets are downloads braze does not ship: asking for one is an error
saying so, at once."""

from typing import Any

from braze.keras.datasets import mnist

_NOT_SHIPPED = ("boston_housing", "california_housing", "cifar10", "cifar100", "fashion_mnist", "imdb", "reuters")


def __getattr__(name: str) -> Any:
    if name in _NOT_SHIPPED:
        raise AttributeError(
            f"braze.keras.datasets.{name} is not available: braze ships only mnist; load {name} as NumPy arrays "
            "yourself and pass them to fit"
        )
    raise AttributeError(f"module 'braze.keras.datasets' has no attribute {name!r}")


__all__ = ["mnist"]
