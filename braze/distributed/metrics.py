"""Training statistics over all ranks: each rank counts its own shard, and an epoch's
report sums the counts, so rank 0 prints the loss and accuracy of the whole data set."""

from __future__ import annotations

from braze.autodiff import no_grad
from braze.distributed.collectives import all_reduce
from braze.nn import Statistics


def all_reduce_statistics(stats: Statistics) -> Statistics:
    """Replace ``stats``' counts and sums (every rank's call) by their totals over the ranks."""
    tensors = [stats.correct, stats.loss_sum, stats.example_loss_sum]
    totals = all_reduce([*tensors, stats.total, stats.batches], "sum")
    with no_grad():
        for tensor, total in zip(tensors, totals[:3], strict=True):
            tensor.assign(total)
    stats.total, stats.batches = totals[3], totals[4]
    return stats
