"""Imports only point down the layers of docs/design.md, function-level imports included:
a circle between packages (layers reaching optimizers reaching layers) is a test failure.
The core finds backends through the registry and names none; one backend never reaches
into another's package (a GPU dialect does not lean on the CPU's C)."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "braze"

# Lowest first. Core is one layer: the tensor, the op library, autodiff, tracing, jit.
LAYERS = (
    {"ir"},
    {"passes"},
    {"runtime"},
    {"backends"},
    {
        "tensor",
        "tangents",
        "ops",
        "autodiff",
        "autograd",
        "backward_replay",
        "replay",
        "function_replay",
        "transforms",
        "trees",
        "torch_methods",
        "lazy",
        "jit",
        "jit_state",
        "function",
        "config",
        "interop",
        "array_api",
        "lax",
    },
    {"data"},
    {"optim"},
    {"nn"},
    {"models", "distributed", "keras"},
    {"testing"},
    {"bench"},
    {"cli", "__main__"},
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _layer(module: str) -> str:
    """The top-level part of ``braze.X.Y`` (X), or "" for the package itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imported(tree: ast.AST) -> list[tuple[str, int]]:
    """(module, line) of every ``braze.*`` import, at any depth of the file."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "braze":  # `from braze import ops` imports braze.ops
                found += [(f"braze.{alias.name}", node.lineno) for alias in node.names]
            else:
                found.append((node.module, node.lineno))
    return [(name, line) for name, line in found if name.startswith("braze.")]


def _modules() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if path.parent != PACKAGE or path.name != "__init__.py")


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_imports_point_down(path):
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    own = _layer(".".join(relative.parts))
    assert own in RANK, f"{relative}: package {own!r} is in no layer; add it to LAYERS and docs/design.md"
    upward = [
        f"line {line}: {name}"
        for name, line in _imported(ast.parse(path.read_text()))
        if RANK.get(_layer(name), -1) > RANK[own]
    ]
    assert not upward, f"{relative} ({own}) imports from a layer above it: {upward}"


# The core modules that run ops, trace and compile: they find a backend from the device.
_FINDS_BACKENDS = ("tensor.py", "lazy.py", "jit.py")


@pytest.mark.parametrize("name", _FINDS_BACKENDS)
def test_the_core_imports_no_backend(name):
    path = PACKAGE / name
    named = [f"line {line}: {module}" for module, line in _imported(ast.parse(path.read_text()))]
    assert not [n for n in named if "braze.backends" in n], f"braze/{name} imports a backend: {named}"


@pytest.mark.parametrize(("backend", "other"), [("gpu", "cpu"), ("cpu", "gpu")])
def test_a_backend_imports_nothing_of_another(backend, other):
    reaching = [
        f"{path.relative_to(PACKAGE)} line {line}: {module}"
        for path in sorted((PACKAGE / "backends" / backend).rglob("*.py"))
        for module, line in _imported(ast.parse(path.read_text()))
        if module == f"braze.backends.{other}" or module.startswith(f"braze.backends.{other}.")
    ]
    assert not reaching, f"backends/{backend} imports backends/{other}: {reaching}"
