"""GCC 12 targeting AVX-512 put a bfloat16 convolution's 16-byte accumulator array in the
red zone 8 bytes off its alignment, and cleared it with an aligned store: the process
crashed (the fuzzer's program 992599). Kernels compile without the red zone on x86-64."""

from __future__ import annotations

import platform

import numpy as np
import pytest

import braze
from braze.backends import cpu
from braze.backends.cpu.compiler import find_compiler

pytestmark = pytest.mark.skipif(not cpu.available(), reason="no C compiler")


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the red zone is x86-64's")
def test_kernels_compile_without_the_red_zone():
    assert "-mno-red-zone" in find_compiler().flags


def test_a_bfloat16_dilated_convolution_of_two_by_two_images_runs_as_eagerly():
    data = np.random.default_rng(0).standard_normal((2, 2, 2, 2)).astype(np.float32)

    def convolve(x):
        return braze.autocast()(lambda a, w: braze.conv2d(a, w, stride=1, padding=1, dilation=(1, 2)))(x, x)

    eager = convolve(braze.tensor(data)).numpy()
    compiled = braze.jit(convolve)(braze.tensor(data)).numpy()
    assert compiled.shape == eager.shape == (2, 3, 2, 2)
    # Both round each result to bfloat16 (8 significant bits) after float32 sums in their
    # own orders: a result may land one bfloat16 step apart.
    np.testing.assert_allclose(compiled, eager, rtol=2**-7, atol=2**-7 * np.abs(eager).max())
