"""The documentation site builds strictly, and its API reference documents every public name.

``mkdocs build --strict`` fails on any warning: a broken link or anchor, a page missing
from the navigation, a reference mkdocstrings cannot resolve, a docstring it cannot parse.
The site is built once, offline, into a temporary folder.
"""

from __future__ import annotations

import html
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PUBLIC_MODULES = ["braze", "braze.nn", "braze.optim", "braze.data", "braze.keras", "braze.distributed"]
HEADING = re.compile(r"<h[1-6][^>]*>.*?</h[1-6]>", re.S)
ENTRY_END = re.compile(r'<h[1-6][\s>]|<div class="doc doc-object')
NOT_DOCSTRING = re.compile(r'<div class="doc-signature.*?</div>|<p class="doc doc-class-bases">.*?</p>', re.S)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run(build, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{result.stdout[-3000:]}{result.stderr[-6000:]}", pytrace=False)
    return out


def documented_names(site: Path) -> dict[str, str]:
    """Every id on the API pages, with the text documenting it (signatures left out).

    An id is an entry's heading, or an anchor just before one; the entry's text runs from
    its heading to the next heading or the next entry.
    """
    found: dict[str, str] = {}
    for page in (site / "api").rglob("*.html"):
        text = page.read_text()
        for match in re.finditer(r'id="(braze[\w.]*)"', text):
            heading = HEADING.search(text, text.rfind("<", 0, match.start()))
            if heading is None:
                continue
            end = ENTRY_END.search(text, heading.end())
            body = NOT_DOCSTRING.sub("", text[heading.end() : end.start() if end else len(text)])
            words = html.unescape(re.sub(r"<[^>]+>", " ", body)).split()
            found[match.group(1)] = found.get(match.group(1)) or " ".join(words)
    return found


def test_site_builds_strictly(site):
    assert (site / "index.html").exists()
    assert (site / "api" / "braze" / "index.html").exists()


def test_api_reference_documents_every_exported_name(site):
    documented = documented_names(site)
    exported = [f"{name}.{member}" for name in PUBLIC_MODULES for member in importlib.import_module(name).__all__]
    missing = [path for path in [*PUBLIC_MODULES, *exported] if path not in documented]
    assert not missing, f"the API reference has no entry for {', '.join(missing)}"
    empty = [path for path in [*PUBLIC_MODULES, *exported] if not documented[path]]
    assert not empty, f"these public names have no docstring: {', '.join(empty)}"
