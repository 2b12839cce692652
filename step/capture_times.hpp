#pragma once
// bench_step --capture-path: the times a real job's GEMMs and collectives took inside the job
// (the capture folder scripts/capture.sh writes), put in place of the isolated ones so that the
// projection differs from the job only by what the capture cannot see (docs/formulas.md,
// "Calibration from a capture").
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/capture_tables.hpp"
#include "step/operator_times.hpp"
#include "step/step_operator.hpp"

namespace opbench {

class CaptureTimes {
 public:
  // Every capture-*.csv of `dir` merged (bad_input naming --capture-path when it holds none).
  static CaptureTimes load(const ShapeSource& source);

  // The in-job average of `op`'s shape (its total time over its timed calls): a GEMM by (m, n, k,
  // layout, dtype) and batch, a batched GEMM also as `batch` calls of one entry (a CPU BLAS runs
  // torch.bmm entry by entry); an attention call by its shape, mask, pass and dtype (a converted
  // trace's SDPA operators); a collective by (op, dtype, bytes, ranks). Routed experts run as a
  // loop (--moe-impl loop): each expert's GEMM at its tokens, from the job's GEMMs of the same
  // shape but for the tokens' dimension (expert_loop_time). nullopt for the other families and
  // uncaptured shapes.
  std::optional<OperatorTime> find(const StepOperator& op) const;

  std::size_t shapes() const { return gemms_.size() + attention_.size() + collectives_.size(); }

  // The job's own time in its memory-bound kernels (a profiler trace's memory_bound rows; a
  // capture has none): the optimizer's (PyTorch's aten::_foreach_* and aten::_fused_adam*
  // operators) apart from the others'. Summed over the source's steps and files.
  struct FamilyTotals {
    double memop_us = 0, optimizer_us = 0;
    std::int64_t memop_calls = 0, optimizer_calls = 0;
  };
  const FamilyTotals& families() const { return families_; }

  // How many of the plan's steps the source holds: for each GEMM shape of `ops` the source has
  // exactly, its calls there over the calls the plan makes of it in a step, the median over the
  // shapes (a trace of 2 steps of one rank: 2; a capture of 5 steps of 8 ranks: 40). nullopt
  // when no GEMM of the plan is there.
  std::optional<double> steps_held(const std::vector<StepOperator>& ops) const;

 private:
  struct Shape {
    std::string api;
    std::int64_t calls = 0;
    double average_us = 0;
  };
  using GemmKey = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, bool,
                             std::string>;  // m n k batch transa transb dtype
  using CollKey = std::tuple<std::string, std::string, std::uint64_t, int>;  // op dtype bytes ranks
  using AttentionKey = std::string;  // AttentionShape::dims(), the pass and the dtype
  std::optional<OperatorTime> expert_loop_time(const StepOperator& op) const;
  std::string dir_;
  std::map<GemmKey, Shape> gemms_;
  std::map<CollKey, Shape> collectives_;
  std::map<AttentionKey, Shape> attention_;
  FamilyTotals families_;
};

}  // namespace opbench
