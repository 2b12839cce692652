#pragma once
// The list of GEMM cases a run measures, from model configs, an explicit shapes file, or sweeps.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/capture_tables.hpp"
#include "common/model_config.hpp"
#include "gemm/expert_gemm.hpp"
#include "gemm/gemm_problem.hpp"
#include "gemm/model_gemms.hpp"
#include "gemm/moe_routing.hpp"

namespace opbench {

// How a MoE model's routed experts are run: --ep, --routing, --moe-impl.
struct MoeRun {
  std::int64_t ep = 1;
  std::int64_t etp = 0;  // expert tensor parallelism (ParallelConfig::etp); 0: tp
  RoutingSpec routing;
  std::vector<MoeImpl> impls{MoeImpl::grouped, MoeImpl::loop, MoeImpl::padded};
};

// An expert row: every routed expert of the most loaded expert-parallel rank, in one pass.
struct ExpertCase {
  MoeImpl impl = MoeImpl::grouped;
  std::int64_t ep = 1;
  std::string routing;                     // as given
  int rank = 0;                            // the most loaded rank of the EP group
  ExpertGemm experts;                      // that rank's experts
  std::vector<std::int64_t> group_tokens;  // every expert's count in the EP group
};

// A GEMM shape a real job ran (bench_gemm --capture-path): what libopbench_capture.so saw of it.
using CapturedGemm = CapturedCall;

struct GemmCase {
  std::string report;  // which report file the row goes to: a model's name, "shapes", "sweep",
                       // "capture"
  std::string model;   // model name, or the shapes file / "sweep" / "capture"
  std::string gemm;    // layer (attn_qkv, ...), shape name, "sweep", or the captured API
  std::string pass;    // fprop, dgrad, wgrad; empty for explicit shapes and sweeps
  GemmProblem problem;
  std::int64_t calls_per_step = 1;
  std::int64_t tp = 1, micro_batch = 0, seqlen = 0;  // 0: not from a model
  std::string note;
  std::int64_t repeated_flops = 0;    // of flops(), what other tp ranks compute alike (LinearLayer)
  std::optional<ExpertCase> experts;  // set on expert rows; `problem` is then the padded problem
  std::optional<CapturedGemm> captured;  // set on rows replaying a capture

  // FLOPs on real data: the experts' own for an expert row.
  std::int64_t flops() const { return experts ? experts->experts.flops() : problem.flops(); }
};

std::vector<GemmCase> model_cases(const ModelConfig& model, std::int64_t tp,
                                  const std::vector<std::int64_t>& micro_batches,
                                  const std::vector<std::int64_t>& seqlens,
                                  const std::vector<GemmPass>& passes,
                                  const std::vector<DType>& dtypes, const MoeRun& moe = {},
                                  bool separate_projections = false);

// configs/gemm_shapes.json: [{name, m, n, k, batch?, transa?, transb?, dtype?}]; entries without a
// dtype run every dtype of `dtypes`.
std::vector<GemmCase> shape_file_cases(const std::string& path, const std::vector<DType>& dtypes);
std::vector<GemmCase> shape_cases_from_json(const nlohmann::json& doc, const std::string& path,
                                            const std::vector<DType>& dtypes);

// Every (m, n, k) combination of the lists, in one layout ("NN", "NT", "TN", "TT").
std::vector<GemmCase> sweep_cases(const std::vector<std::int64_t>& ms,
                                  const std::vector<std::int64_t>& ns,
                                  const std::vector<std::int64_t>& ks, std::int64_t batch,
                                  const std::string& layout, const std::vector<DType>& dtypes);

}  // namespace opbench
