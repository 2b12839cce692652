#pragma once
// A collective call for the unit tests: `bytes` of `dtype` per rank on `ranks` ranks, counted as
// bench_ccl counts a message (coll_counts), out of place.
#include "collectives/coll_op.hpp"
#include "collectives/communicator.hpp"
#include "common/dtype.hpp"

namespace opbench::testing {

inline CollCall coll_call(CollOp op, DType dtype, RedOp redop, std::uint64_t bytes, int ranks,
                          int root = 0) {
  return {.op = op,
          .dtype = dtype,
          .redop = redop,
          .root = root,
          .counts = coll_counts(op, bytes, dtype_size(dtype), ranks)};
}

}  // namespace opbench::testing
