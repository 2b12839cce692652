#include "collectives/bench_ccl.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <set>

#include "collectives/backend_select.hpp"
#include "collectives/capture_messages.hpp"
#include "collectives/ccl_options.hpp"
#include "collectives/ccl_report.hpp"
#include "collectives/coll_runner.hpp"
#include "collectives/model_messages.hpp"
#include "collectives/mpi_main.hpp"
#include "collectives/mpi_session.hpp"
#include "collectives/rank_load.hpp"
#include "common/env.hpp"
#include "common/error.hpp"
#include "common/harness_cost.hpp"
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
#include "common/timer.hpp"
#include "trace/trace_source.hpp"

namespace opbench {
namespace {

// The roots of an op: -r, or with -r -1 every rank of the group in turn (nccl-tests' -r -1).
std::vector<int> roots(const CclOptions& o, CollOp op, int group_size) {
  if (!has_root(op)) return {0};
  if (o.root >= 0) return {o.root};
  std::vector<int> all(static_cast<std::size_t>(group_size));
  for (int r = 0; r < group_size; ++r)
    all[static_cast<std::size_t>(r)] = r;
  return all;
}

std::vector<CclCase> sweep_cases(const CclOptions& o, int group_size) {
  std::vector<CclCase> cases;
  for (CollOp op : o.ops)
    for (DType dtype : o.dtypes)
      for (RedOp redop : is_reduction(op) ? o.redops : std::vector<RedOp>{RedOp::sum})
        for (std::uint64_t size : o.sizes)
          for (int root : roots(o, op, group_size))
            for (Placement placement : o.placements)
              cases.push_back({op, dtype, redop, root, size, placement, group_size, "", 0});
  return cases;
}

std::vector<CclCase> model_cases(const CclOptions& o, int world_size) {
  std::string path =
      o.model_config_path.empty() ? find_config_file("models.json") : o.model_config_path;
  auto model = select_models(load_models(path), o.model, path);
  if (model.size() != 1) throw bad_input("--model: name one model");
  ModelParallel parallel{o.tp, o.ep, o.pp, o.micro_batch, o.seqlen, o.model_dtype};
  auto messages = model_messages(model.front(), parallel);
  if (messages.empty())
    throw bad_input(fmt::format(
        "--model {}: no messages at tp {}, ep {}, pp {} (set --tp, --ep or --pp above 1)", o.model,
        o.tp, o.ep, o.pp));
  // --op picks among the model's messages (all of them by default).
  std::vector<std::string> offered;
  for (const auto& m : messages)
    if (std::find(offered.begin(), offered.end(), coll_op_name(m.op)) == offered.end())
      offered.push_back(coll_op_name(m.op));
  std::erase_if(messages, [&](const ModelMessage& m) {
    return std::find(o.ops.begin(), o.ops.end(), m.op) == o.ops.end();
  });
  if (messages.empty())
    throw bad_input(fmt::format("--op: the messages of --model {} at tp {}, ep {}, pp {} are {}",
                                o.model, o.tp, o.ep, o.pp, join(offered, ", ")));
  std::vector<CclCase> cases;
  for (const auto& m : messages) {
    if (world_size % m.group_size != 0)
      throw bad_input(fmt::format(
          "--model {} at --tp {} --ep {} --pp {}: {} needs groups of {} ranks, which do not "
          "divide the {} rank{} of this launch: launch a multiple of {} ranks (mpirun -np {}) "
          "or lower --tp/--ep/--pp",
          o.model, o.tp, o.ep, o.pp, m.label, m.group_size, world_size, world_size > 1 ? "s" : "",
          m.group_size, m.group_size));
    for (Placement placement : o.placements)
      cases.push_back({m.op, m.dtype, RedOp::sum, 0, m.size_bytes, placement, m.group_size, m.label,
                       m.calls_per_step});
  }
  return cases;
}

std::vector<CclCase> capture_cases(const CclOptions& o, int world_size, bool lead) {
  std::vector<std::string> left_out;
  const auto messages = captured_messages(trace::job_shape_source(o.job), o.job.rank, &left_out);
  std::vector<CclCase> cases;
  for (const auto& m : messages) {
    if (m.comm_size > world_size || world_size % m.comm_size != 0) {
      left_out.push_back(fmt::format(
          "{} {} {} B: the job's communicator had {} ranks, which do not divide the {} of this "
          "launch (mpirun -np {})",
          m.api, coll_op_name(m.op), m.size_bytes, m.comm_size, world_size, m.comm_size));
      continue;
    }
    for (Placement placement : o.placements) {
      // the placement the job called, with the job's time for it (both where the tables do not say)
      if (!m.placement.empty() && m.placement != placement_name(placement)) continue;
      CclCase c{m.op, m.dtype, m.redop, 0, m.size_bytes, placement, m.comm_size, m.api, 0};
      c.captured = true;
      c.captured_calls = m.calls;
      c.in_job_us = m.in_job_us;
      cases.push_back(c);
    }
  }
  if (lead)
    for (const auto& why : left_out)
      fmt::print(stderr, "warning: {}: left out {}\n", o.job.flag(), why);
  if (cases.empty())
    throw bad_input(
        fmt::format("{} {}: no collective bench_ccl can run here", o.job.flag(), o.job.path()));
  return cases;
}

// The report files: one CSV for everything (--report-csv-path) and/or one per op in a directory.
class CclReports {
 public:
  CclReports(const CclOptions& o, const std::string& dir, nlohmann::json run)
      : dir_(dir), run_(std::move(run)), formats_(o.report.formats) {
    if (!o.report_csv_path.empty()) all_ = std::make_unique<CsvWriter>(o.report_csv_path);
  }
  void write(CollOp op, const Record& row) {
    if (all_) all_->write(row);
    auto& f = per_op_[op];
    if (!f)
      f = std::make_unique<ReportFiles>(
          (std::filesystem::path(dir_) / ("ccl_" + coll_op_name(op))).string(), formats_, run_,
          "opbench_ccl");
    f->write(row);
    rows_.push_back(row);
  }
  const std::vector<Record>& rows() const { return rows_; }
  std::vector<std::string> listing() const {
    std::vector<std::string> out;
    if (all_) out.push_back(fmt::format("{} ({})", all_->path(), counted(all_->rows(), "row")));
    for (const auto& [op, f] : per_op_)
      for (const auto& line : f->listing())
        out.push_back(line);
    return out;
  }

