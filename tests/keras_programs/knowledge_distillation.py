"""Knowledge distillation (after keras-io's vision/knowledge_distillation.py): a Distiller
model with its own compile signature and a compute_loss override written before Keras 3.3
gave it a training argument, a teacher and a student, and a student trained from scratch
by clone_model for comparison; MNIST from the shipped files."""

import numpy as np

import braze.keras as keras
from braze.keras import layers, ops

keras.utils.set_random_seed(1)


class Distiller(keras.Model):
    def __init__(self, student, teacher):
        super().__init__()
        self.teacher = teacher
        self.student = student

    def compile(self, optimizer, metrics, student_loss_fn, distillation_loss_fn, alpha=0.1, temperature=3):
        super().compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn = student_loss_fn
        self.distillation_loss_fn = distillation_loss_fn
        self.alpha = alpha
        self.temperature = temperature

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, allow_empty=False):
        teacher_pred = self.teacher(x, training=False)
        student_loss = self.student_loss_fn(y, y_pred)
        distillation_loss = self.distillation_loss_fn(
            ops.softmax(teacher_pred / self.temperature, axis=1),
            ops.softmax(y_pred / self.temperature, axis=1),
        ) * (self.temperature**2)
        loss = self.alpha * student_loss + (1 - self.alpha) * distillation_loss
        return loss

    def call(self, x):
        return self.student(x)


def small_convnet(name, first, second):
    return keras.Sequential(
        [
            keras.Input(shape=(28, 28, 1)),
            layers.Conv2D(first, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.MaxPooling2D(pool_size=(2, 2), strides=(1, 1), padding="same"),
            layers.Conv2D(second, (3, 3), strides=(2, 2), padding="same"),
            layers.Flatten(),
            layers.Dense(10),
        ],
        name=name,
    )


teacher = small_convnet("teacher", 16, 32)
student = small_convnet("student", 4, 8)
student_scratch = keras.models.clone_model(student)

batch_size = 64
(x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
x_train = np.reshape(x_train[:512].astype("float32") / 255.0, (-1, 28, 28, 1))
y_train = y_train[:512]
x_test = np.reshape(x_test[:128].astype("float32") / 255.0, (-1, 28, 28, 1))
y_test = y_test[:128]

teacher.compile(
    optimizer=keras.optimizers.Adam(),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)
teacher.fit(x_train, y_train, epochs=2, batch_size=batch_size, verbose=0)
teacher_loss, teacher_accuracy = teacher.evaluate(x_test, y_test, verbose=0)

distiller = Distiller(student=student, teacher=teacher)
distiller.compile(
    optimizer=keras.optimizers.Adam(),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
    student_loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    distillation_loss_fn=keras.losses.KLDivergence(),
    alpha=0.1,
    temperature=10,
)
history = distiller.fit(x_train, y_train, epochs=2, batch_size=batch_size, verbose=0)
distilled_loss, distilled_accuracy = distiller.evaluate(x_test, y_test, verbose=0)

student_scratch.compile(
    optimizer=keras.optimizers.Adam(),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)
scratch_history = student_scratch.fit(x_train, y_train, epochs=2, batch_size=batch_size, verbose=0)
