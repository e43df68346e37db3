"""Acting as a second user, as a neighbour on a shared machine would: tests run as root
chown folders to an unprivileged uid and run commands as that uid in a subprocess."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

OTHER_UID = 65534  # "nobody"

requires_root = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="acting as a second user needs root (chown, setuid): run the tests as root to include this",
)


def _become_other_user() -> None:
    os.setgroups([])
    os.setgid(OTHER_UID)
    os.setuid(OTHER_UID)


def as_other_user(script: str) -> None:
    """Run the shell ``script`` as the other user (it fails the test if the script fails)."""
    done = subprocess.run(["/bin/sh", "-c", script], preexec_fn=_become_other_user, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def reachable_folder() -> Path:
    """A new folder the other user can reach (pytest's own folders are private to root);
    the caller removes it."""
    folder = Path(tempfile.mkdtemp(prefix="braze-test-"))
    os.chmod(folder, 0o755)
    return folder


def shared_folder(path: Path) -> Path:
    """``path`` made as a folder everyone may write to (a shared cache on a lab machine)."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o777)
    return path


def owned_by_other_user(path: Path) -> Path:
    os.chown(path, OTHER_UID, OTHER_UID)
    return path
