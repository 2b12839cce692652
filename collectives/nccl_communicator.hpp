#pragma once
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "collectives/communicator.hpp"
#include "collectives/mpi_session.hpp"

namespace opbench {

// Collectives through NCCL on device buffers; bootstrapped over `comm` (rank 0 of it creates the
// ncclUniqueId and broadcasts it). `cuda_graphs`: the run captures calls into CUDA graphs (-G),
// which decides ncclConfig_t.graphUsageMode where NCCL has it (nccl_policy.hpp).
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, int device, MpiSession& session,
                                                     bool cuda_graphs);

// The ncclConfig_t fields the communicators are created with, for environment.json's
// "nccl_config": each field's value, or why NCCL's default applies.
nlohmann::json nccl_config_record(bool cuda_graphs);

// "2.28.9" (the library this process runs on).
std::string nccl_version_string();

}  // namespace opbench
