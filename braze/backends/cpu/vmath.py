"""Vectorizable exp, log, tanh, logistic, pow and erf for generated kernels.

libm's ``expf``/``logf``/``tanhf`` are opaque calls, so GCC cannot vectorize a loop that
contains one, and a fused math-heavy chain ran slower than NumPy's SIMD loops. These
functions are written the way XLA's CPU backend, Cephes and SLEEF write theirs: range
reduction, a polynomial, and the exponent handled with integer operations on the bits.
They have no branches and no calls: bit casts are memcpy, rounding to an integer uses the
1.5 * 2^23 (2^52) trick rather than a conversion (x86 has no 64-bit one before AVX-512),
and every select is a blend of bits (braze_pick says why not a ternary). Inlined into a
plain ``for`` loop, each vectorizes at -O3 under gcc 12's default -ftrapping-math on
x86-64-v2, v3 and v4; ``#pragma omp declare simd`` would add nothing, as the functions are
always inlined. The modules are compiled without floating-point contraction (so that
elementwise code rounds as eager mode does), and the polynomials and range reductions ask
for their fused multiply-adds (``braze_fmaf``, ``braze_fma``: one instruction where the
target has it, a product and a sum where not), the ones GCC had fused: the same bits as
before at every level.

Largest error against the correctly rounded result, in ulps, measured by
tests/backends/test_cpu_vmath.py (float32: every 4096th bit pattern, the denormals and the
specials; float64: a logarithmic sweep of both signs from the smallest denormal to the
largest finite value), the same at every x86-64 level:

| function | float32 | float64 |
| --- | --- | --- |
| exp | 1 | 1 |
| log | 1 | 1 |
| tanh | 1 | 1 |
| logistic | 2 | 2 |
| pow | 1 | libm's ``pow`` |
| erf | 1 | libm's ``erf`` |

Special cases follow C99 Annex F, as NumPy does: exp overflows to inf and underflows
through the denormals to 0 at the correctly rounded thresholds, log(+-0) = -inf,
log(x < 0) = nan, log(inf) = inf, tanh saturates to +-1 and keeps -0, logistic follows
e^x / (1 + e^x) below 0 into the denormals (1 / (1 + e^-x) would give 0 below -88.7),
pow has C99's answers for signed zeros, ones, infinities and negative bases, and nan
propagates. sqrt and 1 / sqrt need nothing here: with -fno-math-errno GCC already emits
the vector square root instruction. A double pow as accurate as libm's needs a log in
more than double precision, so float64 pow stays a libm call. erf's float32 polynomials are
the twin's (``ir/prims/special.py``), rendered here from its coefficients; float64 erf,
used where gradients are checked, is libm's.
"""

from __future__ import annotations

from braze.backends.cstyle import c_literal
from braze.ir.dtypes import float32
from braze.ir.prims import special

