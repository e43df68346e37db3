"""The error of a checkpoint file, shared by its readers and writers."""

from __future__ import annotations

from braze.ir.errors import BrazeError


class CheckpointError(BrazeError, ValueError):
    """A checkpoint that does not fit the model, or a file that is not a braze checkpoint."""
