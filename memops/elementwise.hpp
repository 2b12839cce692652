#pragma once
// The elementwise memory-bound operators, each one element's arithmetic in fp32 written once as a
// functor: the residual add, the activations (swiglu, gelu, silu) and the pointwise kernels a
// framework runs one by one in eager mode (PyTorch's mul, mul_, add_, addcdiv_, sqrt, zero_ ...;
// bench_step --kernels eager times its plan with them). One loop template runs them on the CPU
// (memops/cpu_memops.cpp), one kernel template on CUDA (memops/cuda_memops_elementwise.cu), one
// binding gives both their pointers (memop_operands.hpp) and one check compares them with the fp64
// reference (reference_memops::elementwise), which is written apart from these.
//
// A kernel reads kIn values and writes kOut. In an in-place kernel (kInPlace) the first input is
// the operand it updates (its `state` operand) and the first output is that operand's new value.
// kOperands names its operands, inputs then outputs (an in-place kernel's output is its first
// input): memop_operands lists them so, in the case's dtype. kAccuracy says which --check
// tolerance its arithmetic earns (memop_check.cpp). visit_elementwise maps an operator and pass
// to its kernel: the one place a provider's dispatch learns of a new one.
//
// The constants keep the values of an in-place operand normal over the ten thousand and more
// calls a measurement makes on one set: a = 1 - 2^-10 decays as AdamW's factors do (a set's
// values halve in 700 calls; subnormals, slow on x86, would take 90,000), and the added terms
// (2^-3 x, 2^-3 m / (|d| + 1)) grow a value by at most 1/8 a call. The divisor |d| + 1 stands in
// for AdamW's sqrt(v) + eps, which is never near 0 either.
#include <type_traits>

#include "memops/memop.hpp"
#include "memops/memop_math.hpp"

