// The memory-bound operators on the CPU (memops/cpu_memops.cpp), measured over rotating operand
// sets, and checked against the fp64 reference (memops/reference_memops.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <vector>

#include "common/cpu_parallel.hpp"
#include "common/env.hpp"
#include "common/host_buffer.hpp"
#include "common/rotation.hpp"
#include "common/timer.hpp"
#include "common/uniform_value.hpp"
#include "memops/cpu_memops.hpp"
#include "memops/memop_inputs.hpp"
#include "memops/memop_operands.hpp"
#include "memops/memop_provider.hpp"
#include "memops/reference_memops.hpp"

namespace opbench {
namespace {

namespace mm = memop_math;
namespace ref = reference_memops;
using namespace memop_inputs;

constexpr double kU = 0x1p-24;  // fp32's unit roundoff

// ---- operands ------------------------------------------------------------------------------

enum class Fill {
  none,     // an output: zero until the operator writes it
  uniform,  // uniform in [-scale, scale) (fill_uniform_host, scaled by a power of two: exact)
  ids,      // token ids uniform in [0, vocab), drawn anew per set
  targets,  // target classes uniform in [0, cols)
  scale,    // the fp8 scale
  derived,  // computed from the other inputs: a forward's saved statistics, rope's tables
  scratch,  // workspace, neither filled nor checked
};

struct Operand {
  std::string name;
  DType type = DType::fp32;  // storage: fp32, bf16, fp8_e4m3 (bytes), int64, or the copy's dtype
  std::int64_t count = 0;
  Fill fill = Fill::none;
  bool output = false;    // written by the operator and compared with the reference
  bool in_place = false;  // read and written (the optimizer's state)
  bool shared = false;    // one copy for every set
  float scale = 1.0f;
  std::uint64_t seed = 0;
  unsigned char* base = nullptr;  // set 0's copy, in the provider's pool
  std::int64_t stride = 0;        // bytes from one set's copy to the next (0 when shared)

  std::int64_t bytes() const { return count * static_cast<std::int64_t>(dtype_size(type)); }
  void* raw(std::int64_t set) const { return base + set * stride; }
  template <class T>
  T* at(std::int64_t set) const {
    return static_cast<T*>(raw(set));
  }
};

Fill fill_of(OperandFill f) {
  switch (f) {
    case OperandFill::uniform:
      return Fill::uniform;
    case OperandFill::ids:
      return Fill::ids;
    case OperandFill::targets:
      return Fill::targets;
    case OperandFill::fp8_scale:
      return Fill::scale;
    case OperandFill::derived:
      return Fill::derived;
    case OperandFill::none:
      break;
  }
  return Fill::none;
}

// What the operator of `c` reads and writes (the catalogue, memops/memop_operands), and the
// norms' backward workspace of our loops.
std::vector<Operand> operands_of(const MemopCase& c) {
  std::vector<Operand> v;
  for (const OperandSpec& spec : memop_operands(c)) {
    Operand o;
    o.name = spec.name;
    o.type = spec.type;
    o.count = spec.count;
    o.fill = fill_of(spec.fill);
    o.output = spec.written();
    o.in_place = spec.role == OperandRole::state;
    o.shared = spec.shared;
    o.scale = spec.scale;
    o.seed = spec.seed;
    v.push_back(std::move(o));
  }
  if (c.pass == MemPass::bwd && (c.op == MemOp::rmsnorm || c.op == MemOp::layernorm)) {
    Operand o;
    o.name = "workspace";
    o.count = cpu_memops::norm_bwd_workspace_floats(c.rows, c.cols);
    o.fill = Fill::scratch;
    o.shared = true;
    v.push_back(std::move(o));
  }
  return v;
}

// Element i scaled by a power of two (exact in every format).
void scale_elements(Operand& o, std::int64_t set) {
  if (o.scale == 1.0f) return;
  const std::int64_t chunk = 1 << 20;
  parallel_for((o.count + chunk - 1) / chunk, [&](std::int64_t t) {
    const std::int64_t end = std::min(o.count, (t + 1) * chunk);
    if (o.type == DType::bf16) {
      auto* p = o.at<std::uint16_t>(set);
      for (std::int64_t i = t * chunk; i < end; ++i)
        p[i] = float_to_bf16(bf16_to_float(p[i]) * o.scale);
    } else {
      auto* p = o.at<float>(set);
      for (std::int64_t i = t * chunk; i < end; ++i)
        p[i] *= o.scale;
    }
  });
}

class CaseOperands {
 public:
  CaseOperands(const MemopCase& c, std::vector<Operand> operands)
      : c_(c), ops_(std::move(operands)) {}

  Operand& get(const std::string& name) {
    for (auto& o : ops_)
      if (o.name == name) return o;
    throw std::logic_error("memops: no operand " + name);
  }
  template <class T>
  T* at(const std::string& name, std::int64_t set) {
    return get(name).at<T>(set);
  }
  std::vector<Operand>& all() { return ops_; }

