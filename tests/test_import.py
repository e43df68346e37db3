"""The import surface: subpackages are attributes of ``braze``, loaded on first use."""

import subprocess
import sys

import pytest

import braze

SUBPACKAGES = ("data", "models", "nn", "optim")


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_import_braze_loads_no_subpackage():
    # What keeps `import braze` fast: layers, optimizers and data pipelines wait for first use.
    loaded = _run(f"import sys, braze; print([n for n in {SUBPACKAGES!r} if 'braze.' + n in sys.modules])")
    assert loaded.strip() == "[]"


def test_subpackages_are_attributes_after_import_braze():
    out = _run(
        "import braze\n"
        "model = braze.models.LeNet(seed=0)\n"
        "print(type(braze.optim.SGD(model, lr=0.1)).__name__, braze.nn.softmax_cross_entropy.__name__,"
        " braze.data.DataLoader.__name__, model.num_parameters())"
    )
    assert out.split() == ["SGD", "softmax_cross_entropy", "DataLoader", "61706"]


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_subpackage_attribute_is_the_module(name):
    assert getattr(braze, name) is sys.modules[f"braze.{name}"]
    assert name in dir(braze) and name in braze.__all__


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        braze.nope  # noqa: B018 - the access is the test
    assert not hasattr(braze, "distributed") or "distributed" in dir(braze)
