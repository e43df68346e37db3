"""Keras's fit/evaluate/predict as Keras users call them, against hand-written loops and
NumPy: arrays, (x, y) pairs, loaders, generators, validation, steps and shuffling."""

from __future__ import annotations

import numpy as np
import pytest

import braze
from braze.data import DataLoader
from braze.nn import Callback, Dense, Sequential, binary_cross_entropy
from braze.optim import Adam

N, FEATURES = 70, 5  # 70 = 4 batches of 16 and a last one of 6


def data(n: int = N, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, FEATURES)).astype(np.float32)
    y = (x[:, 0] - 0.5 * x[:, 1] > 0).astype(np.float32)[:, None]  # (N, 1), as Keras users have them
    return x, y


def model(seed: int = 0) -> Sequential:
    return Sequential(
        Dense(8, activation="relu", input_dim=FEATURES, generator=braze.Generator(seed)),
        Dense(1, activation="sigmoid", generator=braze.Generator(seed + 1)),
    )


def compiled(seed: int = 0, **options) -> Sequential:
    net = model(seed)
    net.compile(loss="binary_crossentropy", optimizer=Adam(lr=0.01), metrics=["accuracy"], **options)
    return net


def numpy_forward(net: Sequential, x: np.ndarray) -> np.ndarray:
    w1, b1, w2, b2 = (p.numpy().astype(np.float64) for p in net.parameters())
    hidden = np.maximum(x @ w1 + b1, 0)
    return 1 / (1 + np.exp(-(hidden @ w2 + b2)))