  // The bytes one set holds, and those it touches (with the rows of the shared table its ids
  // look up), and the bytes of the shared operands.
  std::int64_t set_bytes() const {
    std::int64_t bytes = 0;
    for (const auto& o : ops_)
      if (!o.shared) bytes += align_up(o.bytes(), kAlign);
    return bytes;
  }
  std::int64_t touched_set_bytes() const {
    if (c_.op == MemOp::embedding && c_.pass == MemPass::fwd)
      return set_bytes() + c_.elements() * static_cast<std::int64_t>(sizeof(float));
    return set_bytes();
  }
  std::int64_t shared_bytes() const {
    std::int64_t bytes = 0;
    for (const auto& o : ops_)
      if (o.shared) bytes += align_up(o.bytes(), kAlign);
    return bytes;
  }

  // Lays the operands out in `pool` (shared_bytes() + sets x set_bytes() bytes): each operand's
  // copies for every set side by side.
  void place(std::int64_t sets, unsigned char* pool) {
    sets_ = sets;
    for (auto& o : ops_) {
      o.base = pool;
      o.stride = o.shared ? 0 : align_up(o.bytes(), kAlign);
      pool += o.shared ? align_up(o.bytes(), kAlign) : sets * o.stride;
    }
  }

  // Fills every input of set 0 and copies them to the other sets (the ids are drawn anew).
  void fill_all() {
    for (auto& o : ops_)
      if (o.shared && o.fill == Fill::uniform) fill_uniform(o, 0);
    fill_set(0);
    for (std::int64_t s = 1; s < sets_; ++s)
      for (auto& o : ops_) {
        if (o.shared || o.fill == Fill::none || o.fill == Fill::scratch) continue;
        if (o.fill == Fill::ids)
          fill_indices(o, s, c_.vocab);
        else
          std::memcpy(o.raw(s), o.raw(0), static_cast<std::size_t>(o.bytes()));
      }
  }

  // Fills the inputs of one set (again, for the check of an operator that updates them).
  void fill_set(std::int64_t set) {
    for (auto& o : ops_) {
      if (o.shared) continue;
      switch (o.fill) {
        case Fill::uniform:
          fill_uniform(o, set);
          break;
        case Fill::ids:
          fill_indices(o, set, c_.vocab);
          break;
        case Fill::targets:
          fill_indices(o, set, c_.cols);
          break;
        case Fill::scale:
          *o.at<float>(set) = kFp8Scale;
          break;
        default:
          break;
      }
    }
    derive(set);
  }

 private:
  void fill_uniform(Operand& o, std::int64_t set) {
    fill_uniform_host(o.raw(set), static_cast<std::size_t>(o.count), o.type, o.seed);
    scale_elements(o, set);
  }

  void fill_indices(Operand& o, std::int64_t set, std::int64_t range) {
    auto* p = o.at<std::int64_t>(set);
    for (std::int64_t i = 0; i < o.count; ++i)
      p[i] = uniform_index(o.seed, set, i, range);
  }

  // The saved inputs of a backward come from its forward on this set's x, as in training; rope's
  // tables are built once, as a model caches them; AdamW's second moment follows its first
  // (memop_inputs::adamw_second_moment).
  void derive(std::int64_t set) {
    const std::int64_t rows = c_.rows, cols = c_.cols;
    std::vector<float> scratch;
    auto scratch_n = [&] {
      scratch.assign(static_cast<std::size_t>(c_.elements()), 0.0f);
      return scratch.data();
    };
    if (c_.op == MemOp::adamw || c_.op == MemOp::adamw_bf16) {
      const float* m = at<float>("m", set);
      float* v = at<float>("v", set);
      for (std::int64_t i = 0; i < c_.elements(); ++i)
        v[i] = adamw_second_moment(m[i]);
    } else if (c_.op == MemOp::rope) {
      cpu_memops::rope_tables(at<float>("cos", set), at<float>("sin", set), rows, c_.head_dim);
    } else if (c_.pass != MemPass::bwd) {
      return;
    } else if (c_.op == MemOp::rmsnorm) {
      cpu_memops::rmsnorm_fwd(at<float>("x", set), at<float>("w", set), scratch_n(),
                              at<float>("rstd", set), rows, cols);
    } else if (c_.op == MemOp::layernorm) {
      std::vector<float> b(static_cast<std::size_t>(cols), 0.0f);
      cpu_memops::layernorm_fwd(at<float>("x", set), at<float>("w", set), b.data(), scratch_n(),
                                at<float>("mean", set), at<float>("rstd", set), rows, cols);
    } else if (c_.op == MemOp::softmax) {
      float* logits = scratch_n();
      fill_uniform_host(logits, scratch.size(), DType::fp32, kSeed - 1);
      for (float& x : scratch)
        x *= 4.0f;
      cpu_memops::softmax_fwd(logits, at<float>("y", set), rows, cols);
    }
  }

