"""A training loop written from scratch (after Keras's guide "Writing a training loop
from scratch"): a custom layer, a subclassed model, tf.data, GradientTape, an optimizer's
apply_gradients and metrics, in tf.function steps."""

import braze as tf
import braze.keras as keras

keras.utils.set_random_seed(3)


class Linear(keras.layers.Layer):
    def __init__(self, units=32, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer="random_normal", trainable=True)
        self.b = self.add_weight(shape=(self.units,), initializer="zeros", trainable=True)

    def call(self, inputs):
        return tf.matmul(inputs, self.w) + self.b


class MLP(keras.Model):
    def __init__(self):
        super().__init__()
        self.linear_1 = Linear(32)
        self.linear_2 = Linear(10)

    def call(self, inputs):
        x = self.linear_1(inputs)
        x = tf.nn.relu(x)
        return self.linear_2(x)


model = MLP()
optimizer = keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
train_acc_metric = keras.metrics.SparseCategoricalAccuracy()
val_acc_metric = keras.metrics.SparseCategoricalAccuracy()

(x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
x_train = x_train[:512].reshape(-1, 784).astype("float32") / 255
y_train = y_train[:512]
x_val = x_test[:128].reshape(-1, 784).astype("float32") / 255
y_val = y_test[:128]

train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
train_dataset = train_dataset.shuffle(buffer_size=1024, seed=0).batch(64)
val_dataset = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(64)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss_value = loss_fn(y, logits)
    grads = tape.gradient(loss_value, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights))
    train_acc_metric.update_state(y, logits)
    return loss_value


@tf.function
def test_step(x, y):
    val_logits = model(x, training=False)
    val_acc_metric.update_state(y, val_logits)


losses, train_accuracies, val_accuracies = [], [], []
for epoch in range(2):
    for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
        loss_value = train_step(x_batch_train, y_batch_train)
        losses.append(float(loss_value))
    train_accuracies.append(float(train_acc_metric.result()))
    train_acc_metric.reset_state()
    for x_batch_val, y_batch_val in val_dataset:
        test_step(x_batch_val, y_batch_val)
    val_accuracies.append(float(val_acc_metric.result()))
    val_acc_metric.reset_state()
    print(f"epoch {epoch}: loss {losses[-1]:.4f}, accuracy {train_accuracies[-1]:.4f}, val {val_accuracies[-1]:.4f}")
