#include "fsdp/bench_fsdp.hpp"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>

#include "collectives/backend_select.hpp"
#include "collectives/ccl_report.hpp"
#include "collectives/coll_runner.hpp"
#include "collectives/mpi_main.hpp"
#include "collectives/mpi_run.hpp"
#include "collectives/mpi_session.hpp"
#include "common/env.hpp"
#include "common/error.hpp"
#include "common/interrupt.hpp"
#include "common/json_reader.hpp"
#include "common/model_config.hpp"
#include "common/model_list.hpp"
#include "common/progress.hpp"
#include "common/run_tally.hpp"
#include "common/summary.hpp"
#include "common/text.hpp"
#include "fsdp/fsdp_options.hpp"
#include "fsdp/fsdp_plan.hpp"
#include "fsdp/fsdp_report.hpp"
#include "fsdp/nccl_log.hpp"

namespace opbench {
namespace {

// A distinct collective of the plan: measured once, whatever units share it.
using Signature =
    std::tuple<CollOp, DType, std::int64_t, std::int64_t>;  // op, dtype, per-rank count, group
Signature signature(const PlanEntry& e) {
  return {e.op, e.dtype, e.per_rank_count, e.group_size};
}

std::size_t distinct_collectives(const std::vector<PlanEntry>& plan) {
  std::set<Signature> distinct;
  for (const auto& e : plan)
    distinct.insert(signature(e));
  return distinct.size();
}

// One row per plan entry, each distinct collective of the plan measured once, the first time an
// entry needs it (a case of the shared case loop, through MpiRun::run_case): every entry's row is
// written (and flushed) as soon as its collective has been measured, so a run that stops keeps
// every finished row.
class FsdpReplay {
 public:
  // Opens rank 0's reports in `dir` (MpiRun::open_reports: collective).
  FsdpReplay(MpiRun& mpi, const FsdpOptions& o, const std::vector<PlanEntry>& plan, RedOp redop,
             const std::string& dir)
      : mpi_(mpi),
        o_(o),
        plan_(plan),
        redop_(redop),
        dir_(dir),
        progress_(distinct_collectives(plan), static_cast<double>(distinct_collectives(plan)),
                  o.report.quiet || !mpi.lead()),
        loop_(mpi.case_loop(progress_, nullptr, harness_, tally_, rows_)) {
    mpi_.open_reports(dir,
                      {{"--allgather-report-csv-path", o.allgather_csv},
                       {"--reducescatter-report-csv-path", o.reducescatter_csv},
                       {"--allreduce-report-csv-path", o.allreduce_csv},
                       {"--plan-csv-path", o.plan_csv_path},
                       {"--summary-path", o.report.summary_path}},
                      [&] {
                        // The plan after the earlier run's files were set aside, so it stays
                        // where it was asked.
                        if (!o.plan_csv_path.empty()) write_plan_csv(plan, o, o.plan_csv_path);
                        reports_ = std::make_unique<FsdpReports>(o, dir, mpi.run_facts());
                      });
    mpi_.on_close([this](bool stopped) { return close(stopped); });
  }

  int run() {
    progress_.note(fmt::format(
        "backend: {} ({}); {} ranks; reduce-scatter {}{}", mpi_.backend().name,
        mpi_.backend().reason, mpi_.context().world_size, red_op_name(redop_),
        redop_ != o_.reduce_op ? " (mpi has no avg; the bytes moved are the same)" : ""));
    // The progress counts collectives measured, the closing line the plan's rows: say why they
    // differ before the first progress line.
    if (const std::size_t distinct = distinct_collectives(plan_); distinct < plan_.size())
      progress_.note(fmt::format(
          "{} plan entries, {} distinct collectives to measure: an entry that repeats one (the "
          "same op, dtype, size and group) shares its measurement and gets its own row",
          plan_.size(), distinct));
    tally_.planned = plan_.size();
    install_interrupt_handlers();
    for (const auto& e : plan_) {
      // Every rank stops at the same collective; one the signal catches running has a few
      // seconds to end (CollRunner's watchdog otherwise writes an `interrupted:` row and ends).
      const bool first = !measured_.count(signature(e));
      if (first && !measure(e)) break;
      if (!mpi_.lead()) continue;
      const auto& [call, result] = measured_.at(signature(e));
      // The first entry's row came with its measurement; a later one shares it.
      if (!first) loop_.add_row(*reports_, entry_row(e, call, result));
      step_.add(e.op, e.phase, result.time_us * static_cast<double>(e.calls_per_step));
    }
    return mpi_.finish();
  }

