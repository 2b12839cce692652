#pragma once
// bench_fsdp's tables and files: the plan (console table, CSV), the NCCL log histogram with each
// logged call matched to the plan, and the per-step communication estimate.
#include <cstdio>
#include <string>
#include <vector>

#include "fsdp/fsdp_options.hpp"
#include "fsdp/fsdp_plan.hpp"
#include "fsdp/nccl_log.hpp"

namespace opbench {

void print_plan(const std::vector<PlanEntry>& plan, const FsdpOptions& o, std::FILE* out);
void write_plan_csv(const std::vector<PlanEntry>& plan, const FsdpOptions& o,
                    const std::string& path);
// The nccl-tests command lines that measure the plan's distinct collectives.
void print_nccl_tests_commands(const std::vector<PlanEntry>& plan, RedOp reduce_op, std::FILE* out);
// The histogram of logged calls; with a plan, each call's nearest predicted collective and the
// difference in elements and percent.
void print_log_summary(const NcclLogSummary& log, const std::vector<PlanEntry>* plan,
                       std::FILE* out);

}  // namespace opbench
