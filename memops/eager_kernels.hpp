#pragma once
// The pointwise kernels a framework runs one by one in eager mode (PyTorch's mul, mul_, add_,
// addcdiv_, sqrt, silu, zero_ ...; bench_step --kernels eager times its plan with them), each
// one element's arithmetic in fp32, written once for the CPU loops (memops/cpu_memops.cpp) and
// the CUDA kernels (memops/cuda_memops.cu) alike. The check's fp64 reference is apart
// (reference_memops::eager_kernel).
//
// A kernel reads kIn values and writes kOut. In an in-place kernel (kInPlace) the first input is
// the operand it updates (its `state` operand, memops/memop_operands.cpp) and the first output is
// that operand's new value. visit_eager_kernel maps an operator and pass to its kernel: the one
// place a provider's dispatch learns of a new one.
//
// The constants keep the values of an in-place operand normal over the ten thousand and more
// calls a measurement makes on one set: a = 1 - 2^-10 decays as AdamW's factors do (a set's
// values halve in 700 calls; subnormals, slow on x86, would take 90,000), and the added terms
// (2^-3 x, 2^-3 m / (|d| + 1)) grow a value by at most 1/8 a call. The divisor |d| + 1 stands in
// for AdamW's sqrt(v) + eps, which is never near 0 either.
#include "memops/memop.hpp"
#include "memops/memop_math.hpp"

namespace opbench::eager_kernels {

inline constexpr float kScale = 1.0f - 0x1p-10f;
inline constexpr float kAlpha = 0x1p-3f;

template <int In, int Out, bool InPlace = false>
struct Kernel {
  static constexpr int kIn = In, kOut = Out;
  static constexpr bool kInPlace = InPlace;
};

struct Mul : Kernel<2, 1> {
  OPBENCH_HD void operator()(const float* in, float* out) const { out[0] = in[0] * in[1]; }
};

struct Scale : Kernel<1, 1> {
  OPBENCH_HD void operator()(const float* in, float* out) const { out[0] = in[0] * kScale; }
};

// sqrt_approx: within 2 ulp, and vectorised where a libm sqrtf would not be (memop_math).
struct Sqrt : Kernel<1, 1> {
  OPBENCH_HD void operator()(const float* in, float* out) const {
    out[0] = memop_math::sqrt_approx(
        memop_math::bits_float(memop_math::float_bits(in[0]) & 0x7FFFFFFFu));
  }
};

struct Silu : Kernel<1, 1> {
  OPBENCH_HD void operator()(const float* in, float* out) const {
    out[0] = memop_math::silu(in[0]);
  }
};

// dx = dy silu'(x) = dy s (1 + x (1 - s)), s = sigmoid(x): torch's silu_backward.
struct SiluGrad : Kernel<2, 1> {
  OPBENCH_HD void operator()(const float* in, float* out) const {
    const float s = memop_math::sigmoid(in[0]);
    out[0] = in[1] * s * (1.0f + in[0] * (1.0f - s));
  }
};

struct Fill : Kernel<0, 1> {
  OPBENCH_HD void operator()(const float*, float* out) const { out[0] = 0.0f; }
};

struct ScaleInPlace : Kernel<1, 1, true> {
  OPBENCH_HD void operator()(const float* in, float* out) const { out[0] = in[0] * kScale; }
};

struct AxpyInPlace : Kernel<2, 1, true> {
  OPBENCH_HD void operator()(const float* in, float* out) const { out[0] = in[0] + kAlpha * in[1]; }
};

struct AddcdivInPlace : Kernel<3, 1, true> {
  OPBENCH_HD void operator()(const float* in, float* out) const {
    const float d = memop_math::bits_float(memop_math::float_bits(in[2]) & 0x7FFFFFFFu) + 1.0f;
    out[0] = in[0] - kAlpha * in[1] / d;
  }
};

// Whether `op` is one of these kernels.
OPBENCH_HD inline bool is_eager_kernel(MemOp op) {
  switch (op) {
    case MemOp::mul:
    case MemOp::scale:
    case MemOp::sqrt:
    case MemOp::silu:
    case MemOp::fill:
    case MemOp::scale_inplace:
    case MemOp::axpy_inplace:
    case MemOp::addcdiv_inplace:
      return true;
    default:
      return false;
  }
}

// visit(Kernel{}) for the kernel of `op` and `pass`; false when `op` is none of them.
template <class Visit>
bool visit_eager_kernel(MemOp op, MemPass pass, Visit&& visit) {
  switch (op) {
    case MemOp::mul:
      visit(Mul{});
      return true;
    case MemOp::scale:
      visit(Scale{});
      return true;
    case MemOp::sqrt:
      visit(Sqrt{});
      return true;
    case MemOp::silu:
      if (pass == MemPass::fwd)
        visit(Silu{});
      else
        visit(SiluGrad{});
      return true;
    case MemOp::fill:
      visit(Fill{});
      return true;
    case MemOp::scale_inplace:
      visit(ScaleInPlace{});
      return true;
    case MemOp::axpy_inplace:
      visit(AxpyInPlace{});
      return true;
    case MemOp::addcdiv_inplace:
      visit(AddcdivInPlace{});
      return true;
    default:
      return false;
  }
}

}  // namespace opbench::eager_kernels
