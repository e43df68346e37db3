"""The argument types of braze's commands: each parses one command-line value or raises
``argparse.ArgumentTypeError`` with a message naming the problem."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path

from braze.ir.errors import BrazeError
from braze.nn.checkpoint import saved_whole
from braze.runtime.device import Device, as_device


def _integer(text: str, minimum: int, kind: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a {kind}, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be a {kind}, got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (epochs, batch sizes, steps, image sizes)."""
    return _integer(text, 1, "positive integer")


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0 (random seeds)."""
    return _integer(text, 0, "non-negative integer")


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (learning rates)."""
    return _number(text, "positive", lambda value: value > 0)


def non_negative_float(text: str) -> float:
    """argparse type: a finite number >= 0 (weight decay, a clipping norm that 0 turns off)."""
    return _number(text, "non-negative", lambda value: value >= 0)


def _number(text: str, kind: str, accepts: Callable[[float], bool]) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a {kind} number, got {text!r}") from None
    if not (math.isfinite(value) and accepts(value)):
        raise argparse.ArgumentTypeError(f"must be a {kind} finite number, got {text}")
    return value


def fraction(text: str) -> float:
    """argparse type: a number in [0, 1) (dropout rates)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


def parse_device(text: str) -> Device:
    """argparse type: a device name that :func:`as_device` parses."""
    try:
        return as_device(text)
    except BrazeError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def existing_directory(text: str) -> str:
    """argparse type: a directory that exists (never replaced by another source)."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"directory {text} does not exist")
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is not a directory")
    return text


def existing_path(text: str) -> str:
    """argparse type: a file or directory that exists."""
    if not Path(text).exists():
        raise argparse.ArgumentTypeError(f"{text} does not exist")
    return text


def output_folder(text: str) -> str:
    """argparse type: a folder that exists or can be created, checked before any work is done."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, expected a folder")
    _check_creatable(text, path if path.exists() else path.parent)
    return text


def output_file(text: str) -> str:
    """argparse type: a file that can be created, checked before any work is done."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory, expected a file name")
    _check_creatable(text, path.parent)
    return text


def checkpoint_file(text: str) -> str:
    """argparse type: a file ``Module.save`` can write (a checkpoint's or a model's name)."""
    output_file(text)
    try:
        saved_whole(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _check_creatable(text: str, folder: Path) -> None:
    """``text`` can be made in ``folder``: its nearest existing ancestor is a writable directory."""
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"cannot create {text}: {folder} is not a directory")
    if not os.access(folder, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot create {text}: {folder} is not writable")
