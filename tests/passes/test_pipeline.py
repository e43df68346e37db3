"""The pipeline on LeNet's real training step: pinned kernel counts and peak memory, dumps
after every pass, ``braze.explain`` and ``braze hlo``."""

from __future__ import annotations

import numpy as np

import braze
from braze import cli
from braze.backends.reference.interpreter import evaluate
from braze.bench.steps import lenet_workload
from braze.lazy import build_graph, trace
from braze.passes import pipeline
from braze.passes.report import build_report, to_dot


def lenet_step_graph():
    workload = lenet_workload(braze.LAZY_CPU)
    graph = trace(workload.step, *workload.batch(braze.LAZY_CPU))
    braze.lazy.EXECUTOR._live.clear()
    return graph


def test_lenet_step_kernel_count_and_peak_memory_are_pinned():
    graph = lenet_step_graph()
    optimized, _ = pipeline.run(graph, verify=True)
    report = build_report(graph, optimized, pipeline.ALIGNMENT)
    # Regressions in fusion show up here first; update the numbers only for a deliberate change.
    # (One of them counts the optimizer's steps, an int64 scalar that fuses with nothing.)
    # (48, not 49, since cheap producers read by a few kernels are recomputed in each: the
    # softmax's shifted logits are no longer written out.)
    # (133 unfused and 5 KiB more at the peak since the cross-entropy gathers the label's
    # logit: its gradient, a scatter-add into the 128 x 10 logits, is written out, where the
    # one-hot comparison it replaces was computed inside the gradient's loop.)
    # (130 and 45, 230 KiB less at the peak, since the dense layers' kernel gradients come
    # out of their products in the kernels' layout, not transposed after them.)
    # (134 unfused since the loss's logsumexp holds the logits to the finite floats before
    # taking their maximum, so a row of -inf gives -inf, not NaN: inside the maximum's kernel.)
    # (137 unfused, 128 bytes more, since that clip selects rather than takes a maximum and
    # a minimum, so that a value within the bounds is kept as it is, -0.0 too.)
    assert (report.unfused_kernels, report.kernels) == (137, 45), report.summary()
    assert report.unfused_peak_bytes == 19_411_328, report.summary()
    assert report.peak_bytes == 15_096_896, report.summary()
    assert report.peak_bytes < report.unfused_peak_bytes


def test_fused_lenet_step_computes_what_the_unfused_one_does():
    workload = lenet_workload(braze.LAZY_CPU, batch_size=16)
    x, y = workload.batch(braze.LAZY_CPU)
    from braze.lazy import EXECUTOR

    with braze.lazy.barriers_held():  # keep the whole step pending, optimizer update included
        workload.step(x, y)
    traced = build_graph(EXECUTOR.pending_roots(braze.LAZY_CPU))
    EXECUTOR._live.clear()
    assert len(traced.graph.nodes()) > 100
    optimized, _ = pipeline.run(traced.graph, verify=True)
    for expected, got in zip(evaluate(traced.graph, traced.args), evaluate(optimized, traced.args), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_dump_writes_the_graph_after_every_pass(tmp_path):
    x = braze.ones((4, 3), device=braze.LAZY_CPU)
    graph = trace(lambda a: braze.relu(a * 2.0 + 1.0).sum(), x)
    pipeline.run(graph, dump_dir=str(tmp_path))
    (folder,) = tmp_path.iterdir()
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        "00_input.txt",
        "01_normalize_bfloat16.txt",
        "02_simplify.txt",
        "03_cse.txt",
        "04_fold.txt",
        "05_simplify.txt",
        "06_transposed_products.txt",
        "07_dce.txt",
        "08_combine_all_reduce.txt",
        "09_fuse.txt",
        "10_dce.txt",
        "11_assign_buffers.txt",
    ]
    assert "fusion(" in (folder / "09_fuse.txt").read_text()
    assert "# buffers:" in (folder / "11_assign_buffers.txt").read_text()


def test_explain_reports_fusion_groups():
    report = braze.explain(lambda x, w: braze.relu(x @ w + 1.0).sum(), braze.ones((4, 3)), braze.ones((3, 2)))
    assert report.kernels == 2 and report.unfused_kernels > report.kernels
    assert "kernel 0: output fusion -> f32[4,2]: " in report.text()
    assert "dot_general" in report.text() and "digraph braze" in to_dot(report.optimized)


def test_braze_hlo_prints_the_lenet_step(capsys, tmp_path):
    dot = tmp_path / "lenet.dot"
    assert cli.main(["hlo", "lenet", "--summary", "--dot", str(dot)]) == 0
    out = capsys.readouterr().out
    # The CPU's fusion: the loss's softmax (its maximum, sum and division) is one row kernel,
    # average pooling divides its sums as it stores them, and the first dense layer's
    # products read the pooled activations through their flattening reshape (never copied).
    assert "kernels: 38 after fusion (unfused: 137)" in out
    assert dot.read_text().startswith("digraph braze {")
    assert cli.main(["hlo", "lenet", "--summary", "--autocast", "bf16"]) == 0
    assert "(batch 128, bfloat16 autocast)" in capsys.readouterr().out
