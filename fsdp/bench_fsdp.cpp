#include "fsdp/bench_fsdp.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "collectives/backend_select.hpp"
#include "collectives/ccl_report.hpp"
#include "collectives/coll_runner.hpp"
#include "collectives/mpi_main.hpp"
#include "collectives/mpi_session.hpp"
#include "collectives/rank_load.hpp"
#include "common/env.hpp"
#include "common/error.hpp"
#include "common/interrupt.hpp"
#include "common/json_reader.hpp"
#include "common/model_config.hpp"
#include "common/model_list.hpp"
#include "common/owned_files.hpp"
#include "common/progress.hpp"
#include "common/report.hpp"
#include "common/report_files.hpp"
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

// Runs every distinct collective of the plan and writes one row per plan entry.
int replay(MpiSession& session, const FsdpOptions& o, const std::vector<PlanEntry>& plan, int argc,
           char** argv) {
  const bool lead = session.world_rank() == 0;
  CclBackend backend = choose_ccl_backend(session, o.backend, o.device_offset, o.device);
  // NCCL reduces with avg as FSDP does; MPI has no avg, and sum moves the same bytes.
  const RedOp redop = backend.name == "mpi" ? RedOp::sum : o.reduce_op;
  Environment env(argc, argv, "bench_fsdp");
  describe_backend(backend, env);
  env.set("world_size", session.world_size());
  env.set("nodes", session.nodes());
  // Where every rank runs, in environment.json, in every JSON line's run facts, and on stdout
  // as bench_ccl prints it.
  const nlohmann::json rank_map = gather_rank_map(backend, session);
  env.set("ranks", rank_map);
  const RankLoad load = rank_load(rank_map);
  env.set("rank_load", {{"hosts", load.hosts}, {"oversubscribed", load.oversubscribed}});
  if (lead && !load.warning.empty()) std::fprintf(stderr, "note: %s\n", load.warning.c_str());
  const auto rank_lines =
      session.gather_strings(describe_rank(backend, session, session.world_size()));
  if (lead) {
    std::printf("# Using devices\n");
    for (const auto& line : rank_lines)
      std::printf("%s\n", line.c_str());
  }
  const std::string dir =
      o.report.report_dir.empty() ? "reports/fsdp-" + now_compact() : o.report.report_dir;
  // One CSV per collective, at the paths asked for, opened at its first row: a collective the
  // plan lacks (all_reduce without HSDP) leaves no empty file.
  std::map<CollOp, std::string> csv_path;
  std::map<CollOp, std::unique_ptr<CsvWriter>> csv;
  std::unique_ptr<ReportFiles> files;  // fsdp.csv, .jsonl and .prom: every row
  std::string report_error;
  if (lead) {
    try {
      ensure_directory(dir);
      set_aside_earlier_reports(dir, {{"--allgather-report-csv-path", o.allgather_csv},
                                      {"--reducescatter-report-csv-path", o.reducescatter_csv},
                                      {"--allreduce-report-csv-path", o.allreduce_csv},
                                      {"--plan-csv-path", o.plan_csv_path},
                                      {"--summary-path", o.report.summary_path}});
      env.write(dir, false);
      // The plan after the earlier run's files were set aside, so it stays where it was asked.
      if (!o.plan_csv_path.empty()) write_plan_csv(plan, o, o.plan_csv_path);
      files = std::make_unique<ReportFiles>(
          (std::filesystem::path(dir) / "fsdp").string(), o.report.formats,
          nlohmann::json{{"run_id", env.run_id()}, {"ranks", rank_map}}, "opbench_fsdp");
      for (CollOp op : {CollOp::all_gather, CollOp::reduce_scatter, CollOp::all_reduce}) {
        if (!o.report.formats.count(ReportFormat::csv) && per_collective_csv(o, op).empty())
          continue;
        std::string path = per_collective_csv(o, op);
        if (path.empty())
          path = (std::filesystem::path(dir) / ("fsdp_" + coll_op_name(op) + ".csv")).string();
        csv_path[op] = path;
      }
    } catch (const Error& e) {
      report_error = e.what();
    }
  }
  if (session.any(!report_error.empty())) throw bad_input(report_error);

  // Each distinct collective of the plan runs once, the first time an entry needs it; every
  // entry's row is written (and flushed) as soon as its collective has been measured, so a run
  // that stops keeps every finished row.
  std::map<Signature, std::pair<CollCall, CollResult>> measured;
  std::size_t distinct = 0;
  {
    std::set<Signature> seen;
    for (const auto& e : plan)
      distinct += seen.insert(signature(e)).second;
  }
  Progress progress(distinct, static_cast<double>(distinct), o.report.quiet || !lead);
  progress.note(
      fmt::format("backend: {} ({}); {} ranks; reduce-scatter {}{}", backend.name, backend.reason,
                  session.world_size(), red_op_name(redop),
                  redop != o.reduce_op ? " (mpi has no avg; the bytes moved are the same)" : ""));
  // The communicators outlive the runner, whose watchdog thread ends before they go.
  std::map<std::pair<bool, std::int64_t>, std::unique_ptr<Communicator>>
      comms;  // (replica group?, size)
  CollRunner runner(session, o.run);
  CclContext ctx{backend.name, session.world_size(), session.nodes(),
                 o.run.iters,  o.run.aggregation,    session.hosts()};
  std::vector<Record> rows;
  RunTally tally;
  tally.planned = plan.size();
  std::map<std::string, double> step_us;  // per collective and phase
  double total_us = 0;
  bool stopped = false;
  // One plan entry's row, written (and flushed) to every report at once.
  auto write_row = [&](const PlanEntry& e, const CollCall& call, const CollResult& result) {
    const CclCase c{e.op,
                    e.dtype,
                    redop,
                    0,
                    static_cast<std::uint64_t>(e.buffer_bytes()),
                    Placement::out_of_place,
                    static_cast<int>(e.group_size),
                    e.unit,
                    e.calls_per_step,
                    e.op == CollOp::all_reduce};  // HSDP's all-reduce runs across the shard groups
    Record row;
    row.arg("unit", e.unit).arg("phase", e.phase).append(ccl_row(c, call, result, ctx));
    if (csv_path.count(e.op)) {
      auto& writer = csv[e.op];
      if (!writer) writer = std::make_unique<CsvWriter>(csv_path[e.op]);
      writer->write(row);
    }
    if (files) files->write(row);
    return row;
  };
  // Rank 0's end of the run: the estimate per step, environment.json's end_time, the summary and
  // the closing lines. After the last entry, or from the thread ending the job inside a collective.
  auto close = [&](bool stopped_now) {
    std::string estimate =
        "## Estimated communication per training step\n\n(sum of calls x measured time, no "
        "overlap)\n\n"
        "| collective | ms per step |\n|---|---:|\n";
    std::printf(
        "# Estimated communication per training step (sum of calls x measured time, no "
        "overlap):\n");
    for (const auto& [what, us] : step_us) {
      std::printf("#   %-26s %12.3f ms\n", what.c_str(), us / 1000);
      estimate += fmt::format("| {} | {:.3f} |\n", what, us / 1000);
    }
    std::printf("#   %-26s %12.3f ms\n", "total", total_us / 1000);
    estimate += fmt::format("| **total** | **{:.3f}** |\n", total_us / 1000);
    SummarySpec summary{fmt::format("bench_fsdp: {} on {} ranks (FSDP{})", o.model,
                                    session.world_size(), o.fsdp.version),
                        "time_us",
                        true,
                        {"unit", "phase", "op", "dtype", "count", "size_bytes", "time_us",
                         "busbw_gbps", "calls_per_step"},
                        15,
                        {estimate}};
    summary.first_are = "longest";
    RunEnd end{"", dir, {}, false};
    for (const auto& [op, path] : csv_path)
      end.files.push_back(csv.count(op) ? fmt::format("{} ({})", path, counted(csv[op]->rows(), "row"))
                                        : fmt::format("{} (not written: the plan has no {})", path,
                                                      coll_op_name(op)));
    if (files)
      for (const auto& line : files->listing())
        end.files.push_back(line);
    return close_run(env, dir, o.report.summary_path, rows, summary, tally, end, stopped_now,
                     interrupted() ? interrupted_exit_code() : 128 + 15);
  };
  install_interrupt_handlers();
  for (const auto& e : plan) {
    const Signature sig = signature(e);
    if (!measured.count(sig)) {
      // Every rank stops at the same one; a collective the signal catches running has a few
      // seconds to end (CollRunner's watchdog otherwise writes an `interrupted:` row and ends).
      if ((stopped = session.any(interrupted()))) break;
      auto [op, dtype, count, group] = sig;
      const bool replica_group =
          op == CollOp::all_reduce;  // HSDP all-reduce runs across the shard groups
      auto& comm = comms[{replica_group, group}];
      if (!comm || comm->aborted()) {
        MPI_Comm mpi = replica_group ? session.strided_comm(static_cast<int>(o.fsdp.shard_size()))
                                     : session.group_comm(static_cast<int>(group));
        comm = make_communicator(backend, session, mpi);
      }
      PlanEntry probe;
      probe.op = op;
      probe.per_rank_count = count;
      probe.group_size = group;
      auto& slot = measured[sig];
      slot.first = CollCall{op, dtype, redop, 0, probe.counts(), false};
      std::string label = fmt::format("{} of {} x {} elements {}", coll_op_name(op), group, count,
                                      dtype_name(dtype));
      progress.start(label);
      // Should a timeout, an interrupt or a lost rank end the job inside this collective, the
      // entry's row says so and the run is closed as after its last entry (the main thread is
      // stuck inside the collective); the scope's end then waits for that end rather than go on.
      {
        AbortHookScope hook(session, [&](const std::string& reason) {
          if (!lead) return;
          CollResult aborted;
          aborted.status = Status::failed;
          aborted.note = reason;
          rows.push_back(write_row(e, slot.first, aborted));
          tally.add(rows.back());
          progress.clear();
          close_ended_run([&] { close(interrupted()); });
        });
        slot.second = runner.run(*comm, slot.first, label);
      }
      progress.done(1, slot.second.status == Status::ok
                           ? fmt::format("{}  {}", label, time_text(slot.second.time_us))
                           : fmt::format("{}  {}: {}", label, status_name(slot.second.status),
                                         slot.second.note));
    }
    if (!lead) continue;
    const auto& [call, result] = measured.at(sig);
    rows.push_back(write_row(e, call, result));
    tally.add(rows.back());
    const double us = result.time_us * static_cast<double>(e.calls_per_step);
    step_us[coll_op_name(e.op) + " " + e.phase] += us;
    total_us += us;
  }
  if (!lead) return stopped ? (interrupted() ? interrupted_exit_code() : 128 + 15) : 0;
  return close(stopped);
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
  return run_mpi_main(argc, argv, [](MpiSession& session, int argc, char** argv) {
    auto options = parse_fsdp_options(argc, argv);
    return options ? run(session, *options, argc, argv) : 0;
  });
}

}  // namespace opbench
