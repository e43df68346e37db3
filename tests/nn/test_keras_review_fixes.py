"""Keras's semantics where a review found braze's Keras face apart from them: the callbacks'
``mode="auto"`` and ``EarlyStopping``'s baseline, ``LogCosh`` far from the target, the
cross-entropies of unnormalised probabilities, ``trainable`` set on a model, per-output
sample weights of arrays, one-output loss lists and a Sequential's output name,
``class_weight`` of float labels, and ``keras.ops`` (``gelu``, ``pad``, ``expand_dims``
and the NumPy-named functions). Each is checked against NumPy or Keras's documented rule.
"""

from __future__ import annotations

import json
import math
import zipfile

import numpy as np
import pytest

import braze
from braze import keras
from braze.keras import layers, ops
from braze.nn import adapters
from braze.nn.callbacks import auto_mode

F32 = float(np.finfo(np.float32).eps)


def _tiny_model(metrics=None) -> keras.Model:
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((2,)), layers.Dense(1, activation="sigmoid")])
    model.compile(keras.optimizers.SGD(0.1), "binary_crossentropy", metrics=metrics)
    return model


_X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]], np.float32)
_Y = np.array([1.0, 0.0, 1.0, 0.0], np.float32)


class _Inject(keras.callbacks.Callback):
    """Logs ``values[epoch]`` as ``name``: a monitored value whose course the test fixes."""

    def __init__(self, name: str, values: list[float]) -> None:
        self.name, self.values = name, values

    def on_epoch_end(self, epoch, logs=None):
        logs[self.name] = self.values[epoch]


class _WeightsPerEpoch(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.weights = []

    def on_epoch_end(self, epoch, logs=None):
        self.weights.append([w.copy() for w in self.model.get_weights()])


def _same(first: list[np.ndarray], second: list[np.ndarray]) -> bool:
    return all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))


def _epochs_run(model: keras.Model, name: str, values: list[float], callback) -> int:
    history = model.fit(_X, _Y, epochs=len(values), verbose=0, callbacks=[_Inject(name, values), callback])
    return len(history.history["loss"])


# mode="auto" ------------------------------------------------------------------------------


class _Score(keras.metrics.Mean):
    """A metric of one's own that declares its direction, as Keras's metrics do."""

    def __init__(self) -> None:
        super().__init__(name="score")
        self._direction = "up"

    def update_state(self, y_true, y_pred, sample_weight=None):
        super().update_state(y_pred)


RISING = [0.5, 0.6, 0.7, 0.8]


@pytest.mark.parametrize(
    ("metrics", "monitor"),
    [
        ([keras.metrics.AUC(name="auc")], "auc"),
        (["precision"], "precision"),
        ([keras.metrics.Recall(name="recall")], "recall"),
        ([keras.metrics.Precision(name="p")], "p"),  # the metric's direction, not its name
        ([_Score()], "score"),  # a declared _direction
        (None, "recall_at_top"),  # no metric: the name says it should go up
    ],
)
def test_auto_mode_maximises_metrics_that_should_go_up(metrics, monitor):
    # A rising value improves every epoch: patience 0 never stops, and no plateau cuts the rate.
    model = _tiny_model(metrics)
    assert _epochs_run(model, monitor, RISING, keras.callbacks.EarlyStopping(monitor=monitor)) == 4
    plateau = keras.callbacks.ReduceLROnPlateau(monitor=monitor, patience=1, factor=0.5, min_delta=0.0)
    model = _tiny_model(metrics)
    _epochs_run(model, monitor, RISING, plateau)
    assert model.optimizer.learning_rate == pytest.approx(0.1)


@pytest.mark.parametrize(("metrics", "monitor"), [(["mae"], "mae"), (None, "loss"), (None, "val_o1_loss")])
def test_auto_mode_minimises_errors_and_losses(metrics, monitor):
    model = _tiny_model(metrics)
    assert _epochs_run(model, monitor, RISING, keras.callbacks.EarlyStopping(monitor=monitor)) == 2


def test_model_checkpoint_keeps_the_highest_auc(tmp_path):
    saved = []

    class Saving(keras.callbacks.ModelCheckpoint):
        def _save(self, epoch, logs, batch=None):
            before = self._monitor.best
            super()._save(epoch, logs, batch)
            if self._monitor.best != before:
                saved.append(epoch)

    model = _tiny_model([keras.metrics.AUC(name="auc")])
    checkpoint = Saving(str(tmp_path / "best.keras"), monitor="auc", save_best_only=True)
    _epochs_run(model, "auc", [0.6, 0.5, 0.9, 0.7], checkpoint)
    assert saved == [0, 2]


