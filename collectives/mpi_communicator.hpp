#pragma once
#include <mpi.h>

#include <memory>

#include "collectives/communicator.hpp"

namespace opbench {

// Collectives on host buffers through MPI (what runs on CPU-only machines and in CI).
std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm);

}  // namespace opbench
