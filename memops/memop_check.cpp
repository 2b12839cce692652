#include "memops/memop_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/dtype.hpp"
#include "common/error.hpp"
#include "memops/elementwise.hpp"
#include "memops/memop_inputs.hpp"
#include "memops/memop_math.hpp"
#include "memops/memop_operands.hpp"
#include "memops/reference_memops.hpp"

namespace opbench {
namespace {

namespace mm = memop_math;
namespace ref = reference_memops;
using memop_inputs::kAdamW;
using memop_inputs::kFp8Scale;

constexpr double kU = 0x1p-24;  // fp32's unit roundoff

void compare(OutputCheck& check, const std::vector<float>& got, const double* want,
             std::int64_t first) {
  for (std::size_t i = 0; i < got.size(); ++i)
    check.add(first + static_cast<std::int64_t>(i), got[i], want[i]);
}

// The reference runs on blocks of about a million elements, read block by block.
constexpr std::int64_t kBlock = 1 << 20;

template <class Body>
void row_blocks(std::int64_t rows, std::int64_t cols, Body&& body) {
  const std::int64_t per = std::max<std::int64_t>(1, kBlock / std::max<std::int64_t>(1, cols));
  for (std::int64_t r0 = 0; r0 < rows; r0 += per)
    body(r0, std::min(rows, r0 + per));
}

template <class Body>
void element_blocks(std::int64_t n, Body&& body) {
  for (std::int64_t i0 = 0; i0 < n; i0 += kBlock)
    body(i0, std::min(n, i0 + kBlock));
}

// Tolerances, on the error relative to the output's largest magnitude (results computed in fp32
// against an fp64 reference of the same inputs; u = 2^-24, fp32's unit roundoff). The CPU loops
// and our CUDA kernels run the same memop_math functions; only the order of the sums differs.
//   exact        0: gathers, copies, casts and fp8 round once, to the same value (fp8's x scale
//                is exact in fp32: bf16's 8 significant bits times 112 = 7 x 16's 3).
//   elementwise  8u: a few roundings (add 1; rope 3; AdamW 3 for each of param, m and v, whose
//                update term m / (sqrt(v) + eps) is lr-sized next to the parameter).
//   activations  64u: the activations and their gradients (Accuracy::exponential in
//                memops/elementwise.hpp): exp_approx within 2 ulp, then up to ten roundings;
//                measured up to 19u (gelu's gradient).
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
// An output stored in bf16 or fp16 is rounded once more, to nearest: |rn(y') - y| <= u_t |y'| +
// |y' - y|, so u_t more (2^-8 for bf16, 2^-11 for fp16), relative to the scale.
double reduction_tolerance(std::int64_t k) {
  return kU * (16.0 + 2.0 * std::sqrt(static_cast<double>(k)));
}
constexpr double kElementwiseTolerance = 8 * kU;
constexpr double kActivationTolerance = 64 * kU;

double stored_in(DType t, double fp32_tolerance) {
  return fp32_tolerance + (t == DType::fp32 ? 0.0 : unit_roundoff(t));
}

// An elementwise operator's tolerance, by what its arithmetic does (memops/elementwise.hpp).
double elementwise_tolerance(const MemopCase& c) {
  switch (elementwise::accuracy_of(c.op, c.pass)) {
    case elementwise::Accuracy::exact:
      return 0.0;
    case elementwise::Accuracy::arithmetic:
      return stored_in(c.dtype, kElementwiseTolerance);
    case elementwise::Accuracy::exponential:
      return stored_in(c.dtype, kActivationTolerance);
  }
  return 0.0;
}

}  // namespace

std::string memop_tolerance_rule(const MemopCase& c) {
  const std::string rounding = c.dtype == DType::fp32 || !memop_accepts(c.op, DType::fp16)
                                   ? ""
                                   : fmt::format(", + {} for the rounding to {}",
                                                 unit_roundoff(c.dtype), dtype_name(c.dtype));
  if (elementwise::is_elementwise(c.op)) {
    switch (elementwise::accuracy_of(c.op, c.pass)) {
      case elementwise::Accuracy::exact:
        return "exact";
      case elementwise::Accuracy::arithmetic:
        return "8u" + rounding;
      case elementwise::Accuracy::exponential:
        return "64u (exp within 2 ulp, ten roundings)" + rounding;
    }
  }
  switch (c.op) {
    case MemOp::rmsnorm:
    case MemOp::layernorm:
      if (c.pass == MemPass::bwd)
        return fmt::format("u(16 + 2 sqrt(K)), K = {} (the longer of a row and the rows dw sums){}",
                           std::max(c.rows, c.cols), rounding);
      return fmt::format("u(16 + 2 sqrt(K)), K = {} (a row){}", c.cols, rounding);
    case MemOp::softmax:
    case MemOp::cross_entropy:
      return fmt::format("u(16 + 2 sqrt(K)), K = {} (a row){}", c.cols, rounding);
    case MemOp::embedding:
      return c.pass == MemPass::fwd
                 ? "exact (a gather)"
                 : fmt::format("u(16 + 2 sqrt(K)), K = {} (tokens that may share an id){}", c.rows,
                               rounding);
    case MemOp::rope:
      return fmt::format("8u{}; cos/sin tables u(8 + 4 x {}) for HF's fp32 angle", rounding,
                         c.rows - 1);
    case MemOp::adamw:
      return "8u" + rounding;
    case MemOp::adamw_bf16:
      return "8u; param_bf16 2^-8 (half a bf16 ulp) and exactly bf16(param)";
    default:
      return "exact";
  }
}

std::deque<OutputCheck> check_memop_outputs(const MemopCase& c, OperandReader& read,
                                            const std::vector<std::vector<float>>& saved) {
  const std::int64_t n = c.elements(), rows = c.rows, cols = c.cols;
  const DType t = c.dtype;
  const bool fwd = c.pass == MemPass::fwd;
  std::deque<OutputCheck> checks;
  auto add = [&](std::string name, double tolerance, std::int64_t by_cols = 0) -> OutputCheck& {
    checks.push_back(OutputCheck{std::move(name), tolerance, by_cols});
    return checks.back();
  };
  auto get = [&](const std::string& name, std::int64_t first, std::int64_t count) {
    return read.floats(name, first, count);
  };
  auto get_ids = [&](const std::string& name, std::int64_t first, std::int64_t count) {
    return read.ids(name, first, count);
  };
  std::vector<double> a, b, e;
  auto sized = [](std::vector<double>& v, std::int64_t count) {
    v.assign(static_cast<std::size_t>(count), 0.0);
    return v.data();
  };

  if (elementwise::is_elementwise(c.op)) {
    // Its outputs, computed from the inputs in memop_operands' order; an in-place kernel's
    // updated operand is its first input, as it was before the call (saved[0]).
    const std::vector<OperandSpec> operands = memop_operands(c);
    const double tol = elementwise_tolerance(c);
    std::vector<OutputCheck*> outs;
    for (const auto& o : operands)
      if (o.written()) outs.push_back(&add(o.name, tol, cols));
    element_blocks(n, [&](std::int64_t i0, std::int64_t i1) {
      const std::int64_t k = i1 - i0;
      std::vector<std::vector<float>> inputs;
      for (const auto& o : operands) {
        if (o.in_place())
          inputs.emplace_back(saved.at(0).begin() + i0, saved.at(0).begin() + i1);
        else if (o.read())
          inputs.push_back(get(o.name, i0, k));
      }
      const float* in[3] = {};
      for (std::size_t j = 0; j < inputs.size() && j < 3; ++j)
        in[j] = inputs[j].data();
      double* const y[2] = {sized(a, k), sized(b, k)};
      ref::elementwise(c.op, c.pass, in, k, y);
      for (std::size_t j = 0; j < outs.size() && j < 2; ++j)
        compare(*outs[j], get(outs[j]->name, i0, k), y[j], i0);
    });
    return checks;
  }

  switch (c.op) {
    case MemOp::rmsnorm:
    case MemOp::layernorm: {
      const bool rms = c.op == MemOp::rmsnorm;
      const double eps = rms ? mm::kRmsNormEps : mm::kLayerNormEps;
      const auto w = get("w", 0, cols);
      if (fwd) {
        const double tol = reduction_tolerance(cols);
        auto& y = add("y", stored_in(t, tol), cols);
        auto& rstd = add("rstd", tol);
        OutputCheck* mean = rms ? nullptr : &add("mean", tol);
        const auto bias = rms ? std::vector<float>() : get("b", 0, cols);
        row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
          const std::int64_t k = r1 - r0;
          const auto x = get("x", r0 * cols, k * cols);
          if (rms)
            ref::rmsnorm_fwd(x.data(), w.data(), k, cols, eps, sized(a, k * cols), sized(b, k));
          else
            ref::layernorm_fwd(x.data(), w.data(), bias.data(), k, cols, eps, sized(a, k * cols),
                               sized(e, k), sized(b, k));
          compare(y, get("y", r0 * cols, k * cols), a.data(), r0 * cols);
          compare(rstd, get("rstd", r0, k), b.data(), r0);
          if (mean) compare(*mean, get("mean", r0, k), e.data(), r0);
        });
      } else {
        const double tol = reduction_tolerance(std::max(rows, cols));
        auto& dx = add("dx", stored_in(t, tol), cols);
        std::vector<double> dw(static_cast<std::size_t>(cols)), db(dw.size());
        row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
          const std::int64_t k = r1 - r0, at = r0 * cols;
          const auto dy = get("dy", at, k * cols), x = get("x", at, k * cols),
                     rstd = get("rstd", r0, k);
          if (rms) {
            ref::rmsnorm_bwd(dy.data(), x.data(), w.data(), rstd.data(), k, cols,
                             sized(a, k * cols), dw.data());
          } else {
            const auto mean = get("mean", r0, k);
            ref::layernorm_bwd(dy.data(), x.data(), w.data(), mean.data(), rstd.data(), k, cols,
                               sized(a, k * cols), dw.data(), db.data());
          }
          compare(dx, get("dx", at, k * cols), a.data(), at);
        });
        compare(add("dw", stored_in(t, tol)), get("dw", 0, cols), dw.data(), 0);
        if (!rms) compare(add("db", stored_in(t, tol)), get("db", 0, cols), db.data(), 0);
      }
      break;
    }
    case MemOp::softmax: {
      auto& out = add(fwd ? "y" : "dx", stored_in(t, reduction_tolerance(cols)), cols);
      row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
        const std::int64_t k = r1 - r0, at = r0 * cols;
        if (fwd)
          ref::softmax_fwd(get("x", at, k * cols).data(), k, cols, sized(a, k * cols));
        else
          ref::softmax_bwd(get("y", at, k * cols).data(), get("dy", at, k * cols).data(), k, cols,
                           sized(a, k * cols));
        compare(out, get(fwd ? "y" : "dx", at, k * cols), a.data(), at);
      });
      break;
    }
    case MemOp::rope: {
      const std::int64_t half = c.head_dim / 2, vectors = c.heads + c.kv_heads;
      auto& out = add(fwd ? "y" : "dx", stored_in(t, kElementwiseTolerance), cols);
      // the tables too: HF's fp32 angles against the exact ones
      const double table_tol = kU * (8.0 + 4.0 * static_cast<double>(rows - 1));
      auto& cos = add("cos", table_tol, half);
      auto& sin = add("sin", table_tol, half);
      row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
        const std::int64_t k = r1 - r0;
        const auto got_cos = get("cos", r0 * half, k * half),
                   got_sin = get("sin", r0 * half, k * half);
        ref::rope(get(fwd ? "x" : "dy", r0 * cols, k * cols).data(), got_cos.data(), got_sin.data(),
                  k, vectors, c.head_dim, !fwd, sized(a, k * cols));
        compare(out, get(out.name, r0 * cols, k * cols), a.data(), r0 * cols);
        ref::rope_tables(r0, k, c.head_dim, mm::kRopeBase, sized(b, k * half), sized(e, k * half));
        compare(cos, got_cos, b.data(), r0 * half);
        compare(sin, got_sin, e.data(), r0 * half);
      });
      break;
    }
    case MemOp::cross_entropy: {
      const double tol = reduction_tolerance(cols);
      auto& grad = add("dlogits", stored_in(t, tol), cols);
      auto& loss = add("loss", tol);
      row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
        const std::int64_t k = r1 - r0;
        ref::cross_entropy(get("logits", r0 * cols, k * cols).data(),
                           get_ids("targets", r0, k).data(), k, cols, rows, sized(a, k * cols),
                           sized(b, k));
        compare(grad, get("dlogits", r0 * cols, k * cols), a.data(), r0 * cols);
        compare(loss, get("loss", r0, k), b.data(), r0);
      });
      break;
    }
    case MemOp::embedding:
      if (fwd) {
        // The reference gathers from the rows the block's ids name, fetched one by one: the
        // table itself may be gigabytes.
        auto& y = add("y", 0, cols);
        row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
          const std::int64_t k = r1 - r0;
          const auto ids = get_ids("ids", r0, k);
          std::vector<float> rows_used(static_cast<std::size_t>(k * cols));
          std::vector<std::int64_t> local(static_cast<std::size_t>(k));
          for (std::int64_t r = 0; r < k; ++r) {
            const std::int64_t id = ids[static_cast<std::size_t>(r)];
            if (id < 0 || id >= c.vocab)
              throw run_failure(
                  fmt::format("embedding: token {} has id {} outside the "
                              "vocabulary of {}",
                              r0 + r, id, c.vocab));
            const auto row = get("table", id * cols, cols);
            std::copy(row.begin(), row.end(), rows_used.begin() + r * cols);
            local[static_cast<std::size_t>(r)] = r;
          }
          ref::embedding_fwd(rows_used.data(), local.data(), k, cols, sized(a, k * cols));
          compare(y, get("y", r0 * cols, k * cols), a.data(), r0 * cols);
        });
      } else {
        auto& dtable = add("dtable", stored_in(t, reduction_tolerance(rows)), cols);
        const auto dy = get("dy", 0, n);
        const auto ids = get_ids("ids", 0, rows);
        row_blocks(c.vocab, cols, [&](std::int64_t v0, std::int64_t v1) {
          ref::embedding_bwd(dy.data(), ids.data(), rows, cols, v0, v1, sized(a, (v1 - v0) * cols));
          compare(dtable, get("dtable", v0 * cols, (v1 - v0) * cols), a.data(), v0 * cols);
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
      element_blocks(n, [&](std::int64_t i0, std::int64_t i1) {
        const std::int64_t k = i1 - i0;
        std::vector<float> grad;
        std::vector<std::uint16_t> grad_bits;
        if (mixed)
          grad_bits = read.bits16("grad", i0, k);
        else
          grad = get("grad", i0, k);
        ref::adamw(saved[0].data() + i0, mixed ? nullptr : grad.data(),
                   mixed ? grad_bits.data() : nullptr, saved[1].data() + i0, saved[2].data() + i0,
                   k, h, sized(a, k), sized(b, k), sized(e, k));
        const auto got_param = get("param", i0, k);
        compare(param, got_param, a.data(), i0);
        compare(m, get("m", i0, k), b.data(), i0);
        compare(v, get("v", i0, k), e.data(), i0);
        if (!mixed) return;
        const auto got16 = get("param_bf16", i0, k);
        compare(*p16, got16, a.data(), i0);
        for (std::int64_t i = 0; i < k; ++i) {
          const auto at = static_cast<std::size_t>(i);
          p16_exact->add(i0 + i, got16[at], ref::round_to_bf16(got_param[at]));
        }
      });
      break;
    }
    case MemOp::cast_to_bf16:
    case MemOp::cast_to_fp32: {
      auto& y = add("y", 0, cols);
      element_blocks(n, [&](std::int64_t i0, std::int64_t i1) {
        const std::int64_t k = i1 - i0;
        if (c.op == MemOp::cast_to_bf16)
          ref::cast_to_bf16(get("x", i0, k).data(), k, sized(a, k));
        else
          ref::cast_to_fp32(read.bits16("x", i0, k).data(), k, sized(a, k));
        compare(y, get("y", i0, k), a.data(), i0);
      });
      break;
    }
    case MemOp::fp8_quantize: {
      auto& y = add("y", 0, cols);
      double amax = 0;
      element_blocks(n, [&](std::int64_t i0, std::int64_t i1) {
        const std::int64_t k = i1 - i0;
        amax = std::max(
            amax, ref::fp8_quantize(read.bits16("x", i0, k).data(), kFp8Scale, k, sized(a, k)));
        compare(y, get("y", i0, k), a.data(), i0);
      });
      add("amax", 0).add(0, get("amax", 0, 1)[0], amax);
      break;
    }
    default:
      break;
  }
  return checks;
}

void summarize_checks(const std::deque<OutputCheck>& checks, const std::string& rule,
                      MemopResult& r) {
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

OutputCheck compare_bytes(const std::string& name, const unsigned char* want,
                          const unsigned char* got, std::size_t bytes, DType t, std::int64_t cols) {
  OutputCheck check{name, 0, cols};
  check.add(0, 0, 0);
  if (std::memcmp(want, got, bytes) == 0) return check;
  const std::size_t size = dtype_size(t);
  const auto at =
      static_cast<std::size_t>(std::mismatch(want, want + bytes, got).first - want) / size;
  check.add(static_cast<std::int64_t>(at), element_as_double(got, t, at),
            element_as_double(want, t, at));
  check.max_ref = std::max(check.max_ref, 1.0);
  if (check.max_err == 0) check.max_err = INFINITY;  // bytes differ, values compare equal (NaN)
  return check;
}

}  // namespace opbench