def numpy_bce(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def test_fit_on_numpy_arrays_matches_a_hand_written_loop():
    x, y = data()
    net = compiled()
    history = net.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0).history

    reference = model()
    optimizer = Adam(reference, lr=0.01)
    losses = []
    for _ in range(3):
        total = 0.0
        for start in range(0, N, 16):
            xb, yb = braze.tensor(x[start : start + 16]), braze.tensor(y[start : start + 16])
            optimizer.zero_grad()
            loss = binary_cross_entropy(reference(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(xb)  # Keras's epoch loss weighs each batch by its size
        losses.append(total / N)
    for got, expected in zip(net.parameters(), reference.parameters(), strict=True):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(history["loss"], losses, rtol=1e-6)
    assert history["loss"][-1] < history["loss"][0]


def test_the_same_data_in_every_form_trains_the_same():
    x, y = data()
    forms = {
        "arrays": lambda net: net.fit(x, y, batch_size=16, shuffle=False, verbose=0),
        "tensors": lambda net: net.fit(braze.tensor(x), braze.tensor(y), batch_size=16, shuffle=False, verbose=0),
        "pair": lambda net: net.fit((x, y), batch_size=16, shuffle=False, verbose=0),
        "loader": lambda net: net.fit(DataLoader((x, y), 16), verbose=0),
        "list": lambda net: net.fit([(x[i : i + 16], y[i : i + 16]) for i in range(0, N, 16)], verbose=0),
        "generator": lambda net: net.fit(((x[i : i + 16], y[i : i + 16]) for i in range(0, N, 16)), verbose=0),
    }
    weights = {}
    for name, fit in forms.items():
        net = compiled()
        fit(net)
        weights[name] = [p.numpy() for p in net.parameters()]
    for name, got in weights.items():
        for a, b in zip(got, weights["arrays"], strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-6, err_msg=name)


def test_shuffling_draws_from_braze_default_generator():
    x, y = data()
    runs = []
    for _ in range(2):
        braze.manual_seed(7)
        net = compiled()
        net.fit(x, y, batch_size=16, epochs=2, verbose=0)
        runs.append(np.concatenate([p.numpy().ravel() for p in net.parameters()]))
    unshuffled = compiled()
    unshuffled.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.allclose(runs[0], np.concatenate([p.numpy().ravel() for p in unshuffled.parameters()]))


def test_evaluate_and_predict_match_numpy():
    x, y = data()
    net = compiled()
    net.fit(x, y, epochs=2, verbose=0)
    probabilities = numpy_forward(net, x)
    predicted = net.predict(x, batch_size=32)
    assert isinstance(predicted, np.ndarray) and predicted.shape == (N, 1)
    np.testing.assert_allclose(predicted, probabilities, rtol=1e-5, atol=1e-6)
    loss, accuracy = net.evaluate(x, y, batch_size=N, verbose=0)
    assert loss == pytest.approx(numpy_bce(probabilities, y), rel=1e-5)
    assert accuracy == pytest.approx(np.mean((probabilities > 0.5) == (y > 0.5)))
    assert net.evaluate(x, y, verbose=0, return_dict=True) == pytest.approx({"loss": loss, "accuracy": accuracy})
    np.testing.assert_allclose(net.predict(DataLoader((x, y), 16)), predicted, rtol=1e-6)


def test_validation_split_holds_out_the_last_samples():
    x, y = data()
    net = compiled()
    history = net.fit(x, y, batch_size=16, epochs=1, validation_split=0.2, shuffle=False, verbose=0).history
    held_out = slice(56, None)  # int(70 * 0.8) = 56, as Keras cuts
    assert history["val_loss"][0] == pytest.approx(numpy_bce(numpy_forward(net, x[held_out]), y[held_out]), rel=1e-5)
    trained_on_56 = compiled()
    trained_on_56.fit(x[:56], y[:56], batch_size=16, shuffle=False, verbose=0)
    for a, b in zip(net.parameters(), trained_on_56.parameters(), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=1e-6)


class BatchCounter(Callback):
    def on_train_begin(self, logs=None):
        self.per_epoch = []

    def on_epoch_begin(self, epoch, logs=None):
        self.per_epoch.append(0)

    def on_train_batch_end(self, batch, logs=None):
        self.per_epoch[-1] += 1


def test_fit_generator_takes_steps_per_epoch_as_keras_does():
    x, y = data()
    counter = BatchCounter()
    # A loader's pass goes on from epoch to epoch, 2 of its 5 batches each, and starts over
    # once it is spent, so that every epoch takes its steps (tf.keras 2's count; Keras 3
    # ends the third epoch after 1, warning that the data ran out); validation takes its
    # first batch every epoch.
    net = compiled()
    history = net.fit_generator(
        DataLoader((x, y), 16),
        steps_per_epoch=2,
        epochs=3,
        validation_data=DataLoader((x, y), 16),
        validation_steps=1,
        callbacks=[counter],
        verbose=0,
    ).history
    assert counter.per_epoch == [2, 2, 2] and len(history["val_loss"]) == 3
    # A generator continues where the last epoch stopped; when it runs out, training stops.
    batches = ((x[i : i + 16], y[i : i + 16]) for i in range(0, N, 16))
    with pytest.warns(UserWarning, match="the training data ran out at epoch 4; training stops"):
        history = compiled().fit(batches, steps_per_epoch=2, epochs=5, callbacks=[counter], verbose=0)
    assert counter.per_epoch == [2, 2, 1, 0] and history.epoch == [0, 1, 2]


class Passes:
    """Batches that note the index of each one taken."""

    def __init__(self, batches):
        self.batches, self.taken = batches, []

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        for i, batch in enumerate(self.batches):
            self.taken.append(i)
            yield batch


def test_steps_per_epoch_go_on_with_the_pass_and_start_it_over_once_spent():
    x, y = data()
    batches = Passes([(x[i : i + 16], y[i : i + 16]) for i in range(0, 80, 16)])
    compiled().fit(batches, steps_per_epoch=2, epochs=4, verbose=0)
    assert batches.taken == [0, 1, 2, 3, 4, 0, 1, 2]
    whole = Passes(batches.batches)
    compiled().fit(whole, epochs=2, verbose=0)  # without steps, a pass an epoch
    assert whole.taken == [0, 1, 2, 3, 4] * 2


def test_initial_epoch_and_epoch_numbers():
    x, y = data()
    history = compiled().fit(x, y, epochs=4, initial_epoch=2, verbose=0)
    assert history.epoch == [2, 3] and len(history.history["loss"]) == 2


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda net, x, y: net.fit(x, verbose=0), "x is an array of inputs but y"),
        (lambda net, x, y: net.fit(x, y[:10], verbose=0), "x has 70 samples but y has 10"),
        (lambda net, x, y: net.fit(DataLoader((x, y), 8), y, verbose=0), "y must not be given"),
        (lambda net, x, y: net.fit([(x, y, y, y)], verbose=0), r"got a 4-tuple"),
        (lambda net, x, y: net.fit(x, y, validation_split=1.5, verbose=0), r"validation_split must be in \[0, 1\)"),
        (lambda net, x, y: net.evaluate(verbose=0), "evaluate: no data"),
        (lambda net, x, y: net.evaluate(iter([]), verbose=0), "evaluate: the data yielded no batches"),
        (lambda net, x, y: net.fit(x, y, steps_per_epoch=0, verbose=0), "fit: steps must be at least 1"),
    ],
)
def test_bad_input_is_a_clear_error(call, message):
    x, y = data()
    with pytest.raises(ValueError, match=message):
        call(compiled(), x, y)