  const MemopCase& c_;
  std::vector<Operand> ops_;
  std::int64_t sets_ = 1;
};

// Runs the case's operator on one set.
void run_op(const MemopCase& c, CaseOperands& d, std::int64_t s) {
  const std::int64_t n = c.elements(), rows = c.rows, cols = c.cols;
  auto f = [&](const char* name) { return d.at<float>(name, s); };
  auto bf = [&](const char* name) { return d.at<std::uint16_t>(name, s); };
  auto ids = [&](const char* name) { return d.at<std::int64_t>(name, s); };
  const bool fwd = c.pass == MemPass::fwd;
  namespace cm = cpu_memops;
  switch (c.op) {
    case MemOp::add:
      return cm::add(f("x"), f("y"), f("z"), n);
    case MemOp::rmsnorm:
      if (fwd) return cm::rmsnorm_fwd(f("x"), f("w"), f("y"), f("rstd"), rows, cols);
      return cm::rmsnorm_bwd(f("dy"), f("x"), f("w"), f("rstd"), f("dx"), f("dw"), f("workspace"),
                             rows, cols);
    case MemOp::layernorm:
      if (fwd)
        return cm::layernorm_fwd(f("x"), f("w"), f("b"), f("y"), f("mean"), f("rstd"), rows, cols);
      return cm::layernorm_bwd(f("dy"), f("x"), f("w"), f("mean"), f("rstd"), f("dx"), f("dw"),
                               f("db"), f("workspace"), rows, cols);
    case MemOp::softmax:
      if (fwd) return cm::softmax_fwd(f("x"), f("y"), rows, cols);
      return cm::softmax_bwd(f("y"), f("dy"), f("dx"), rows, cols);
    case MemOp::swiglu:
      if (fwd) return cm::swiglu_fwd(f("g"), f("u"), f("y"), n);
      return cm::swiglu_bwd(f("g"), f("u"), f("dy"), f("dg"), f("du"), n);
    case MemOp::gelu:
      if (fwd) return cm::gelu_fwd(f("x"), f("y"), n);
      return cm::gelu_bwd(f("x"), f("dy"), f("dx"), n);
    case MemOp::rope:
      return cm::rope(f(fwd ? "x" : "dy"), f("cos"), f("sin"), f(fwd ? "y" : "dx"), rows,
                      c.heads + c.kv_heads, c.head_dim, !fwd);
    case MemOp::cross_entropy:
      return cm::cross_entropy(f("logits"), ids("targets"), f("dlogits"), f("loss"), rows, cols);
    case MemOp::embedding:
      if (fwd) return cm::embedding_fwd(f("table"), ids("ids"), f("y"), rows, cols);
      return cm::embedding_bwd(f("dy"), ids("ids"), f("dtable"), rows, cols, c.vocab);
    case MemOp::adamw:
      return cm::adamw(f("param"), f("grad"), f("m"), f("v"), n, kAdamW);
    case MemOp::adamw_bf16:
      return cm::adamw_bf16(f("param"), bf("grad"), f("m"), f("v"), bf("param_bf16"), n, kAdamW);
    case MemOp::cast_to_bf16:
      return cm::cast_to_bf16(f("x"), bf("y"), n);
    case MemOp::cast_to_fp32:
      return cm::cast_to_fp32(bf("x"), f("y"), n);
    case MemOp::fp8_quantize:
      return cm::fp8_quantize(bf("x"), f("scale"), d.at<std::uint8_t>("y", s), f("amax"), n);
    case MemOp::copy: {
      const Operand& src = d.get("src");
      return cm::copy(src.raw(s), d.get("dst").raw(s), static_cast<std::size_t>(src.bytes()));
    }
    default:
      throw std::logic_error("memops: the CPU provider has no " + memop_name(c.op));
  }
}

// ---- check ---------------------------------------------------------------------------------

// One output compared with the reference: the largest |got - want| and where, against the
// output's largest |want| (its scale: errors are relative to it, so a bound does not depend on
// the values' magnitude).
struct OutputCheck {
  std::string name;
  double tolerance = 0;   // on the error relative to the scale
  std::int64_t cols = 0;  // to name an element [row, col] (0: by its index)
  double max_ref = 0, max_err = 0;
  std::int64_t worst = -1;
  double got = 0, want = 0;

