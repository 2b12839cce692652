#include "attention/capture_attention.hpp"

#include <fmt/format.h>

#include "common/error.hpp"

namespace opbench {

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
  for (const CapturedShape& shape : shapes) {
    const auto& k = shape.key;
    AttentionCase c;
    AttentionShape& s = c.shape;
    s.model = "capture";
    s.batch = std::stoll(k[3]);
    s.heads_q = std::stoll(k[4]);
    s.heads_kv = std::stoll(k[5]);
    s.seqlen_q = std::stoll(k[6]);
    s.seqlen_kv = std::stoll(k[7]);
    s.head_dim_qk = std::stoll(k[8]);
    s.head_dim_v = std::stoll(k[9]);
    s.causal = k[10] == "true";
    const std::string what = fmt::format("{} {} {}", k[0], k[1], s.dims());
    try {
      s.dtype = parse_dtype(k[2]);
      c.pass = parse_attention_passes(k[1]).at(0);
      validate(s, what);
    } catch (const Error& e) {
      if (left_out) left_out->push_back(fmt::format("{}: {}", what, e.what()));
      continue;
    }
    c.captured = CapturedCall{k[0], shape.calls, shape.in_job_us()};
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace opbench
