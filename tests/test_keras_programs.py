"""Keras programs as Keras users write them (``tests/keras_programs/``), whose only change
from Keras is their imports (``keras`` -> ``braze.keras``, ``tensorflow`` -> ``braze``), run
to the end three ways, with their results compared:

- eagerly (``tf.function`` left out, as ``tf.config.run_functions_eagerly(True)`` does);
- with ``braze.config.set_jit(True)``: every tensor lives on the lazy device, so each
  training step is traced, compiled and replayed;
- compiled: ``compile(..., jit_compile=True)`` for every model, and ``tf.function`` steps
  compiled by ``braze.jit``.

Compiled and eager runs compute the same float32 arithmetic in different orders, so their
results agree to float32 rounding amplified over a few training steps (relative 1e-3 of
each value; accuracies, counts of right answers, may differ by one example in hundreds).
"""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

import braze
from braze.nn.keras_methods import KerasMethods

PROGRAMS = Path(__file__).resolve().parent / "keras_programs"
# The values each program leaves in its namespace that the three runs must agree on.
RESULTS = {
    "mnist_convnet": ("history", "score"),
    "multi_input_output": ("history", "predictions"),
    "custom_train_step": ("history", "scores"),
    "custom_training_loop": ("losses", "train_accuracies", "val_accuracies"),
    "small_resnet": ("history", "predictions"),
    "conv1d_regression": ("history", "test_mae"),
    "structured_binary": ("history", "probabilities"),
    "denoising_autoencoder": ("history", "predictions"),
    "augmented_separable": ("history",),
    "regression_normalization": ("horsepower_history", "history", "test_results", "rnn_history"),
    "callbacks_and_configs": ("history", "batch_losses", "features", "predictions", "clone_history"),
    "addition_rnn": ("history", "attentive_history"),
    "translation_transformer": ("history", "probabilities"),
    "structured_lookup": ("history", "predictions"),
    "structured_strings": ("history", "predictions"),
    "collaborative_filtering": ("history", "predicted"),
    "wgan_gp": ("history",),
    "text_from_scratch": ("history", "score", "vocabulary", "end_to_end_score"),
    "knowledge_distillation": (
        "teacher_loss",
        "teacher_accuracy",
        "history",
        "distilled_loss",
        "distilled_accuracy",
        "scratch_history",
    ),
    "masked_sequences": (
        "history",
        "transformer_history",
        "tag_history",
        "tag_loss",
        "tag_accuracy",
        "regression_history",
        "predictions",
    ),
}
ACCURACY = ("accuracy", "acc", "precision", "recall")


def run(name: str, mode: str, monkeypatch, tmp_path) -> dict:
    tmp_path.mkdir()
    monkeypatch.chdir(tmp_path)
    braze.keras.backend.clear_session()
    if mode != "compiled":
        monkeypatch.setattr(braze, "function", lambda fn=None, **_: fn if fn is not None else (lambda f: f))
    if mode == "set_jit":
        braze.config.set_jit(True)
    if mode == "compiled":
        original = KerasMethods.compile

        def compile_jitted(self, *args, **kwargs):
            return original(self, *args, **{**kwargs, "jit_compile": True})

        monkeypatch.setattr(KerasMethods, "compile", compile_jitted)
    executed = braze.metrics.counter("Execute")
    try:
        namespace = runpy.run_path(str(PROGRAMS / f"{name}.py"), run_name="__main__")
    finally:
        braze.config.set_jit(False)
    steps_compiled = braze.metrics.counter("Execute") > executed
    assert steps_compiled == (mode != "eager"), f"{name} ({mode}): compiled executables ran: {steps_compiled}"
    found = {}
    for key in RESULTS[name]:
        value = namespace[key]
        found[key] = value.history if hasattr(value, "history") else value
    return found


def assert_agree(compiled, eager, where: str = "") -> None:
    if isinstance(eager, dict):
        assert set(compiled) == set(eager), where
        for key in eager:
            assert_agree(compiled[key], eager[key], f"{where}.{key}")
        return
    if isinstance(eager, (list, tuple)) and eager and isinstance(eager[0], str):  # a vocabulary
        assert list(compiled) == list(eager), where
        return
    if isinstance(eager, (list, tuple)) and eager and isinstance(eager[0], (dict, list, tuple, np.ndarray)):
        for i, (c, e) in enumerate(zip(compiled, eager, strict=True)):
            assert_agree(c, e, f"{where}[{i}]")
        return
    expected = np.asarray(eager, dtype=np.float64)
    got = np.asarray(compiled, dtype=np.float64)
    if any(word in where for word in ACCURACY):
        np.testing.assert_allclose(got, expected, atol=0.02, err_msg=where)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-4, err_msg=where)


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_program_runs_to_the_end_eagerly_and_compiled_with_the_same_results(name, monkeypatch, tmp_path):
    with monkeypatch.context() as patch:
        eager = run(name, "eager", patch, tmp_path / "eager")
    for mode in ("set_jit", "compiled"):
        with monkeypatch.context() as patch:
            assert_agree(run(name, mode, patch, tmp_path / mode), eager, f"{name} ({mode})")
