#include "attention/cudnn_sdpa_graph.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace opbench {
namespace {

using Dims = std::vector<std::int64_t>;

// The (B, S, H, D) layout seen as the [B, H, S, D] tensor cuDNN's matmuls index.
Dims bshd_strides(std::int64_t s, std::int64_t h, std::int64_t d) {
  return {s * h * d, d, h * d, 1};
}

// Dimensions 2 and 3 swapped: the transposed view of the same memory.
GraphTensor transposed_view(GraphBuilder& g, std::int64_t uid, Dims dims, Dims strides,
                            cudnnDataType_t type) {
  std::swap(dims[2], dims[3]);
  std::swap(strides[2], strides[3]);
  return g.tensor(uid, dims, strides, type);
}

// Scores outside the causal band become -inf: query row i keeps keys j <= i + (Skv - Sq).
// Sq == Skv takes the plain lower-triangular form, the one the fused engines know best.
GraphTensor causal_mask(GraphBuilder& g, const AttentionShape& s, const GraphTensor& scores) {
  const Dims& dims = scores.dims;
  const Dims strides = packed_strides(dims);
  auto row = g.virtual_tensor(dims, strides, CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, nullptr, row, CUDNN_DATA_FLOAT, 2);
  auto col = g.virtual_tensor(dims, strides, CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, nullptr, col, CUDNN_DATA_FLOAT, 3);
  GraphTensor shifted = row;
  if (s.seqlen_q != s.seqlen_kv) {
    auto skv = g.scalar(kUidSeqKv, CUDNN_DATA_INT32);
    auto sq = g.scalar(kUidSeqQ, CUDNN_DATA_INT32);
    auto plus = g.virtual_tensor(dims, strides, CUDNN_DATA_INT32);
    g.pointwise(CUDNN_POINTWISE_ADD, row, &skv, nullptr, plus, CUDNN_DATA_INT32, 3);
    shifted = g.virtual_tensor(dims, strides, CUDNN_DATA_INT32);
    g.pointwise(CUDNN_POINTWISE_SUB, plus, &sq, nullptr, shifted, CUDNN_DATA_INT32, 3);
  }
  auto keep = g.virtual_tensor(dims, strides, CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, shifted, &col, nullptr, keep, CUDNN_DATA_BOOLEAN);
  auto neg_inf = g.scalar(kUidNegInf, CUDNN_DATA_FLOAT);
  auto masked = g.virtual_tensor(dims, strides);
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, scores, &neg_inf, &keep, masked);
  return masked;
}

struct Operands {
  std::int64_t b, hq, hk, sq, skv, dqk, dv;
  cudnnDataType_t io;
  explicit Operands(const AttentionShape& s)
      : b(s.batch),
        hq(s.heads_q),
        hk(s.heads_kv),
        sq(s.seqlen_q),
        skv(s.seqlen_kv),
        dqk(s.head_dim_qk),
        dv(s.head_dim_v),
        io(cudnn_data_type(s.dtype)) {}
  Dims scores() const { return {b, hq, sq, skv}; }
  // Q, O, dO, dQ: [B, Hq, Sq, dim] over (B, S, H, D) memory; K, V, dK, dV: [B, Hkv, Skv, dim].
  GraphTensor query_rows(GraphBuilder& g, std::int64_t uid, std::int64_t dim) const {
    return g.tensor(uid, {b, hq, sq, dim}, bshd_strides(sq, hq, dim), io);
  }
  GraphTensor key_rows(GraphBuilder& g, std::int64_t uid, std::int64_t dim) const {
    return g.tensor(uid, {b, hk, skv, dim}, bshd_strides(skv, hk, dim), io);
  }
  GraphTensor key_rows_transposed(GraphBuilder& g, std::int64_t uid, std::int64_t dim) const {
    return transposed_view(g, uid, {b, hk, skv, dim}, bshd_strides(skv, hk, dim), io);
  }
  GraphTensor row_stats_tensor(GraphBuilder& g, std::int64_t uid) const {
    return g.tensor(uid, row_stats(), row_stats_strides(), CUDNN_DATA_FLOAT);
  }
  Dims row_stats() const { return {b, hq, sq, 1}; }
  Dims row_stats_strides() const { return {hq * sq, sq, 1, 1}; }
};

// Q·Kᵀ · scale, in fp32: the scores both graphs start from.
GraphTensor scaled_scores(GraphBuilder& g, const Operands& d, const GraphTensor& q,
                          const GraphTensor& kt, const GraphTensor& scale) {
  const Dims sdims = d.scores(), sstrides = packed_strides(sdims);
  auto scores = g.virtual_tensor(sdims, sstrides);
  g.matmul(q, kt, scores);
  auto scaled = g.virtual_tensor(sdims, sstrides);
  g.pointwise(CUDNN_POINTWISE_MUL, scores, &scale, nullptr, scaled);
  return scaled;
}