def test_fit_with_jit_compile_and_set_jit_matches_eager():
    x, y = data()
    eager = compiled()
    eager.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    jitted = compiled(jit_compile=True)
    jitted.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    braze.config.optimizer.set_jit(True)
    try:
        lazy = compiled()
        lazy.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    finally:
        braze.config.optimizer.set_jit(False)
    assert lazy.device == braze.LAZY_CPU
    for other in (jitted, lazy):
        for a, b in zip(other.parameters(), eager.parameters(), strict=True):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(other.predict(x), eager.predict(x), rtol=1e-4, atol=1e-5)
        expected = eager.evaluate(x, y, verbose=0)
        np.testing.assert_allclose(other.evaluate(x, y, verbose=0), expected, rtol=1e-4, atol=1e-5)


def test_fit_with_a_schedule_and_dropout_matches_eager_under_jit_compile_and_set_jit():
    from braze.keras.optimizers.schedules import CosineDecay

    x, y = data()

    def fitted(**options):
        g = braze.Generator(0)
        net = Sequential(
            Dense(8, activation="relu", input_dim=FEATURES, generator=g),
            braze.nn.Dropout(0.3, seed=5),
            Dense(1, activation="sigmoid", generator=g),
        )
        schedule = CosineDecay(0.0, 8, warmup_target=0.05, warmup_steps=3)
        net.compile(loss="binary_crossentropy", optimizer=Adam(lr=schedule), **options)
        net.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        return net

    eager = fitted()
    jitted = fitted(jit_compile=True)
    braze.config.set_jit(True)
    try:
        lazy = fitted()
    finally:
        braze.config.set_jit(False)
    for other in (jitted, lazy):
        for a, b in zip(other.parameters(), eager.parameters(), strict=True):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)
    # One step graph per batch size (16, and the last batch's 6), whatever the learning rate and masks.
    assert jitted._trainer.train_function.compiles == 2


def test_a_sequential_model_casts_boolean_and_integer_inputs_to_its_input_dtype():
    from braze import keras
    from braze.keras import layers

    model = keras.Sequential([keras.Input((3,)), layers.Dense(2)])
    flags = np.array([[True, False, True], [False, False, True]])
    np.testing.assert_array_equal(model.predict(flags, verbose=0), model.predict(flags.astype("float32"), verbose=0))
    model.compile(optimizer="sgd", loss="mse")
    assert np.isfinite(model.fit(flags, flags[:, :2], verbose=0).history["loss"][0])
    tokens = keras.Sequential([keras.Input((2,), dtype="int32"), layers.Embedding(5, 2)])
    assert tokens.predict(np.array([[1.0, 4.0]]), verbose=0).shape == (1, 2, 2)


def test_one_target_goes_to_the_one_output_with_a_loss_as_in_keras():
    from braze import keras
    from braze.keras import layers

    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,))
    hidden = layers.Dense(3, name="hidden")(inputs)
    logits = layers.Dense(2, name="logits")(hidden)
    model = keras.Model(inputs, [logits, hidden])  # keras-io's miniature GPT returns its features too
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile("adam", loss=[loss, None])
    x = np.random.default_rng(1).normal(size=(8, 4)).astype("float32")
    y = np.array([0, 1, 1, 0, 1, 0, 0, 1])
    predicted, _ = model.predict(x, verbose=0)
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), float(loss(y, predicted)), rtol=1e-5)
    assert sorted(model.fit(x, y, verbose=0).history) == ["loss"]
    with pytest.raises(ValueError, match="one target for a model with 2 outputs"):
        model.compile("adam", loss=[loss, loss])
        model.fit(x, y, verbose=0)


def test_tensors_a_step_makes_without_a_device_are_made_on_the_models():
    from braze import keras
    from braze.keras import layers

    class Noisy(keras.Model):  # a GAN's step draws its noise without naming a device
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(1)

        def call(self, x):
            return self.dense(x + braze.randn(x.shape))

    model = Noisy()
    model(np.ones((1, 2), "float32"))
    model.to(braze.LAZY_CPU)  # the default device stays the eager CPU
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((4, 2), "float32"), np.zeros((4, 1), "float32")
    assert np.isfinite(model.fit(x, y, verbose=0).history["loss"][0])
    assert braze.default_device() == braze.CPU
