"""The two C dialects one kernel emitter renders: CUDA C (compiled by NVRTC) and OpenCL C,
each a ``CLanguage`` of the C-family renderer (``backends/cstyle``).

The emitter writes every kernel once, in terms of this class: address-space qualifiers,
the work-item and work-group indices, the barrier and the work-group-local arrays differ,
and each dialect's prelude gives the helpers the shared op table calls (``braze_expf``,
``braze_powf``, ``braze_uniform32``...) their meaning on that dialect.
"""

from __future__ import annotations

from dataclasses import dataclass

from braze.backends.cstyle import BFLOAT16_HELPERS, CLanguage

# Shared by both dialects once their own lines have defined the types and the math names.
_COMMON = """\
BRAZE_FN float braze_logisticf(float x) {
  const float e = braze_expf(x < 0.0f ? x : -x);
  return (x < 0.0f ? e : 1.0f) / (1.0f + e);
}
BRAZE_FN double braze_logistic(double x) {
  const double e = braze_exp(x < 0.0 ? x : -x);
  return (x < 0.0 ? e : 1.0) / (1.0 + e);
}
BRAZE_FN float braze_narrow(double x) { return (float)x; }
BRAZE_FN uint64_t braze_mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15UL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
  return z ^ (z >> 31);
}
BRAZE_FN float braze_uniform32(uint64_t key, uint64_t i) {
  return (float)(braze_mix(braze_mix(key) + i) >> 40) * 0x1p-24f;
}
BRAZE_FN double braze_uniform64(uint64_t key, uint64_t i) {
  return (double)(braze_mix(braze_mix(key) + i) >> 11) * 0x1p-53;
}
"""

# float pow through double, rounded once: within an ulp wherever the float is finite.
_OPENCL = """\
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef int int32_t;
typedef long int64_t;
typedef ushort uint16_t;
typedef uint uint32_t;
typedef ulong uint64_t;
#define BRAZE_FN static inline
#define braze_expf(x) exp(x)
#define braze_exp(x) exp(x)
#define braze_logf(x) log(x)
#define braze_log(x) log(x)
#define braze_tanhf(x) tanh(x)
#define braze_tanh(x) tanh(x)
#define braze_erff(x) erf(x)
#define braze_erf(x) erf(x)
#define sqrtf(x) sqrt(x)
#define fabsf(x) fabs(x)
#define sinf(x) sin(x)
#define cosf(x) cos(x)
#define tanf(x) tan(x)
#define asinf(x) asin(x)
#define acosf(x) acos(x)
#define atanf(x) atan(x)
#define sinhf(x) sinh(x)
#define coshf(x) cosh(x)
#define asinhf(x) asinh(x)
#define acoshf(x) acosh(x)
#define atanhf(x) atanh(x)
#define log1pf(x) log1p(x)
#define expm1f(x) expm1(x)
#define floorf(x) floor(x)
#define ceilf(x) ceil(x)
#define truncf(x) trunc(x)
#define rintf(x) rint(x)
#define atan2f(x, y) atan2(x, y)
#define copysignf(x, y) copysign(x, y)
#define hypotf(x, y) hypot(x, y)
#define nextafterf(x, y) nextafter(x, y)
#define fmodf(x, y) fmod(x, y)
#define braze_powf(x, y) ((float)pow((double)(x), (double)(y)))
"""

_CUDA = """\
typedef int int32_t;
typedef long long int64_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define BRAZE_FN static __device__ inline
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#define braze_expf(x) expf(x)
#define braze_exp(x) exp(x)
#define braze_logf(x) logf(x)
#define braze_log(x) log(x)
#define braze_tanhf(x) tanhf(x)
#define braze_tanh(x) tanh(x)
#define braze_erff(x) erff(x)
#define braze_erf(x) erf(x)
#define braze_powf(x, y) ((float)pow((double)(x), (double)(y)))
"""


@dataclass(frozen=True)
class Dialect(CLanguage):
    prelude_lines: str = ""
    local: str = ""  # the qualifier of a work-group-local array
    local_id: str = ""
    group_id: str = ""
    groups: str = ""
    barrier: str = ""
    launch_bounds: bool = False  # a kernel says how many work-items a group has (CUDA)

    @property
    def prelude(self) -> str:
        return self.prelude_lines + _COMMON + BFLOAT16_HELPERS.format(fn="BRAZE_FN")

    def signature(self, name: str, buffers: int, local_size: int) -> str:
        """A kernel taking the arena and ``buffers`` device pointers, as bytes."""
        params = ", ".join([f"{self.buffer}char* arena"] + [f"{self.buffer}char* b{k}" for k in range(buffers)])
        bounds = f"__launch_bounds__({local_size}) " if self.launch_bounds else ""
        return f"{self.kernel} {bounds}void {name}({params})"


OPENCL = Dialect(
    name="opencl",
    source_suffix=".cl",
    prelude_lines=_OPENCL,
    kernel="__kernel",
    buffer="__global ",
    local="__local",
    local_id="(int64_t)get_local_id(0)",
    group_id="(int64_t)get_group_id(0)",
    groups="(int64_t)get_num_groups(0)",
    barrier="barrier(CLK_LOCAL_MEM_FENCE);",
)

CUDA = Dialect(
    name="cuda",
    source_suffix=".cu",
    prelude_lines=_CUDA,
    kernel='extern "C" __global__',
    local="__shared__",
    local_id="(int64_t)threadIdx.x",
    group_id="(int64_t)blockIdx.x",
    groups="(int64_t)gridDim.x",
    barrier="__syncthreads();",
    launch_bounds=True,
)

DIALECTS = {d.name: d for d in (OPENCL, CUDA)}
