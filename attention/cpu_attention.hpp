#pragma once
// Attention on the CPU, in layout (B, S, H, D), fp32 tensors:
//  - a naive fp64 reference, one head (or one KV group for backward) at a time, for checks;
//  - a blocked flash-style implementation: online softmax over K/V tiles, every tile product
//    through BLAS (single-threaded), work spread over all cores by (batch, head, tile).
#include <cstdint>
#include <utility>
#include <vector>

#include "attention/attention_shape.hpp"

namespace opbench {

struct AttentionInputs {
  const float* q;
  const float* k;
  const float* v;
};

// Forward of query head h of batch b: o_head [Sq, Dv] and lse_head [Sq] (natural log of the
// softmax denominator, -inf for a row that sees no key; its output row is 0).
void reference_forward_head(const AttentionShape& s, const AttentionInputs& in, std::int64_t b,
                            std::int64_t h, std::vector<double>& o_head,
                            std::vector<double>& lse_head);

// Backward for KV head hk of batch b: dq for its group's query heads [group, Sq, Dqk], dk
// [Skv, Dqk], dv [Skv, Dv], from the gradient of the output `dout` (B, Sq, Hq, Dv).
void reference_backward_group(const AttentionShape& s, const AttentionInputs& in, const float* dout,
                              std::int64_t b, std::int64_t hk, std::vector<double>& dq,
                              std::vector<double>& dk, std::vector<double>& dv);

// Blocked forward: out (B, Sq, Hq, Dv), lse (B, Hq, Sq).
void flash_forward(const AttentionShape& s, const AttentionInputs& in, float* out, float* lse);
// Blocked backward from out, lse and dout: dq (B, Sq, Hq, Dqk), dk (B, Skv, Hkv, Dqk), dv (B, Skv,
// Hkv, Dv).
void flash_backward(const AttentionShape& s, const AttentionInputs& in, const float* out,
                    const float* lse, const float* dout, float* dq, float* dk, float* dv);

// The (batch, head) pairs a check covers: all of them for small shapes, else a deterministic
// spread of `limit` pairs (first, last and evenly between).
std::vector<std::pair<std::int64_t, std::int64_t>> check_heads(std::int64_t batch,
                                                               std::int64_t heads,
                                                               std::int64_t limit);

}  // namespace opbench
