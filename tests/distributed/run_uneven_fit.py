"""Run under ``mpiexec -n 2``: Keras-style ``fit`` without ``steps_per_epoch`` on a sharded
image folder whose last batch has a single image (rank 0's alone), so rank 0 has one
batch more than rank 1; prints each rank's batch count and the steps it took.
Usage: run_uneven_fit.py TRAIN_FOLDER"""

import sys

import braze.distributed as dist
from braze.data import ImageFolder
from braze.nn import Callback, Dense, Flatten, Sequential, binary_cross_entropy
from braze.optim import SGD


class Steps(Callback):
    taken = 0

    def on_train_batch_end(self, batch, logs=None):
        Steps.taken += 1


dist.init()
images = ImageFolder(sys.argv[1], (8, 8), "binary", batch_size=4, shuffle=False, rescale=1 / 255, shard=True)
model = Sequential(Flatten(), Dense(1, activation="sigmoid", input_dim=8 * 8 * 3))
model.compile(loss=binary_cross_entropy, optimizer=dist.DistributedOptimizer(SGD(lr=0.1)))
model.fit(images, epochs=1, verbose=0, callbacks=[Steps()])
print(f"rank {dist.rank()}: {len(images)} batches, {Steps.taken} steps", flush=True)