 private:
  std::string dir_;
  nlohmann::json run_;  // run id and rank map, in every JSON line
  std::set<ReportFormat> formats_;
  std::unique_ptr<CsvWriter> all_;
  std::map<CollOp, std::unique_ptr<ReportFiles>> per_op_;
  std::vector<Record> rows_;
};

// --dry-run: the cases as they would run, one line each, and nothing else. The size is the one
// the run measures and reports (the request rounded to whole elements per rank, as nccl-tests
// rounds it: 1000 B of all_reduce on 3 ranks is 960 B), and the requested size beside it.
int print_cases(const std::vector<CclCase>& cases, int world) {
  ConsoleTable table({{"op", "", 14},
                      {"label", "", 34},
                      {"group_size", "group", 5},
                      {"dtype", "", 5},
                      {"placement", "", 12},
                      {"size_bytes", "", 12},
                      {"requested_bytes", "requested", 12},
                      {"calls_per_step", "calls/step", 10}});
  for (const auto& c : cases) {
    const std::size_t ts = dtype_size(c.dtype);
    Record r;
    r.arg("op", coll_op_name(c.op))
        .arg("label", c.label)
        .arg("group_size", std::int64_t{c.group_size})
        .arg("dtype", std::string(dtype_name(c.dtype)))
        .arg("placement", placement_name(c.placement))
        .arg("size_bytes", coll_counts(c.op, c.size_bytes, ts, c.group_size).size_bytes(ts))
        .arg("requested_bytes", static_cast<std::int64_t>(c.size_bytes))
        .arg("calls_per_step", c.calls_per_step ? Value{c.calls_per_step} : Value{});
    table.print(r);
  }
  std::printf("%zu cases on %d rank%s (dry run: nothing ran)\n", cases.size(), world,
              world > 1 ? "s" : "");
  return 0;
}

int run(MpiSession& session, const CclOptions& o, int argc, char** argv) {
  const bool lead = session.world_rank() == 0;
  if (o.list_models) return lead ? print_model_list(o.model_config_path) : 0;
  const int world =
      o.dry_run && o.world_size > 0 ? static_cast<int>(o.world_size) : session.world_size();
  const int group_size = o.group_size > 0 ? o.group_size : world;
  if (group_size > world || world % group_size != 0)
    throw bad_input(
        fmt::format("--group-size {}: must divide the world size {}", group_size, world));
  if (o.root >= group_size)
    throw bad_input(fmt::format("-r/--root {}: the groups have {} ranks", o.root, group_size));
  for (auto [flag, rank] : {std::pair{"--test-corrupt-rank", o.run.corrupt_rank},
                            {"--test-stall-rank", o.run.stall_rank},
                            {"--test-fail-rank", o.run.fail_rank},
                            {"--test-lead-rank", o.run.lead_rank}})
    if (rank >= world)
      throw bad_input(fmt::format("{} {}: the world has {} ranks", flag, rank, world));
  std::vector<CclCase> cases = o.wants_capture() ? capture_cases(o, world, lead)
                               : o.wants_model() ? model_cases(o, world)
                                                 : sweep_cases(o, group_size);
  if (o.dry_run) return lead ? print_cases(cases, world) : 0;

  CclBackend backend = choose_ccl_backend(session, o.backend, o.device_offset, o.device);
  if (o.run.graph_replays > 0 && backend.name != "nccl")
    throw bad_input(
        "-G/--cudagraph: CUDA-graph mode needs the NCCL backend (here: " + backend.name + ")");
  backend.cuda_graphs = o.run.graph_replays > 0;
  Environment env(argc, argv, "bench_ccl");
  describe_backend(backend, env);
  env.set("world_size", world);
  env.set("nodes", session.nodes());
  // Where every rank runs, in environment.json and in every JSON line's run facts.
  const nlohmann::json rank_map = gather_rank_map(backend, session);
  env.set("ranks", rank_map);
  const RankLoad load = rank_load(rank_map);
  env.set("rank_load", {{"hosts", load.hosts}, {"oversubscribed", load.oversubscribed}});
  const std::string dir =
      o.report.report_dir.empty() ? "reports/ccl-" + now_compact() : o.report.report_dir;
  std::unique_ptr<CclReports> reports;
  // Rank 0 alone writes reports; every rank learns whether it could before anything runs.
  std::string report_error;
  if (lead) {
    try {
      ensure_directory(dir);
      set_aside_earlier_reports(dir, {{"--report-csv-path", o.report_csv_path},
                                      {"--summary-path", o.report.summary_path}});
      env.write(dir, false);
      reports = std::make_unique<CclReports>(
          o, dir, nlohmann::json{{"run_id", env.run_id()}, {"ranks", rank_map}});
    } catch (const Error& e) {
      report_error = e.what();
    }
  }
  if (session.any(!report_error.empty())) throw bad_input(report_error);

  Progress progress(cases.size(), static_cast<double>(cases.size()), o.report.quiet || !lead);
  progress.note(fmt::format("backend: {} ({}); {} ranks on {} node{}", backend.name, backend.reason,
                            world, session.nodes(), session.nodes() > 1 ? "s" : ""));
  // Said even with --quiet: it changes what every figure of the run means.
  if (lead && !load.warning.empty()) std::fprintf(stderr, "note: %s\n", load.warning.c_str());
  auto ranks = session.gather_strings(describe_rank(backend, session, group_size));
  if (lead) {
    // nccl-tests' header, so the two outputs diff line for line; its sizes are those of the
    // cases that run (a model's messages, not the unused default sweep).
    const auto [min_case, max_case] = std::minmax_element(
        cases.begin(), cases.end(),
        [](const CclCase& a, const CclCase& b) { return a.size_bytes < b.size_bytes; });
    const std::uint64_t* min_size = &min_case->size_bytes;
    const std::uint64_t* max_size = &max_case->size_bytes;
    std::printf(
        "# nThread 1 nGpus 1 minBytes %llu maxBytes %llu step: %s warmup iters: %d iters: %d agg "
        "iters: 1 validation: %d graph: %d\n#\n# Using devices\n",
        static_cast<unsigned long long>(*min_size), static_cast<unsigned long long>(*max_size),
        o.step_text.c_str(), o.run.warmup, o.run.iters, o.run.check_passes, o.run.graph_replays);
    for (const auto& line : ranks)
      std::printf("%s\n", line.c_str());
  }

  std::map<int, std::unique_ptr<Communicator>> comms;  // one per group size
  // Buffers for the largest call of each group size: calls rotate within them (nccl-tests).
  std::map<int, std::size_t> reserve_bytes;
  for (const auto& c : cases) {
    const CollCounts k = coll_counts(c.op, c.size_bytes, dtype_size(c.dtype), c.group_size);
    const auto bytes =
        static_cast<std::size_t>(std::max(k.send_count, k.recv_count)) * dtype_size(c.dtype);
    reserve_bytes[c.group_size] = std::max(reserve_bytes[c.group_size], bytes);
  }
  CollRunner runner(session, o.run);
  CclContext ctx{backend.name,      world,          session.nodes(), o.run.iters,
                 o.run.aggregation, session.hosts()};
  NcclTestsTable table(o.run.per_iter, o.wants_model() ? o.placements.size() : o.placements.size());
  RunTally tally;
  tally.planned = cases.size();
  std::size_t failed = 0;  // on every rank: the exit code of a rank that writes no rows
  install_interrupt_handlers();
  bool stopped = false;
  HarnessCost harness;
  // Rank 0's end of the run: the nccl-tests footer, environment.json's end_time, the summary and
  // the closing lines. After the last case, or from the thread ending the job inside a case.
  auto close = [&](bool stopped_now) {
    table.finish();
    return close_run(env, dir, o.report.summary_path, reports->rows(),
                     {fmt::format("bench_ccl: {} ranks, {} backend", world, backend.name),
                      "busbw_gbps",
                      true,
                      {"op", "dtype", "redop", "placement", "group_size", "size_bytes", "time_us",
                       "algbw_gbps", "busbw_gbps", "wrong"},
                      15,
                      {harness.markdown()}},
                     tally, {harness.text(), dir, reports->listing(), false}, stopped_now,
                     interrupted() ? interrupted_exit_code() : 128 + 15);
  };
  for (const auto& c : cases) {
    // mpirun passes SIGINT/SIGTERM to every rank, maybe not at once: stop together, between
    // cases. A case the signal catches running has a few seconds to end (CollRunner's watchdog
    // otherwise writes it as an `interrupted:` row and ends the process).
    if ((stopped = session.any(interrupted()))) break;
    auto& comm = comms[c.group_size];
    // A new communicator where there is none yet, or where an error aborted the last one.
    if (!comm || comm->aborted()) {
      comm = make_communicator(backend, session, session.group_comm(c.group_size));
      comm->reserve(reserve_bytes[c.group_size]);
    }
    CollCall call{c.op,
                  c.dtype,
                  c.redop,
                  c.root,
                  coll_counts(c.op, c.size_bytes, dtype_size(c.dtype), c.group_size),
                  c.placement == Placement::in_place};
    std::string label = fmt::format("{} {} B {} {}", coll_op_name(c.op),
                                    call.counts.size_bytes(dtype_size(c.dtype)),
                                    dtype_name(c.dtype), placement_name(c.placement));
    progress.start(label);
    // Should a timeout, an interrupt or a lost rank end the job inside this case, its row says so
    // and the run is closed as after its last case (the main thread is stuck inside the case);
    // the scope's end then waits for that end rather than write the case's own row too.
    CollResult r;
    CpuTimer case_clock;
    {
      AbortHookScope hook(session, [&](const std::string& reason) {
        if (!reports) return;
        CollResult aborted;
        aborted.status = Status::failed;
        aborted.note = reason;
        const Record row = ccl_row(c, call, aborted, ctx);
        reports->write(c.op, row);
        tally.add(row);
        progress.clear();
        table.add(c, call, aborted, row);
        close_ended_run([&] { close(interrupted()); });
      });
      r = runner.run(*comm, call, label);
    }
    failed += r.status == Status::failed;
    if (!lead) continue;
    Record row = ccl_row(c, call, r, ctx);
    // The timed calls: the samples of -n calls, or --per-iter's one pass of them.
    const double timed_s =
        r.iter_stats
            ? std::accumulate(r.iter_times_us.begin(), r.iter_times_us.end(), 0.0) * 1e-6
            : std::accumulate(r.samples_us.begin(), r.samples_us.end(), 0.0) * o.run.iters * 1e-6;
    row.extra()["harness"] = harness.add_case(case_clock.elapsed_s(), timed_s, r.sampling_s, 0);
    reports->write(c.op, row);
    harness.result_written();
    progress.clear();
    table.add(c, call, r, row);
    tally.add(row);
    std::string result =
        r.status == Status::ok
            ? fmt::format("{}  {}  busbw {}", label, time_text(r.time_us),
                          bandwidth_text(std::get<double>(*row.find("busbw_gbps"))))
            : fmt::format("{}  {}: {}", label, status_name(r.status), r.note);
    progress.done(1, result);
  }
  if (lead) return close(stopped);
  if (stopped) return interrupted() ? interrupted_exit_code() : 128 + 15;
  return failed ? static_cast<int>(ExitCode::run_failed) : 0;
}

}  // namespace

int bench_ccl_main(int argc, char** argv) {
  return run_mpi_main(argc, argv, [](MpiSession& session, int argc, char** argv) {
    auto options = parse_ccl_options(argc, argv);
    return options ? run(session, *options, argc, argv) : 0;
  });
}

}  // namespace opbench