# EarlyStopping's baseline (Keras 3's rule) --------------------------------------------------


def _early_stopping_run(values: list[float], **options) -> tuple[int, keras.callbacks.EarlyStopping, int]:
    """Epochs run, the callback, and the epoch whose weights the model ends with."""
    model = _tiny_model()
    record = _WeightsPerEpoch()
    stopping = keras.callbacks.EarlyStopping(monitor="fake", mode="min", restore_best_weights=True, **options)
    history = model.fit(_X, _Y, epochs=len(values), verbose=0, callbacks=[_Inject("fake", values), record, stopping])
    final = model.get_weights()
    restored = [i for i, weights in enumerate(record.weights) if _same(weights, final)]
    assert len(restored) == 1
    return len(history.history["loss"]), stopping, restored[0]


def test_baseline_never_met_still_restores_the_best_epoch_seen():
    # Keras 3: best starts at +inf; each epoch improves on the last (so training goes on), none
    # beats the baseline (so the patience is never reset), and the best epoch is the last.
    epochs, stopping, restored = _early_stopping_run([0.9, 0.8, 0.7, 0.6], baseline=0.5, patience=2)
    assert (epochs, stopping.best, stopping.best_epoch, restored) == (4, 0.6, 3, 3)


def test_baseline_stops_after_patience_without_improvement():
    # Epoch 0 improves on +inf but not on the baseline (wait 1); epoch 1 improves on nothing
    # (wait 2 = patience): stop, and restore epoch 0, the best seen.
    epochs, stopping, restored = _early_stopping_run([0.9, 0.95, 0.97, 0.99], baseline=0.5, patience=2)
    assert (epochs, stopping.best, stopping.stopped_epoch, restored) == (2, 0.9, 1, 0)


def test_baseline_beaten_resets_the_patience():
    epochs, stopping, restored = _early_stopping_run([0.4, 0.45, 0.3, 0.5, 0.6, 0.7], baseline=0.5, patience=2)
    assert (epochs, stopping.best_epoch, stopping.stopped_epoch, restored) == (5, 2, 4, 2)


# Losses ----------------------------------------------------------------------------------


def _log_cosh(d: np.ndarray) -> np.ndarray:
    return np.logaddexp(d, -d) - math.log(2.0)  # log(cosh d), in float64, without overflow


def test_log_cosh_is_finite_far_from_the_target_with_tanh_as_gradient():
    y_true = np.zeros((1, 6), np.float32)
    y_pred = np.array([[-100.0, -3.0, -1e-3, 0.0, 2.0, 100.0]], np.float32)
    value = keras.losses.LogCosh()(y_true, y_pred)
    expected = _log_cosh(y_pred.astype(np.float64)).mean()
    # Terms of order 100 rounded a few times in float32.
    assert float(value.numpy()) == pytest.approx(expected, rel=8 * F32)

    prediction = braze.Variable(y_pred)
    with braze.GradientTape() as tape:
        loss = keras.losses.LogCosh()(y_true, prediction)
    gradient = tape.gradient(loss, prediction).numpy()
    np.testing.assert_allclose(gradient, np.tanh(y_pred.astype(np.float64)) / 6, rtol=8 * F32, atol=F32 / 6)


def test_log_cosh_training_stays_finite_when_the_prediction_is_far_below():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((1,)), layers.Dense(1)])
    model.compile("sgd", keras.losses.LogCosh())
    history = model.fit(np.ones((4, 1), np.float32), np.full((4, 1), 100.0, np.float32), epochs=2, verbose=0)
    assert all(np.isfinite(history.history["loss"]))
    assert all(np.isfinite(w).all() for w in model.get_weights())


def _keras_crossentropy(one_hot: np.ndarray, probabilities: np.ndarray) -> np.ndarray:
    """Keras's, from_logits=False: rescaled to sum to 1 over the classes, then clipped."""
    p = probabilities / probabilities.sum(-1, keepdims=True)
    return -(one_hot * np.log(np.clip(p, 1e-7, 1 - 1e-7))).sum(-1)


