"""scikit-learn as a client of braze.array_api: with its array API dispatch on, its
array-API-enabled scalers and metrics take braze tensors (eager and on the lazy CPU),
return braze tensors on the same device, and match scikit-learn on NumPy arrays.

SciPy reads ``SCIPY_ARRAY_API`` when it is first imported, so the braze side runs in a
process of its own with the variable set; this process computes NumPy's answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn", reason="scikit-learn is in the test extra")
pytest.importorskip("array_api_compat", reason="array-api-compat is in the test extra")

from sklearn import metrics, preprocessing  # noqa: E402

SCALERS = ("MinMaxScaler", "MaxAbsScaler", "StandardScaler", "Normalizer")
METRICS = ("r2_score", "mean_squared_error", "mean_absolute_error")

_CLIENT = """
import json, sys
import numpy as np
import sklearn
from sklearn import metrics, preprocessing
import braze
import braze.array_api as xp

sklearn.set_config(array_api_dispatch=True)
given = json.load(sys.stdin)
integer = ("labels", "predicted")
data = {k: np.asarray(v, dtype=np.int32 if k in integer else np.float32) for k, v in given["data"].items()}
results = {}
for device in ("cpu", "cpu:0:lazy"):
    x = xp.asarray(data["x"], device=braze.device(device))
    for name in given["scalers"]:
        out = getattr(preprocessing, name)().fit(x).transform(x)
        assert isinstance(out, braze.Tensor) and out.device == x.device, (name, type(out))
        results[f"{device} {name}"] = out.numpy().tolist()
    y, p = (xp.asarray(data[k], device=x.device) for k in ("y", "p"))
    for name in given["metrics"]:
        results[f"{device} {name}"] = float(getattr(metrics, name)(y, p))
    a, b = (xp.asarray(data[k], device=x.device) for k in ("labels", "predicted"))
    results[f"{device} accuracy_score"] = float(metrics.accuracy_score(a, b))
print(json.dumps(results))
"""


def _data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(28)
    y = rng.normal(size=40).astype(np.float32)
    labels = rng.integers(0, 4, 40).astype(np.int32)
    return {
        "x": (rng.normal(size=(40, 5)) * [1.0, 10.0, 0.1, 3.0, 100.0]).astype(np.float32),
        "y": y,
        "p": (y + rng.normal(size=40) * 0.3).astype(np.float32),
        "labels": labels,
        "predicted": np.where(rng.random(40) < 0.7, labels, (labels + 1) % 4).astype(np.int32),
    }


def test_scikit_learn_scalers_and_metrics_run_on_braze_tensors_and_match_numpy():
    data = _data()
    repository = Path(__file__).resolve().parents[2]
    env = dict(
        os.environ, SCIPY_ARRAY_API="1", PYTHONPATH=os.pathsep.join([str(repository), os.environ.get("PYTHONPATH", "")])
    )
    done = subprocess.run(
        [sys.executable, "-c", _CLIENT],
        input=json.dumps({"data": {k: v.tolist() for k, v in data.items()}, "scalers": SCALERS, "metrics": METRICS}),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(done.stdout.splitlines()[-1])
    for device in ("cpu", "cpu:0:lazy"):
        for name in SCALERS:
            expected = getattr(preprocessing, name)().fit(data["x"]).transform(data["x"])
            # float32 data: a few roundings of a scale and a shift, relative to the values' range
            np.testing.assert_allclose(got[f"{device} {name}"], expected, rtol=1e-5, atol=1e-5, err_msg=name)
        for name in METRICS:
            expected = getattr(metrics, name)(data["y"], data["p"])
            np.testing.assert_allclose(got[f"{device} {name}"], expected, rtol=1e-5, err_msg=name)
        expected = metrics.accuracy_score(data["labels"], data["predicted"])
        np.testing.assert_allclose(got[f"{device} accuracy_score"], expected, rtol=1e-6)
