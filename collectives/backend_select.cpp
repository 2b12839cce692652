#include "collectives/backend_select.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "collectives/mpi_communicator.hpp"
#include "common/error.hpp"
#ifdef OPBENCH_HAVE_CUDA
#include <nccl.h>

#include "collectives/nccl_communicator.hpp"
#include "common/cuda/device.hpp"
#endif

namespace opbench {

CclBackend choose_ccl_backend(MpiSession& session, const std::string& requested,
                              int device_offset) {
  if (requested == "mpi") return {"mpi", "requested with --backend mpi", -1};
  std::string why = "this build has no CUDA support";
  int gpus = 0;
#ifdef OPBENCH_HAVE_CUDA
  gpus = cuda_device_count(&why);
#endif
  const int needed = session.local_rank() + device_offset;
  if (requested == "auto" && session.any(gpus == 0))
    return {"mpi", gpus == 0 ? fmt::format("no GPU ({})", why) : "no GPU on some node", -1};
  // The first rank without a GPU of its own speaks for all: its host, its count.
  int first_short = gpus <= needed ? session.world_rank() : session.world_size();
  MPI_Allreduce(MPI_IN_PLACE, &first_short, 1, MPI_INT, MPI_MIN, session.world());
  if (first_short < session.world_size()) {
    char host[256] = {};
    std::snprintf(host, sizeof(host), "%s", session.host().c_str());
    int facts[2] = {gpus, session.local_size()};
    MPI_Bcast(host, sizeof(host), MPI_CHAR, first_short, session.world());
    MPI_Bcast(facts, 2, MPI_INT, first_short, session.world());
    throw bad_input(fmt::format(
        "--backend nccl: {} ranks on {} need {} GPUs (device offset {}), but it has {}{}", facts[1],
        host, facts[1] + device_offset, device_offset, facts[0],
        facts[0] == 0 ? " (" + why + ")" : ""));
  }
  return {"nccl", "a GPU for every rank", needed};
}

std::unique_ptr<Communicator> make_communicator(const CclBackend& backend, MpiSession& session,
                                                MPI_Comm comm) {
#ifdef OPBENCH_HAVE_CUDA
  if (backend.name == "nccl") return make_nccl_communicator(comm, backend.device, session);
#else
  (void)session;
#endif
  (void)backend;
  return make_mpi_communicator(comm);
}

std::string describe_rank(const CclBackend& backend, const MpiSession& session) {
  std::string device = "host memory";
#ifdef OPBENCH_HAVE_CUDA
  if (backend.name == "nccl") {
    auto info = cuda_device_info(backend.device);
    device = fmt::format("device {} [{}] {}", backend.device, info.pci_bus_id, info.name);
  }
#else
  (void)backend;
#endif
  return fmt::format("#  rank {:3} on {:>16} pid {:>7}  local rank {:2}  {}", session.world_rank(),
                     session.host(), getpid(), session.local_rank(), device);
}

// The first line of MPI_Get_library_version (callable before MPI_Init). Its length counts the
// terminating NUL, which must not reach a report.
std::string mpi_library_version_text() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string out(text);
  if (auto nl = out.find('\n'); nl != std::string::npos) out.resize(nl);
  return out;
}

std::vector<LibraryVersion> ccl_library_versions() {
  const std::string running = mpi_library_version_text();
#ifdef OMPI_MAJOR_VERSION
  std::string built = fmt::format("Open MPI v{}.{}.{}", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                  OMPI_RELEASE_VERSION);
#else
  std::string built = fmt::format("MPI {}.{}", MPI_VERSION, MPI_SUBVERSION);
#endif
  std::vector<LibraryVersion> out{openblas_library_version(), {"MPI", built, running}};
#ifdef OPBENCH_HAVE_CUDA
  out.push_back(cuda_runtime_library_version());
  out.push_back(
      {"NCCL", fmt::format("{}.{}.{}", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), nccl_version_string()});
#endif
  return out;
}

void describe_backend(const CclBackend& backend, Environment& env) {
  env.add_library("MPI", mpi_library_version_text());
#ifdef OPBENCH_HAVE_CUDA
  if (backend.name == "nccl") {
    env.add_library("NCCL", nccl_version_string());
    add_cuda_environment(env, backend.device);
  }
#else
  (void)backend;
#endif
}

}  // namespace opbench