def test_categorical_crossentropies_rescale_probabilities_before_clipping():
    rng = np.random.default_rng(0)
    scores = rng.uniform(0.1, 2.0, (6, 3)).astype(np.float32)
    scores[0] = [0.0, 2.0, 2.0]  # the label's probability 0: clipped after the rescaling
    labels = np.array([0, 1, 2, 0, 1, 2])
    expected = _keras_crossentropy(np.eye(3)[labels], scores.astype(np.float64))
    reduction = {"reduction": "none"}
    got = {
        "categorical": keras.losses.CategoricalCrossentropy(**reduction)(np.eye(3)[labels], scores),
        "sparse": keras.losses.SparseCategoricalCrossentropy(**reduction)(labels, scores),
    }
    for name, value in got.items():
        np.testing.assert_allclose(value.numpy(), expected, rtol=8 * F32, err_msg=name)
    metric = keras.metrics.CategoricalCrossentropy()
    metric.update_state(np.eye(3)[labels], scores)
    assert float(metric.result().numpy()) == pytest.approx(expected.mean(), rel=8 * F32)


# trainable ---------------------------------------------------------------------------------


def _nested_batch_norm():
    keras.utils.set_random_seed(0)
    inner_input = keras.Input((4,))
    norm = layers.BatchNormalization()
    inner = keras.Model(inner_input, norm(layers.Dense(3)(inner_input)), name="inner")
    outer_input = keras.Input((4,))
    model = keras.Model(outer_input, layers.Dense(1, name="head")(inner(outer_input)))
    return model, inner, norm


_RNG = np.random.default_rng(0)
_XS = (_RNG.standard_normal((32, 4)) * 3 + 2).astype(np.float32)  # far from the initial statistics
_YS = _RNG.standard_normal((32, 1)).astype(np.float32)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_a_frozen_model_freezes_its_layers_batch_norm_statistics_included(jit_compile):
    model, inner, norm = _nested_batch_norm()
    inner.trainable = False
    assert norm.trainable is False and all(not layer.trainable for layer in inner.layers)
    before = [w.copy() for w in inner.get_weights()]
    head = model.get_layer("head").get_weights()[0].copy()
    model.compile("adam", "mse", jit_compile=jit_compile)
    model.fit(_XS, _YS, epochs=2, verbose=0)
    assert _same(before, inner.get_weights())
    assert not np.array_equal(head, model.get_layer("head").get_weights()[0])


@pytest.mark.parametrize("jit_compile", [False, True])
def test_freezing_after_a_compiled_fit_takes_effect_as_when_eager(jit_compile):
    model, inner, _ = _nested_batch_norm()
    model.compile("adam", "mse", jit_compile=jit_compile)
    model.fit(_XS, _YS, epochs=1, verbose=0)
    inner.trainable = False
    before = [w.copy() for w in inner.get_weights()]
    model.fit(_XS, _YS, epochs=1, verbose=0)
    assert _same(before, inner.get_weights())


def test_unfreezing_a_model_unfreezes_its_layers():
    model, inner, norm = _nested_batch_norm()
    model.trainable = False
    model.trainable = True
    assert norm.trainable and inner.trainable
    moving_mean = norm.get_weights()[2].copy()
    model.compile("adam", "mse")
    model.fit(_XS, _YS, epochs=1, verbose=0)
    assert not np.array_equal(moving_mean, norm.get_weights()[2])


def test_saving_keeps_each_layers_own_flag(tmp_path):
    model, inner, norm = _nested_batch_norm()
    inner.trainable = False
    inner.layers[1].trainable = True  # the Dense inside the frozen model, unfrozen again
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")

    def flags_of(model):  # of the layers with weights (an input has nothing to train)
        return {layer.name: layer.trainable for layer in model.layers if layer.weights}

    flags = flags_of(loaded.get_layer("inner"))
    assert loaded.trainable and not loaded.get_layer("inner").trainable
    assert flags == flags_of(inner)
    assert flags[norm.name] is False and flags[inner.layers[1].name] is True


# Sample weights per output, and class weights ---------------------------------------------


def _two_outputs():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((3,))
    model = keras.Model(inputs, [layers.Dense(1, name="o1")(inputs), layers.Dense(1, name="o2")(inputs)])
    model.compile("sgd", loss=["mse", "mse"])
    return model


_X3 = _RNG.standard_normal((8, 3)).astype(np.float32)
_Y1 = _RNG.standard_normal((8, 1)).astype(np.float32)
_W = _RNG.uniform(0.0, 2.0, 8).astype(np.float32)


