#pragma once
// bench_ccl --capture-path / --trace-path: the collectives a real job ran, read back from the
// capture library's CSV files or a converted profiler trace
// (docs/outputs.md#capture-files-libopbench_captureso), as cases to run alone. The capture counts a
// collective's bytes as nccl-tests does (common/coll_formulas.hpp, shared with this binary), so its
// `bytes` is bench_ccl's size as it is.
#include <optional>
#include <string>
#include <vector>

#include "collectives/coll_op.hpp"
#include "common/capture_tables.hpp"
#include "common/dtype.hpp"

namespace opbench {

struct CapturedMessage {
  std::string api;  // MPI_Allreduce, ncclAllReduce, ncclGroupEnd, ...
  CollOp op = CollOp::all_reduce;
  DType dtype = DType::fp32;
  RedOp redop = RedOp::sum;
  std::uint64_t size_bytes = 0;
  int comm_size = 0;
  // how far apart the job's group's ranks were (1 consecutive); 0 where the tables do not say
  std::int64_t comm_stride = 0;
  std::int64_t calls = 0;  // per rank: the calls over the tables / the tables that made them
  std::optional<double> in_job_us;  // Σ total_us / Σ timed_calls
  // "in_place" or "out_of_place" as the job called it; "" when the tables do not say (a capture
  // written before the column): bench_ccl then runs both
  std::string placement;
};

// One message per captured collective key (api, op, dtype, bytes, comm_size, comm_stride, redop,
// placement) over every table of `source` (only rank `rank`'s rows when given), largest in-job
// total first.
// Rows bench_ccl cannot run — one-sided send or recv, barrier, an unknown dtype or reduction —
// are named in `left_out`. bad_input when the folder, its files or their columns are not a
// capture's, or `rank` has no file.
std::vector<CapturedMessage> captured_messages(const ShapeSource& source, std::optional<int> rank,
                                               std::vector<std::string>* left_out);

}  // namespace opbench