 private:
  // HSDP's all-reduce runs across the shard groups: a replica group is one rank of each, world /
  // group apart; the gathers and scatters run in consecutive ranks.
  int replica_stride(CollOp op, std::int64_t group) const {
    return op == CollOp::all_reduce ? mpi_.context().world_size / static_cast<int>(group) : 1;
  }

  // FSDP2 gathers in place: its all-gather input is the rank's own slice of the output
  // (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, all_gather_copy_in), which spares
  // NCCL the local copy. FSDP1 gathers from the flat parameter's shard, a tensor of its own, and
  // both reduce-scatter into a buffer of their own.
  bool in_place(CollOp op) const { return op == CollOp::all_gather && o_.fsdp.version == 2; }

  // Runs the collective of `e` on every rank; false when the run stopped before it.
  bool measure(const PlanEntry& e) {
    auto [op, dtype, count, group] = signature(e);
    PlanEntry probe;
    probe.op = op;
    probe.per_rank_count = count;
    probe.group_size = group;
    auto& slot = measured_[signature(e)];
    CollCall& call = slot.first;
    call = CollCall{op, dtype, redop_, 0, probe.counts(), in_place(op)};
    const std::string label =
        fmt::format("{} of {} x {} elements {}", coll_op_name(op), group, count, dtype_name(dtype));
    const MpiCase c{static_cast<int>(group), replica_stride(op, group), std::nullopt, call, label};
    return mpi_.run_case(c, loop_, reports_.get(), [&](const CollResult& r) {
      slot.second = r;  // rank 0's, for the later entries that share it
      std::string line = r.status == Status::ok
                             ? fmt::format("{}  {}", label, time_text(r.time_us))
                             : fmt::format("{}  {}: {}", label, status_name(r.status), r.note);
      return MeasuredRow{entry_row(e, call, r), measurement_of(r, o_.run.iters), std::move(line)};
    });
  }

  // One plan entry's row.
  Record entry_row(const PlanEntry& e, const CollCall& call, const CollResult& result) const {
    const CclCase c{e.op,
                    e.dtype,
                    redop_,
                    0,
                    static_cast<std::uint64_t>(e.buffer_bytes()),
                    in_place(e.op) ? Placement::in_place : Placement::out_of_place,
                    static_cast<int>(e.group_size),
                    e.unit,
                    e.calls_per_step,
                    replica_stride(e.op, e.group_size)};
    Record row;
    row.arg("unit", e.unit).arg("phase", e.phase).append(ccl_row(c, call, result, mpi_.context()));
    return row;
  }

  // Rank 0's end: the estimate per step, then close_run.
  int close(bool stopped) {
    step_.print(stdout);
    SummarySpec summary{fmt::format("bench_fsdp: {} on {} ranks (FSDP{})", o_.model,
                                    mpi_.context().world_size, o_.fsdp.version),
                        "time_us",
                        true,
                        {"unit", "phase", "op", "dtype", "count", "size_bytes", "time_us",
                         "busbw_gbps", "calls_per_step"},
                        15,
                        {step_.markdown()}};
    summary.first_are = "longest";
    return close_run(mpi_.env(), dir_, o_.report.summary_path, rows_, summary, tally_,
                     {"", dir_, reports_->listing(), false}, stopped, MpiRun::stopped_code());
  }

