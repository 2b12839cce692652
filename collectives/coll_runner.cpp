#include "collectives/coll_runner.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <thread>

#include "common/error.hpp"
#include "common/timer.hpp"

namespace opbench {

std::string aggregation_name(RankAggregation a) {
  switch (a) {
    case RankAggregation::rank0:
      return "rank0";
    case RankAggregation::mean:
      return "mean";
    case RankAggregation::min:
      return "min";
    case RankAggregation::max:
      return "max";
  }
  return "";
}

CollRunner::CollRunner(MpiSession& session, CollRunOptions options)
    : session_(session), options_(options) {}

double CollRunner::combine(const std::vector<double>& t) const {
  switch (options_.aggregation) {
    case RankAggregation::rank0:
      return t[0];
    case RankAggregation::mean:
      return std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(t.size());
    case RankAggregation::min:
      return *std::min_element(t.begin(), t.end());
    case RankAggregation::max:
      return *std::max_element(t.begin(), t.end());
  }
  return t[0];
}

CollResult CollRunner::run(Communicator& comm, const CollCall& call, const std::string& label) {
  CollResult r;
  if (auto why = comm.unsupported(call)) {
    r.status = Status::skipped;
    r.note = *why;
    return r;
  }
  const bool stall_here = session_.world_rank() == options_.stall_rank && !stalled_;
  auto stall = [&] {  // test only: one rank stops for a while, once
    stalled_ = true;
    std::this_thread::sleep_for(std::chrono::duration<double>(options_.stall_s));
  };
  if (stall_here && !options_.stall_inside) stall();
  session_.arrival_check(label, options_.timeout_s);
  // Rank 0 speaks: its watchdog fires when it is stuck, and mpirun ends every rank when rank 0
  // dies. The others' are a backstop, late enough (2x + 10 s) that mpirun has taken the job down
  // first even when it is slow to (under sanitizers), so one line explains the abort.
  const double deadline =
      session_.world_rank() == 0 ? options_.timeout_s : 2 * options_.timeout_s + 10;
  watchdog_.arm(options_.timeout_s > 0 ? deadline : 0, [&comm, this, label] {
    std::fprintf(
        stderr,
        "error: timeout: %s did not finish within %g s on rank %d (all %d ranks had arrived, "
        "so one stopped inside the operation); aborting\n",
        label.c_str(), options_.timeout_s, session_.world_rank(), session_.world_size());
    std::fflush(stderr);
    comm.abort();
    MpiSession::exit_now(1);
  });
  if (stall_here && options_.stall_inside) stall();

  // Every rank must be able to hold the buffers, or none runs the case.
  std::string prepare_error;
  try {
    comm.prepare(call);
  } catch (const Error& e) {
    prepare_error = e.what();
  }
  if (session_.any(!prepare_error.empty())) {
    watchdog_.disarm();
    r.status = Status::skipped;
    r.note = prepare_error.empty() ? "another rank could not allocate its buffers" : prepare_error;
    return r;
  }

  for (int i = 0; i < options_.warmup; ++i)
    comm.launch(call);
  comm.wait();
  session_.barrier(session_.world());

  double my_time_us = 0;
  if (options_.per_iter) {
    std::vector<double> mine;
    for (int i = 0; i < options_.iters; ++i)
      mine.push_back(comm.time_one(call));
    my_time_us = std::accumulate(mine.begin(), mine.end(), 0.0) / static_cast<double>(mine.size());
    r.iter_times_us.resize(mine.size());
    MPI_Allreduce(mine.data(), r.iter_times_us.data(), static_cast<int>(mine.size()), MPI_DOUBLE,
                  MPI_SUM, session_.world());
    for (auto& t : r.iter_times_us)
      t /= session_.world_size();
    r.iter_stats = compute_stats(r.iter_times_us);
    r.rank_times_us = session_.allgather(my_time_us);
    r.time_us = combine(r.rank_times_us);
  } else {
    // Every rank adds the same combined sample and the same "measured" time (the slowest
    // rank's), so enough_samples() answers the same everywhere.
    std::vector<double> rank_sums(static_cast<std::size_t>(session_.world_size()), 0.0);
    double measured_s = 0;
    CpuTimer loop;
    do {
      session_.barrier(session_.world());
      CpuTimer timer;
      for (int i = 0; i < options_.iters; ++i)
        comm.launch(call);
      comm.wait();
      const auto ranks = session_.allgather(timer.elapsed_us() / options_.iters);
      for (std::size_t i = 0; i < ranks.size(); ++i)
        rank_sums[i] += ranks[i];
      r.samples_us.push_back(combine(ranks));
      measured_s += *std::max_element(ranks.begin(), ranks.end()) * options_.iters * 1e-6;
    } while (!enough_samples(r.samples_us, measured_s, options_.measure));
    r.sampling_s = loop.elapsed_s();
    for (double& sum : rank_sums)
      sum /= static_cast<double>(r.samples_us.size());
    r.rank_times_us = rank_sums;
    // Each rank's mean over all its calls, combined across ranks as nccl-tests combines its one
    // batch (for the mean and rank 0 this is also the mean of the samples).
    r.time_us = combine(r.rank_times_us);
    r.sample_stats = compute_stats(r.samples_us);
    if (r.sample_stats->rse >= options_.measure.max_noise)
      r.note = fmt::format("noisy (rse {:.1f}% > {:.1f}% after {} samples of {} calls)",
                           r.sample_stats->rse * 100, options_.measure.max_noise * 100,
                           r.samples_us.size(), options_.iters);
  }
  const auto& t = r.rank_times_us;
  r.min_time_us = *std::min_element(t.begin(), t.end());
  r.max_time_us = *std::max_element(t.begin(), t.end());

  if (options_.check_passes > 0) {
    std::int64_t wrong = 0;
    for (int pass = 0; pass < options_.check_passes; ++pass)
      wrong += comm.check(call, pass == 0 && session_.world_rank() == options_.corrupt_rank);
    r.wrong = session_.sum(wrong);
    if (r.wrong > 0) {
      r.status = Status::failed;
      r.note =
          fmt::format("{} wrong element{} over {} check pass{}", r.wrong, r.wrong == 1 ? "" : "s",
                      options_.check_passes, options_.check_passes == 1 ? "" : "es");
    }
  }
  watchdog_.disarm();
  return r;
}

}  // namespace opbench
