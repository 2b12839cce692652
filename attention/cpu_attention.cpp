#include "attention/cpu_attention.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/cpu_parallel.hpp"

namespace opbench {
namespace {

constexpr std::int64_t kTileQ = 128, kTileK = 128;
constexpr float kMasked = -1e30f;  // finite, so exp(masked - max) is an exact 0

// Element offsets in (B, S, H, D) and (B, H, S).
std::int64_t bshd(std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t S, std::int64_t H,
                  std::int64_t D) {
  return ((b * S + s) * H + h) * D;
}

// scale · Q_i K_jᵀ for a tile, masked (causal) entries set to kMasked.
void score_tile(const AttentionShape& s, const AttentionInputs& in, std::int64_t b, std::int64_t h,
                std::int64_t i0, std::int64_t br, std::int64_t j0, std::int64_t bc, float* S) {
  const std::int64_t hk = h / s.group(), D = s.head_dim_qk;
  const float* q = in.q + bshd(b, i0, h, s.seqlen_q, s.heads_q, D);
  const float* k = in.k + bshd(b, j0, hk, s.seqlen_kv, s.heads_kv, D);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(br), static_cast<int>(bc),
              static_cast<int>(D), static_cast<float>(s.softmax_scale()), q,
              static_cast<int>(s.heads_q * D), k, static_cast<int>(s.heads_kv * D), 0.0f, S,
              static_cast<int>(kTileK));
  if (!s.causal) return;
  for (std::int64_t r = 0; r < br; ++r) {
    const std::int64_t visible = s.visible_keys(i0 + r);
    for (std::int64_t c = std::max<std::int64_t>(0, visible - j0); c < bc; ++c)
      S[r * kTileK + c] = kMasked;
  }
}

}  // namespace

void reference_forward_head(const AttentionShape& s, const AttentionInputs& in, std::int64_t b,
                            std::int64_t h, std::vector<double>& o, std::vector<double>& lse) {
  const std::int64_t hk = h / s.group(), Dq = s.head_dim_qk, Dv = s.head_dim_v;
  o.assign(static_cast<std::size_t>(s.seqlen_q * Dv), 0.0);
  lse.assign(static_cast<std::size_t>(s.seqlen_q), -std::numeric_limits<double>::infinity());
  std::vector<double> scores(static_cast<std::size_t>(s.seqlen_kv));
  for (std::int64_t i = 0; i < s.seqlen_q; ++i) {
    const std::int64_t visible = s.visible_keys(i);
    if (visible == 0) continue;
    const float* q = in.q + bshd(b, i, h, s.seqlen_q, s.heads_q, Dq);
    double max = -std::numeric_limits<double>::infinity();
    for (std::int64_t j = 0; j < visible; ++j) {
      const float* k = in.k + bshd(b, j, hk, s.seqlen_kv, s.heads_kv, Dq);
      double dot = 0;
      for (std::int64_t d = 0; d < Dq; ++d)
        dot += static_cast<double>(q[d]) * k[d];
      scores[j] = dot * s.softmax_scale();
      max = std::max(max, scores[j]);
    }
    double sum = 0;
    for (std::int64_t j = 0; j < visible; ++j)
      sum += std::exp(scores[j] - max);
    lse[i] = max + std::log(sum);
    for (std::int64_t j = 0; j < visible; ++j) {
      const double p = std::exp(scores[j] - lse[i]);
      const float* v = in.v + bshd(b, j, hk, s.seqlen_kv, s.heads_kv, Dv);
      for (std::int64_t d = 0; d < Dv; ++d)
        o[i * Dv + d] += p * v[d];
    }
  }
}