// grad = scoresᵀ·x for every query head; under GQA (fewer KV heads) each KV head's gradient is
// the sum over its group of query heads, as a reduction over the head dimension.
void key_gradient(GraphBuilder& g, const Operands& d, const GraphTensor& scores_t,
                  const GraphTensor& x, const GraphTensor& grad) {
  if (d.hq == d.hk) return g.matmul(scores_t, x, grad);
  const std::int64_t dim = grad.dims[3];
  auto per_query_head =
      g.virtual_tensor({d.b, d.hq, d.skv, dim}, {d.hq * d.skv * dim, d.skv * dim, dim, 1}, d.io);
  g.matmul(scores_t, x, per_query_head);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, per_query_head, grad);
}

}  // namespace

cudnnDataType_t cudnn_data_type(DType t) {
  switch (t) {
    case DType::bf16:
      return CUDNN_DATA_BFLOAT16;
    case DType::fp16:
      return CUDNN_DATA_HALF;
    default:
      throw std::logic_error("cudnn_data_type: SDPA runs bf16 and fp16");
  }
}

std::optional<std::string> cudnn_sdpa_unsupported(const AttentionShape& s) {
  if (s.dtype != DType::bf16 && s.dtype != DType::fp16)
    return fmt::format("cuDNN SDPA runs bf16 and fp16; {} runs on --backend cpu",
                       dtype_name(s.dtype));
  if (s.causal && s.seqlen_q > s.seqlen_kv)
    return fmt::format(
        "causal with Sq {} > Skv {}: the first {} query rows would see no key, which cuDNN's "
        "bottom-right mask does not define",
        s.seqlen_q, s.seqlen_kv, s.seqlen_q - s.seqlen_kv);
  return std::nullopt;
}

SdpaGraph build_sdpa_forward(cudnnHandle_t handle, const AttentionShape& s) {
  SdpaGraph out;
  out.builder = std::make_unique<GraphBuilder>(handle);
  GraphBuilder& g = *out.builder;
  const Operands d(s);

  auto q = d.query_rows(g, kUidQ, d.dqk);
  auto kt = d.key_rows_transposed(g, kUidK, d.dqk);
  auto v = d.key_rows(g, kUidV, d.dv);
  auto o = d.query_rows(g, kUidO, d.dv);
  auto stats = d.row_stats_tensor(g, kUidStats);
  auto scale = g.scalar(kUidScale, CUDNN_DATA_FLOAT);

  const Dims sdims = d.scores(), sstrides = packed_strides(sdims);
  auto scaled = scaled_scores(g, d, q, kt, scale);
  GraphTensor logits = s.causal ? causal_mask(g, s, scaled) : scaled;

  // Softmax with its statistics: stats = max + log(sum(exp(x - max))), P = exp(x - max) / sum.
  auto row_max = g.virtual_tensor(d.row_stats(), d.row_stats_strides());
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, logits, row_max);
  auto centered = g.virtual_tensor(sdims, sstrides);
  g.pointwise(CUDNN_POINTWISE_SUB, logits, &row_max, nullptr, centered);
  auto exps = g.virtual_tensor(sdims, sstrides);
  g.pointwise(CUDNN_POINTWISE_EXP, centered, nullptr, nullptr, exps);
  auto row_sum = g.virtual_tensor(d.row_stats(), d.row_stats_strides());
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, exps, row_sum);
  auto log_sum = g.virtual_tensor(d.row_stats(), d.row_stats_strides());
  g.pointwise(CUDNN_POINTWISE_LOG, row_sum, nullptr, nullptr, log_sum);
  g.pointwise(CUDNN_POINTWISE_ADD, row_max, &log_sum, nullptr, stats);
  // The second matmul takes P in the input type, as cuDNN's engines require.
  auto probs = g.virtual_tensor(sdims, sstrides, d.io);
  g.pointwise(CUDNN_POINTWISE_DIV, exps, &row_sum, nullptr, probs);
  g.matmul(probs, v, o);

  out.graph = g.finish();
  return out;
}

