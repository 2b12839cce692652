#include "collectives/backend_select.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "collectives/device_choice.hpp"
#include "collectives/mpi_communicator.hpp"
#include "common/error.hpp"
#ifdef OPBENCH_HAVE_CUDA
#include <nccl.h>

#include "collectives/nccl_communicator.hpp"
#include "common/cuda/device.hpp"
#endif

namespace opbench {

CclBackend choose_ccl_backend(MpiSession& session, const std::string& requested, int device_offset,
                              std::optional<int> device) {
  if (requested == "mpi") return {"mpi", "requested with --backend mpi", -1};
  std::string why = "this build has no CUDA support";
  int gpus = 0;
#ifdef OPBENCH_HAVE_CUDA
  gpus = cuda_device_count(&why);
#endif
  if (requested == "auto" && session.any(gpus == 0))
    return {"mpi", gpus == 0 ? fmt::format("no GPU ({})", why) : "no GPU on some node", -1};
  const DeviceChoice choice =
      choose_rank_device(gpus, session.local_rank(), session.local_size(), device_offset, device,
                         std::getenv("NCCL_TESTS_DEVICE"));
  // The first rank without a GPU speaks for all: its rank, its host, its reason.
  int first_short = choice.error.empty() ? session.world_size() : session.world_rank();
  MPI_Allreduce(MPI_IN_PLACE, &first_short, 1, MPI_INT, MPI_MIN, session.world());
  if (first_short < session.world_size()) {
    char text[1024] = {};
    std::snprintf(text, sizeof(text), "rank %d on %s: %s%s", session.world_rank(),
                  session.host().c_str(), choice.error.c_str(),
                  gpus == 0 ? (" (" + why + ")").c_str() : "");
    MPI_Bcast(text, sizeof(text), MPI_CHAR, first_short, session.world());
    throw bad_input(fmt::format("--backend nccl: {}", text));
  }
  // Two ranks of a host on one GPU would make NCCL fail later, and less clearly.
  std::string bus = "none";
#ifdef OPBENCH_HAVE_CUDA
  bus = cuda_device_info(choice.device).pci_bus_id;
#endif
  const auto devices = session.gather_strings(session.host() + " " + bus);
  char shared[512] = {};
  if (session.world_rank() == 0)
    if (auto pairs = ranks_sharing_a_gpu(devices); !pairs.empty())
      std::snprintf(shared, sizeof(shared),
                    "--backend nccl: ranks %d and %d both run on GPU %s: give each rank its own "
                    "(CUDA_VISIBLE_DEVICES per rank, srun --gpus-per-task=1, --device-offset)",
                    pairs.front().first, pairs.front().second,
                    devices[pairs.front().second].c_str());
  MPI_Bcast(shared, sizeof(shared), MPI_CHAR, 0, session.world());
  if (shared[0]) throw bad_input(shared);
  return {"nccl", "a GPU for every rank (rank 0: " + choice.how + ")", choice.device};
}

std::unique_ptr<Communicator> make_communicator(const CclBackend& backend, MpiSession& session,
                                                MPI_Comm comm) {
#ifdef OPBENCH_HAVE_CUDA
  if (backend.name == "nccl")
    return make_nccl_communicator(comm, backend.device, session, backend.cuda_graphs);
#else
  (void)session;
#endif
  (void)backend;
  return make_mpi_communicator(comm);
}

std::string describe_rank(const CclBackend& backend, const MpiSession& session, int group_size) {
  std::string device = "host memory";
#ifdef OPBENCH_HAVE_CUDA
  if (backend.name == "nccl") {
    auto info = cuda_device_info(backend.device);
    device = fmt::format("device {:2} [{}] {}", backend.device, info.pci_bus_id, info.name);
  }
#else
  (void)backend;
#endif
  // nccl-tests' "Using devices" line, with the local rank added.
  return fmt::format("#  Rank {:2} Group {:2} Pid {:6} on {:>10} {}  (local rank {})",
                     session.world_rank(), session.world_rank() / std::max(1, group_size), getpid(),
                     session.host(), device, session.local_rank());
}

nlohmann::json gather_rank_map(const CclBackend& backend, const MpiSession& session) {
  nlohmann::json mine = {{"rank", session.world_rank()},
                         {"host", session.host()},
                         {"local_rank", session.local_rank()},
                         {"pid", static_cast<long long>(getpid())},
                         {"cpus", online_cpus()},
                         {"device", "host memory"}};
#ifdef OPBENCH_HAVE_CUDA
  if (backend.name == "nccl") {
    auto info = cuda_device_info(backend.device);
    mine["device"] = backend.device;
    mine["device_name"] = info.name;
    mine["pci_bus_id"] = info.pci_bus_id;
  }
#else
  (void)backend;
#endif
  nlohmann::json all = nlohmann::json::array();
  for (const auto& text : session.gather_strings(mine.dump()))
    all.push_back(nlohmann::json::parse(text));
  return all;
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
    env.set("nccl_config", nccl_config_record(backend.cuda_graphs));
    add_cuda_environment(env, backend.device);
  }
#else
  (void)backend;
#endif
}

}  // namespace opbench