void reference_backward_group(const AttentionShape& s, const AttentionInputs& in, const float* dout,
                              std::int64_t b, std::int64_t hk, std::vector<double>& dq,
                              std::vector<double>& dk, std::vector<double>& dv) {
  const std::int64_t G = s.group(), Dq = s.head_dim_qk, Dv = s.head_dim_v;
  dq.assign(static_cast<std::size_t>(G * s.seqlen_q * Dq), 0.0);
  dk.assign(static_cast<std::size_t>(s.seqlen_kv * Dq), 0.0);
  dv.assign(static_cast<std::size_t>(s.seqlen_kv * Dv), 0.0);
  std::vector<double> o, lse, p(static_cast<std::size_t>(s.seqlen_kv)),
      dp(static_cast<std::size_t>(s.seqlen_kv));
  for (std::int64_t g = 0; g < G; ++g) {
    const std::int64_t h = hk * G + g;
    reference_forward_head(s, in, b, h, o, lse);
    for (std::int64_t i = 0; i < s.seqlen_q; ++i) {
      const std::int64_t visible = s.visible_keys(i);
      const float* q = in.q + bshd(b, i, h, s.seqlen_q, s.heads_q, Dq);
      const float* go = dout + bshd(b, i, h, s.seqlen_q, s.heads_q, Dv);
      double delta = 0;  // rowsum(dO ∘ O)
      for (std::int64_t d = 0; d < Dv; ++d)
        delta += static_cast<double>(go[d]) * o[i * Dv + d];
      for (std::int64_t j = 0; j < visible; ++j) {
        const float* k = in.k + bshd(b, j, hk, s.seqlen_kv, s.heads_kv, Dq);
        const float* v = in.v + bshd(b, j, hk, s.seqlen_kv, s.heads_kv, Dv);
        double dot = 0, dpv = 0;
        for (std::int64_t d = 0; d < Dq; ++d)
          dot += static_cast<double>(q[d]) * k[d];
        for (std::int64_t d = 0; d < Dv; ++d)
          dpv += static_cast<double>(go[d]) * v[d];
        p[j] = std::exp(dot * s.softmax_scale() - lse[i]);
        dp[j] = dpv;
        for (std::int64_t d = 0; d < Dv; ++d)
          dv[j * Dv + d] += p[j] * go[d];
      }
      for (std::int64_t j = 0; j < visible; ++j) {
        const double ds = p[j] * (dp[j] - delta) * s.softmax_scale();
        const float* k = in.k + bshd(b, j, hk, s.seqlen_kv, s.heads_kv, Dq);
        for (std::int64_t d = 0; d < Dq; ++d) {
          dq[(g * s.seqlen_q + i) * Dq + d] += ds * k[d];
          dk[j * Dq + d] += ds * q[d];
        }
      }
    }
  }
}

void flash_forward(const AttentionShape& s, const AttentionInputs& in, float* out, float* lse) {
  const std::int64_t q_tiles = (s.seqlen_q + kTileQ - 1) / kTileQ, Dv = s.head_dim_v;
  parallel_for(s.batch * s.heads_q * q_tiles, [&](std::int64_t item) {
    const std::int64_t b = item / (s.heads_q * q_tiles), h = (item / q_tiles) % s.heads_q,
                       t = item % q_tiles;
    const std::int64_t i0 = t * kTileQ, br = std::min(kTileQ, s.seqlen_q - i0), hk = h / s.group();
    thread_local std::vector<float> S, acc, m, l;
    S.resize(kTileQ * kTileK);
    acc.assign(static_cast<std::size_t>(kTileQ * Dv), 0.0f);
    m.assign(kTileQ, kMasked);
    l.assign(kTileQ, 0.0f);
    const std::int64_t keys = s.visible_keys(i0 + br - 1);  // the tile's last row sees the most
    for (std::int64_t j0 = 0; j0 < keys; j0 += kTileK) {
      const std::int64_t bc = std::min(kTileK, keys - j0);
      score_tile(s, in, b, h, i0, br, j0, bc, S.data());
      for (std::int64_t r = 0; r < br; ++r) {
        float* row = &S[r * kTileK];
        float row_max = m[r];
        for (std::int64_t c = 0; c < bc; ++c)
          row_max = std::max(row_max, row[c]);
        const float correction = std::exp(m[r] - row_max);
        float sum = 0;
        for (std::int64_t c = 0; c < bc; ++c) {
          row[c] = std::exp(row[c] - row_max);
          sum += row[c];
        }
        l[r] = l[r] * correction + sum;
        m[r] = row_max;
        for (std::int64_t d = 0; d < Dv; ++d)
          acc[r * Dv + d] *= correction;
      }
      const float* v = in.v + bshd(b, j0, hk, s.seqlen_kv, s.heads_kv, Dv);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(br),
                  static_cast<int>(Dv), static_cast<int>(bc), 1.0f, S.data(),
                  static_cast<int>(kTileK), v, static_cast<int>(s.heads_kv * Dv), 1.0f, acc.data(),
                  static_cast<int>(Dv));
    }
    for (std::int64_t r = 0; r < br; ++r) {
      const std::int64_t i = i0 + r;
      const bool sees = s.visible_keys(i) > 0;
      float* o = out + bshd(b, i, h, s.seqlen_q, s.heads_q, Dv);
      for (std::int64_t d = 0; d < Dv; ++d)
        o[d] = sees ? acc[r * Dv + d] / l[r] : 0.0f;
      lse[(b * s.heads_q + h) * s.seqlen_q + i] =
          sees ? m[r] + std::log(l[r]) : -std::numeric_limits<float>::infinity();
    }
  });
}

