#include "collectives/bench_ccl.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectives/backend_select.hpp"
#include "collectives/ccl_cases.hpp"
#include "collectives/ccl_options.hpp"
#include "collectives/ccl_report.hpp"
#include "collectives/mpi_main.hpp"
#include "collectives/mpi_run.hpp"
#include "collectives/rank_groups.hpp"
#include "common/env.hpp"
#include "common/error.hpp"
#include "common/harness_cost.hpp"
#include "common/interrupt.hpp"
#include "common/model_list.hpp"
#include "common/progress.hpp"
#include "common/report.hpp"
#include "common/run_tally.hpp"
#include "common/summary.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

// --dry-run: the cases as they would run, one line each, and nothing else. The size is the one
// the run measures and reports (the request rounded to whole elements per rank, as nccl-tests
// rounds it: 1000 B of all_reduce on 3 ranks is 960 B), and the requested size beside it.
// Rank 0's group of `c`: where its ranks lie (collectives/rank_groups.hpp), "0 1" or "0 8".
std::string first_group(const CclCase& c, int world) {
  std::vector<int> ranks;
  for (int r = 0; r < world; ++r)
    if (group_leader(r, world, {c.group_size, c.stride}) == 0) ranks.push_back(r);
  return fmt::format("{}", fmt::join(ranks, " "));
}

