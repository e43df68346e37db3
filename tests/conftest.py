"""Fixtures for tests anywhere under tests/."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from second_user import reachable_folder


@pytest.fixture
def neighbourhood() -> Iterator[Path]:
    """A folder that a second user can reach too (see second_user.py)."""
    folder = reachable_folder()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
