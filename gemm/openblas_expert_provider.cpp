// The routed experts of a rank on the CPU through OpenBLAS, in the three implementations of
// expert_gemm.hpp. `grouped` is the CPU's counterpart of a grouped GEMM kernel: every expert's C
// is cut into row blocks, and the blocks of all experts form one job the cores take from, each
// block a single-threaded GEMM — as a grouped kernel's tiles of every group share the GPU's SMs.
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "common/cpu_parallel.hpp"
#include "common/env.hpp"
#include "common/timer.hpp"
#include "gemm/cblas_gemm.hpp"
#include "gemm/expert_gemm.hpp"
#include "gemm/host_gemm_timing.hpp"
#include "gemm/operand_sets.hpp"

namespace opbench {
namespace {

// A row block of one expert's C: the unit of work of the CPU's grouped GEMM.
struct RowBlock {
  std::size_t expert;
  std::int64_t row0, rows;
};

// Blocks small enough that every core gets several (the experts differ in size, so the job
// balances itself by handing out blocks as cores free up), large enough to keep BLAS efficient.
std::vector<RowBlock> row_blocks(const std::vector<GemmProblem>& experts, unsigned threads) {
  std::int64_t rows = 0;
  for (const auto& p : experts)
    if (p.n > 0) rows += p.m;
  const std::int64_t per_block =
      std::clamp<std::int64_t>(rows / (8 * static_cast<std::int64_t>(threads)), 32, 512);
  std::vector<RowBlock> blocks;
  for (std::size_t e = 0; e < experts.size(); ++e) {
    if (experts[e].n == 0) continue;
    for (std::int64_t r = 0; r < experts[e].m; r += per_block)
      blocks.push_back({e, r, std::min(per_block, experts[e].m - r)});
  }
  return blocks;
}

class OpenBlasExpertProvider final : public ExpertGemmProvider {
 public:
  std::string name() const override { return "openblas"; }
  std::string backend() const override { return "cpu"; }
  std::string device() const override {
    return fmt::format("{} ({} threads)", cpu_model_name(), openblas_get_num_threads());
  }

  std::optional<std::string> unsupported(DType t, MoeImpl) const override {
    return cblas_unsupported(t);
  }

  void describe(Environment&) const override {}  // the dense provider describes the same CPU

  GemmResult run(const ExpertGemm& x, MoeImpl impl, const GemmRunOptions& o) override {
    GemmResult r;
    const bool padded = impl == MoeImpl::padded;
    const std::vector<GemmProblem> problems = x.problems(impl);
    const ExpertOperandLayout layout(problems);
    auto plan = timing_.prepare(o, x.dtype, layout.input_stride, layout.output_stride, r);
    if (!plan) return r;
    std::int64_t set = 0;
    auto a_of = [&](std::size_t e) {
      return timing_.inputs() + set * layout.input_stride + layout.a_at[e];
    };
    auto b_of = [&](std::size_t e) {
      return timing_.inputs() + set * layout.input_stride + layout.b_at[e];
    };
    auto c_of = [&](std::size_t e) {
      return timing_.outputs() + set * layout.output_stride + layout.c_at[e];
    };
    const std::vector<RowBlock> blocks = row_blocks(problems, parallel_threads(1 << 20));
    auto run_once = [&](std::int64_t s) {
      set = s;
      switch (impl) {
        case MoeImpl::grouped:
          parallel_for(static_cast<std::int64_t>(blocks.size()), [&](std::int64_t i) {
            const RowBlock& blk = blocks[static_cast<std::size_t>(i)];
            cblas_gemm_rows(problems[blk.expert], a_of(blk.expert), b_of(blk.expert),
                            c_of(blk.expert), blk.row0, blk.rows);
          });
          break;
        case MoeImpl::loop:
        case MoeImpl::padded:  // the padded problem is one strided batch
          for (std::size_t e = 0; e < problems.size(); ++e)
            cblas_gemm(problems[e], a_of(e), b_of(e), c_of(e));
          break;
      }
    };
    const auto timed_flops = static_cast<double>(padded ? x.padded_flops() : x.flops());
    r.measurement = timing_.time(o, *plan, x.dtype, timed_flops, run_once, set);
    const std::string routine = x.dtype == DType::fp32 ? "cblas_sgemm" : "cblas_dgemm";
    switch (impl) {
      case MoeImpl::grouped:
        r.algo = fmt::format("{} row blocks of {} experts over {} threads ({})", blocks.size(),
                             problems.size(), parallel_threads(1 << 20), routine);
        break;
      case MoeImpl::loop:
        r.algo = fmt::format("{} x {} experts", routine, problems.size());
        break;
      case MoeImpl::padded:
        r.algo = fmt::format("{} x batch {}", routine, x.padded().batch);
        break;
    }
    if (o.check) r.check = check(x, impl, problems, a_of, b_of, c_of, o);
    return r;
  }

 private:
  template <typename AOf, typename BOf, typename COf>
  CheckResult check(const ExpertGemm& x, MoeImpl impl, const std::vector<GemmProblem>& problems,
                    AOf a_of, BOf b_of, COf c_of, const GemmRunOptions& o) {
    const CheckPrecision precision{0.0, unit_roundoff(x.dtype)};
    if (o.corrupt_for_test) {
      // The busiest expert's result (or the padded batch's middle) gets one wrong element.
      const std::size_t e = impl == MoeImpl::padded ? 0 : x.busiest();
      const GemmProblem& p = problems[e];
      if (p.c_elements() > 0)
        spoil_element_for_test(c_of(e), p.out_dtype,
                               static_cast<std::size_t>(p.batch * p.c_elements() / 2));
    }
    if (impl == MoeImpl::padded)
      return freivalds_check(problems[0], a_of(0), b_of(0), c_of(0), precision);
    std::vector<const void*> a, b, c;
    for (std::size_t e = 0; e < problems.size(); ++e) {
      a.push_back(a_of(e));
      b.push_back(b_of(e));
      c.push_back(c_of(e));
    }
    return check_experts(x, a, b, c, precision);
  }

  HostGemmTiming timing_;
};

}  // namespace

std::unique_ptr<ExpertGemmProvider> make_openblas_expert_provider() {
  return std::make_unique<OpenBlasExpertProvider>();
}

}  // namespace opbench
