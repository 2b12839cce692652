#include "collectives/mpi_main.hpp"

#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "common/host_allocator.hpp"
#include "common/interrupt.hpp"

namespace opbench {
namespace {

bool asks_for_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "-h" || std::string_view(argv[i]) == "--help") return true;
  return false;
}

// Every rank reads the same flags and, usually, the same files, so bad input stops every rank at
// the same point, and rank 0 alone says it. A rank that reads what the others do not (a file
// missing or different on its node) is alone here while the others go on to the run's
// collectives and wait for it; so the ranks check in here, briefly, instead of a barrier. All
// came: rank 0's line says it. Some did not: whoever is here says its own error, with its rank
// and host where that is not rank 0, and ends the job.
int end_on_bad_input(MpiSession& session, const std::string& error) {
  constexpr double kMeetS = 2;  // the ranks meet the same bad input within milliseconds
  const bool lead = session.world_rank() == 0;
  if (lead) std::fprintf(stderr, "error: %s\n", error.c_str());
  std::fflush(stderr);
  std::vector<int> missing;
  if (session.try_any_on_arrival(true, kMeetS, &missing))
    return static_cast<int>(ExitCode::bad_input);
  if (lead)
    std::fprintf(stderr,
                 "note: %s went on without this error: the ranks do not read the same inputs "
                 "(a file missing or different on their node?)\n",
                 session.names(missing).c_str());
  else {
    session.leave_liveness();
    std::fprintf(stderr,
                 "error: %s: %s; %s went on without this error: the ranks do not read the same "
                 "inputs (a file missing or different on this node?)\n",
                 session.where(session.world_rank()).c_str(), error.c_str(),
                 session.where(0).c_str());
  }
  session.abort(static_cast<int>(ExitCode::bad_input));
}

}  // namespace

int run_mpi_main(int argc, char** argv, const std::function<int(MpiSession&, int, char**)>& body) {
  keep_host_pages();  // before MPI allocates anything (common/host_allocator.hpp)
  MpiSession session(&argc, &argv);
  if (session.world_size() > 1) watch_launcher();  // under mpirun or srun (common/interrupt)
  const bool lead = session.world_rank() == 0;
  if (!lead && asks_for_help(argc, argv)) return 0;  // one help text is enough
  try {
    return body(session, argc, argv);
  } catch (const Error& e) {
    if (e.code() == ExitCode::bad_input) return end_on_bad_input(session, e.what());
    std::fprintf(stderr, "error: rank %d: %s\n", session.world_rank(), e.what());
    session.abort(static_cast<int>(ExitCode::run_failed));
  } catch (const std::exception& e) {
    // Anything else would reach MPI_Finalize, which waits for every other rank: end the job.
    std::fprintf(stderr, "error: rank %d: internal error: %s\n", session.world_rank(), e.what());
    session.abort(static_cast<int>(ExitCode::run_failed));
  }
}

}  // namespace opbench