  void add(std::int64_t i, double g, double w) {
    max_ref = std::max(max_ref, std::fabs(w));
    double err = std::fabs(g - w);
    if (std::isnan(g) || std::isnan(w)) err = std::isnan(g) && std::isnan(w) ? 0.0 : INFINITY;
    if (worst < 0 || err > max_err) {
      max_err = err;
      worst = i;
      got = g;
      want = w;
    }
  }
  double scale() const { return max_ref > 0 ? max_ref : 1.0; }
  double relative() const { return max_err / scale(); }
  bool passed() const { return relative() <= tolerance; }
  // How close to its bound (above 1: failed).
  double ratio() const {
    if (tolerance > 0) return relative() / tolerance;
    return relative() > 0 ? INFINITY : 0.0;
  }
  std::string where() const {
    if (cols > 0 && worst >= 0) return fmt::format("{}[{},{}]", name, worst / cols, worst % cols);
    return fmt::format("{}[{}]", name, worst);
  }
};

double value_of(const float* p, std::int64_t i) {
  return p[i];
}
double value_of(const std::uint16_t* p, std::int64_t i) {
  return bf16_to_float(p[i]);  // common/dtype's decoders, not memop_math's
}
double value_of(const std::uint8_t* p, std::int64_t i) {
  return fp8_e4m3_to_float(p[i]);
}

// got[first + i] against want[i] for i < count.
template <class T>
void compare(OutputCheck& check, const T* got, const double* want, std::int64_t first,
             std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i)
    check.add(first + i, value_of(got, first + i), want[i]);
}

// The reference runs on blocks of about a million elements, so checking a large case needs
// 8 bytes a block element, not a double per output element.
constexpr std::int64_t kBlock = 1 << 20;

template <class Body>
void row_blocks(std::int64_t rows, std::int64_t cols, Body&& body) {
  const std::int64_t per = std::max<std::int64_t>(1, kBlock / cols);
  for (std::int64_t r0 = 0; r0 < rows; r0 += per)
    body(r0, std::min(rows, r0 + per));
}

template <class Body>
void element_blocks(std::int64_t n, Body&& body) {
  for (std::int64_t i0 = 0; i0 < n; i0 += kBlock)
    body(i0, std::min(n, i0 + kBlock));
}

// Tolerances, on the error relative to the output's largest magnitude (fp32 results against an
// fp64 reference of the same inputs; u = 2^-24, fp32's unit roundoff):
//   exact        0: gathers, copies, casts and fp8 round once, to the same value (fp8's x scale
//                is exact in fp32: bf16's 8 significant bits times 112 = 7 x 16's 3).
//   elementwise  8u: a few roundings (add 1; rope 3; AdamW 3 for each of param, m and v, whose
//                update term m / (sqrt(v) + eps) is lr-sized next to the parameter).
//   activations  64u: silu, swiglu, gelu and their gradients: exp_approx within 2 ulp, then up
//                to ten roundings; measured up to 19u (gelu's gradient).
//   reductions   u (16 + 2 sqrt(K)) for reductions of K terms (norms, softmax, cross-entropy,
//                dw and db over the rows, tokens sharing an embedding row): the rounding errors
//                of the 16 lane sums have random signs and grow as sqrt(K) (measured: 5e-7 at
//                K = 8192, bound 1.2e-5). The worst case, K/16 u, would be too loose to see a
//                dropped term of a sum of squares, whose effect is 1/K.
//   rope tables  u (8 + 4 max position), absolute: HF's fp32 angle p inv_freq is off by about
//                2u p (the product's and inv_freq's roundings); the reference's is exact.
//   bf16 param   2^-8 + 8u: AdamW's bf16 parameter against the exact reference is within half a
//                bf16 ulp (2^-8 relative at worst); it must also equal the bf16 rounding of the
//                fp32 result, exactly.
double reduction_tolerance(std::int64_t k) {
  return kU * (16.0 + 2.0 * std::sqrt(static_cast<double>(k)));
}
constexpr double kElementwiseTolerance = 8 * kU;
constexpr double kActivationTolerance = 64 * kU;

std::string tolerance_rule(const MemopCase& c) {
  switch (c.op) {
    case MemOp::rmsnorm:
    case MemOp::layernorm:
      if (c.pass == MemPass::bwd)
        return fmt::format("u(16 + 2 sqrt(K)), K = {} (the longer of a row and the rows dw sums)",
                           std::max(c.rows, c.cols));
      return fmt::format("u(16 + 2 sqrt(K)), K = {} (a row)", c.cols);
    case MemOp::softmax:
    case MemOp::cross_entropy:
      return fmt::format("u(16 + 2 sqrt(K)), K = {} (a row)", c.cols);
    case MemOp::embedding:
      return c.pass == MemPass::fwd
                 ? "exact (a gather)"
                 : fmt::format("u(16 + 2 sqrt(K)), K = {} (tokens that may share an id)", c.rows);
    case MemOp::swiglu:
    case MemOp::gelu:
      return "64u (exp within 2 ulp, ten roundings)";
    case MemOp::rope:
      return fmt::format("8u; cos/sin tables u(8 + 4 x {}) for HF's fp32 angle", c.rows - 1);
    case MemOp::add:
    case MemOp::adamw:
      return "8u";
    case MemOp::adamw_bf16:
      return "8u; param_bf16 2^-8 (half a bf16 ulp) and exactly bf16(param)";
    default:
      return "exact";
  }
}

// Compares every output of the case (set `s`) with the reference; `saved` holds the values the
// in-place operands had before the run.
std::deque<OutputCheck> check_outputs(const MemopCase& c, CaseOperands& d, std::int64_t s,
                                      const std::vector<std::vector<float>>& saved) {
  const std::int64_t n = c.elements(), rows = c.rows, cols = c.cols;
  const bool fwd = c.pass == MemPass::fwd;
  std::deque<OutputCheck> checks;
  auto add = [&](std::string name, double tolerance, std::int64_t by_cols = 0) -> OutputCheck& {
    checks.push_back(OutputCheck{std::move(name), tolerance, by_cols});
    return checks.back();
  };
  auto f = [&](const std::string& name) { return d.at<float>(name, s); };
  auto ids = [&](const char* name) { return d.at<std::int64_t>(name, s); };
  std::vector<double> a, b, e;
  auto sized = [](std::vector<double>& v, std::int64_t count) {
    v.assign(static_cast<std::size_t>(count), 0.0);
    return v.data();
  };

  switch (c.op) {
    case MemOp::add: {
      auto& z = add("z", kElementwiseTolerance, cols);
      element_blocks(n, [&](std::int64_t i0, std::int64_t i1) {
        ref::add(f("x") + i0, f("y") + i0, i1 - i0, sized(a, i1 - i0));
        compare(z, f("z"), a.data(), i0, i1 - i0);
      });
      break;
    }
    case MemOp::rmsnorm:
    case MemOp::layernorm: {
      const bool rms = c.op == MemOp::rmsnorm;
      const double eps = rms ? mm::kRmsNormEps : mm::kLayerNormEps;
      if (fwd) {
        const double tol = reduction_tolerance(cols);
        auto& y = add("y", tol, cols);
        auto& rstd = add("rstd", tol);
        OutputCheck* mean = rms ? nullptr : &add("mean", tol);
        row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
          const std::int64_t k = r1 - r0;
          if (rms)
            ref::rmsnorm_fwd(f("x") + r0 * cols, f("w"), k, cols, eps, sized(a, k * cols),
                             sized(b, k));
          else
            ref::layernorm_fwd(f("x") + r0 * cols, f("w"), f("b"), k, cols, eps, sized(a, k * cols),
                               sized(e, k), sized(b, k));
          compare(y, f("y"), a.data(), r0 * cols, k * cols);
          compare(rstd, f("rstd"), b.data(), r0, k);
          if (mean) compare(*mean, f("mean"), e.data(), r0, k);
        });
      } else {
        const double tol = reduction_tolerance(std::max(rows, cols));
        auto& dx = add("dx", tol, cols);
        std::vector<double> dw(static_cast<std::size_t>(cols)), db(dw.size());
        row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
          const std::int64_t k = r1 - r0, at = r0 * cols;
          if (rms)
            ref::rmsnorm_bwd(f("dy") + at, f("x") + at, f("w"), f("rstd") + r0, k, cols,
                             sized(a, k * cols), dw.data());
          else
            ref::layernorm_bwd(f("dy") + at, f("x") + at, f("w"), f("mean") + r0, f("rstd") + r0, k,
                               cols, sized(a, k * cols), dw.data(), db.data());
          compare(dx, f("dx"), a.data(), at, k * cols);
        });
        compare(add("dw", tol), f("dw"), dw.data(), 0, cols);
        if (!rms) compare(add("db", tol), f("db"), db.data(), 0, cols);
      }
      break;
    }
    case MemOp::softmax: {
      auto& out = add(fwd ? "y" : "dx", reduction_tolerance(cols), cols);
      row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
        const std::int64_t k = r1 - r0, at = r0 * cols;
        if (fwd)
          ref::softmax_fwd(f("x") + at, k, cols, sized(a, k * cols));
        else
          ref::softmax_bwd(f("y") + at, f("dy") + at, k, cols, sized(a, k * cols));
        compare(out, f(fwd ? "y" : "dx"), a.data(), at, k * cols);
      });
      break;
    }
    case MemOp::swiglu:
    case MemOp::gelu: {
      const bool swi = c.op == MemOp::swiglu;
      auto& first = add(fwd ? "y" : (swi ? "dg" : "dx"), kActivationTolerance, cols);
      OutputCheck* du = swi && !fwd ? &add("du", kActivationTolerance, cols) : nullptr;
      element_blocks(n, [&](std::int64_t i0, std::int64_t i1) {
        const std::int64_t k = i1 - i0;
        if (swi && fwd) ref::swiglu_fwd(f("g") + i0, f("u") + i0, k, sized(a, k));
        if (swi && !fwd)
          ref::swiglu_bwd(f("g") + i0, f("u") + i0, f("dy") + i0, k, sized(a, k), sized(b, k));
        if (!swi && fwd) ref::gelu_fwd(f("x") + i0, k, sized(a, k));
        if (!swi && !fwd) ref::gelu_bwd(f("x") + i0, f("dy") + i0, k, sized(a, k));
        compare(first, f(first.name), a.data(), i0, k);
        if (du) compare(*du, f("du"), b.data(), i0, k);
      });
      break;
    }
    case MemOp::rope: {
      const std::int64_t half = c.head_dim / 2, vectors = c.heads + c.kv_heads;
      auto& out = add(fwd ? "y" : "dx", kElementwiseTolerance, cols);
      const double table_tol = kU * (8.0 + 4.0 * static_cast<double>(rows - 1));
      auto& cos = add("cos", table_tol, half);
      auto& sin = add("sin", table_tol, half);
      row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
        const std::int64_t k = r1 - r0;
        ref::rope(f(fwd ? "x" : "dy") + r0 * cols, f("cos") + r0 * half, f("sin") + r0 * half, k,
                  vectors, c.head_dim, !fwd, sized(a, k * cols));
        compare(out, f(out.name), a.data(), r0 * cols, k * cols);
        ref::rope_tables(r0, k, c.head_dim, mm::kRopeBase, sized(b, k * half), sized(e, k * half));
        compare(cos, f("cos"), b.data(), r0 * half, k * half);
        compare(sin, f("sin"), e.data(), r0 * half, k * half);
      });
      break;
    }
    case MemOp::cross_entropy: {
      const double tol = reduction_tolerance(cols);
      auto& grad = add("dlogits", tol, cols);
      auto& loss = add("loss", tol);
      row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
        const std::int64_t k = r1 - r0;
        ref::cross_entropy(f("logits") + r0 * cols, ids("targets") + r0, k, cols, rows,
                           sized(a, k * cols), sized(b, k));
        compare(grad, f("dlogits"), a.data(), r0 * cols, k * cols);
        compare(loss, f("loss"), b.data(), r0, k);
      });
      break;
    }
    case MemOp::embedding:
      if (fwd) {
        auto& y = add("y", 0, cols);
        row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
          const std::int64_t k = r1 - r0;
          ref::embedding_fwd(f("table"), ids("ids") + r0, k, cols, sized(a, k * cols));
          compare(y, f("y"), a.data(), r0 * cols, k * cols);
        });
      } else {
        auto& dtable = add("dtable", reduction_tolerance(rows), cols);
        row_blocks(c.vocab, cols, [&](std::int64_t v0, std::int64_t v1) {
          ref::embedding_bwd(f("dy"), ids("ids"), rows, cols, v0, v1, sized(a, (v1 - v0) * cols));
          compare(dtable, f("dtable"), a.data(), v0 * cols, (v1 - v0) * cols);
        });
      }
      break;
    case MemOp::adamw:
    case MemOp::adamw_bf16: {
      const bool mixed = c.op == MemOp::adamw_bf16;
      const ref::AdamWHyper h{kAdamW.lr,  kAdamW.beta1,        kAdamW.beta2,
                              kAdamW.eps, kAdamW.weight_decay, kAdamW.step};
      auto& param = add("param", kElementwiseTolerance);
      auto& m = add("m", kElementwiseTolerance);
      auto& v = add("v", kElementwiseTolerance);
      OutputCheck* p16 = mixed ? &add("param_bf16", 0x1p-8 + kElementwiseTolerance) : nullptr;
      OutputCheck* p16_exact = mixed ? &add("param_bf16 vs bf16(param)", 0) : nullptr;
      // saved: the parameters, m and v before the step (operands_of's order).
      element_blocks(n, [&](std::int64_t i0, std::int64_t i1) {
        const std::int64_t k = i1 - i0;
        ref::adamw(saved[0].data() + i0, mixed ? nullptr : f("grad") + i0,
                   mixed ? d.at<std::uint16_t>("grad", s) + i0 : nullptr, saved[1].data() + i0,
                   saved[2].data() + i0, k, h, sized(a, k), sized(b, k), sized(e, k));
        compare(param, f("param"), a.data(), i0, k);
        compare(m, f("m"), b.data(), i0, k);
        compare(v, f("v"), e.data(), i0, k);
        if (!mixed) return;
        const auto* bits = d.at<std::uint16_t>("param_bf16", s);
        compare(*p16, bits, a.data(), i0, k);
        const float* fp32 = f("param");
        for (std::int64_t i = i0; i < i1; ++i)
          p16_exact->add(i, bf16_to_float(bits[i]), ref::round_to_bf16(fp32[i]));
      });
      break;
    }
    case MemOp::cast_to_bf16:
    case MemOp::cast_to_fp32: {
      auto& y = add("y", 0, cols);
      element_blocks(n, [&](std::int64_t i0, std::int64_t i1) {
        const std::int64_t k = i1 - i0;
        if (c.op == MemOp::cast_to_bf16) {
          ref::cast_to_bf16(f("x") + i0, k, sized(a, k));
          compare(y, d.at<std::uint16_t>("y", s), a.data(), i0, k);
        } else {
          ref::cast_to_fp32(d.at<std::uint16_t>("x", s) + i0, k, sized(a, k));
          compare(y, f("y"), a.data(), i0, k);
        }
      });
      break;
    }
    case MemOp::fp8_quantize: {
      auto& y = add("y", 0, cols);
      double amax = 0;
      element_blocks(n, [&](std::int64_t i0, std::int64_t i1) {
        const std::int64_t k = i1 - i0;
        amax = std::max(
            amax, ref::fp8_quantize(d.at<std::uint16_t>("x", s) + i0, kFp8Scale, k, sized(a, k)));
        compare(y, d.at<std::uint8_t>("y", s), a.data(), i0, k);
      });
      add("amax", 0).add(0, *f("amax"), amax);
      break;
    }
    default:
      break;
  }
  return checks;
}

