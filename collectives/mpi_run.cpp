#include "collectives/mpi_run.hpp"

#include <cstdio>

#include "common/error.hpp"
#include "common/interrupt.hpp"
#include "common/report.hpp"

namespace opbench {

Measurement measurement_of(const CollResult& r, int iters) {
  Measurement m;
  if (r.iter_stats) {
    m.samples_us = r.iter_times_us;
  } else {
    for (double per_call_us : r.samples_us)
      m.samples_us.push_back(per_call_us * iters);
  }
  m.sampling_s = r.sampling_s;
  return m;
}

MpiRun::MpiRun(MpiSession& session, const CclBackendRequest& request, const CollRunOptions& run,
               int argc, char** argv, const std::string& binary)
    : session_(session),
      runner_(session, run),
      backend_(choose_backend(request, run.graph_replays)),
      env_(argc, argv, binary),
      context_{backend_.name, session.world_size(), session.nodes(),
               run.iters,     run.aggregation,      session.hosts()} {
  describe_backend(backend_, env_);
  env_.set("world_size", session_.world_size());
  env_.set("nodes", session_.nodes());
  // Where every rank runs, in environment.json and in every JSON line's run facts.
  runner_.guard_start_up("where every rank runs");
  rank_map_ = gather_rank_map(backend_, session_);
  env_.set("ranks", rank_map_);
  load_ = rank_load(rank_map_);
  env_.set("rank_load", {{"hosts", load_.hosts}, {"oversubscribed", load_.oversubscribed}});
}

CclBackend MpiRun::choose_backend(const CclBackendRequest& request, int graph_replays) {
  runner_.guard_start_up("the backend's choice");
  CclBackend backend =
      choose_ccl_backend(session_, request.backend, request.device_offset, request.device);
  if (graph_replays > 0 && backend.name != "nccl")
    throw bad_input(
        "-G/--cudagraph: CUDA-graph mode needs the NCCL backend (here: " + backend.name + ")");
  backend.cuda_graphs = graph_replays > 0;
  return backend;
}

nlohmann::json MpiRun::run_facts() const {
  return {{"run_id", env_.run_id()}, {"ranks", rank_map_}};
}

void MpiRun::note_rank_load() const {
  if (lead() && !load_.warning.empty()) std::fprintf(stderr, "note: %s\n", load_.warning.c_str());
}

void MpiRun::print_rank_table(const std::string& header, int group_size) {
  runner_.guard_start_up("the rank table");
  const auto lines = session_.gather_strings(describe_rank(backend_, session_, group_size));
  if (!lead()) return;
  std::fputs(header.c_str(), stdout);
  for (const auto& line : lines)
    std::printf("%s\n", line.c_str());
}

void MpiRun::open_reports(const std::string& dir, const std::vector<NamedOutput>& named,
                          const std::function<void()>& open) {
  runner_.guard_start_up("rank 0's report folder");  // its files too: a filesystem can hang
  std::string report_error;
  if (lead()) {
    try {
      ensure_directory(dir);
      set_aside_earlier_reports(dir, named);
      env_.write(dir, false);
      open();
    } catch (const Error& e) {
      report_error = e.what();
    }
  }
  if (session_.any(!report_error.empty())) throw bad_input(report_error);
}

Communicator& MpiRun::communicator(RankGroups g, std::optional<std::size_t> reserve_bytes) {
  auto& comm = comms_[g];
  if (!comm || comm->aborted()) {
    comm = make_communicator(backend_, session_, session_.group_comm(g));
    if (reserve_bytes) comm->reserve(*reserve_bytes);
  }
  return *comm;
}

CaseLoop MpiRun::case_loop(Progress& progress, RowTable* table, HarnessCost& harness,
                           RunTally& tally, std::vector<Record>& rows) const {
  return CaseLoop(progress, table, harness, tally, rows, [] { return false; });
}

bool MpiRun::run_case(const MpiCase& c, CaseLoop& loop, RowSink* reports, const CollRow& row) {
  // Should a timeout, an interrupt or a lost rank end the job before the case's row, rank 0
  // writes the case as a failed row with the reason and closes the run (the main thread is stuck
  // in MPI, or about to abort).
  const AbortOnce::Hook write_failed_row = [&](const std::string& reason) {
    if (!lead()) return;
    CollResult aborted;
    aborted.status = Status::failed;
    aborted.note = reason;
    loop.add_row(*reports, row(aborted).row);
    close_ended_run([&] { close_(interrupted()); });
  };
  Communicator* comm = nullptr;
  {
    AbortHookScope hook(session_, write_failed_row);
    // Before the case's clock: a communicator's set-up (NCCL's) is its own, not the first case's.
    comm = runner_.start_case(c.label, [&]() -> Communicator& {
      return communicator({c.group_size, c.stride}, c.reserve_bytes);
    });
  }
  stopped_ = comm == nullptr;
  if (stopped_) return false;
  auto collective = [&] {
    CollResult r;
    {
      // Closed however the case ends; when the hook was taken, its end never returns.
      AbortHookScope hook(session_, write_failed_row);
      r = runner_.run(*comm, c.call, c.label);
    }
    failed_ += r.status == Status::failed;
    return r;
  };
  if (!lead()) {
    collective();
    return true;
  }
  return loop.run(c.label, 1, *reports, std::nullopt, [&] { return row(collective()); });
}

int MpiRun::finish() {
  runner_.end_start_up();  // a run without cases
  const int code = lead()     ? close_(stopped_)
                   : stopped_ ? stopped_code()
                              : (failed_ ? static_cast<int>(ExitCode::run_failed) : 0);
  runner_.end_run();
  return code;
}

int MpiRun::stopped_code() {
  return interrupted() ? interrupted_exit_code() : 128 + 15;
}

}  // namespace opbench
