#pragma once
#include <mpi.h>

#include <memory>
#include <string>

#include "collectives/communicator.hpp"
#include "collectives/mpi_session.hpp"

namespace opbench {

// Collectives through NCCL on device buffers; bootstrapped over `comm` (rank 0 of it creates the
// ncclUniqueId and broadcasts it).
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, int device,
                                                     MpiSession& session);

// "2.28.9" (the library this process runs on).
std::string nccl_version_string();

}  // namespace opbench
