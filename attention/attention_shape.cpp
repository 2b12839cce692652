#include "attention/attention_shape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "common/json_reader.hpp"
#include "common/list_items.hpp"
#include "common/text.hpp"

namespace opbench {

std::string attention_pass_name(AttentionPass p) {
  return p == AttentionPass::fwd ? "fwd" : "bwd";
}

bool is_attention_dtype(DType t) {
  // What some provider runs: fp32 on the CPU, bf16 and fp16 on the GPU. fp64 was accepted and then
  // skipped in every case; it is refused where it is given, with the list.
  return t == DType::fp32 || t == DType::bf16 || t == DType::fp16;
}

std::vector<AttentionPass> parse_attention_passes(const std::string& text) {
  std::vector<AttentionPass> out;
  for (const auto& item : split(text, ',')) {
    auto p = to_lower(item);
    if (p == "fwd" || p == "forward")
      push_once(out, AttentionPass::fwd, "--pass", item);
    else if (p == "bwd" || p == "backward")
      push_once(out, AttentionPass::bwd, "--pass", item);
    else
      throw bad_input(fmt::format("--pass: unknown pass '{}' (accepted: fwd, bwd)", item));
  }
  if (out.empty()) throw bad_input("--pass: empty list");
  return out;
}

double AttentionShape::softmax_scale() const {
  return 1.0 / std::sqrt(static_cast<double>(head_dim_qk));
}

std::int64_t AttentionShape::visible_keys(std::int64_t i) const {
  if (!causal) return seqlen_kv;
  return std::clamp<std::int64_t>(i + 1 + (seqlen_kv - seqlen_q), 0, seqlen_kv);
}

std::int64_t AttentionShape::fwd_flops() const {
  // 2·Savg = 2·Skv, or max(0, Skv - Sq) + Skv when causal: an integer either way.
  const std::int64_t two_savg =
      causal ? std::max<std::int64_t>(0, seqlen_kv - seqlen_q) + seqlen_kv : 2 * seqlen_kv;
  return batch * heads_q * seqlen_q * two_savg * (head_dim_qk + head_dim_v);
}

std::int64_t AttentionShape::flops(AttentionPass p) const {
  return p == AttentionPass::fwd ? fwd_flops() : (5 * fwd_flops() + 1) / 2;
}

std::int64_t AttentionShape::io_bytes(AttentionPass p) const {
  const auto ts = static_cast<std::int64_t>(dtype_size(dtype));
  const std::int64_t qkv = (q_elements() + k_elements() + v_elements()) * ts;
  const std::int64_t o = o_elements() * ts, lse = lse_elements() * 4;
  if (p == AttentionPass::fwd) return qkv + o + lse;
  return qkv + 2 * o + lse /* reads: Q K V O dO LSE */ + qkv /* writes: dQ dK dV */;
}

std::string AttentionShape::dims() const {
  return fmt::format("b{} s{}/{} h{}/{} d{}/{}{}", batch, seqlen_q, seqlen_kv, heads_q, heads_kv,
                     head_dim_qk, head_dim_v, causal ? " causal" : "");
}

void validate(const AttentionShape& s, const std::string& where, const AttentionFieldNames& names) {
  auto fail = [&](const char* field, const std::string& why) {
    throw bad_input(fmt::format("{}: {} '{}': {}", where, names.kind, field, why));
  };
  if (s.heads_kv < 1) fail(names.heads_kv, fmt::format("{} is not a head count >= 1", s.heads_kv));
  if (s.heads_kv > s.heads_q)
    fail(names.heads_kv, fmt::format("{} exceeds {} ({})", s.heads_kv, names.heads_q, s.heads_q));
  if (s.heads_q % s.heads_kv != 0)
    fail(names.heads_kv, fmt::format("{} ({}) is not a multiple of {} ({})", names.heads_q,
                                     s.heads_q, names.heads_kv, s.heads_kv));
  if (!is_attention_dtype(s.dtype))
    fail(names.dtype,
         fmt::format("{} is not an attention dtype (fp32, bf16, fp16)", dtype_name(s.dtype)));
}

std::vector<AttentionShape> load_attention_shapes(const std::string& path) {
  return attention_shapes_from_json(load_json_file(path), path);
}

std::vector<AttentionShape> attention_shapes_from_json(const nlohmann::json& doc,
                                                       const std::string& path) {
  using L = AttentionLimits;
  std::vector<AttentionShape> out;
  for_each_entry(doc, path, "model", [&](JsonEntry& e) {
    AttentionShape s;
    s.model = e.get_string("model");
    s.batch = e.get_int("batch_size", 1, L::batch);
    s.seqlen_q = e.get_int("seqlen_q", 1, L::seq);
    s.seqlen_kv = e.get_int("seqlen_kv", 1, L::seq);
    s.heads_q = e.get_int("num_head_q", 1, L::heads);
    s.heads_kv = e.get_int("num_head_kv", 1, L::heads);
    s.head_dim_qk = e.get_int("head_dim_qk", 1, L::dim);
    s.head_dim_v = e.get_int("head_dim_v", 1, L::dim);
    s.causal = e.get_bool("causal");
    const std::string dtype = e.get_string("dtype");  // its own error names the file and key
    try {
      s.dtype = parse_dtype(dtype);
    } catch (const Error& err) {
      e.fail("dtype", err.what());
    }
    e.reject_unknown_keys();
    validate(s, e.where());
    out.push_back(s);
  });
  return out;
}

nlohmann::ordered_json attention_shapes_entry(const AttentionShape& s) {
  return {{"model", s.model},
          {"batch_size", s.batch},
          {"seqlen_q", s.seqlen_q},
          {"seqlen_kv", s.seqlen_kv},
          {"num_head_q", s.heads_q},
          {"num_head_kv", s.heads_kv},
          {"head_dim_qk", s.head_dim_qk},
          {"head_dim_v", s.head_dim_v},
          {"causal", s.causal},
          {"dtype", dtype_name(s.dtype)}};
}

CpAttention context_parallel_attention(const AttentionShape& whole, std::int64_t cp) {
  CpAttention out{whole, whole};
  out.own.seqlen_q = out.own.seqlen_kv = whole.seqlen_q / cp;
  out.ring.seqlen_q = whole.seqlen_q / cp;
  out.ring.seqlen_kv = whole.seqlen_q / (2 * cp);
  out.ring.causal = false;
  return out;
}

std::vector<AttentionShape> model_attention_shapes(const ModelConfig& m,
                                                   const std::vector<std::int64_t>& seqlens,
                                                   const std::vector<std::int64_t>& micro_batches,
                                                   DType dtype, std::int64_t tp) {
  std::vector<AttentionShape> out;
  // MLA has as many K/V heads as query heads: both split evenly.
  const TpHeads heads = heads_per_tp_rank(m, tp);
  for (auto mb : micro_batches)
    for (auto seq : seqlens) {
      AttentionShape s;
      s.model = m.name;
      s.batch = mb;
      s.seqlen_q = s.seqlen_kv = seq;
      s.heads_q = heads.q;
      s.heads_kv = heads.kv;
      s.head_dim_qk = m.mla ? m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim : m.head_dim;
      s.head_dim_v = m.mla ? m.mla->v_head_dim : m.head_dim;
      s.causal = true;
      s.dtype = dtype;
      out.push_back(s);
    }
  return out;
}

}  // namespace opbench
