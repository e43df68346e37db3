"""ResNet-20 in TensorFlow as TensorFlow users write it: a Keras functional model, a
GradientTape step and Keras's SGD with momentum (its velocity form takes the same steps as
PyTorch's at a constant learning rate), with the shared initial weights loaded."""

from __future__ import annotations

from .common import BN_EPS, BN_MOMENTUM, RESNET_CLASSES, RESNET_STAGES, resnet_blocks, resnet_params, workload


def resnet20_step(tf):
    """The Keras model, the step function to wrap (eager, tf.function, XLA), its variables."""
    import keras
    from keras import layers

    params = resnet_params()
    w = workload("resnet")
    assigned: list[tuple[layers.Layer, str]] = []

    def conv_bn(x, name, filters, size, stride):
        conv = layers.Conv2D(filters, size, strides=stride, padding="same", use_bias=False)
        assigned.append((conv, name))
        return layers.BatchNormalization(epsilon=BN_EPS, momentum=BN_MOMENTUM)(conv(x))

    inputs = keras.Input(shape=w.image)
    x = layers.ReLU()(conv_bn(inputs, "stem", RESNET_STAGES[0], 3, 1))
    for i, (c_in, c_out, stride) in enumerate(resnet_blocks()):
        out = layers.ReLU()(conv_bn(x, f"block{i}.conv1", c_out, 3, stride))
        out = conv_bn(out, f"block{i}.conv2", c_out, 3, 1)
        if stride != 1 or c_in != c_out:
            x = conv_bn(x, f"block{i}.projection", c_out, 1, stride)
        x = layers.ReLU()(layers.Add()([out, x]))
    dense = layers.Dense(RESNET_CLASSES)
    model = keras.Model(inputs, dense(layers.GlobalAveragePooling2D()(x)))
    for layer, name in assigned:
        layer.kernel.assign(params[name])
    dense.kernel.assign(params["dense.kernel"])
    dense.bias.assign(params["dense.bias"])

    optimizer = keras.optimizers.SGD(learning_rate=w.lr, momentum=w.momentum)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return train_step
