#pragma once
// Which communicator a rank uses: NCCL on its GPU, or MPI on host buffers.
#include <memory>
#include <optional>
#include <string>

#include "collectives/communicator.hpp"
#include "collectives/mpi_session.hpp"
#include "common/env.hpp"
#include "common/version.hpp"

namespace opbench {

struct CclBackend {
  std::string name;          // "nccl" or "mpi"
  std::string reason;        // why auto chose it
  int device = -1;           // the rank's GPU (nccl)
  bool cuda_graphs = false;  // -G: calls are captured into CUDA graphs (ncclConfig_t)
};

// --backend, --device-offset and --device as given.
struct CclBackendRequest {
  std::string backend = "auto";  // auto, nccl, mpi
  int device_offset = 0;
  std::optional<int> device;
};

// --backend auto|nccl|mpi for this job: every rank agrees. nccl needs a GPU of its own for every
// rank (collectives/device_choice: --device, $NCCL_TESTS_DEVICE, local rank + offset, or the one
// GPU a rank sees), checked before any NCCL call (bad_input otherwise).
CclBackend choose_ccl_backend(MpiSession& session, const std::string& requested, int device_offset,
                              std::optional<int> device = std::nullopt);

// A communicator over `comm` (the world or a group) for the chosen backend.
std::unique_ptr<Communicator> make_communicator(const CclBackend& backend, MpiSession& session,
                                                MPI_Comm comm);

// nccl-tests' device line for the rank table: "#  Rank  0 Group  0 Pid  1234 on node1 device  0
// [0000:1b:00.0] NVIDIA H100 80GB HBM3  (local rank 0)".
std::string describe_rank(const CclBackend& backend, const MpiSession& session, int group_size);
void describe_backend(const CclBackend& backend, Environment& env);
// Every rank's host, local rank, pid, the CPUs online on its host and its device, gathered at
// rank 0 for environment.json's "ranks" (empty elsewhere). Collective: every rank calls it.
nlohmann::json gather_rank_map(const CclBackend& backend, const MpiSession& session);

// MPI (and CUDA and NCCL in CUDA builds), built-with and running versions, for --version.
std::vector<LibraryVersion> ccl_library_versions();

}  // namespace opbench