// The copy is compared byte for byte.
OutputCheck check_copy(const MemopCase& c, CaseOperands& d, std::int64_t s) {
  OutputCheck check{"dst", 0, c.cols};
  const Operand& src = d.get("src");
  const Operand& dst = d.get("dst");
  const auto* a = static_cast<const unsigned char*>(src.raw(s));
  const auto* b = static_cast<const unsigned char*>(dst.raw(s));
  const auto bytes = static_cast<std::size_t>(src.bytes());
  check.add(0, 0, 0);
  if (std::memcmp(a, b, bytes) == 0) return check;
  const std::size_t size = dtype_size(c.dtype);
  const auto at = static_cast<std::int64_t>(std::mismatch(a, a + bytes, b).first - a) /
                  static_cast<std::int64_t>(size);
  check.add(at, element_as_double(b, c.dtype, static_cast<std::size_t>(at)),
            element_as_double(a, c.dtype, static_cast<std::size_t>(at)));
  check.max_ref = std::max(check.max_ref, 1.0);
  if (check.max_err == 0) check.max_err = INFINITY;  // bytes differ, values compare equal (NaN)
  return check;
}

// Adds 1000 to the middle element of the case's first output.
void spoil_for_test(const MemopCase& c, CaseOperands& d, std::int64_t s) {
  for (auto& o : d.all()) {
    if (!o.output) continue;
    const auto i = static_cast<std::size_t>(o.count / 2);
    const DType t = c.op == MemOp::copy ? c.dtype : o.type;
    if (t == DType::fp8_e4m3) {
      auto* p = o.at<std::uint8_t>(s);
      p[i] = float_to_fp8_e4m3(fp8_e4m3_to_float(p[i]) + 1000.0f);  // saturates: 448
    } else {
      store_from_double(o.raw(s), t, i, element_as_double(o.raw(s), t, i) + 1000.0);
    }
    return;
  }
}

