#include "fsdp/fsdp_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "common/report.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

Record plan_record(const PlanEntry& e) {
  Record r;
  r.arg("unit", e.unit).arg("instances", e.instances).arg("params", e.params);
  r.arg("collective", coll_op_name(e.op))
      .arg("phase", e.phase)
      .arg("dtype", std::string(dtype_name(e.dtype)));
  r.arg("group_size", e.group_size).arg("per_rank_count", e.per_rank_count);
  r.metric("shard_bytes", e.shard_bytes())
      .metric("bytes", e.buffer_bytes())
      .metric("calls_per_step", e.calls_per_step);
  return r;
}

// NCCL's collective names in logs, as our ops.
bool logged_op(const std::string& name, CollOp* op) {
  if (name == "AllGather")
    *op = CollOp::all_gather;
  else if (name == "ReduceScatter")
    *op = CollOp::reduce_scatter;
  else if (name == "AllReduce")
    *op = CollOp::all_reduce;
  else
    return false;
  return true;
}

std::string per_collective_csv(const FsdpOptions& o, CollOp op) {
  switch (op) {
    case CollOp::all_gather:
      return o.allgather_csv;
    case CollOp::reduce_scatter:
      return o.reducescatter_csv;
    default:
      return o.allreduce_csv;
  }
}

}  // namespace

void print_plan(const std::vector<PlanEntry>& plan, const FsdpOptions& o, std::FILE* out) {
  std::fprintf(out,
               "# FSDP%d plan of %s: shard groups of %lld ranks, %lld replica(s); all-gather %s, "
               "reduce-scatter %s\n",
               o.fsdp.version, o.model.c_str(), static_cast<long long>(o.fsdp.shard_size()),
               static_cast<long long>(o.fsdp.replicas()),
               std::string(dtype_name(o.fsdp.param_dtype)).c_str(),
               std::string(dtype_name(o.fsdp.reduce_dtype)).c_str());
  ConsoleTable table({{"unit", "", 22},
                      {"instances", "units", 5},
                      {"params", "", 11},
                      {"collective", "", 14},
                      {"phase", "", 8},
                      {"dtype", "", 5},
                      {"per_rank_count", "per-rank count", 14},
                      {"bytes", "nccl-tests size", 15},
                      {"calls_per_step", "calls/step", 10}},
                     out);
  for (const auto& e : plan)
    table.print(plan_record(e));
}

void write_plan_csv(const std::vector<PlanEntry>& plan, const FsdpOptions& o,
                    const std::string& path) {
  CsvWriter csv(path);
  for (const auto& e : plan) {
    Record r;
    r.arg("model", o.model)
        .arg("world_size", o.fsdp.world_size)
        .arg("fsdp_version", std::int64_t{o.fsdp.version});
    r.append(plan_record(e));
    csv.write(r);
  }
}

void print_nccl_tests_commands(const std::vector<PlanEntry>& plan, RedOp reduce_op,
                               std::FILE* out) {
  std::fprintf(out,
               "# The same collectives with nccl-tests (its -b/-e take the whole buffer, world x "
               "shard bytes,\n"
               "# for all_gather_perf and reduce_scatter_perf; a shard alone would measure "
               "world-times too little):\n");
  std::set<std::string> seen;
  for (const auto& e : plan) {
    auto cmd = nccl_tests_command(e, reduce_op);
    if (seen.insert(cmd).second)
      std::fprintf(out, "%s   # %s %s\n", cmd.c_str(), e.unit.c_str(), coll_op_name(e.op).c_str());
  }
}

