#pragma once
// How far apart a group's ranks lie, from the ranks themselves: what the capture writes as
// comm_stride (capture/mpi_hooks.cpp, from an MPI communicator's group) and what the readers work
// out for an NCCL communicator from the files of its members (common/capture_tables.cpp).
// Header-only: the capture library links nothing of the project but headers.
#include <iterator>

namespace opbench {

// The spacing of ranks given in ascending order, each once: d where each is d after the one
// before (1 for a single rank, trivially consecutive); 0 where they are not evenly spaced, or
// there are none.
template <class It>
long long even_spacing(It first, It last) {
  if (first == last) return 0;
  It next = std::next(first);
  if (next == last) return 1;
  const long long step = static_cast<long long>(*next) - static_cast<long long>(*first);
  for (It prev = first; next != last; prev = next++)
    if (static_cast<long long>(*next) - static_cast<long long>(*prev) != step) return 0;
  return step;
}

}  // namespace opbench
