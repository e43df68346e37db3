"""A block in which new tensors (a layer's weights, say) are made on a given device."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import braze


@contextlib.contextmanager
def made_on(device: braze.Device) -> Iterator[None]:
    before = braze.default_device()
    braze.set_default_device(device)
    try:
        yield
    finally:
        braze.set_default_device(before)
