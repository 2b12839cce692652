#include "attention/capture_attention.hpp"

#include <fmt/format.h>

#include "common/error.hpp"

namespace opbench {

namespace {

// The table's `op` cell as one pass; the pass parser's own message names the --pass flag.
AttentionPass table_pass(const std::string& op, const std::string& what) {
  try {
    const auto passes = parse_attention_passes(op);
    if (passes.size() == 1) return passes.front();
  } catch (const Error&) {
  }
  throw bad_input(fmt::format("{}: column 'op': '{}' is not one pass (fwd or bwd)", what, op));
}

}  // namespace

std::vector<AttentionCase> capture_attention_cases(const ShapeSource& source,
                                                   std::optional<int> rank,
                                                   std::vector<std::string>* left_out) {
  const std::vector<CapturedShape> shapes =
      read_capture_shapes({source,
                           rank,
                           {"attention"},
                           {"api", "op", "dtype", "batch", "heads_q", "heads_kv", "seq_q", "seq_kv",
                            "head_dim_qk", "head_dim_v", "causal"}});
  std::vector<AttentionCase> cases;  // in the order read: largest in-job total first
  using L = AttentionLimits;
  for (const CapturedShape& shape : shapes) {
    const auto& k = shape.key;
    AttentionCase c;
    AttentionShape& s = c.shape;
    s.model = "capture";
    s.causal = k[10] == "true";
    // The table's rules take any whole number: a size no attention has is left out here, by its
    // column (a head count of 0 would divide by zero in validate's multiple check).
    const std::string call = fmt::format("{} {}", k[0], k[1]);
    std::string why;
    auto size = [&](std::size_t i, const char* column, std::int64_t most) {
      std::int64_t v = 0;  // past int64 counts as out of range too
      try {
        v = std::stoll(k[i]);
      } catch (const std::exception&) {
      }
      if (why.empty() && (v < 1 || v > most))
        why = fmt::format("column '{}': {} is outside 1..{}", column, k[i], most);
      return v;
    };
    s.batch = size(3, "batch", L::batch);
    s.heads_q = size(4, "heads_q", L::heads);
    s.heads_kv = size(5, "heads_kv", L::heads);
    s.seqlen_q = size(6, "seq_q", L::seq);
    s.seqlen_kv = size(7, "seq_kv", L::seq);
    s.head_dim_qk = size(8, "head_dim_qk", L::dim);
    s.head_dim_v = size(9, "head_dim_v", L::dim);
    const std::string what = why.empty() ? fmt::format("{} {}", call, s.dims()) : call;
    try {
      if (!why.empty()) throw bad_input(fmt::format("{}: {}", what, why));
      s.dtype = parse_dtype(k[2]);
      c.pass = table_pass(k[1], what);
      validate(s, what, kTableColumns);
    } catch (const Error& e) {
      // validate's and the checks' messages name the call already; the parsers' do not
      const std::string text = e.what();
      if (left_out)
        left_out->push_back(text.rfind(what, 0) == 0 ? text : fmt::format("{}: {}", what, text));
      continue;
    }
    c.captured = CapturedCall{k[0], shape.calls, shape.in_job_us()};
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace opbench
