#pragma once
// bench_fsdp's command line.
#include <optional>
#include <string>
#include <vector>

#include "collectives/coll_runner.hpp"
#include "common/cli.hpp"
#include "fsdp/fsdp_plan.hpp"

namespace opbench {

struct FsdpOptions {
  std::string model_config_path, model;
  std::int64_t world_size = 0;  // 0: the mpirun world size
  FsdpConfig fsdp;
  RedOp reduce_op = RedOp::avg;
  bool dry_run = false, list_models = false;
  std::string plan_csv_path;
  std::vector<std::string> nccl_logs;
  std::string allgather_csv, reducescatter_csv, allreduce_csv;
  std::string backend = "auto";
  int device_offset = 0;
  std::optional<int> device;  // --device: every rank on this GPU index
  CollRunOptions run;
  ReportOptions report;
};

std::optional<FsdpOptions> parse_fsdp_options(int argc, char** argv);

}  // namespace opbench
