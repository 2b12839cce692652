#include "trace/trace_table.hpp"

#include <fmt/format.h>

namespace opbench::trace {

TraceTable::TraceTable() : table_(std::make_unique<capture::ShapeTable>()) {}

const char* TraceTable::name(std::string_view text) {
  return names_.emplace(text).first->c_str();
}

std::string TraceTable::csv() const {
  return capture::csv_text(facts, rows());
}

std::string TraceTable::jsonl() const {
  return capture::jsonl_text(facts, rows(), facts.started, true);
}

capture::CaptureKey TraceTable::gemm_key(std::string_view api, const GemmCall& g) {
  capture::CaptureKey k;
  k.api = name(api);
  k.kind = "gemm";
  k.op = g.op;
  k.dtype = name(g.dtype);
  k.m = g.m, k.n = g.n, k.k = g.k, k.batch = g.batch;
  k.transa = g.transa ? 'T' : 'N';
  k.transb = g.transb ? 'T' : 'N';
  return k;
}

capture::CaptureKey TraceTable::attention_key(std::string_view api, const AttentionCall& a) {
  capture::CaptureKey k;
  k.api = name(api);
  k.kind = "attention";
  k.op = a.pass;
  k.dtype = name(a.dtype);
  k.batch = a.batch;
  k.heads_q = a.heads_q, k.heads_kv = a.heads_kv, k.seq_q = a.seq_q, k.seq_kv = a.seq_kv;
  k.head_dim_qk = a.head_dim_qk, k.head_dim_v = a.head_dim_v;
  k.causal = a.causal.value_or(false);
  return k;
}

capture::CaptureKey TraceTable::comm_key(std::string_view api, const CommCall& c, int comm_size,
                                         int comm_stride) {
  capture::CaptureKey k =
      capture::collective_key(name(api), c.p2p ? "p2p" : "collective", c.op_name, c.op,
                              name(c.dtype), dtype_bytes(c.dtype), c.count, comm_size, "");
  k.comm_stride = comm_size == 1 ? 1 : comm_stride;
  return k;
}

capture::CaptureKey TraceTable::unreplayed_key(std::string_view api, const char* kind) {
  capture::CaptureKey k;
  k.api = name(api);
  k.kind = kind;
  k.op = "";
  k.dtype = "";
  return k;
}

void TraceTable::count_unknown_dtype(std::string_view api, std::string_view type) {
  ++unknown_dtypes_[{std::string(api), std::string(type)}];
}

void TraceTable::note_unknown_dtypes() {
  for (const auto& [call, count] : unknown_dtypes_)
    notes.push_back(fmt::format(
        "{} calls of {} in {}, a dtype opbench does not benchmark: not replayed (their time is "
        "the operator's own row)",
        count, call.first, call.second));
}

}  // namespace opbench::trace
