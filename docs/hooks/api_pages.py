"""MkDocs hook: one API reference page per public module, generated from its ``__all__``.

A name added to a module's ``__all__`` appears in the reference without editing the docs.
Each entry is a mkdocstrings directive; ``tests/test_docs_site.py`` checks that every
exported name has an entry with a docstring.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import posixpath
from types import ModuleType

from mkdocs.structure.files import File, Files

# (module, page, one line on the page's subject); the order of the reference's pages.
MODULES = [
    ("braze", "api/braze.md", "Tensors, ops, dtypes, devices, autodiff and the compiler's entry points."),
    ("braze.nn", "api/nn.md", "Layers, losses, regularizers, callbacks and `Module`."),
    ("braze.optim", "api/optim.md", "Optimizers."),
    ("braze.data", "api/data.md", "Datasets and input pipelines, producing NumPy arrays."),
    ("braze.keras", "api/keras.md", "The module paths of `tensorflow.keras`."),
    ("braze.distributed", "api/distributed.md", "Data-parallel training over MPI."),
]
PAGE_OF = {module: page for module, page, _ in MODULES}
KINDS = ("Modules", "Classes", "Functions", "Constants")


def on_files(files: Files, config) -> Files:
    for module, page, summary in MODULES:
        files.append(File.generated(config, page, content=api_page(module, summary)))
    return files


def api_page(module_name: str, summary: str) -> str:
    module = importlib.import_module(module_name)
    groups: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for name in sorted(module.__all__, key=str.lower):
        obj = getattr(module, name)
        groups[_kind(obj)].append(_entry(module, name, obj))
    heading = f"# `{module_name}` {{: #{module_name} }}"
    lines = [heading, "", summary, "", f"::: {module_name}", _options(members=False, show_root_heading=False), ""]
    for kind in KINDS:
        if groups[kind]:
            lines += [f"## {kind}", "", *groups[kind]]
    return "\n".join(lines)


def _kind(obj: object) -> str:
    if inspect.ismodule(obj):
        return "Modules"
    if inspect.isclass(obj):
        return "Classes"
    if inspect.isroutine(obj):
        return "Functions"
    return "Constants"


def _entry(module: ModuleType, name: str, obj: object) -> str:
    path = f"{module.__name__}.{name}"
    if inspect.ismodule(obj):
        if obj.__name__ in PAGE_OF and obj.__name__ != module.__name__:
            link = posixpath.relpath(PAGE_OF[obj.__name__], posixpath.dirname(PAGE_OF[module.__name__]))
            summary = " ".join((obj.__doc__ or "").strip().split("\n\n")[0].split())
            return f'<a id="{path}"></a>\n\n### `{path}`\n\n{summary} See [`{obj.__name__}`]({link}).\n'
        return f"::: {path}\n{_options(members=getattr(obj, '__all__', None), heading_level=3)}\n"
    if _shadowed_by_submodule(module, name):
        # `braze.jit` is a submodule and the function it exports; the docs' static analysis
        # takes the name for the submodule, so the entry names the function where it is defined.
        canonical = f"{obj.__module__}.{obj.__qualname__}"
        return f'<a id="{path}"></a>\n\n::: {canonical}\n{_options(heading=path, heading_level=3)}\n'
    return f"::: {path}\n{_options(heading_level=3)}\n"


def _shadowed_by_submodule(module: ModuleType, name: str) -> bool:
    if not getattr(module, "__path__", None):
        return False
    return importlib.util.find_spec(f"{module.__name__}.{name}") is not None


def _options(**options: object) -> str:
    lines = ["    options:"]
    for key, value in options.items():
        if value is None:
            continue
        rendered = "false" if value is False else "true" if value is True else value
        if isinstance(value, list):
            rendered = "[" + ", ".join(value) + "]"
        elif isinstance(value, str):
            rendered = f'"{value}"'
        lines.append(f"      {key}: {rendered}")
    return "\n".join(lines)
