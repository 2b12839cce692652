// The embedding (memops/memop_spec.hpp): a lookup of `rows` tokens from a vocab x cols table, and
// its backward scatter-add.
#include <fmt/format.h>

#include "common/error.hpp"
#include "memops/memop_check.hpp"
#include "memops/memop_spec.hpp"
#include "memops/reference_memops.hpp"

namespace opbench::memop_specs {

namespace ref = reference_memops;

void embedding_operands(const MemopCase& c, OperandList& list) {
  const std::int64_t n = c.elements(), table = c.vocab * c.cols;
  const DType t = c.dtype;
  if (c.pass == MemPass::fwd) {
    // One table for every set, each set's ids pick other rows of it; the operator touches only
    // the rows it looks up.
    list.in("table", table, t);
    list.back().shared = true;
    list.back().touched = n;
    list.filled("ids", c.rows, DType::int64, OperandFill::ids).out("y", n, t);
  } else {  // the whole table's gradient is written, zero where no id points
    list.in("dy", n, t)
        .filled("ids", c.rows, DType::int64, OperandFill::ids)
        .out("dtable", table, t);
  }
}

std::optional<ShapeProblem> embedding_shape_problem(const MemopCase& c) {
  if (c.vocab < 1) return ShapeProblem{"vocab", "embedding needs a vocab of at least 1"};
  return std::nullopt;
}

namespace {

// The reference gathers from the rows the block's ids name, fetched one by one: the table itself
// may be gigabytes.
void check_embedding_fwd(ReferenceCheck& k) {
  const MemopCase& c = k.c;
  const std::int64_t rows = c.rows, cols = c.cols;
  auto& y = k.add("y", 0, cols);
  std::vector<double> a;
  row_blocks(rows, cols, [&](std::int64_t r0, std::int64_t r1) {
    const std::int64_t n = r1 - r0;
    const auto ids = k.read.ids("ids", r0, n);
    std::vector<float> rows_used(static_cast<std::size_t>(n * cols));
    std::vector<std::int64_t> local(static_cast<std::size_t>(n));
    for (std::int64_t r = 0; r < n; ++r) {
      const std::int64_t id = ids[static_cast<std::size_t>(r)];
      if (id < 0 || id >= c.vocab)
        throw run_failure(
            fmt::format("embedding: token {} has id {} outside the "
                        "vocabulary of {}",
                        r0 + r, id, c.vocab));
      const auto row = k.get("table", id * cols, cols);
      std::copy(row.begin(), row.end(), rows_used.begin() + r * cols);
      local[static_cast<std::size_t>(r)] = r;
    }
    ref::embedding_fwd(rows_used.data(), local.data(), n, cols, zeroed(a, n * cols));
    k.compare(y, k.get("y", r0 * cols, n * cols), a.data(), r0 * cols);
  });
}

}  // namespace

namespace {

void check_embedding_bwd(ReferenceCheck& k) {
  const MemopCase& c = k.c;
  const std::int64_t rows = c.rows, cols = c.cols;
  auto& dtable = k.add("dtable", stored_in(c.dtype, reduction_tolerance(rows)), cols);
  const auto dy = k.get("dy", 0, c.elements());
  const auto ids = k.read.ids("ids", 0, rows);
  std::vector<double> a;
  row_blocks(c.vocab, cols, [&](std::int64_t v0, std::int64_t v1) {
    ref::embedding_bwd(dy.data(), ids.data(), rows, cols, v0, v1, zeroed(a, (v1 - v0) * cols));
    k.compare(dtable, k.get("dtable", v0 * cols, (v1 - v0) * cols), a.data(), v0 * cols);
  });
}

}  // namespace

void check_embedding(ReferenceCheck& k) {
  k.c.pass == MemPass::fwd ? check_embedding_fwd(k) : check_embedding_bwd(k);
}

std::string embedding_rule(const MemopCase& c, const std::string& rounding) {
  if (c.pass == MemPass::fwd) return "exact (a gather)";
  return reduction_rule(c.rows, "tokens that may share an id", rounding);
}

}  // namespace opbench::memop_specs
