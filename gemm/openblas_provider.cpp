// GEMM on the CPU through OpenBLAS (cblas_sgemm / cblas_dgemm), all cores.
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "common/env.hpp"
#include "common/host_buffer.hpp"
#include "common/rotation.hpp"
#include "common/timer.hpp"
#include "gemm/cblas_gemm.hpp"
#include "gemm/host_gemm_timing.hpp"
#include "gemm/operand_sets.hpp"
#include "gemm/provider.hpp"

namespace opbench {
namespace {

class OpenBlasProvider final : public GemmProvider {
 public:
  std::string name() const override { return "openblas"; }
  std::string backend() const override { return "cpu"; }
  std::string device() const override {
    return fmt::format("{} ({} threads)", cpu_model_name(), openblas_get_num_threads());
  }

  std::optional<std::string> unsupported(DType t) const override { return cblas_unsupported(t); }

  void describe(Environment& env) const override {
    env.add_device({{"name", cpu_model_name()},
                    {"kind", "cpu"},
                    {"threads", openblas_get_num_threads()},
                    {"last_level_cache_bytes", timing_.llc_bytes()}});
  }

  GemmResult run(const GemmProblem& p, const GemmRunOptions& o) override {
    GemmResult r;
    const OperandLayout layout(p);
    auto plan = timing_.prepare(o, p.dtype, layout.input_stride, layout.output_stride, r);
    if (!plan) return r;
    auto in = timing_.inputs();
    auto out = timing_.outputs();
    std::int64_t set = 0;
    r.measurement = timing_.time(
        o, *plan, p.dtype, static_cast<double>(p.flops()),
        [&](std::int64_t s) {
          cblas_gemm(p, in + layout.a_offset(s), in + layout.b_offset(s), out + layout.c_offset(s));
        },
        set);
    r.algo = p.dtype == DType::fp32 ? "cblas_sgemm" : "cblas_dgemm";
    if (o.check) {
      if (o.corrupt_for_test)
        spoil_element_for_test(out + layout.c_offset(set), p.out_dtype,
                               static_cast<std::size_t>(p.batch * p.c_elements() / 2));
      CheckPrecision precision{0.0, unit_roundoff(p.dtype)};
      r.check = freivalds_check(p, in + layout.a_offset(set), in + layout.b_offset(set),
                                out + layout.c_offset(set), precision);
    }
    return r;
  }

 private:
  HostGemmTiming timing_;
};

}  // namespace

std::unique_ptr<GemmProvider> make_openblas_provider() {
  return std::make_unique<OpenBlasProvider>();
}

}  // namespace opbench