@pytest.mark.parametrize("by_name", [False, True])
def test_array_inputs_take_sample_weights_per_output(by_name):
    model = _two_outputs()
    first, _ = model.predict(_X3, verbose=0)
    weights = {"o1": _W, "o2": np.zeros(8, np.float32)} if by_name else [_W, np.zeros(8, np.float32)]
    logs = model.evaluate(_X3, [_Y1, _Y1], sample_weight=weights, batch_size=8, verbose=0, return_dict=True)
    expected = float((_W * (first[:, 0] - _Y1[:, 0]) ** 2).sum() / 8)  # Keras's sum over the batch size
    assert logs["o1_loss"] == pytest.approx(expected, rel=16 * F32)
    assert logs["o2_loss"] == 0.0 and logs["loss"] == pytest.approx(expected, rel=16 * F32)
    history = model.fit(_X3, [_Y1, _Y1], sample_weight=weights, validation_split=0.25, verbose=0).history
    assert np.isfinite(history["val_loss"]).all()


def test_a_per_output_weight_of_the_wrong_length_is_named():
    model = _two_outputs()
    short = np.ones(7, np.float32)
    with pytest.raises(ValueError, match=r"x has 8 samples but sample_weight\['o2'\] has 7"):
        model.evaluate(_X3, [_Y1, _Y1], sample_weight={"o1": np.ones(8), "o2": short}, verbose=0)
    with pytest.raises(ValueError, match=r"x has 8 samples but sample_weight\[1\] has 7"):
        model.fit(_X3, [_Y1, _Y1], sample_weight=[np.ones(8), short], verbose=0)


def test_class_weight_rounds_float_labels():
    labels = np.array([0.9999999, 0.0, 1.0, 0.0000001, 1.4, 1.6], np.float32)
    weights = adapters.class_weights({0: 1.0, 1: 5.0, 2: 7.0}, labels)
    np.testing.assert_array_equal(weights, [5.0, 1.0, 5.0, 1.0, 5.0, 7.0])


# compile: one output --------------------------------------------------------------------------


def _one_output():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((4,)), layers.Dense(1, name="out")])


_X4 = _RNG.standard_normal((16, 4)).astype(np.float32)
_T = _RNG.standard_normal((16, 1)).astype(np.float32)


@pytest.mark.parametrize(
    ("options", "scale"),
    [
        ({"loss": ["mse"]}, 1.0),
        ({"loss": "mse", "loss_weights": [0.5]}, 0.5),
        ({"loss": {"out": "mse"}, "loss_weights": {"out": 0.5}}, 0.5),
        ({"loss": {"output": "mse"}}, 1.0),  # braze's former name of the output, still read
    ],
)
def test_a_single_output_takes_lists_and_dicts_of_one(options, scale):
    model = _one_output()
    model.compile("sgd", **options)
    mse = float(((model.predict(_X4, verbose=0) - _T) ** 2).mean())
    assert model.evaluate(_X4, _T, batch_size=16, verbose=0) == pytest.approx(scale * mse, rel=16 * F32)


def test_a_sequential_output_is_named_after_its_last_layer():
    assert _one_output().output_names == ["out"]


def test_loss_weights_of_the_wrong_length_say_so():
    model = _one_output()
    with pytest.raises(ValueError, match=r"2 loss_weights for a model with 1 output"):
        model.compile("sgd", loss="mse", loss_weights=[0.5, 1.0])


# keras.ops ---------------------------------------------------------------------------------


_A = np.linspace(-3.0, 3.0, 12, dtype=np.float32).reshape(3, 4)


def _exact_gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def test_ops_gelu_defaults_to_the_tanh_approximation_and_activations_to_erf():
    x = _A.astype(np.float64)
    approximate = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    tolerance = {"rtol": 8 * F32, "atol": 8 * F32}  # values of order 1; the two forms differ by ~1e-3
    np.testing.assert_allclose(ops.gelu(_A).numpy(), approximate, **tolerance)
    np.testing.assert_allclose(ops.gelu(_A, approximate=False).numpy(), _exact_gelu(x), **tolerance)
    np.testing.assert_allclose(keras.activations.gelu(ops.convert_to_tensor(_A)).numpy(), _exact_gelu(x), **tolerance)