class CpuMemopProvider final : public MemopProvider {
 public:
  CpuMemopProvider() : llc_bytes_(cpu_last_level_cache_bytes()) {}

  std::string name() const override { return "cpu"; }
  std::string backend() const override { return "cpu"; }
  std::string device() const override {
    return fmt::format("{} ({} threads)", cpu_model_name(), threads());
  }

  std::optional<std::string> unsupported(const MemopCase& c) const override {
    if (is_copy(c.op) && c.op != MemOp::copy)
      return fmt::format(
          "{} copies between host and GPU memory or between GPUs: run it with --backend cuda",
          memop_name(c.op));
    if (!memop_accepts(c.op, c.dtype))
      return fmt::format("{} does not take {}", memop_name(c.op), dtype_name(c.dtype));
    // A dtype the operator leaves free (memop_accepts takes fp16 only then): the CPU computes
    // in fp32. The copy moves bytes whatever they hold.
    if (c.op != MemOp::copy && c.dtype != DType::fp32 && memop_accepts(c.op, DType::fp16))
      return fmt::format("the CPU provider runs {} in fp32; {} needs --backend cuda",
                         memop_name(c.op), dtype_name(c.dtype));
    if (const auto problem = memop_shape_problem(c)) return problem->why;
    return std::nullopt;
  }

