"""A one-line progress bar for training epochs, drawn only on a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """``[Epoch 0]  123/468 [=======>      ] 4.1 s`` redrawn in place on stderr."""

    def __init__(self, total: int, prefix: str = "", stream: TextIO | None = None, width: int = 30) -> None:
        self.total, self.prefix, self.width = total, prefix, width
        self.stream = stream or sys.stderr
        self.enabled = total > 0 and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.done = 0
        self.start = time.perf_counter()
        self._last_draw = 0.0

    def update(self, steps: int = 1) -> None:
        self.done += steps
        now = time.perf_counter()
        if self.enabled and (now - self._last_draw > 0.1 or self.done >= self.total):
            self._last_draw = now
            filled = int(self.width * min(self.done, self.total) / self.total)
            bar = "=" * max(filled - 1, 0) + (">" if filled else "") + " " * (self.width - filled)
            digits = len(str(self.total))
            self.stream.write(f"\r{self.prefix} {self.done:>{digits}}/{self.total} [{bar}] {now - self.start:.1f} s")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()
