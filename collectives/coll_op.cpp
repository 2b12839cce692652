#include "collectives/coll_op.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.hpp"
#include "common/list_items.hpp"
#include "common/text.hpp"

namespace opbench {

std::string coll_op_name(CollOp op) {
  return std::string(coll_op_id(op));
}

std::vector<CollOp> all_coll_ops() {
  return {CollOp::all_reduce, CollOp::all_gather, CollOp::reduce_scatter, CollOp::all_to_all,
          CollOp::broadcast,  CollOp::reduce,     CollOp::send_recv};
}

std::vector<CollOp> parse_coll_ops(const std::string& text) {
  std::vector<CollOp> out;
  for (const auto& item : split(text, ',')) {
    std::string key = to_lower(item);
    key.erase(std::remove(key.begin(), key.end(), '_'), key.end());
    if (key == "all") return all_coll_ops();
    bool found = false;
    for (CollOp op : all_coll_ops()) {
      std::string name = coll_op_name(op);
      name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
      if (key == name || (op == CollOp::all_to_all && key == "a2a")) {
        push_once(out, op, "--op", item);
        found = true;
      }
    }
    if (!found) {
      for (const char* red : {"sum", "prod", "min", "max", "avg"})
        if (key == red)
          throw bad_input(fmt::format(
              "--op: '{}' is a reduction, not a collective: reductions go to -o/--redop (try "
              "--op all_reduce -o {})",
              item, red));
      std::vector<std::string> names;
      for (CollOp op : all_coll_ops())
        names.push_back(coll_op_name(op));
      throw bad_input(
          fmt::format("--op: unknown op '{}' (accepted: {}, all)", item, join(names, ", ")));
    }
  }
  if (out.empty()) throw bad_input("--op: empty list");
  return out;
}

bool is_reduction(CollOp op) {
  return op == CollOp::all_reduce || op == CollOp::reduce_scatter || op == CollOp::reduce;
}

bool has_root(CollOp op) {
  return op == CollOp::broadcast || op == CollOp::reduce;
}

std::string red_op_name(RedOp op) {
  return std::string(red_op_id(op));
}

RedOp parse_red_op(const std::string& text) {
  std::string key = to_lower(trim(text));
  for (RedOp op : {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg})
    if (key == red_op_name(op)) return op;
  throw bad_input(fmt::format(
      "-o/--op-reduce: unknown reduction '{}' (accepted: sum, prod, min, max, avg)", text));
}

std::string nccl_tests_type_name(DType t) {
  switch (t) {
    case DType::fp32:
      return "float";
    case DType::fp16:
      return "half";
    case DType::fp64:
      return "double";
    case DType::bf16:
      return "bfloat16";
    case DType::fp8_e4m3:
      return "f8e4m3";
    case DType::fp8_e5m2:
      return "f8e5m2";
    default:
      return std::string(dtype_name(t));
  }
}

CollCounts coll_counts(CollOp op, std::uint64_t size_bytes, std::size_t type_size, int nranks) {
  const auto count = static_cast<std::int64_t>(size_bytes / type_size);
  if (op != CollOp::all_gather && op != CollOp::reduce_scatter && op != CollOp::all_to_all)
    return exact_counts(op, count, nranks);
  // count / n per rank, aligned down to a multiple of 16 bytes, as nccl-tests does.
  const std::int64_t align = std::max<std::int64_t>(1, 16 / static_cast<std::int64_t>(type_size));
  return exact_counts(op, (count / nranks) / align * align, nranks);
}

std::vector<std::uint64_t> sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes,
                                       double factor, std::uint64_t step_bytes) {
  if (min_bytes > max_bytes)
    throw bad_input(fmt::format("-b ({}) is above -e ({})", min_bytes, max_bytes));
  if (factor <= 1 && step_bytes == 0)
    throw bad_input("-i: the step must be at least 1 byte when -f is 1");
  std::vector<std::uint64_t> out;
  for (std::uint64_t s = min_bytes; s <= max_bytes;) {
    out.push_back(s);
    std::uint64_t next =
        factor > 1 ? static_cast<std::uint64_t>(static_cast<double>(s) * factor) : s + step_bytes;
    if (next <= s) next = s + 1;  // -b 0 with -f 2 would never move
    s = next;
    if (out.size() > 100000) throw bad_input("-b/-e/-f/-i: more than 100000 sizes");
  }
  return out;
}

}  // namespace opbench