  void describe(Environment& env) const override {
    env.add_device({{"name", cpu_model_name()},
                    {"kind", "cpu"},
                    {"threads", threads()},
                    {"last_level_cache_bytes", llc_bytes_}});
  }

  MemopResult run(const MemopCase& c, const MemopRunOptions& o) override {
    MemopResult r;
    if (auto why = unsupported(c)) {
      r.status = Status::skipped;
      r.note = *why;
      return r;
    }
    CaseOperands d(c, operands_of(c));
    // 60% of the memory available, the pool this provider holds counted in (it is reused).
    const auto budget = static_cast<std::int64_t>(std::min<std::uint64_t>(
        (available_host_memory_bytes() + pool_.bytes()) / 10 * 6, INT64_MAX));
    const std::int64_t shared = d.shared_bytes();
    // Sets enough that the bytes they touch exceed 4x the cache; as many as the budget holds.
    RotationPlan plan = plan_rotation(d.touched_set_bytes(), o.cold ? 0 : llc_bytes_,
                                      std::max<std::int64_t>(0, budget - shared));
    if (!plan.fits) {
      r.status = Status::skipped;
      r.note = fmt::format("needs {} of host memory for one set of operands; {} available",
                           human_bytes(static_cast<double>(d.set_bytes() + shared)),
                           human_bytes(static_cast<double>(budget)));
      return r;
    }
    const auto pool_bytes = static_cast<std::size_t>(shared + plan.sets * d.set_bytes());
    if (pool_.bytes() < pool_bytes) {
      pool_ = HostBuffer();  // free before allocating the larger pool
      pool_ = HostBuffer(pool_bytes);
    }
    d.place(plan.sets, static_cast<unsigned char*>(pool_.data()));
    d.fill_all();
    if (o.cold && flush_.bytes() == 0) flush_ = HostBuffer(cpu_cache_flush_bytes());

    std::int64_t set = 0;
    auto prepare = [&] {
      set = (set + 1) % plan.sets;
      if (o.cold) std::memset(flush_.data(), static_cast<int>(set & 0xFF), flush_.bytes());
    };
    auto sample = [&] {
      CpuTimer timer;
      run_op(c, d, set);
      return timer.elapsed_us();
    };
    // Once a case has run, the threads have been started and the allocator warmed: a run
    // expected to outlast measure()'s threshold (at the best rate seen so far) is its own
    // warm-up.
    MeasureHints hints;
    if (best_bytes_per_s_ > 0) {
      hints.provider_warm = true;
      hints.expected_run_s = static_cast<double>(c.io_bytes()) / best_bytes_per_s_;
    }
    r.measurement = measure(o.measure, sample, prepare, hints);
    if (r.measurement.stats.min > 0)
      best_bytes_per_s_ = std::max(
          best_bytes_per_s_, static_cast<double>(c.io_bytes()) / (r.measurement.stats.min * 1e-6));
    r.impl = c.op == MemOp::copy ? fmt::format("memcpy, {} threads", threads())
                                 : fmt::format("vectorised loops, {} threads", threads());
    r.cache = o.cold ? "flush" : "rotate";
    r.working_set_bytes = plan.sets * d.touched_set_bytes();
    if (o.check) check(c, d, set, o, r);
    return r;
  }

