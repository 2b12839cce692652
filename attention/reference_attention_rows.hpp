#pragma once
// The per-row logic of the naive CUDA reference attention (reference_attention.cu), written once
// as __host__ __device__ templates: the kernels run it with one warp per row, the host tests run
// the very same code with a host "warp" (32 lanes in a loop) against the CPU's fp64 reference.
//
// One warp owns one row — a query row (forward, dQ) or a key row (dK, dV). Each lane holds every
// 32nd element of the row's accumulators in registers (head dims up to kMaxHeadDim); dot products
// are summed across the lanes. One pass over the keys with an online softmax (running max and
// sum, earlier terms rescaled when the max grows). fp32 throughout; inputs are read through a
// loader, so the kernels read bf16/fp16 and the tests read floats.
//
// Layout (B, S, H, D) for Q, K, V, O and their gradients; lse and delta are [B, Hq, Sq];
// causal masks are aligned bottom-right: query i sees keys j <= i + Skv - Sq.
// Compiled by nvcc as C++17.
#include <cmath>
#include <cstdint>

#include "common/dtype.hpp"
#include "common/host_device.hpp"

namespace opbench {

// The facts of an AttentionShape the kernels need.
struct AttentionDims {
  std::int64_t b = 1, sq = 0, skv = 0, hq = 0, hkv = 0, dqk = 0, dv = 0;
  bool causal = true;
  float scale = 1;
  DType dtype = DType::bf16;
};

// The dims of an AttentionShape (a template, so this header needs none of its includes).
template <class Shape>
AttentionDims attention_dims(const Shape& s) {
  return {.b = s.batch,
          .sq = s.seqlen_q,
          .skv = s.seqlen_kv,
          .hq = s.heads_q,
          .hkv = s.heads_kv,
          .dqk = s.head_dim_qk,
          .dv = s.head_dim_v,
          .causal = s.causal,
          .scale = static_cast<float>(s.softmax_scale()),
          .dtype = s.dtype};
}

namespace reference_rows {

constexpr int kWarp = 32;
constexpr int kMaxHeadDim = 256;

// Keys query row i sees: all, or j <= i + (Skv - Sq) under the bottom-right causal mask.
OPBENCH_HD inline std::int64_t visible_keys(const AttentionDims& d, std::int64_t i) {
  if (!d.causal) return d.skv;
  const std::int64_t n = i + 1 + d.skv - d.sq;
  return n < 0 ? 0 : (n > d.skv ? d.skv : n);
}

// The first query row that sees key j (query i sees key j when i >= j - (Skv - Sq)).
OPBENCH_HD inline std::int64_t first_query_seeing(const AttentionDims& d, std::int64_t j) {
  if (!d.causal) return 0;
  const std::int64_t first = j - (d.skv - d.sq);
  return first < 0 ? 0 : first;
}

// Element offset of row s, head h in the (B, S, H, D) layout.
OPBENCH_HD inline std::int64_t bshd(std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t S,
                                    std::int64_t H, std::int64_t D) {
  return ((b * S + s) * H + h) * D;
}

// Running max and sum of exp over one softmax row, one score at a time.
struct OnlineSoftmax {
  float max = -INFINITY, sum = 0;
  // Adds score s: `rescale` is the factor earlier accumulations must be multiplied by, and
  // `p` = exp(s - max) the weight of this score.
  OPBENCH_HD void add(float s, float& rescale, float& p) {
    const float m = fmaxf(max, s);
    rescale = max == -INFINITY ? 0.0f : expf(max - m);
    p = expf(s - m);
    sum = sum * rescale + p;
    max = m;
  }
  // log of the softmax denominator; -inf for a row that saw no key.
  OPBENCH_HD float lse() const { return sum > 0 ? max + logf(sum) : -INFINITY; }
};

// Σ x[xo + e]·y[yo + e] over e < n, each lane taking every 32nd element, summed across lanes.
OPBENCH_HD_TEMPLATE
template <class Warp, class In>
OPBENCH_HD float dot(const Warp& w, const In& x, std::int64_t xo, const In& y, std::int64_t yo,
                     std::int64_t n) {
  return w.sum([&](int lane) {
    float acc = 0;
    for (std::int64_t e = lane; e < n; e += kWarp)
      acc += x(xo + e) * y(yo + e);
    return acc;
  });
}

// P_ij and dS_ij·scale of one (query row i, key row j) pair, from lse_i and delta_i = dO_i·O_i:
// P = exp(scale·Q_i·K_j − lse_i), dS = P·(dO_i·V_j − delta_i).
struct ScoreGrad {
  float p, ds_scaled;
};
OPBENCH_HD_TEMPLATE
template <class Warp, class In>
OPBENCH_HD ScoreGrad score_grad(const AttentionDims& d, const Warp& w, const In& q, std::int64_t qo,
                                const In& k, std::int64_t ko, const In& v, std::int64_t vo,
                                const In& dout, std::int64_t oo, float lse, float delta) {
  const float p = expf(d.scale * dot(w, q, qo, k, ko, d.dqk) - lse);
  const float dp = dot(w, dout, oo, v, vo, d.dv);
  return {p, p * (dp - delta) * d.scale};
}

// Query row `row` = (b·Hq + h)·Sq + i: O [B, Sq, Hq, Dv] (fp32) and lse[row].
OPBENCH_HD_TEMPLATE
template <class Warp, class In>
OPBENCH_HD void forward_row(const AttentionDims& d, std::int64_t row, const Warp& w, const In& q,
                            const In& k, const In& v, float* o, float* lse) {
  const std::int64_t b = row / (d.sq * d.hq), h = (row / d.sq) % d.hq, i = row % d.sq;
  const std::int64_t hk = h / (d.hq / d.hkv), visible = visible_keys(d, i);
  const std::int64_t qo = bshd(b, i, h, d.sq, d.hq, d.dqk), oo = bshd(b, i, h, d.sq, d.hq, d.dv);
  float acc[Warp::kSlots] = {};
  OnlineSoftmax softmax;
  for (std::int64_t j = 0; j < visible; ++j) {
    const std::int64_t ko = bshd(b, j, hk, d.skv, d.hkv, d.dqk);
    const std::int64_t vo = bshd(b, j, hk, d.skv, d.hkv, d.dv);
    float rescale = 0, p = 0;
    softmax.add(d.scale * dot(w, q, qo, k, ko, d.dqk), rescale, p);
    w.each(d.dv,
           [&](int slot, std::int64_t e) { acc[slot] = acc[slot] * rescale + p * v(vo + e); });
  }
  w.each(d.dv, [&](int slot, std::int64_t e) {
    o[oo + e] = visible > 0 ? acc[slot] / softmax.sum : 0.0f;
  });
  if (w.leader()) lse[row] = softmax.lse();
}

// Query row `row`: delta[row] = dO_i·O_i, then dQ_i = Σ_j dS_ij·K_j·scale (fp32, Q's layout).
OPBENCH_HD_TEMPLATE
template <class Warp, class In>
OPBENCH_HD void dq_row(const AttentionDims& d, std::int64_t row, const Warp& w, const In& q,
                       const In& k, const In& v, const In& o, const In& dout, const float* lse,
                       float* dq, float* delta) {
  const std::int64_t b = row / (d.sq * d.hq), h = (row / d.sq) % d.hq, i = row % d.sq;
  const std::int64_t hk = h / (d.hq / d.hkv), visible = visible_keys(d, i);
  const std::int64_t qo = bshd(b, i, h, d.sq, d.hq, d.dqk), oo = bshd(b, i, h, d.sq, d.hq, d.dv);
  const float di = dot(w, dout, oo, o, oo, d.dv);
  if (w.leader()) delta[row] = di;
  float acc[Warp::kSlots] = {};
  for (std::int64_t j = 0; j < visible; ++j) {
    const std::int64_t ko = bshd(b, j, hk, d.skv, d.hkv, d.dqk);
    const ScoreGrad g = score_grad(d, w, q, qo, k, ko, v, bshd(b, j, hk, d.skv, d.hkv, d.dv), dout,
                                   oo, lse[row], di);
    w.each(d.dqk, [&](int slot, std::int64_t e) { acc[slot] += g.ds_scaled * k(ko + e); });
  }
  w.each(d.dqk, [&](int slot, std::int64_t e) { dq[qo + e] = acc[slot]; });
}

// Key row `row` = (b·Hkv + hk)·Skv + j: dV_j = Σ P_ij·dO_i and dK_j = Σ dS_ij·Q_i·scale over
// the query rows that see key j, in every query head of the group (fp32, K's and V's layouts).
// Needs delta from dq_row.
OPBENCH_HD_TEMPLATE
template <class Warp, class In>
OPBENCH_HD void dkv_row(const AttentionDims& d, std::int64_t row, const Warp& w, const In& q,
                        const In& k, const In& v, const In& dout, const float* lse,
                        const float* delta, float* dk, float* dv) {
  const std::int64_t b = row / (d.skv * d.hkv), hk = (row / d.skv) % d.hkv, j = row % d.skv;
  const std::int64_t ko = bshd(b, j, hk, d.skv, d.hkv, d.dqk);
  const std::int64_t vo = bshd(b, j, hk, d.skv, d.hkv, d.dv);
  const std::int64_t group = d.hq / d.hkv;
  float dk_acc[Warp::kSlots] = {}, dv_acc[Warp::kSlots] = {};
  for (std::int64_t g = 0; g < group; ++g) {
    const std::int64_t h = hk * group + g;
    for (std::int64_t i = first_query_seeing(d, j); i < d.sq; ++i) {
      const std::int64_t qo = bshd(b, i, h, d.sq, d.hq, d.dqk);
      const std::int64_t oo = bshd(b, i, h, d.sq, d.hq, d.dv);
      const std::int64_t qrow = (b * d.hq + h) * d.sq + i;
      const ScoreGrad sg = score_grad(d, w, q, qo, k, ko, v, vo, dout, oo, lse[qrow], delta[qrow]);
      w.each(d.dv, [&](int slot, std::int64_t e) { dv_acc[slot] += sg.p * dout(oo + e); });
      w.each(d.dqk, [&](int slot, std::int64_t e) { dk_acc[slot] += sg.ds_scaled * q(qo + e); });
    }
  }
  w.each(d.dqk, [&](int slot, std::int64_t e) { dk[ko + e] = dk_acc[slot]; });
  w.each(d.dv, [&](int slot, std::int64_t e) { dv[vo + e] = dv_acc[slot]; });
}

// |got − want| for the check, +inf when `got` is NaN (so a NaN always fails).
OPBENCH_HD inline float check_error(float got, float want) {
  const float diff = fabsf(got - want);
  return diff != diff ? INFINITY : diff;
}

// A warp on the host: its 32 lanes run in turn, and one executor owns the whole row (a slot per
// element). The tests run the row functions through it.
struct HostWarp {
  static constexpr int kSlots = kMaxHeadDim;
  template <class F>
  float sum(F f) const {
    float total = 0;
    for (int lane = 0; lane < kWarp; ++lane)
      total += f(lane);
    return total;
  }
  template <class F>
  void each(std::int64_t n, F f) const {
    for (std::int64_t e = 0; e < n; ++e)
      f(static_cast<int>(e), e);
  }
  bool leader() const { return true; }
};

}  // namespace reference_rows
}  // namespace opbench
