"""Run under ``mpiexec -n 2``: Keras-style ``fit`` on a sharded image folder whose last
batch has a single image (rank 0's alone), so rank 0 has one batch more than rank 1;
prints each rank's batch count and the steps it took without ``steps_per_epoch`` and with
one larger than rank 1's batches, whether a generator without ``steps_per_epoch`` is
refused, that rank 0 can evaluate alone, and the epochs run when a callback stops rank 0
only. Usage: run_uneven_fit.py TRAIN_FOLDER"""

import sys

import braze.distributed as dist
from braze.data import ImageFolder
from braze.nn import Callback, Dense, Flatten, Sequential, binary_cross_entropy
from braze.optim import SGD


class Steps(Callback):
    taken = 0

    def on_train_batch_end(self, batch, logs=None):
        Steps.taken += 1


class StopRankZero(Callback):
    def on_epoch_end(self, epoch, logs=None):
        if dist.rank() == 0:
            self.model.stop_training = True


dist.init()
rank = dist.rank()
images = ImageFolder(sys.argv[1], (8, 8), "binary", batch_size=4, shuffle=False, rescale=1 / 255, shard=True)
model = Sequential(Flatten(), Dense(1, activation="sigmoid", input_dim=8 * 8 * 3))
model.compile(loss=binary_cross_entropy, optimizer=dist.DistributedOptimizer(SGD(lr=0.1)))
for steps in (None, 2):
    Steps.taken = 0
    model.fit(images, epochs=1, verbose=0, steps_per_epoch=steps, callbacks=[Steps()])
    print(f"rank {rank}: {len(images)} batches, steps_per_epoch {steps}: {Steps.taken} steps", flush=True)
try:
    model.fit((batch for batch in images), epochs=1, verbose=0)
except ValueError as error:
    print(f"rank {rank}: refused: {error}", flush=True)
if rank == 0:
    whole = ImageFolder(sys.argv[1], (8, 8), "binary", batch_size=8, shuffle=False, rescale=1 / 255)
    print(f"rank 0 evaluated alone: {model.evaluate(whole, verbose=0):.4f}", flush=True)
history = model.fit(images, epochs=3, verbose=0, callbacks=[StopRankZero()])
print(f"rank {rank}: {len(history.history['loss'])} epochs", flush=True)