namespace opbench::elementwise {

inline constexpr float kScale = 1.0f - 0x1p-10f;
inline constexpr float kAlpha = 0x1p-3f;

enum class Accuracy {
  exact,        // no rounding at all (a fill)
  arithmetic,   // a few roundings of + - * / and sqrt_approx
  exponential,  // a sigmoid (exp_approx on the CPU, the GPU's ex2 and rcp), then up to ten
                // roundings
};

template <int In, int Out, Accuracy A = Accuracy::arithmetic, bool InPlace = false>
struct Kernel {
  static constexpr int kIn = In, kOut = Out;
  static constexpr Accuracy kAccuracy = A;
  static constexpr bool kInPlace = InPlace;
};

struct Add : Kernel<2, 1> {
  static constexpr const char* kOperands[] = {"x", "y", "z"};
  OPBENCH_HD void operator()(const float* in, float* out) const { out[0] = in[0] + in[1]; }
};

struct Mul : Kernel<2, 1> {
  static constexpr const char* kOperands[] = {"x", "y", "z"};
  OPBENCH_HD void operator()(const float* in, float* out) const { out[0] = in[0] * in[1]; }
};

struct Scale : Kernel<1, 1> {
  static constexpr const char* kOperands[] = {"x", "y"};
  OPBENCH_HD void operator()(const float* in, float* out) const { out[0] = in[0] * kScale; }
};

// sqrt_approx: within 2 ulp, and vectorised where a libm sqrtf would not be (memop_math).
struct Sqrt : Kernel<1, 1> {
  static constexpr const char* kOperands[] = {"x", "y"};
  OPBENCH_HD void operator()(const float* in, float* out) const {
    out[0] = memop_math::sqrt_approx(
        memop_math::bits_float(memop_math::float_bits(in[0]) & 0x7FFFFFFFu));
  }
};

// The kernels that take a sigmoid (Accuracy::exponential) take it as M: memop_math::ExpApprox
// on the CPU (the default), fast_math::FastSigmoid in our CUDA kernels.
struct Silu : Kernel<1, 1, Accuracy::exponential> {
  static constexpr const char* kOperands[] = {"x", "y"};
  template <class M = memop_math::ExpApprox>
  OPBENCH_HD void operator()(const float* in, float* out) const {
    out[0] = memop_math::silu<M>(in[0]);
  }
};

// dx = dy silu'(x) = dy s (1 + x (1 - s)), s = sigmoid(x): torch's silu_backward.
struct SiluGrad : Kernel<2, 1, Accuracy::exponential> {
  static constexpr const char* kOperands[] = {"x", "dy", "dx"};
  template <class M = memop_math::ExpApprox>
  OPBENCH_HD void operator()(const float* in, float* out) const {
    out[0] = in[1] * memop_math::silu_grad<M>(in[0]);
  }
};

// SwiGLU's gate: y = silu(g) u (Llama's down_proj(act(gate_proj(x)) * up_proj(x))); in: g, u.
struct Swiglu : Kernel<2, 1, Accuracy::exponential> {
  static constexpr const char* kOperands[] = {"g", "u", "y"};
  template <class M = memop_math::ExpApprox>
  OPBENCH_HD void operator()(const float* in, float* out) const {
    out[0] = memop_math::silu<M>(in[0]) * in[1];
  }
};

// in: g, u, dy; out: dg = dy u silu'(g), du = dy silu(g).
struct SwigluGrad : Kernel<3, 2, Accuracy::exponential> {
  static constexpr const char* kOperands[] = {"g", "u", "dy", "dg", "du"};
  template <class M = memop_math::ExpApprox>
  OPBENCH_HD void operator()(const float* in, float* out) const {
    const float g = in[0], u = in[1], dy = in[2];
    const memop_math::Sigmoid s = M::sigmoid(g);
    out[0] = dy * u * s.s * (1.0f + g * s.one_minus);
    out[1] = dy * g * s.s;
  }
};

// GELU, tanh approximation (memop_math::gelu).
struct Gelu : Kernel<1, 1, Accuracy::exponential> {
  static constexpr const char* kOperands[] = {"x", "y"};
  template <class M = memop_math::ExpApprox>
  OPBENCH_HD void operator()(const float* in, float* out) const {
    out[0] = memop_math::gelu<M>(in[0]);
  }
};

// in: x, dy; out: dx = dy gelu'(x).
struct GeluGrad : Kernel<2, 1, Accuracy::exponential> {
  static constexpr const char* kOperands[] = {"x", "dy", "dx"};
  template <class M = memop_math::ExpApprox>
  OPBENCH_HD void operator()(const float* in, float* out) const {
    out[0] = in[1] * memop_math::gelu_grad<M>(in[0]);
  }
};

struct Fill : Kernel<0, 1, Accuracy::exact> {
  static constexpr const char* kOperands[] = {"y"};
  OPBENCH_HD void operator()(const float*, float* out) const { out[0] = 0.0f; }
};

struct ScaleInPlace : Kernel<1, 1, Accuracy::arithmetic, true> {
  static constexpr const char* kOperands[] = {"x"};
  OPBENCH_HD void operator()(const float* in, float* out) const { out[0] = in[0] * kScale; }
};

struct AxpyInPlace : Kernel<2, 1, Accuracy::arithmetic, true> {
  static constexpr const char* kOperands[] = {"y", "x"};
  OPBENCH_HD void operator()(const float* in, float* out) const { out[0] = in[0] + kAlpha * in[1]; }
};

struct AddcdivInPlace : Kernel<3, 1, Accuracy::arithmetic, true> {
  static constexpr const char* kOperands[] = {"p", "m", "d"};
  OPBENCH_HD void operator()(const float* in, float* out) const {
    const float d = memop_math::bits_float(memop_math::float_bits(in[2]) & 0x7FFFFFFFu) + 1.0f;
    out[0] = in[0] - kAlpha * in[1] / d;
  }
};

// visit(Kernel{}) for the kernel of `op` and `pass`; false when `op` is not elementwise.
template <class Visit>
bool visit_elementwise(MemOp op, MemPass pass, Visit&& visit) {
  const bool fwd = pass == MemPass::fwd;
  switch (op) {
    case MemOp::add:
      visit(Add{});
      return true;
    case MemOp::swiglu:
      fwd ? visit(Swiglu{}) : visit(SwigluGrad{});
      return true;
    case MemOp::gelu:
      fwd ? visit(Gelu{}) : visit(GeluGrad{});
      return true;
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
      fwd ? visit(Silu{}) : visit(SiluGrad{});
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

// Kernel F's pointers (a backend's ElementwisePointers: in[3], out[2]), bound by the names F gives
// its operands: find(name) is an operand's address. out[0] is also the first value an in-place
// kernel reads, `in` holds its other inputs; unused entries stay null.
template <class F, class Pointers, class Find>
Pointers bind_elementwise(Find&& find) {
  Pointers p{};
  using In = std::remove_reference_t<decltype(p.in[0])>;
  using Out = std::remove_reference_t<decltype(p.out[0])>;
  int name = 0;
  if constexpr (F::kInPlace) p.out[0] = static_cast<Out>(find(F::kOperands[name++]));
  for (int k = 0; name < F::kIn; ++k)
    p.in[k] = static_cast<In>(find(F::kOperands[name++]));
  if constexpr (!F::kInPlace)
    for (int k = 0; k < F::kOut; ++k)
      p.out[k] = static_cast<Out>(find(F::kOperands[name++]));
  return p;
}

// Whether `op` is one of these kernels.
inline bool is_elementwise(MemOp op) {
  return visit_elementwise(op, MemPass::fwd, [](auto) {});
}

// The accuracy of `op`'s arithmetic in `pass`; `op` must be elementwise.
inline Accuracy accuracy_of(MemOp op, MemPass pass) {
  Accuracy a = Accuracy::exact;
  visit_elementwise(op, pass, [&](auto kernel) { a = decltype(kernel)::kAccuracy; });
  return a;
}

}  // namespace opbench::elementwise