void print_log_summary(const NcclLogSummary& log, const std::vector<PlanEntry>* plan,
                       std::FILE* out) {
  std::fprintf(out, "# NCCL log: %lld lines, %lld collective calls, %lld malformed\n",
               static_cast<long long>(log.lines), static_cast<long long>(log.collective_lines),
               static_cast<long long>(log.malformed));
  for (const auto& example : log.malformed_examples)
    std::fprintf(out, "#   malformed: %s\n", example.c_str());
  std::vector<ConsoleTable::Column> cols{{"collective", "", 14}, {"count", "", 11},
                                         {"dtype", "", 8},       {"redop", "", 5},
                                         {"nranks", "", 6},      {"calls", "", 7}};
  if (plan) {
    cols.push_back({"predicted_unit", "predicted unit", 22});
    cols.push_back({"predicted_count", "predicted", 11});
    cols.push_back({"predicted_dtype", "dtype", 8});
    cols.push_back({"diff_elements", "diff", 9});
    cols.push_back({"diff_pct", "diff %", 8});
    cols.push_back({"bytes_ratio", "bytes log/plan", 14});
    cols.push_back({"verdict", "", 30});
  }
  ConsoleTable table(cols, out);
  for (const auto& [call, calls] : log.calls) {
    Record r;
    r.arg("collective", call.collective)
        .arg("count", call.count)
        .arg("dtype", nccl_datatype_name(call.datatype));
    // A redop means something only for reductions (an AllGather line's op field is noise).
    const bool reduction = call.collective == "AllReduce" || call.collective == "ReduceScatter" ||
                           call.collective == "Reduce";
    r.arg("redop", reduction ? Value{nccl_redop_name(call.redop)} : Value{})
        .arg("nranks", call.nranks ? Value{std::int64_t{call.nranks}} : Value{});
    r.metric("calls", calls);
    CollOp op;
    if (plan && logged_op(call.collective, &op)) {
      // The plan entry of the same collective nearest in count, among those of the logged dtype
      // when there are any: a dtype that differs changes the bytes, not just a label.
      const std::string logged_dtype = nccl_datatype_name(call.datatype);
      const std::int64_t logged_count = call.count;  // a lambda cannot capture a structured binding
      const PlanEntry* best = nullptr;
      auto better = [&](const PlanEntry& e) {
        if (!best) return true;
        const bool same = dtype_name(e.dtype) == logged_dtype;
        const bool best_same = dtype_name(best->dtype) == logged_dtype;
        if (same != best_same) return same;
        return std::llabs(e.per_rank_count - logged_count) <
               std::llabs(best->per_rank_count - logged_count);
      };
      for (const auto& e : *plan)
        if (e.op == op && better(e)) best = &e;
      if (best) {
        const std::int64_t diff = call.count - best->per_rank_count;
        const std::string plan_dtype(dtype_name(best->dtype));
        r.arg("predicted_unit", best->unit)
            .metric("predicted_count", best->per_rank_count)
            .arg("predicted_dtype", plan_dtype);
        r.metric("diff_elements", diff)
            .metric("diff_pct",
                    100.0 * static_cast<double>(diff) / static_cast<double>(best->per_rank_count));
        const std::size_t logged_size = nccl_datatype_size(call.datatype);
        const double ratio = logged_size ? static_cast<double>(call.count) *
                                               static_cast<double>(logged_size) /
                                               static_cast<double>(best->shard_bytes())
                                         : 0;
        r.metric("bytes_ratio", logged_size ? Value{ratio} : Value{});
        std::string verdict = diff == 0 ? "count matches" : "count differs";
        if (plan_dtype != logged_dtype)
          verdict +=
              fmt::format("; dtype differs: log {}, plan {} (--{}-dtype {} plans it)", logged_dtype,
                          plan_dtype, op == CollOp::all_gather ? "param" : "grad", logged_dtype);
        r.result("verdict", verdict);
      }
    }
    table.print(r);
  }
}

FsdpReports::FsdpReports(const FsdpOptions& o, const std::string& dir, nlohmann::json run)
    : files_((std::filesystem::path(dir) / "fsdp").string(), o.report.formats, std::move(run),
             "opbench_fsdp") {
  for (CollOp op : {CollOp::all_gather, CollOp::reduce_scatter, CollOp::all_reduce}) {
    if (!o.report.formats.count(ReportFormat::csv) && per_collective_csv(o, op).empty()) continue;
    std::string path = per_collective_csv(o, op);
    if (path.empty())
      path = (std::filesystem::path(dir) / ("fsdp_" + coll_op_name(op) + ".csv")).string();
    csv_path_[op] = path;
  }
}

void FsdpReports::write(const Record& row) {
  const CollOp op = parse_coll_ops(std::get<std::string>(*row.find("op"))).front();
  if (csv_path_.count(op)) {
    auto& writer = csv_[op];
    if (!writer) writer = std::make_unique<CsvWriter>(csv_path_[op]);
    writer->write(row);
  }
  files_.write(row);
}

std::vector<std::string> FsdpReports::listing() const {
  std::vector<std::string> out;
  for (const auto& [op, path] : csv_path_) {
    auto written = csv_.find(op);
    out.push_back(
        written != csv_.end()
            ? fmt::format("{} ({})", path, counted(written->second->rows(), "row"))
            : fmt::format("{} (not written: the plan has no {})", path, coll_op_name(op)));
  }
  for (const auto& line : files_.listing())
    out.push_back(line);
  return out;
}

void StepEstimate::add(CollOp op, const std::string& phase, double us) {
  us_[coll_op_name(op) + " " + phase] += us;
  total_us_ += us;
}

void StepEstimate::print(std::FILE* out) const {
  std::fprintf(out,
               "# Estimated communication per training step (sum of calls x measured time, no "
               "overlap):\n");
  for (const auto& [what, us] : us_)
    std::fprintf(out, "#   %-26s %12.3f ms\n", what.c_str(), us / 1000);
  std::fprintf(out, "#   %-26s %12.3f ms\n", "total", total_us_ / 1000);
}

std::string StepEstimate::markdown() const {
  std::string md =
      "## Estimated communication per training step\n\n(sum of calls x measured time, no "
      "overlap)\n\n"
      "| collective | ms per step |\n|---|---:|\n";
  for (const auto& [what, us] : us_)
    md += fmt::format("| {} | {:.3f} |\n", what, us / 1000);
  md += fmt::format("| **total** | **{:.3f}** |\n", total_us_ / 1000);
  return md;
}

}  // namespace opbench
