"""A small FileCheck: ordered ``CHECK``, ``CHECK-NEXT`` and global ``CHECK-NOT`` patterns, with
``{{regex}}`` holes, matched against a pass's printed output."""

from __future__ import annotations

import re


def _pattern(text: str) -> re.Pattern:
    parts = re.split(r"\{\{(.*?)\}\}", text.strip())
    return re.compile("".join(re.escape(p) if i % 2 == 0 else p for i, p in enumerate(parts)))


def check(output: str, directives: list[tuple[str, str]]) -> None:
    """Raise AssertionError naming the first directive the output does not satisfy."""
    lines = output.splitlines()
    position = 0
    previous = -1
    for kind, text in directives:
        pattern = _pattern(text)
        if kind == "CHECK-NOT":
            found = [line for line in lines if pattern.search(line)]
            assert not found, f"CHECK-NOT: {text!r} found in {found[0]!r}\n{output}"
        elif kind == "CHECK-NEXT":
            assert previous + 1 < len(lines) and pattern.search(lines[previous + 1]), (
                f"CHECK-NEXT: {text!r} is not on the line after {lines[previous]!r}\n{output}"
            )
            previous += 1
            position = previous + 1
        else:
            for index in range(position, len(lines)):
                if pattern.search(lines[index]):
                    previous, position = index, index + 1
                    break
            else:
                raise AssertionError(f"CHECK: {text!r} not found after line {position}\n{output}")


def split_case(text: str) -> tuple[list[str], list[tuple[str, str]], str]:
    """(passes to run, directives, input graph text) of a case file; its other lines that
    start with ``# `` are comments."""
    passes: list[str] = []
    directives: list[tuple[str, str]] = []
    body = []
    for line in text.splitlines():
        if line.startswith("# RUN:"):
            passes = line.split(":", 1)[1].split()
        elif match := re.match(r"# (CHECK(?:-NEXT|-NOT)?): (.*)$", line):
            directives.append((match.group(1), match.group(2)))
        elif not line.startswith("# "):  # other comment lines say what the case shows
            body.append(line)
    return passes, directives, "\n".join(body)
