"""Fixtures for tests anywhere under tests/."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from second_user import reachable_folder

import braze


@pytest.fixture(autouse=True)
def nothing_left_pending() -> None:
    """Computes what an earlier test in this process left pending on a lazy device, so that a
    test's first barrier traces only its own work: pytest-xdist runs a different set of files
    in each worker from one run to the next, and a tensor still held by one of them would
    otherwise join the next test's first trace (and change what its trace cache sees)."""
    braze.barrier()


@pytest.fixture
def neighbourhood() -> Iterator[Path]:
    """A folder that a second user can reach too (see second_user.py)."""
    folder = reachable_folder()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