_FIXED = r"""
#define BRAZE_VMATH static inline __attribute__((always_inline))
/* a * b + c rounded once where the target has fused multiply-adds (the modules are
   compiled with -ffp-contract=off: nothing else is fused), else a product and a sum: the
   polynomials and range reductions below, and contractions' accumulations. */
#ifndef braze_fmaf
#if defined(__FP_FAST_FMAF) || defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define braze_fmaf(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#define braze_fmaf(a, b, c) ((a) * (b) + (c))
#endif
#if defined(__FP_FAST_FMA) || defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define braze_fma(a, b, c) __builtin_fma((a), (b), (c))
#else
#define braze_fma(a, b, c) ((a) * (b) + (c))
#endif
#endif
BRAZE_VMATH uint32_t braze_bits32(float x) { uint32_t u; memcpy(&u, &x, sizeof(u)); return u; }
BRAZE_VMATH float braze_from_bits32(uint32_t u) { float x; memcpy(&x, &u, sizeof(x)); return x; }
BRAZE_VMATH uint64_t braze_bits64(double x) { uint64_t u; memcpy(&u, &x, sizeof(u)); return u; }
BRAZE_VMATH double braze_from_bits64(uint64_t u) { double x; memcpy(&x, &u, sizeof(x)); return x; }
/* c ? a : b on the bits. Written as a ternary, GCC threads jumps through the constant
   operands, folds each path apart and leaves floating-point operations in branches that
   it may not if-convert under -ftrapping-math: the loop would not vectorize. */
BRAZE_VMATH float braze_pickf(int c, float a, float b) {
  const uint32_t m = 0u - (uint32_t)c;
  return braze_from_bits32((braze_bits32(a) & m) | (braze_bits32(b) & ~m));
}
BRAZE_VMATH double braze_pick(int c, double a, double b) {
  const uint64_t m = 0u - (uint64_t)c;
  return braze_from_bits64((braze_bits64(a) & m) | (braze_bits64(b) & ~m));
}

/* exp(x) = 2^n e^r, n = round(x / ln 2), |r| <= ln(2) / 2 (Cephes' two-part ln 2): e^r,
   and k = 1.5 * 2^23 + n, whose bits hold n. */
BRAZE_VMATH float braze_expf_reduced(float x, float* k) {
  *k = braze_fmaf(x, 0x1.715476p+0f, 0x1.8p23f);
  const float n = *k - 0x1.8p23f;
  float r = braze_fmaf(n, -0.693359375f, x);
  r = braze_fmaf(n, 2.12194440e-4f, r);
  /* Cephes expf: e^r = 1 + r + r^2 P(r) */
  float p = 1.9875691500e-4f;
  p = braze_fmaf(p, r, 1.3981999507e-3f);
  p = braze_fmaf(p, r, 8.3334519073e-3f);
  p = braze_fmaf(p, r, 4.1665795894e-2f);
  p = braze_fmaf(p, r, 1.6666665459e-1f);
  p = braze_fmaf(p, r, 5.0000001201e-1f);
  return braze_fmaf(p, r * r, r) + 1.0f;
}

/* The clamp keeps n within [-150, 128]; 2^n is applied as two normal factors, so a
   denormal result is rounded once and a large one overflows to inf by itself. Below -104,
   where e^x rounds to 0, a lane computes e^0 and is zeroed after: a multiply that
   underflows costs Intel cores a microcode assist of a hundred cycles or more, and a
   causal mask's -inf scores made a softmax four times slower. */
BRAZE_VMATH float braze_expf(float x) {
  const int zero = x < -104.0f;
  x = braze_pickf(x > 89.0f, 89.0f, x);
  x = braze_pickf(zero, 0.0f, x);
  float k;
  const float p = braze_expf_reduced(x, &k);
  const uint32_t m = braze_bits32(k) - 0x4B400000u + 256u; /* n + 256, in [106, 384] */
  const float low = braze_from_bits32(((m >> 1) - 1u) << 23);      /* 2^(floor(n / 2)) */
  const float high = braze_from_bits32((m - (m >> 1) - 1u) << 23); /* 2^(n - floor(n / 2)) */
  return braze_pickf(zero, 0.0f, p * low * high);
}

/* exp of -87 <= x <= 0, where e^x and 2^n are normal: one scaling, no clamps (erf's
   e^(-x^2), x clamped at 4, is 16% quicker so; the same bits as braze_expf). */
BRAZE_VMATH float braze_expf_normal(float x) {
  float k;
  const float p = braze_expf_reduced(x, &k);
  return p * braze_from_bits32((braze_bits32(k) - 0x4B400000u + 127u) << 23);
}

BRAZE_VMATH double braze_exp(double x) {
  const int zero = x < -746.0;
  x = braze_pick(x > 710.0, 710.0, x);
  x = braze_pick(zero, 0.0, x);
  const double k = braze_fma(x, 0x1.71547652b82fep+0, 0x1.8p52); /* 1.5 * 2^52 + n */
  const double n = k - 0x1.8p52;
  double r = braze_fma(n, -6.93145751953125e-1, x);
  r = braze_fma(n, -1.42860682030941723212e-6, r);
  /* Taylor series to r^13: the remainder is below 0.05 ulp for |r| <= ln(2) / 2. */
  double p = 1.0 / 6227020800.0;
  p = braze_fma(p, r, 1.0 / 479001600.0);
  p = braze_fma(p, r, 1.0 / 39916800.0);
  p = braze_fma(p, r, 1.0 / 3628800.0);
  p = braze_fma(p, r, 1.0 / 362880.0);
  p = braze_fma(p, r, 1.0 / 40320.0);
  p = braze_fma(p, r, 1.0 / 5040.0);
  p = braze_fma(p, r, 1.0 / 720.0);
  p = braze_fma(p, r, 1.0 / 120.0);
  p = braze_fma(p, r, 1.0 / 24.0);
  p = braze_fma(p, r, 1.0 / 6.0);
  p = braze_fma(p, r, 0.5);
  p = braze_fma(p, r * r, r) + 1.0;
  const uint64_t m = braze_bits64(k) - 0x4338000000000000ull + 2048u; /* n + 2048, in [972, 3072] */
  const double low = braze_from_bits64(((m >> 1) - 1u) << 52);
  const double high = braze_from_bits64((m - (m >> 1) - 1u) << 52);
  return braze_pick(zero, 0.0, p * low * high);
}

/* log(x) = e ln 2 + log(1 + f), x = 2^e (1 + f) with 1 + f in [sqrt(1/2), sqrt(2));
   denormals are first scaled by 2^23 (2^52). */
BRAZE_VMATH float braze_logf(float x) {
  const int tiny = x < 0x1p-126f;
  const uint32_t u = braze_bits32(braze_pickf(tiny, x * 0x1p23f, x)) + (0x3f800000u - 0x3f3504f3u);
  const float e = (float)((int32_t)(u >> 23) - 127) - braze_pickf(tiny, 23.0f, 0.0f);
  const float f = braze_from_bits32((u & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
  /* Cephes logf: log(1 + f) = f - f^2 / 2 + f^3 P(f) */
  const float z = f * f;
  float p = 7.0376836292e-2f;
  p = braze_fmaf(p, f, -1.1514610310e-1f);
  p = braze_fmaf(p, f, 1.1676998740e-1f);
  p = braze_fmaf(p, f, -1.2420140846e-1f);
  p = braze_fmaf(p, f, 1.4249322787e-1f);
  p = braze_fmaf(p, f, -1.6668057665e-1f);
  p = braze_fmaf(p, f, 2.0000714765e-1f);
  p = braze_fmaf(p, f, -2.4999993993e-1f);
  p = braze_fmaf(p, f, 3.3333331174e-1f);
  p = braze_fmaf(-0.5f, z, braze_fmaf(p * f, z, e * -2.12194440e-4f));
  float y = braze_fmaf(e, 0.693359375f, f + p);
  y = braze_pickf(x < INFINITY, y, x); /* inf and nan */
  y = braze_pickf(x < 0.0f, NAN, y);
  return braze_pickf(x == 0.0f, -INFINITY, y);
}

BRAZE_VMATH double braze_log(double x) {
  const int tiny = x < 0x1p-1022;
  const uint64_t u = braze_bits64(braze_pick(tiny, x * 0x1p52, x)) + (0x3ff0000000000000ull - 0x3fe6a09e667f3bcdull);
  /* e as a double without a 64-bit conversion: 2^52 + biased exponent, less 2^52 + bias */
  const double biased = braze_from_bits64((u >> 52) | 0x4330000000000000ull);
  const double e = biased - (0x1p52 + 1023.0) - braze_pick(tiny, 52.0, 0.0);
  const double f = braze_from_bits64((u & 0x000fffffffffffffull) + 0x3fe6a09e667f3bcdull) - 1.0;
  /* fdlibm's log: s = f / (2 + f), log(1 + f) = f - f^2 / 2 + s (f^2 / 2 + R(s^2)) */
  const double s = f / (2.0 + f);
  const double z = s * s;
  const double w = z * z;
  /* R(s^2) = s^4 (Lg2 + s^4 (Lg4 + s^4 Lg6)) + s^2 (Lg1 + s^4 (Lg3 + ...)) */
  double lg246 = 1.531383769920937332e-01;
  lg246 = braze_fma(lg246, w, 2.222219843214978396e-01);
  lg246 = braze_fma(lg246, w, 3.999999999940941908e-01);
  double lg1357 = 1.479819860511658591e-01;
  lg1357 = braze_fma(lg1357, w, 1.818357216161805012e-01);
  lg1357 = braze_fma(lg1357, w, 2.857142874366239149e-01);
  lg1357 = braze_fma(lg1357, w, 6.666666666666735130e-01);
  const double r = braze_fma(lg246, w, lg1357 * z);
  const double h = 0.5 * f; /* f^2 / 2 = h f, fused where it is added */
  const double tail = braze_fma(s, braze_fma(h, f, r), e * 1.90821492927058770002e-10);
  double y = braze_fma(e, 6.93147180369123816490e-01, -(braze_fma(h, f, -tail) - f));
  y = braze_pick(x < INFINITY, y, x);
  y = braze_pick(x < 0.0, NAN, y);
  return braze_pick(x == 0.0, -INFINITY, y);
}

/* tanh: Cephes' odd polynomial below 0.625, 1 - 2 / (e^2|x| + 1) above (e^2|x| = inf
   gives exactly 1). */
BRAZE_VMATH float braze_tanhf(float x) {
  const float a = braze_pickf(x < 0.0f, -x, x);
  const float large = 1.0f - 2.0f / (braze_expf(a + a) + 1.0f);
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = braze_fmaf(p, z, 2.06390887954e-2f);
  p = braze_fmaf(p, z, -5.37397155531e-2f);
  p = braze_fmaf(p, z, 1.33314422036e-1f);
  p = braze_fmaf(p, z, -3.33332819422e-1f);
  const float small = braze_fmaf(p * z, x, x);
  return braze_pickf(a < 0.625f, braze_pickf(x == 0.0f, x, small), braze_pickf(x < 0.0f, -large, large)); /* keeps -0 */
}

BRAZE_VMATH double braze_tanh(double x) {
  const double a = braze_pick(x < 0.0, -x, x);
  const double large = 1.0 - 2.0 / (braze_exp(a + a) + 1.0);
  const double z = x * x;
  const double p = braze_fma(braze_fma(-9.64399179425052238628e-1, z, -9.92877231001918586564e1), z,
                             -1.61468768441708447952e3);
  const double q = braze_fma(braze_fma(z + 1.12811678491632931402e2, z, 2.23548839060100448583e3), z,
                             4.84406305325125486048e3);
  const double small = braze_fma(x * z, p / q, x);
  return braze_pick(a < 0.625, braze_pick(x == 0.0, x, small), braze_pick(x < 0.0, -large, large));
}

/* logistic(x) = 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below: e^-|x| never
   overflows, so the negative tail keeps its denormals. */
BRAZE_VMATH float braze_logisticf(float x) {
  const float e = braze_expf(braze_pickf(x < 0.0f, x, -x));
  return braze_pickf(x < 0.0f, e, 1.0f) / (1.0f + e);
}

BRAZE_VMATH double braze_logistic(double x) {
  const double e = braze_exp(braze_pick(x < 0.0, x, -x));
  return braze_pick(x < 0.0, e, 1.0) / (1.0 + e);
}
/* x^y in double, e^(y log|x|), rounded once to float: the double's error is below 1e-13
   relative wherever the float result is finite and nonzero. The cases of C99's pow on
   the signs, zeros, ones and infinities are picked afterwards. */
BRAZE_VMATH float braze_powf(float x, float y) {
  const double ay = fabs((double)y);
  double r = braze_exp((double)y * braze_log(fabs((double)x)));
  const double shifted = ay + 0x1p52; /* 2^52 + round(|y|): its last bit is the parity */
  const int integral = (shifted - 0x1p52 == ay) | (ay >= 0x1p24);
  const int odd = integral & (ay < 0x1p24) & (int)(braze_bits64(shifted) & 1u);
  r = braze_pick(odd & (int)(braze_bits32(x) >> 31), -r, r);
  r = braze_pick((x < 0.0f) & (x > -INFINITY) & !integral, NAN, r);
  r = braze_pick((y == 0.0f) | (x == 1.0f) | ((x == -1.0f) & (ay == INFINITY)), 1.0, r);
  return (float)r;
}
"""


def _horner(coefficients: tuple[float, ...], t: str) -> str:
    expression = c_literal(coefficients[-1], float32)
    for c in coefficients[-2::-1]:
        expression = f"braze_fmaf({expression}, {t}, {c_literal(c, float32)})"
    return expression


def _erf() -> str:
    """erf of float32 (special.py's approximation, the pieces picked without branches),
    and of float64 by libm."""
    clamp, center = c_literal(special.LARGE_CLAMP, float32), c_literal(special.LARGE_CENTER, float32)
    return f"""
BRAZE_VMATH float braze_erff(float x) {{
  const float a = fabsf(x);
  const float z = x * x;
  const float small = braze_fmaf(x, {_horner(special.ERF_SMALL, "z")}, x);
  const float c = braze_pickf(a > {clamp}, {clamp}, a); /* nan stays nan */
  const float t = c - {center};
  const float large = braze_fmaf(-braze_expf_normal(-(c * c)), {_horner(special.ERF_LARGE, "t")}, 1.0f);
  return braze_pickf(a < {c_literal(special.SMALL_BOUND, float32)}, small, copysignf(large, x));
}}
#define braze_erf(x) erf(x)
"""


VECTOR_MATH = _FIXED + _erf()
