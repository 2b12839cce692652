#pragma once
// The routed experts of one MoE layer on one expert-parallel rank, in one pass: a GEMM per expert
// with that expert's token count c_i as its varying dimension (docs/formulas.md, "Grouped expert
// GEMMs"). With the layer Y[c_i, N] = X[c_i, K] · W_i[N, K]ᵀ per expert:
//   fprop  m = c_i, n = N, k = K   (layout NT)
//   dgrad  m = c_i, n = K, k = N   (layout NN)
//   wgrad  m = N,   n = K, k = c_i (layout TN)
// Three ways to run it (--moe-impl):
//   grouped  one call over every expert of the rank (cuBLAS's grouped batched GEMM on the GPU;
//            on the CPU the experts' row blocks form one job spread over the cores);
//   loop     one GEMM call per expert, back to back (an unfused framework);
//   padded   one strided-batched GEMM with every expert padded to the largest count.
// Experts with zero tokens are legal: fprop and dgrad have nothing to compute, wgrad writes a
// zero gradient.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/env.hpp"
#include "gemm/gemm_problem.hpp"
#include "gemm/model_gemms.hpp"
#include "gemm/provider.hpp"

namespace opbench {

enum class MoeImpl { grouped, loop, padded };
std::string moe_impl_name(MoeImpl impl);
// "grouped,loop,padded" (any order, no repeats); bad_input naming --moe-impl otherwise.
std::vector<MoeImpl> parse_moe_impls(const std::string& comma_separated);

struct ExpertGemm {
  GemmPass pass = GemmPass::fprop;
  std::int64_t N = 0, K = 0;         // the layer's output and input features per expert
  std::vector<std::int64_t> tokens;  // c_i of each expert on the rank, in expert order
  DType dtype = DType::fp32;

  std::int64_t experts() const { return static_cast<std::int64_t>(tokens.size()); }
  std::int64_t min_tokens() const;
  std::int64_t max_tokens() const;
  std::int64_t total_tokens() const;
  std::size_t busiest() const;  // the expert with the most tokens (the first of equals)
  // Expert i's GEMM as pass_problem would give it for a layer of M = c_i rows.
  GemmProblem expert(std::size_t i) const;
  // The padded implementation's problem: batch = experts, every expert at max_tokens().
  GemmProblem padded() const;
  // The GEMMs an implementation runs: the padded problem alone, or one per expert.
  std::vector<GemmProblem> problems(MoeImpl impl) const;
  // Real figures, summed over the experts: flops = Σ 2·c_i·n·k (for every pass); bytes as a plain
  // GEMM per expert with tokens, plus the zero gradient wgrad writes for an expert without.
  std::int64_t flops() const;
  std::int64_t read_bytes() const;
  std::int64_t write_bytes() const;
  std::int64_t padded_flops() const { return padded().flops(); }
  // flops / padded_flops: the share of the padded work that is real; nullopt without tokens.
  std::optional<double> efficiency() const;
};

// Which problems of a call get a GEMM and which only a zeroed C: an empty problem (m = 0 or
// n = 0) gets neither, one with k = 0 (wgrad of an expert without tokens) must still write
// C = 0, and no GEMM routine is trusted with either (a grouped-GEMM release of cuBLAS broke on
// zero-sized groups; cuBLASLt's grouped GEMM skips groups with k = 0).
struct ExpertCalls {
  std::vector<std::size_t> gemms;   // problems a GEMM computes
  std::vector<std::size_t> zeroed;  // problems whose C is set to zero instead
};
ExpertCalls expert_calls(const std::vector<GemmProblem>& problems);

// Runs the experts of an ExpertGemm: implemented by the CPU provider (OpenBLAS) and the GPU
// provider (cuBLAS's grouped, per-expert and strided-batched GEMMs).
class ExpertGemmProvider {
 public:
  virtual ~ExpertGemmProvider() = default;
  virtual std::string name() const = 0;     // "openblas", "cublas"
  virtual std::string backend() const = 0;  // "cpu", "cuda"
  virtual std::string device() const = 0;
  // Why this provider cannot run the dtype with this implementation, or nullopt when it can.
  virtual std::optional<std::string> unsupported(DType dtype, MoeImpl impl) const = 0;
  // Times one call of the whole rank's experts under the shared stop rule; with options.check,
  // every expert's result is verified (Freivalds per expert, zeros for an expert without tokens).
  virtual GemmResult run(const ExpertGemm& experts, MoeImpl impl,
                         const GemmRunOptions& options) = 0;
  virtual void describe(Environment& env) const = 0;
};

std::unique_ptr<ExpertGemmProvider> make_openblas_expert_provider();
#ifdef OPBENCH_HAVE_CUDA
std::unique_ptr<ExpertGemmProvider> make_cublas_expert_provider(int device);
#endif

// Freivalds' test of every expert's result (a, b, c hold expert i's operands at a[i], b[i], c[i],
// each stored as experts.expert(i) describes); an expert without work (m = 0 or n = 0) passes
// trivially, one with k = 0 must have written zeros. The worst residual is reported, and the
// detail names the first expert that failed.
CheckResult check_experts(const ExpertGemm& experts, const std::vector<const void*>& a,
                          const std::vector<const void*>& b, const std::vector<const void*>& c,
                          const CheckPrecision& precision);

}  // namespace opbench
