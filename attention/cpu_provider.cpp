// The CPU attention providers: measured runs of the blocked kernels (or the naive reference),
// and --check against the fp64 reference on a deterministic subset of heads.
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attention/attention_provider.hpp"
#include "attention/cpu_attention.hpp"
#include "common/env.hpp"
#include "common/error.hpp"
#include "common/host_buffer.hpp"
#include "common/rotation.hpp"
#include "common/timer.hpp"

namespace opbench {
namespace {

constexpr double kFp32Tolerance = 1e-4;  // relative to the largest reference value (at least 1)

float* floats(HostBuffer& b) {
  return static_cast<float*>(b.data());
}

class CpuAttentionProvider final : public AttentionProvider {
 public:
  explicit CpuAttentionProvider(std::string which) : which_(std::move(which)) {
    if (which_ != "blocked" && which_ != "reference")
      throw bad_input(fmt::format(
          "--provider: unknown CPU provider '{}' (accepted: blocked, reference; cudnn runs with "
          "--backend cuda)",
          which_));
  }

  std::string name() const override { return which_; }
  std::string backend() const override { return "cpu"; }
  std::string device() const override {
    return fmt::format("{} ({} threads)", cpu_model_name(), online_cpus());
  }
  void describe(Environment& env) const override {
    env.add_device({{"name", cpu_model_name()}, {"kind", "cpu"}, {"threads", online_cpus()}});
  }

  std::optional<std::string> unsupported(const AttentionShape& s, AttentionPass) const override {
    if (s.dtype != DType::fp32)
      return fmt::format("the CPU providers run fp32; {} needs --backend cuda",
                         dtype_name(s.dtype));
    return std::nullopt;
  }

  AttentionResult run(const AttentionShape& s, AttentionPass pass,
                      const AttentionRunOptions& o) override {
    AttentionResult r;
    const bool bwd = pass == AttentionPass::bwd;
    const std::int64_t floats_needed =
        s.q_elements() + s.k_elements() + s.v_elements() + s.o_elements() + s.lse_elements() +
        (bwd ? s.o_elements() + s.q_elements() + s.k_elements() + s.v_elements() : 0);
    const std::uint64_t budget = host_memory_budget();
    if (static_cast<std::uint64_t>(floats_needed) * 4 > budget) {
      r.status = Status::skipped;
      r.note =
          fmt::format("needs {} of host memory; {} available", human_bytes(floats_needed * 4.0),
                      human_bytes(static_cast<double>(budget)));
      return r;
    }
    auto alloc = [](HostBuffer& b, std::int64_t n, std::uint64_t seed) {
      b = HostBuffer(static_cast<std::size_t>(n) * 4);
      if (seed) fill_uniform_host(b.data(), static_cast<std::size_t>(n), DType::fp32, seed);
    };
    HostBuffer q, k, v, out, lse, dout, dq, dk, dv;
    alloc(q, s.q_elements(), 11);
    alloc(k, s.k_elements(), 12);
    alloc(v, s.v_elements(), 13);
    alloc(out, s.o_elements(), 0);
    alloc(lse, s.lse_elements(), 0);
    if (bwd) {
      alloc(dout, s.o_elements(), 14);
      alloc(dq, s.q_elements(), 0);
      alloc(dk, s.k_elements(), 0);
      alloc(dv, s.v_elements(), 0);
    }
    const AttentionInputs in{floats(q), floats(k), floats(v)};
    if (bwd && which_ == "blocked")
      flash_forward(s, in, floats(out), floats(lse));  // backward needs O and LSE

    auto once = [&] {
      if (which_ == "blocked") {
        if (bwd)
          flash_backward(s, in, floats(out), floats(lse), floats(dout), floats(dq), floats(dk),
                         floats(dv));
        else
          flash_forward(s, in, floats(out), floats(lse));
        return;
      }
      std::vector<double> a, b2, c;  // the naive loops, every head
      for (std::int64_t bi = 0; bi < s.batch; ++bi) {
        if (bwd)
          for (std::int64_t hk = 0; hk < s.heads_kv; ++hk)
            reference_backward_group(s, in, floats(dout), bi, hk, a, b2, c);
        else
          for (std::int64_t h = 0; h < s.heads_q; ++h)
            reference_forward_head(s, in, bi, h, a, b2);
      }
    };
    r.measurement = measure(o.measure, [&] {
      CpuTimer t;
      once();
      return t.elapsed_us();
    });
    r.engine = which_ == "blocked" ? "blocked 128x128 tiles, OpenBLAS sgemm" : "naive fp64 loops";
    if (o.check && which_ == "blocked")
      check(s, pass, in, out, lse, dout, dq, dk, dv, o.check_heads, r);
    return r;
  }