SdpaGraph build_sdpa_backward(cudnnHandle_t handle, const AttentionShape& s) {
  SdpaGraph out;
  out.builder = std::make_unique<GraphBuilder>(handle);
  GraphBuilder& g = *out.builder;
  const Operands d(s);

  auto q = d.query_rows(g, kUidQ, d.dqk);
  auto kt = d.key_rows_transposed(g, kUidK, d.dqk);
  auto vt = d.key_rows_transposed(g, kUidV, d.dv);
  auto o = d.query_rows(g, kUidO, d.dv);
  auto dout = d.query_rows(g, kUidDO, d.dv);
  auto stats = d.row_stats_tensor(g, kUidStats);
  auto dq = d.query_rows(g, kUidDQ, d.dqk);
  auto dk = d.key_rows(g, kUidDK, d.dqk);
  auto dv = d.key_rows(g, kUidDV, d.dv);
  auto scale = g.scalar(kUidScale, CUDNN_DATA_FLOAT);
  auto one = g.scalar(kUidOne, CUDNN_DATA_FLOAT);

  // softmax_sum = rowsum(dO ∘ O), kept in a scratch buffer for the dS chain.
  auto d_o = g.virtual_tensor({d.b, d.hq, d.sq, d.dv}, bshd_strides(d.sq, d.hq, d.dv));
  g.pointwise(CUDNN_POINTWISE_MUL, dout, &o, nullptr, d_o);
  auto d_o_sum = g.virtual_tensor(d.row_stats(), d.row_stats_strides());
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, d_o, d_o_sum);
  auto softmax_sum =
      g.tensor(kUidSoftmaxSum, d.row_stats(), d.row_stats_strides(), CUDNN_DATA_FLOAT);
  g.pointwise(CUDNN_POINTWISE_MUL, d_o_sum, &one, nullptr, softmax_sum);

  // P = exp(Q·Kᵀ·scale − stats), masked: the forward's probabilities, recomputed.
  const Dims sdims = d.scores(), sstrides = packed_strides(sdims);
  auto scaled = scaled_scores(g, d, q, kt, scale);
  auto shifted = g.virtual_tensor(sdims, sstrides);
  g.pointwise(CUDNN_POINTWISE_SUB, scaled, &stats, nullptr, shifted);
  GraphTensor logits = s.causal ? causal_mask(g, s, shifted) : shifted;
  auto probs = g.virtual_tensor(sdims, sstrides);
  g.pointwise(CUDNN_POINTWISE_EXP, logits, nullptr, nullptr, probs);

  // Pᵀ and dSᵀ: the same scores read transposed, in the input type.
  const Dims tdims{d.b, d.hq, d.skv, d.sq}, tstrides{d.hq * d.sq * d.skv, d.sq * d.skv, 1, d.skv};
  // dV = Pᵀ·dO, summed over the query heads of each KV head under GQA.
  auto probs_t = g.virtual_tensor(tdims, tstrides, d.io);
  g.reshape(probs, probs_t);
  key_gradient(g, d, probs_t, dout, dv);

  // dS = P ∘ (dO·Vᵀ − softmax_sum) · scale
  auto dp = g.virtual_tensor(sdims, sstrides);
  g.matmul(dout, vt, dp);
  auto dp_centered = g.virtual_tensor(sdims, sstrides);
  g.pointwise(CUDNN_POINTWISE_SUB, dp, &softmax_sum, nullptr, dp_centered);
  auto ds_unscaled = g.virtual_tensor(sdims, sstrides);
  g.pointwise(CUDNN_POINTWISE_MUL, dp_centered, &probs, nullptr, ds_unscaled);
  auto ds = g.virtual_tensor(sdims, sstrides);
  g.pointwise(CUDNN_POINTWISE_MUL, ds_unscaled, &scale, nullptr, ds);

  // dK = dSᵀ·Q, summed over query heads under GQA.
  auto ds_t = g.virtual_tensor(tdims, tstrides, d.io);
  g.reshape(ds, ds_t);
  key_gradient(g, d, ds_t, q, dk);

  // dQ = dS·K, accumulated in fp32 scratch and converted.
  Dims k_dims = kt.dims, k_strides = kt.strides;
  std::swap(k_dims[2], k_dims[3]);
  std::swap(k_strides[2], k_strides[3]);
  auto k = g.virtual_tensor(k_dims, k_strides, d.io);
  g.reshape(kt, k);
  auto dq_accum = g.tensor(kUidDQAccum, {d.b, d.hq, d.sq, d.dqk},
                           {d.hq * d.sq * d.dqk, d.sq * d.dqk, d.dqk, 1}, CUDNN_DATA_FLOAT);
  g.matmul(ds, k, dq_accum);
  g.pointwise(CUDNN_POINTWISE_IDENTITY, dq_accum, nullptr, nullptr, dq);

  out.graph = g.finish();
  return out;
}

}  // namespace opbench
