#include "collectives/mpi_main.hpp"

#include <cstdio>
#include <exception>
#include <string_view>

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
    if (e.code() == ExitCode::bad_input) {
      if (lead) std::fprintf(stderr, "error: %s\n", e.what());
      std::fflush(stderr);
      session.barrier(session.world());
      return static_cast<int>(ExitCode::bad_input);
    }
    std::fprintf(stderr, "error: rank %d: %s\n", session.world_rank(), e.what());
    session.abort(static_cast<int>(ExitCode::run_failed));
  } catch (const std::exception& e) {
    // Anything else would reach MPI_Finalize, which waits for every other rank: end the job.
    std::fprintf(stderr, "error: rank %d: internal error: %s\n", session.world_rank(), e.what());
    session.abort(static_cast<int>(ExitCode::run_failed));
  }
}

}  // namespace opbench
