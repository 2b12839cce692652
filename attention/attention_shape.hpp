#pragma once
// One attention case: Q [B, Sq, Hq, Dqk], K [B, Skv, Hkv, Dqk], V [B, Skv, Hkv, Dv] (layout
// B, S, H, D), O [B, Sq, Hq, Dv]; GQA when Hkv < Hq; causal masks aligned bottom-right (query i
// sees keys j <= i + Skv - Sq). FLOPs follow FlashAttention-3's convention, so figures compare
// with published ones:
//   fwd = 2·B·Hq·Sq·Savg·(Dqk + Dv), Savg = Skv, or (max(0, Skv - Sq) + Skv) / 2 when causal
//   bwd = 2.5 · fwd
// GQA changes bytes, not FLOPs: K and V are read with Hkv heads.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.hpp"
#include "common/model_config.hpp"

namespace opbench {

enum class AttentionPass { fwd, bwd };
std::string attention_pass_name(AttentionPass p);
// fp32, bf16, fp16 (and fp64, which every provider skips): not tf32, integers or fp8.
bool is_attention_dtype(DType t);
std::vector<AttentionPass> parse_attention_passes(const std::string& text);

struct AttentionShape {
  std::string model;
  std::int64_t batch = 1, seqlen_q = 0, seqlen_kv = 0, heads_q = 0, heads_kv = 0, head_dim_qk = 0,
               head_dim_v = 0;
  bool causal = true;
  DType dtype = DType::bf16;

  std::int64_t group() const { return heads_q / heads_kv; }  // query heads per KV head
  double softmax_scale() const;                              // 1 / sqrt(Dqk)
  // Keys query row i may attend to: all Skv, or i + 1 + (Skv - Sq) clamped to [0, Skv] when causal.
  std::int64_t visible_keys(std::int64_t i) const;

  std::int64_t fwd_flops() const;
  std::int64_t flops(AttentionPass p) const;  // bwd = 2.5 · fwd, rounded to the nearest FLOP
  // Bytes moved: fwd reads Q, K, V and writes O and the softmax statistics (LSE, fp32);
  // bwd reads Q, K, V, O, dO, LSE and writes dQ, dK, dV.
  std::int64_t io_bytes(AttentionPass p) const;

  std::int64_t q_elements() const { return batch * seqlen_q * heads_q * head_dim_qk; }
  std::int64_t k_elements() const { return batch * seqlen_kv * heads_kv * head_dim_qk; }
  std::int64_t v_elements() const { return batch * seqlen_kv * heads_kv * head_dim_v; }
  std::int64_t o_elements() const { return batch * seqlen_q * heads_q * head_dim_v; }
  std::int64_t lse_elements() const { return batch * heads_q * seqlen_q; }
  std::string dims() const;  // "b1 s8192/8192 h32/8 d128/128 causal"
};

// The sizes an attention shape may have, wherever it comes from (a shapes file, a job's table).
struct AttentionLimits {
  static constexpr std::int64_t batch = std::int64_t{1} << 20, seq = std::int64_t{1} << 24,
                                heads = 1 << 16, dim = 1 << 12;
};

// What validate() calls the fields in its messages: a shapes file's keys, or a captured table's
// columns.
struct AttentionFieldNames {
  const char* kind;  // "key", "column"
  const char* heads_q;
  const char* heads_kv;
  const char* dtype;
};
inline constexpr AttentionFieldNames kShapesFileKeys{"key", "num_head_q", "num_head_kv", "dtype"};
inline constexpr AttentionFieldNames kTableColumns{"column", "heads_q", "heads_kv", "dtype"};

// Throws bad_input naming `where` and the field for an impossible shape.
void validate(const AttentionShape& s, const std::string& where,
              const AttentionFieldNames& names = kShapesFileKeys);

// configs/attention_shapes.json: [{model, batch_size, seqlen_q, seqlen_kv, num_head_q,
// num_head_kv, head_dim_qk, head_dim_v, causal, dtype}].
std::vector<AttentionShape> load_attention_shapes(const std::string& path);
std::vector<AttentionShape> attention_shapes_from_json(const nlohmann::json& doc,
                                                       const std::string& path);
// `s` as an entry of such a file (what attention_shapes_from_json reads back as `s`).
nlohmann::ordered_json attention_shapes_entry(const AttentionShape& s);

// The attention of a model's layers: causal, its heads and head dims (MLA: K takes
// qk_nope + qk_rope, V v_head_dim), for every sequence length and micro-batch; with tp > 1 the
// heads of one tensor-parallel rank (heads_per_tp_rank).
std::vector<AttentionShape> model_attention_shapes(const ModelConfig& m,
                                                   const std::vector<std::int64_t>& seqlens,
                                                   const std::vector<std::int64_t>& micro_batches,
                                                   DType dtype, std::int64_t tp = 1);

// One rank's attention calls of a layer under context parallelism over cp ranks (Transformer
// Engine's p2p ring, with Megatron-Core's load-balanced split: rank r holds chunks r and
// 2·cp − 1 − r of 2·cp): `own`, its queries against its own two chunks, causal over seq/cp; and
// `ring`, a block that came round: seq/cp queries against seq/(2·cp) keys (the block's earlier
// chunk), unmasked, cp − 1 calls (a later block: half the queries against all of it, the same
// FLOPs). Together 1/cp of the sequence's causal attention. `whole` is the sequence's shape; its
// seqlen must be a multiple of 2·cp.
struct CpAttention {
  AttentionShape own, ring;
};
CpAttention context_parallel_attention(const AttentionShape& whole, std::int64_t cp);

}  // namespace opbench
