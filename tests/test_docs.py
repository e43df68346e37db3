"""The documentation cannot drift: every Python block of README.md and of every page under
docs/ runs here, and every link in them (and in benchmarks/RESULTS.md) points to a file in
the repository, and to a heading of it where the link names one.

A file's Python blocks (fenced as ``python``) run in order in one namespace, as a reader
would paste them into one session, in a fresh process whose working directory is empty.
Shell, C and output blocks are not run. A block may declare smaller sizes for this test
with a comment on an assignment: ``epochs = 50  # docs-test: 1`` runs ``epochs = 1`` here;
everything else runs as written.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINKED = [*DOCS, ROOT / "benchmarks" / "RESULTS.md"]
API_PAGES = ROOT / "docs" / "api"  # made from the docstrings by docs/hooks/api_pages.py
DIRECTIVE = "# docs-test:"
FENCE = re.compile(r"^(\s*)```+\s*([\w+-]*)")
SNIPPET = re.compile(r'^--8<-- "([^"]+)"$')  # pymdownx.snippets, relative to the root
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")

# Runs in the child: each block compiled under the Markdown file's name with its lines
# where they are in the file, so a traceback points at the documentation's own line.
RUNNER = """
import json, sys, traceback
namespace = {"__name__": "__main__"}
for block in json.load(sys.stdin):
    code = compile("\\n" * (block["line"] - 1) + block["source"], block["file"], "exec")
    try:
        exec(code, namespace)
    except BaseException:
        traceback.print_exc()
        sys.exit(f"the block at {block['file']}:{block['line']} failed")
"""


@dataclass
class Block:
    file: str
    line: int  # of the block's first line of code, 1-based
    source: str


def python_blocks(path: Path) -> list[Block]:
    """The file's Python blocks, with ``# docs-test:`` sizes applied."""
    name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    blocks, language, start, body = [], None, 0, []
    for number, text in enumerate(path.read_text().splitlines(), 1):
        fence = FENCE.match(text)
        if fence and language is None:
            language, start, body = fence.group(2).lower() or "text", number + 1, []
        elif fence and not fence.group(2):
            if language in ("python", "py"):
                blocks.append(Block(name, start, textwrap.dedent("\n".join(body) + "\n")))
            language = None
        elif language is not None:
            body.append(_with_test_size(text, name, number))
    return blocks


def _with_test_size(text: str, file: str, number: int) -> str:
    """``text`` with the right-hand side of its assignment replaced by the directive's."""
    if DIRECTIVE not in text:
        return text
    code, replacement = text.split(DIRECTIVE, 1)
    stripped = code.strip()
    try:
        statement = ast.parse(stripped).body[0]
    except (SyntaxError, IndexError):
        statement = None
    if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
        raise ValueError(f"{file}:{number}: {DIRECTIVE} belongs on an assignment, not on {stripped!r}")
    indent = code[: len(code) - len(code.lstrip())]
    return f"{indent}{stripped[: statement.value.col_offset]}{replacement.strip()}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run(path, tmp_path):
    blocks = python_blocks(path)
    if not blocks:
        pytest.skip(f"{path.name} has no Python blocks")
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps([vars(block) for block in blocks]),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        pytest.fail(result.stderr[-4000:], pytrace=False)


def heading_anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings, as GitHub and MkDocs spell them (with the
    headings of the files it includes, as ``--8<-- "benchmarks/RESULTS.md"``)."""
    anchors, fenced = set(), False
    for text in path.read_text().splitlines():
        if included := SNIPPET.match(text):
            anchors |= heading_anchors(ROOT / included.group(1))
        elif FENCE.match(text):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#{1,6}\s+(.*)", text)):
            words = re.sub(r"[^\w\s-]", "", heading.group(1).lower()).strip()
            anchors.add(re.sub(r"\s+", "-", words))
    return anchors


@pytest.mark.parametrize("path", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_in_the_repository(path):
    text = path.read_text()
    assert "../shared" not in text, f"{path.name} points outside the repository, into ../shared"
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        assert resolved.is_relative_to(ROOT), f"{path.name} links outside the repository: {target}"
        if resolved.is_relative_to(API_PAGES):
            continue  # generated by the site's build, which fails on a broken link (test_docs_site.py)
        assert resolved.exists(), f"{path.name} links to a file that does not exist: {target}"
        if anchor and resolved.suffix == ".md":
            assert anchor in heading_anchors(resolved), f"{path.name} links to a heading that does not exist: {target}"


def test_heading_anchors_are_spelled_as_github_spells_them(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("# The XLA article's case study: its CNN, 50 epochs\n```sh\n# not a heading\n```\n## `@jit`\n")
    assert heading_anchors(doc) == {"the-xla-articles-case-study-its-cnn-50-epochs", "jit"}


def test_test_sizes_replace_only_the_assigned_value(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(
        "  ```python\n  for i in range(2):\n      n, m = 840, 188  # docs-test: 8, 4\n  print(n)\n  ```\n"
        "```sh\nbraze bench cnn\n```\n```\noutput\n```\n"
    )
    (block,) = python_blocks(doc)
    assert block.line == 2
    assert block.source == "for i in range(2):\n    n, m = 8, 4\nprint(n)\n"
    doc.write_text("```python\nprint(840)  # docs-test: 8\n```\n")
    with pytest.raises(ValueError, match="doc.md:2: # docs-test: belongs on an assignment"):
        python_blocks(doc)