void flash_backward(const AttentionShape& s, const AttentionInputs& in, const float* out,
                    const float* lse, const float* dout, float* dq, float* dk, float* dv) {
  const std::int64_t Dq = s.head_dim_qk, Dv = s.head_dim_v, G = s.group();
  const float scale = static_cast<float>(s.softmax_scale());
  // delta_i = rowsum(dO ∘ O), per (b, h, i)
  std::vector<float> delta(static_cast<std::size_t>(s.lse_elements()));
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t i = 0; i < s.seqlen_q; ++i)
      for (std::int64_t h = 0; h < s.heads_q; ++h) {
        const float* o = out + bshd(b, i, h, s.seqlen_q, s.heads_q, Dv);
        const float* go = dout + bshd(b, i, h, s.seqlen_q, s.heads_q, Dv);
        double sum = 0;
        for (std::int64_t d = 0; d < Dv; ++d)
          sum += static_cast<double>(o[d]) * go[d];
        delta[(b * s.heads_q + h) * s.seqlen_q + i] = static_cast<float>(sum);
      }

  // P = exp(S - lse) and dS = P ∘ (dO Vᵀ - delta) of one tile (masked entries give 0).
  auto tile_grads = [&](std::int64_t b, std::int64_t h, std::int64_t i0, std::int64_t br,
                        std::int64_t j0, std::int64_t bc, float* P, float* dS) {
    const std::int64_t hk = h / G;
    score_tile(s, in, b, h, i0, br, j0, bc, P);
    const float* go = dout + bshd(b, i0, h, s.seqlen_q, s.heads_q, Dv);
    const float* v = in.v + bshd(b, j0, hk, s.seqlen_kv, s.heads_kv, Dv);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(br), static_cast<int>(bc),
                static_cast<int>(Dv), 1.0f, go, static_cast<int>(s.heads_q * Dv), v,
                static_cast<int>(s.heads_kv * Dv), 0.0f, dS, static_cast<int>(kTileK));
    for (std::int64_t r = 0; r < br; ++r) {
      const std::int64_t row = (b * s.heads_q + h) * s.seqlen_q + i0 + r;
      const float row_lse = lse[row], row_delta = delta[row];
      const bool sees = std::isfinite(row_lse);
      for (std::int64_t c = 0; c < bc; ++c) {
        float p = sees ? std::exp(P[r * kTileK + c] - row_lse) : 0.0f;
        P[r * kTileK + c] = p;
        dS[r * kTileK + c] = p * (dS[r * kTileK + c] - row_delta);
      }
    }
  };

  // Pass 1: dK and dV, one (batch, KV head, key tile) per work item, summing over its group's
  // query heads and every query tile that sees the key tile.
  const std::int64_t k_tiles = (s.seqlen_kv + kTileK - 1) / kTileK,
                     q_tiles = (s.seqlen_q + kTileQ - 1) / kTileQ;
  parallel_for(s.batch * s.heads_kv * k_tiles, [&](std::int64_t item) {
    const std::int64_t b = item / (s.heads_kv * k_tiles), hk = (item / k_tiles) % s.heads_kv,
                       t = item % k_tiles;
    const std::int64_t j0 = t * kTileK, bc = std::min(kTileK, s.seqlen_kv - j0);
    thread_local std::vector<float> P, dS, dk_acc, dv_acc;
    P.resize(kTileQ * kTileK);
    dS.resize(kTileQ * kTileK);
    dk_acc.assign(static_cast<std::size_t>(kTileK * Dq), 0.0f);
    dv_acc.assign(static_cast<std::size_t>(kTileK * Dv), 0.0f);
    // Causal: rows see key j0 from i = j0 - (Skv - Sq) on.
    const std::int64_t first_row =
        s.causal ? std::max<std::int64_t>(0, j0 - (s.seqlen_kv - s.seqlen_q)) : 0;
    for (std::int64_t g = 0; g < G; ++g) {
      const std::int64_t h = hk * G + g;
      for (std::int64_t i0 = first_row / kTileQ * kTileQ; i0 < s.seqlen_q; i0 += kTileQ) {
        const std::int64_t br = std::min(kTileQ, s.seqlen_q - i0);
        tile_grads(b, h, i0, br, j0, bc, P.data(), dS.data());
        const float* go = dout + bshd(b, i0, h, s.seqlen_q, s.heads_q, Dv);
        const float* q = in.q + bshd(b, i0, h, s.seqlen_q, s.heads_q, Dq);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(bc),
                    static_cast<int>(Dv), static_cast<int>(br), 1.0f, P.data(),
                    static_cast<int>(kTileK), go, static_cast<int>(s.heads_q * Dv), 1.0f,
                    dv_acc.data(), static_cast<int>(Dv));
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(bc),
                    static_cast<int>(Dq), static_cast<int>(br), scale, dS.data(),
                    static_cast<int>(kTileK), q, static_cast<int>(s.heads_q * Dq), 1.0f,
                    dk_acc.data(), static_cast<int>(Dq));
      }
    }
    for (std::int64_t c = 0; c < bc; ++c) {
      std::copy_n(&dk_acc[c * Dq], Dq, dk + bshd(b, j0 + c, hk, s.seqlen_kv, s.heads_kv, Dq));
      std::copy_n(&dv_acc[c * Dv], Dv, dv + bshd(b, j0 + c, hk, s.seqlen_kv, s.heads_kv, Dv));
    }
  });

  // Pass 2: dQ, one (batch, query head, query tile) per work item.
  parallel_for(s.batch * s.heads_q * q_tiles, [&](std::int64_t item) {
    const std::int64_t b = item / (s.heads_q * q_tiles), h = (item / q_tiles) % s.heads_q,
                       t = item % q_tiles;
    const std::int64_t i0 = t * kTileQ, br = std::min(kTileQ, s.seqlen_q - i0), hk = h / G;
    thread_local std::vector<float> P, dS, dq_acc;
    P.resize(kTileQ * kTileK);
    dS.resize(kTileQ * kTileK);
    dq_acc.assign(static_cast<std::size_t>(kTileQ * Dq), 0.0f);
    const std::int64_t keys = s.visible_keys(i0 + br - 1);
    for (std::int64_t j0 = 0; j0 < keys; j0 += kTileK) {
      const std::int64_t bc = std::min(kTileK, keys - j0);
      tile_grads(b, h, i0, br, j0, bc, P.data(), dS.data());
      const float* k = in.k + bshd(b, j0, hk, s.seqlen_kv, s.heads_kv, Dq);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(br),
                  static_cast<int>(Dq), static_cast<int>(bc), scale, dS.data(),
                  static_cast<int>(kTileK), k, static_cast<int>(s.heads_kv * Dq), 1.0f,
                  dq_acc.data(), static_cast<int>(Dq));
    }
    for (std::int64_t r = 0; r < br; ++r)
      std::copy_n(&dq_acc[r * Dq], Dq, dq + bshd(b, i0 + r, h, s.seqlen_q, s.heads_q, Dq));
  });
}

std::vector<std::pair<std::int64_t, std::int64_t>> check_heads(std::int64_t batch,
                                                               std::int64_t heads,
                                                               std::int64_t limit) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  const std::int64_t total = batch * heads;
  const std::int64_t n = std::min(total, limit);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t flat = n == 1 ? 0 : i * (total - 1) / (n - 1);
    out.emplace_back(flat / heads, flat % heads);
  }
  return out;
}

}  // namespace opbench