 private:
  static unsigned threads() { return parallel_threads(INT64_MAX); }

  void check(const MemopCase& c, CaseOperands& d, std::int64_t set, const MemopRunOptions& o,
             MemopResult& r) {
    // An operator that updates its inputs (AdamW) has stepped this set many times: give it its
    // inputs again, keep them for the reference, and step once more.
    std::vector<std::vector<float>> saved;
    for (const auto& op : d.all())
      if (op.in_place) {
        d.fill_set(set);
        break;
      }
    for (const auto& op : d.all())
      if (op.in_place) saved.emplace_back(op.at<float>(set), op.at<float>(set) + op.count);
    if (!saved.empty()) run_op(c, d, set);
    if (o.corrupt_for_test) spoil_for_test(c, d, set);

    std::deque<OutputCheck> checks;
    if (c.op == MemOp::copy)
      checks.push_back(check_copy(c, d, set));
    else
      checks = check_outputs(c, d, set, saved);
    const OutputCheck* worst = &checks.front();
    bool passed = true;
    std::string names;
    for (const auto& ch : checks) {
      passed = passed && ch.passed();
      if (ch.ratio() > worst->ratio()) worst = &ch;
      names += (names.empty() ? "" : ", ") + ch.name;
    }
    r.check_passed = passed;
    r.max_abs_err = worst->relative();
    r.tolerance = worst->tolerance;
    const std::string rule = c.op == MemOp::copy ? "byte for byte" : tolerance_rule(c);
    if (passed)
      r.check_detail = fmt::format(
          "largest error {:.3g} of the output's largest magnitude, at {} (bound {:.3g}: {}); "
          "outputs checked: {}",
          worst->relative(), worst->where(), worst->tolerance, rule, names);
    else
      r.check_detail = fmt::format(
          "{}: got {:.9g}, want {:.9g}: error {:.3g} of max |{}| {:.3g} is {:.3g} > {:.3g} ({})",
          worst->where(), worst->got, worst->want, worst->max_err, worst->name, worst->scale(),
          worst->relative(), worst->tolerance, rule);
  }

  std::uint64_t llc_bytes_;
  HostBuffer pool_;  // every case's operands, reused from case to case (grown when short)
  HostBuffer flush_;
  double best_bytes_per_s_ = 0;  // fastest rate seen: predicts how long the next case runs
};

}  // namespace

std::unique_ptr<MemopProvider> make_cpu_memop_provider() {
  return std::make_unique<CpuMemopProvider>();
}

}  // namespace opbench