def test_a_graph_saved_with_the_former_exact_default_loads_exact(tmp_path):
    inputs = keras.Input((4,))
    keras.Model(inputs, ops.gelu(inputs, approximate=False)).save(tmp_path / "new.keras")
    # braze wrote a keras.ops.gelu node without its argument when its default was exact.
    with zipfile.ZipFile(tmp_path / "new.keras") as new, zipfile.ZipFile(tmp_path / "old.keras", "w") as old:
        for member in new.namelist():
            data = new.read(member)
            if member == "config.json":
                config = json.loads(data)
                node = config["model"]["functional"]["nodes"][0]
                assert node == {**node, "op": "gelu", "kwargs": {"approximate": False}}
                node["kwargs"] = {}
                data = json.dumps(config).encode()
            old.writestr(member, data)
    loaded = keras.models.load_model(tmp_path / "old.keras")
    got = loaded.predict(_A, verbose=0)
    np.testing.assert_allclose(got, _exact_gelu(_A.astype(np.float64)), rtol=8 * F32, atol=8 * F32)


@pytest.mark.parametrize(
    ("mode", "pad_width", "options"),
    [
        ("reflect", ((1, 2), (3, 0)), {}),
        ("symmetric", ((2, 3), (0, 4)), {}),
        ("constant", ((1, 1), (2, 0)), {"constant_values": 3.5}),
    ],
)
def test_ops_pad_modes_match_numpy(mode, pad_width, options):
    expected = np.pad(_A, pad_width, mode=mode, **options)
    np.testing.assert_array_equal(ops.pad(_A, pad_width, mode=mode, **options).numpy(), expected)
    symbolic = ops.pad(keras.Input((3, 4)), ((0, 0), *pad_width), mode=mode, **options)
    assert tuple(symbolic.shape[1:]) == expected.shape


def test_ops_pad_refuses_a_reflection_longer_than_the_axis():
    with pytest.raises(ValueError, match="reflect padding"):
        ops.pad(_A, ((3, 0), (0, 0)), mode="reflect")


@pytest.mark.parametrize("axis", [(0, 3), (-1, 0), (1, 2), 1])
def test_ops_expand_dims_takes_a_tuple_of_axes(axis):
    np.testing.assert_array_equal(ops.expand_dims(_A, axis).numpy(), np.expand_dims(_A, axis))


def test_added_ops_match_numpy():
    wide = (_A * 4).astype(np.float32)
    ints, divisors = np.array([-7, 7, -8, 9]), np.array([2, 2, -3, -4])
    cases = {
        "tril": (ops.tril(_A, k=-1), np.tril(_A, -1)),
        "triu": (ops.triu(_A, k=1), np.triu(_A, 1)),
        "mod": (ops.mod(_A, np.float32(-1.25)), np.mod(_A, np.float32(-1.25))),
        "floor_divide": (ops.floor_divide(ints, divisors), np.floor_divide(ints, divisors)),
        "relu6": (ops.relu6(wide), np.clip(wide, 0, 6)),
        "hard_sigmoid": (ops.hard_sigmoid(wide), np.clip(wide / 6 + 0.5, 0, 1)),
        "log_sigmoid": (ops.log_sigmoid(wide * 10), -np.logaddexp(0.0, -(wide * 10.0).astype(np.float64))),
        "cumprod": (ops.cumprod(_A, axis=1), np.cumprod(_A.astype(np.float64), 1)),
        "isclose": (ops.isclose(_A, _A + 1e-9 * (_A != 0)), np.isclose(_A, _A + 1e-9 * (_A != 0))),
    }
    for name, (got, expected) in cases.items():
        # Each a few float32 roundings of values of order up to 120.
        np.testing.assert_allclose(got.numpy(), expected, rtol=8 * F32, atol=8 * F32, err_msg=name)


@pytest.mark.parametrize("metric", ["cosine_similarity", "CosineSimilarity"])
def test_the_cosine_similarity_metric_is_the_cosine_and_rises(metric):
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((12, 3)).astype(np.float32), rng.standard_normal((12, 2)).astype(np.float32)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), layers.Dense(2)])
    spec = metric if metric == "cosine_similarity" else keras.metrics.CosineSimilarity()
    model.compile("sgd", "mse", metrics=[spec])
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    p = model.predict(x, verbose=0).astype(np.float64)
    cosines = (p * y).sum(1) / np.linalg.norm(p, axis=1) / np.linalg.norm(y, axis=1)
    assert logs["cosine_similarity"] == pytest.approx(cosines.mean(), abs=1e-5)
    assert auto_mode("val_cosine_similarity", model) == "max"
