"""Training statistics over all ranks: each rank counts its own shard, and an epoch's
report sums the counts, so rank 0 prints the loss and accuracy of the whole data set."""

from __future__ import annotations

from typing import Any

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


def all_reduce_metrics(metrics: list[Any]) -> list[Any]:
    """Replace the state of Keras metrics (totals, counts, confusion counts: all sums) by
    its sum over the ranks, every rank calling this with the same metrics, so that their
    results are the whole job's."""
    state = [variable for metric in metrics for variable in metric.state]
    if state:
        with no_grad():
            for variable, total in zip(state, all_reduce(state, "sum"), strict=True):
                variable.assign(total)
    return metrics