  MpiRun& mpi_;
  const FsdpOptions& o_;
  const std::vector<PlanEntry>& plan_;
  const RedOp redop_;  // the reduce-scatter's, as the backend runs it
  const std::string dir_;
  Progress progress_;  // a step per distinct collective
  HarnessCost harness_;
  RunTally tally_;
  std::vector<Record> rows_;              // rank 0's, for the summary
  CaseLoop loop_;                         // no table: the step estimate sums the rows up at the end
  std::unique_ptr<FsdpReports> reports_;  // rank 0's
  std::map<Signature, std::pair<CollCall, CollResult>> measured_;
  StepEstimate step_;
};

// Runs every distinct collective of the plan and writes one row per plan entry.
int replay(MpiSession& session, const FsdpOptions& o, const std::vector<PlanEntry>& plan, int argc,
           char** argv) {
  MpiRun mpi(session, {o.backend, o.device_offset, o.device}, o.run, argc, argv, "bench_fsdp");
  // NCCL reduces with avg as FSDP does; MPI has no avg, and sum moves the same bytes.
  const RedOp redop = mpi.backend().name == "mpi" ? RedOp::sum : o.reduce_op;
  mpi.note_rank_load();
  // The rank table as bench_ccl prints it.
  mpi.print_rank_table("# Using devices\n", session.world_size());
  const std::string dir =
      o.report.report_dir.empty() ? "reports/fsdp-" + now_compact() : o.report.report_dir;
  return FsdpReplay(mpi, o, plan, redop, dir).run();
}

int run(MpiSession& session, const FsdpOptions& o_in, int argc, char** argv) {
  FsdpOptions o = o_in;
  const bool lead = session.world_rank() == 0;
  if (o.list_models) return lead ? print_model_list(o.model_config_path) : 0;
  const bool offline = o.dry_run || !o.nccl_logs.empty();
  // A plan outside mpirun has no world to take its size from: a silent 1 would mislead.
  if (offline && o.world_size == 0 && session.world_size() == 1)
    throw bad_input(
        "--world-size: give the number of ranks to plan for (e.g. --world-size 8): outside "
        "mpirun this process is a world of one rank");
  if (o.world_size == 0) o.world_size = session.world_size();
  if (!offline && o.world_size != session.world_size())
    throw bad_input(fmt::format(
        "--world-size {}: this run has {} ranks (run under mpirun -np {}, or plan with --dry-run)",
        o.world_size, session.world_size(), o.world_size));
  o.fsdp.world_size = o.world_size;
  const std::string path =
      o.model_config_path.empty() ? find_config_file("models.json") : o.model_config_path;
  const auto model = select_models(load_models(path), o.model, path);
  if (model.size() != 1) throw bad_input("--model: name one model");
  const auto units = fsdp_units(model.front(), o.fsdp.wrap);
  const auto plan = fsdp_plan(units, o.fsdp);

  if (!o.nccl_logs.empty()) {
    NcclLogSummary log;
    for (const auto& file : o.nccl_logs)
      add_nccl_log_file(file, log);
    if (lead) print_log_summary(log, &plan, stdout);
  }
  if (lead && (o.dry_run || !o.nccl_logs.empty())) print_plan(plan, o, stdout);
  // A replay writes its plan with its reports (replay()); a plan alone is written here.
  if (lead && offline && !o.plan_csv_path.empty()) write_plan_csv(plan, o, o.plan_csv_path);
  if (o.dry_run && lead) print_nccl_tests_commands(plan, o.reduce_op, stdout);
  if (offline) return 0;
  return replay(session, o, plan, argc, argv);
}

}  // namespace

int bench_fsdp_main(int argc, char** argv) {
  return run_mpi_main(argc, argv, parse_fsdp_options, run);
}

}  // namespace opbench
