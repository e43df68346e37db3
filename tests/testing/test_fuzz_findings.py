"""Every failure the fuzzer found, shrunk, as a regression test on every backend."""

from __future__ import annotations

import pytest

from braze.backends import cpu
from braze.testing.fuzz import available_backends
from braze.testing.oracle import check_batch
from braze.testing.programs import Input, Program, Step

FINDINGS = {
    # program 64 of seed 0: the gradient of an unused input is a scalar constant 0 returned
    # by the graph, and the unfused plan inlined it into its readers but gave it no kernel
    # (KeyError in fuse).
    "unfused scalar constant result": Program(
        seed=64,
        inputs=(Input((1, 1), "float32", 0), Input((), "float32", 1)),
        steps=(),
        weights=(),
        returned=(),
    ),
    # The first program, in the fuzzer's form: two dots whose epilogues met.
    "epilogues of two dots meet": Program(
        seed=93,
        inputs=(Input((5, 1), "float32", 0), Input((1, 1), "float32", 1)),
        steps=(
            Step("B.reshape({0}, (5,))", (0,)),
            Step("{0} / (B.abs({1}) + 0.5)", (1, 0)),
            Step("{0} + {1}", (2, 3)),
            Step("{0} @ {0}", (1,)),
            Step("{0} @ {0}", (1,)),
        ),
        weights=(0.69, 1.3, 0.77, 1.08, 0.81),
        returned=(6,),
    ),
    # program 1003477: logsumexp of a log_softmax is 0 eagerly and -1.3e-7 compiled, a
    # rounding difference that the tolerance must allow (it was a false mismatch).
    "a result that cancels to zero": Program(
        seed=1003477,
        inputs=(Input((25,), "float32", 1),),
        steps=(Step("B.log_softmax({0}, axis=-1)", (0,)), Step("B.logsumexp({0}, axis=0, keepdims=False)", (1,))),
        weights=(0.0, 1.05),
        returned=(),
    ),
    # programs 1006377, 1006719, 1007037, 1007127: the gradient of sum(softmax) is 0 in
    # exact arithmetic, and +-1e-8 (float32) or 1e-17 (float64) either way after rounding.
    "a gradient that cancels to zero": Program(
        seed=1006719,
        inputs=(Input((1, 2), "float32", 1),),
        steps=(Step("B.softmax({0}, axis=1)", (0,)),),
        weights=(0.95,),
        returned=(),
    ),
    # program 1003240: the gradient of a SAME-padded 1x3 convolution. GCC 12 vectorized the
    # native conv_grad_input kernel's loop over output rows with 512-bit masked vectors and
    # got one pixel wrong (row 3, column 0); AVX-512 targets now prefer 256-bit vectors.
    "conv gradient with SAME padding": Program(
        seed=1003240,
        inputs=(Input((1, 5, 7, 2), "float64", 0), Input((1, 3, 2, 1), "float64", 1)),
        steps=(Step('B.conv2d({0}, {1}, stride=1, padding="SAME", dilation=1)', (0, 1)),),
        weights=(0.57,),
        returned=(),
    ),
    # program 203: the input gradient of a stride-2, SAME-padded 1x1 convolution of four
    # channels into two. Once its padded copy had no branch, GCC 12 at -O3 if-converted and
    # vectorized the gradient's loops over plain arrays of accumulators and got them wrong;
    # convolutions over plain arrays keep if-conversion off.
    "a strided convolution's input gradient over plain arrays": Program(
        seed=203,
        inputs=(Input((1, 6, 1, 4), "float32", 0), Input((1, 1, 4, 2), "float32", 1)),
        steps=(Step('B.conv2d({0}, {1}, stride=(2, 1), padding="SAME", dilation=1)', (0, 1)),),
        weights=(0.61,),
        returned=(),
    ),
    # program 9673: the second derivative of a sort's values along the leading axis, summed
    # and cumulatively summed. The sort's gradient scatters through a one-hot comparison, in
    # a kernel of two sibling sums of selects; GCC 12 at -O3 if-converted and vectorized
    # their accumulation and lost terms (a loss of 39.885 instead of 39.6, on AVX2 and
    # AVX-512). Sibling reductions keep if-conversion off.
    "two sums of a sort's one-hot gradient": Program(
        seed=9673,
        inputs=(Input((2, 5, 3), "float32", 0),),
        steps=(
            Step("B.sort({0}, axis=-3, descending=False)", (0,)),
            Step("B.sort({0}, axis=-3, descending=False)", (0,)),
            Step("B.cumsum({0}, axis=-2)", (1,)),
        ),
        weights=(0.0, 0.93, 0.57),
        returned=(),
        order=2,
    ),
    # program 34: a max-pool gradient of a flipped broadcast, summed. GCC 12.2 at -O3 got the
    # sum wrong when it read the reversed axis inside the reduction's loop nest (the kernel
    # was right at -O2 and with -fno-tree-loop-vectorize); reductions no longer fuse a rev.
    "a sum over a reversed axis": Program(
        seed=34,
        inputs=(Input((), "float64", 1),),
        steps=(
            Step("B.broadcast_to({0}, (2, 3, 4, 2))", (0,)),
            Step("B.flip({0}, -3)", (1,)),
            Step('B.max_pool2d({0}, 2, stride=(1, 2), padding="SAME")', (2,)),
        ),
        weights=(0.91, 0.83, 0.79),
        returned=(),
    ),
    # program 5933 of the 10,000-program run: the gradient of a strided slice is a folded
    # constant (1 0 1 0 1 0 1 0 1 0 0 0 0); GCC 12 with AVX-512 folded the kernel copying it
    # into a wrong vector constant (its last three values 1 0 1). Kernels now read constant
    # arrays through an opaque pointer.
    "a folded constant copied by an AVX-512 kernel": Program(
        seed=5933,
        inputs=(Input((1, 13), "float32", 1),),
        steps=(Step("{0}[None, :2:3, :-4:2]", (0,)),),
        weights=(1.0,),
        returned=(),
    ),
    # A gradient step on the inputs in place, under @braze.jit with the inputs donated.
    "an in-place update of reversed slices": Program(
        seed=5,
        inputs=(Input((4, 3, 2), "float32", 0), Input((3, 2), "float32", 1)),
        steps=(Step("{0}[::-1, 2::-2] * {1}[::-2]", (0, 1)), Step("B.flip({0}, (0, 2)) + {1}", (0, 1))),
        weights=(1.1, 0.7),
        returned=(0, 3),
        update=0.25,
    ),
}


@pytest.mark.parametrize("name", list(FINDINGS))
def test_finding_agrees_on_every_backend(name, tmp_path):
    cache = cpu.DiskCache(tmp_path) if cpu.available() else None
    failures = check_batch([FINDINGS[name]], available_backends(), cache)
    assert not failures, "\n".join(f.describe() for f in failures)