int print_cases(const std::vector<CclCase>& cases, int world) {
  // a trace's operator names and a large group's ranks run past the usual widths: the columns
  // widen to them, so that every line stays aligned
  std::size_t label_width = 34, ranks_width = 14;
  for (const auto& c : cases) {
    label_width = std::max(label_width, c.label.size());
    ranks_width = std::max(ranks_width, first_group(c, world).size());
  }
  ConsoleTable table({{"op", "", 14},
                      {"label", "", static_cast<int>(label_width)},
                      {"group_size", "group", 5},
                      {"ranks", "rank 0's group", static_cast<int>(ranks_width)},
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
        .arg("ranks", first_group(c, world))
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

// nccl-tests' header, so the two outputs diff line for line; its sizes are those of the cases
// that run (a model's messages, not the unused default sweep).
std::string nccl_tests_header(const CclOptions& o, const std::vector<CclCase>& cases) {
  const auto [min_case, max_case] = std::minmax_element(
      cases.begin(), cases.end(),
      [](const CclCase& a, const CclCase& b) { return a.size_bytes < b.size_bytes; });
  return fmt::format(
      "# nThread 1 nGpus 1 minBytes {} maxBytes {} step: {} warmup iters: {} iters: {} agg "
      "iters: 1 validation: {} graph: {}\n#\n# Using devices\n",
      min_case->size_bytes, max_case->size_bytes, o.step_text, o.run.warmup, o.run.iters,
      o.run.check_passes, o.run.graph_replays);
}

// Buffers for the largest call of each group size: calls rotate within them (nccl-tests).
std::map<int, std::size_t> reserve_bytes(const std::vector<CclCase>& cases) {
  std::map<int, std::size_t> bytes;
  for (const auto& c : cases) {
    const CollCounts k = coll_counts(c.op, c.size_bytes, dtype_size(c.dtype), c.group_size);
    const auto need =
        static_cast<std::size_t>(std::max(k.send_count, k.recv_count)) * dtype_size(c.dtype);
    bytes[c.group_size] = std::max(bytes[c.group_size], need);
  }
  return bytes;
}

// The cases on every rank, each row written, printed and counted by rank 0 as it comes (the shared
// case loop, through MpiRun::run_case).
class CclLoop {
 public:
  // Opens rank 0's reports in `dir` (MpiRun::open_reports: collective).
  CclLoop(MpiRun& mpi, const CclOptions& o, const std::string& dir, std::size_t cases)
      : mpi_(mpi),
        o_(o),
        dir_(dir),
        progress_(cases, static_cast<double>(cases), o.report.quiet || !mpi.lead()),
        table_(o.run.per_iter, o.placements.size()),
        loop_(mpi.case_loop(progress_, &table_, harness_, tally_, rows_)) {
    mpi_.open_reports(
        dir, {{"--report-csv-path", o.report_csv_path}, {"--summary-path", o.report.summary_path}},
        [&] { reports_ = std::make_unique<CclReports>(o, dir, mpi.run_facts(), loop_); });
    mpi_.on_close([this](bool stopped) { return close(stopped); });
  }

  Progress& progress() { return progress_; }

  int run(const std::vector<CclCase>& cases) {
    tally_.planned = cases.size();
    const std::map<int, std::size_t> reserve = reserve_bytes(cases);
    install_interrupt_handlers();
    // A case the signal catches running has a few seconds to end (CollRunner's watchdog
    // otherwise writes it as an `interrupted:` row and ends the process).
    for (const auto& c : cases)
      if (!run_case(c, reserve.at(c.group_size))) break;
    return mpi_.finish();
  }

 private:
  bool run_case(const CclCase& c, std::size_t reserve) {
    const CollCall call{c.op,
                        c.dtype,
                        c.redop,
                        c.root,
                        coll_counts(c.op, c.size_bytes, dtype_size(c.dtype), c.group_size),
                        c.placement == Placement::in_place};
    const std::string label = fmt::format("{} {} B {} {}", coll_op_name(c.op),
                                          call.counts.size_bytes(dtype_size(c.dtype)),
                                          dtype_name(c.dtype), placement_name(c.placement));
    return mpi_.run_case(
        {c.group_size, c.stride, reserve, call, label}, loop_, reports_.get(),
        [&](const CollResult& r) {
          Record row = ccl_row(c, call, r, mpi_.context());
          std::string line =
              r.status == Status::ok
                  ? fmt::format("{}  {}  busbw {}", label, time_text(r.time_us),
                                bandwidth_text(std::get<double>(*row.find("busbw_gbps"))))
                  : fmt::format("{}  {}: {}", label, status_name(r.status), r.note);
          return MeasuredRow{std::move(row), measurement_of(r, o_.run.iters), std::move(line)};
        });
  }

  // Rank 0's end: the nccl-tests footer, then close_run.
  int close(bool stopped) {
    table_.finish();
    return close_run(mpi_.env(), dir_, o_.report.summary_path, rows_,
                     {fmt::format("bench_ccl: {} ranks, {} backend", mpi_.context().world_size,
                                  mpi_.context().backend),
                      "busbw_gbps",
                      true,
                      {"op", "dtype", "redop", "placement", "group_size", "size_bytes", "time_us",
                       "algbw_gbps", "busbw_gbps", "wrong"},
                      15,
                      {harness_.markdown()}},
                     tally_, {harness_.text(), dir_, reports_->listing(), false}, stopped,
                     MpiRun::stopped_code());
  }

  MpiRun& mpi_;
  const CclOptions& o_;
  const std::string dir_;
  Progress progress_;
  NcclTestsTable table_;
  HarnessCost harness_;
  RunTally tally_;
  std::vector<Record> rows_;  // rank 0's, for the summary
  CaseLoop loop_;
  std::unique_ptr<CclReports> reports_;  // rank 0's
};

int run(MpiSession& session, const CclOptions& o, int argc, char** argv) {
  const bool lead = session.world_rank() == 0;
  if (o.list_models) return lead ? print_model_list(o.model_config_path) : 0;
  const CclWorld world = ccl_world(o, session.world_size());
  const std::vector<CclCase> cases = ccl_cases(o, world, lead);
  if (o.dry_run) return lead ? print_cases(cases, world.world) : 0;

  MpiRun mpi(session, {o.backend, o.device_offset, o.device}, o.run, argc, argv, "bench_ccl");
  const CclBackend& backend = mpi.backend();
  const std::string dir =
      o.report.report_dir.empty() ? "reports/ccl-" + now_compact() : o.report.report_dir;
  CclLoop loop(mpi, o, dir, cases.size());
  loop.progress().note(fmt::format("backend: {} ({}); {} ranks on {} node{}", backend.name,
                                   backend.reason, world.world, session.nodes(),
                                   session.nodes() > 1 ? "s" : ""));
  mpi.note_rank_load();
  mpi.print_rank_table(nccl_tests_header(o, cases), world.group_size);
  return loop.run(cases);
}

}  // namespace

int bench_ccl_main(int argc, char** argv) {
  return run_mpi_main(argc, argv, parse_ccl_options, run);
}

}  // namespace opbench
