#pragma once
// A memory-bound operator's case as the unit tests build it: operator, pass, dtype and shape,
// the rest as MemopCase defaults them.
#include <cstdint>

#include "memops/memop.hpp"

namespace opbench::testing {

inline MemopCase memop_case(MemOp op, MemPass pass, DType t, std::int64_t rows, std::int64_t cols) {
  MemopCase c;
  c.op = op;
  c.pass = pass;
  c.dtype = t;
  c.rows = rows;
  c.cols = cols;
  return c;
}

}  // namespace opbench::testing