 private:
  // Compares this run's outputs with the fp64 reference on a spread of heads (KV groups for
  // backward).
  static void check(const AttentionShape& s, AttentionPass pass, const AttentionInputs& in,
                    HostBuffer& out, HostBuffer& lse, HostBuffer& dout, HostBuffer& dq,
                    HostBuffer& dk, HostBuffer& dv, std::int64_t heads, AttentionResult& r) {
    (void)lse;
    double err = 0, scale = 1;
    auto compare = [&](double got, double want) {
      err = std::max(err, std::fabs(got - want));
      scale = std::max(scale, std::fabs(want));
    };
    const std::int64_t Dq = s.head_dim_qk, Dv = s.head_dim_v;
    auto at = [&](HostBuffer& buf, std::int64_t b, std::int64_t i, std::int64_t h, std::int64_t S,
                  std::int64_t H,
                  std::int64_t D) { return floats(buf) + ((b * S + i) * H + h) * D; };
    if (pass == AttentionPass::fwd) {
      std::vector<double> o, l;
      for (auto [b, h] : check_heads(s.batch, s.heads_q, heads)) {
        reference_forward_head(s, in, b, h, o, l);
        for (std::int64_t i = 0; i < s.seqlen_q; ++i)
          for (std::int64_t d = 0; d < Dv; ++d)
            compare(at(out, b, i, h, s.seqlen_q, s.heads_q, Dv)[d], o[i * Dv + d]);
      }
    } else {
      std::vector<double> rq, rk, rv;
      for (auto [b, hk] : check_heads(s.batch, s.heads_kv, std::max<std::int64_t>(1, heads / 2))) {
        reference_backward_group(s, in, floats(dout), b, hk, rq, rk, rv);
        for (std::int64_t g = 0; g < s.group(); ++g)
          for (std::int64_t i = 0; i < s.seqlen_q; ++i)
            for (std::int64_t d = 0; d < Dq; ++d)
              compare(at(dq, b, i, hk * s.group() + g, s.seqlen_q, s.heads_q, Dq)[d],
                      rq[(g * s.seqlen_q + i) * Dq + d]);
        for (std::int64_t j = 0; j < s.seqlen_kv; ++j) {
          for (std::int64_t d = 0; d < Dq; ++d)
            compare(at(dk, b, j, hk, s.seqlen_kv, s.heads_kv, Dq)[d], rk[j * Dq + d]);
          for (std::int64_t d = 0; d < Dv; ++d)
            compare(at(dv, b, j, hk, s.seqlen_kv, s.heads_kv, Dv)[d], rv[j * Dv + d]);
        }
      }
    }
    r.max_abs_err = err;
    r.tolerance = kFp32Tolerance * scale;
    if (!(err <= *r.tolerance)) {
      r.status = Status::failed;
      r.note =
          fmt::format("check failed: max |error| {:.3g} > tolerance {:.3g}", err, *r.tolerance);
    }
  }

  std::string which_;
};

}  // namespace

std::unique_ptr<AttentionProvider> make_cpu_attention_provider(const std::string& which) {
  return std::make_unique<CpuAttentionProvider>(which);
}

}  // namespace opbench
