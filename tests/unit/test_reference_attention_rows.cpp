// The CUDA reference attention's per-row logic (attention/reference_attention_rows.hpp), run on
// the host through a 32-lane host warp and compared with the CPU's fp64 reference: the code the
// GPU kernels call, checked on a machine without a GPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "attention/attention_shape.hpp"
#include "attention/cpu_attention.hpp"
#include "attention/reference_attention_rows.hpp"
#include "common/dtype.hpp"
#include "common/uniform_value.hpp"

using namespace opbench;
using reference_rows::HostWarp;

namespace {

struct FloatLoader {
  const float* p;
  float operator()(std::int64_t i) const { return p[i]; }
};

// Inputs as the GPU sees them: uniform values rounded to bf16.
std::vector<float> bf16_values(std::int64_t n, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[i] = bf16_to_float(float_to_bf16(uniform_value(seed, static_cast<std::uint64_t>(i))));
  return v;
}

AttentionShape shape(std::int64_t b, std::int64_t sq, std::int64_t skv, std::int64_t hq,
                     std::int64_t hkv, std::int64_t dqk, std::int64_t dv, bool causal) {
  // In AttentionShape's order: model, batch, Sq, Skv, Hq, Hkv, Dqk, Dv, causal.
  return {"", b, sq, skv, hq, hkv, dqk, dv, causal};
}

void check_forward_and_backward(const AttentionShape& s) {
  const AttentionDims d = attention_dims(s);
  auto q = bf16_values(s.q_elements(), 11), k = bf16_values(s.k_elements(), 12),
       v = bf16_values(s.v_elements(), 13), dout = bf16_values(s.o_elements(), 14);
  std::vector<float> o(static_cast<std::size_t>(s.o_elements())),
      lse(static_cast<std::size_t>(s.lse_elements()));
  const HostWarp w;
  for (std::int64_t row = 0; row < s.lse_elements(); ++row)
    reference_rows::forward_row(d, row, w, FloatLoader{q.data()}, FloatLoader{k.data()},
                                FloatLoader{v.data()}, o.data(), lse.data());

  const AttentionInputs in{q.data(), k.data(), v.data()};
  std::vector<double> o_head, lse_head;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads_q; ++h) {
      reference_forward_head(s, in, b, h, o_head, lse_head);
      for (std::int64_t i = 0; i < s.seqlen_q; ++i) {
        const std::int64_t row = (b * s.heads_q + h) * s.seqlen_q + i;
        const float* got =
            o.data() + reference_rows::bshd(b, i, h, s.seqlen_q, s.heads_q, s.head_dim_v);
        for (std::int64_t e = 0; e < s.head_dim_v; ++e)
          REQUIRE(got[e] == Approx(o_head[i * s.head_dim_v + e]).margin(2e-6));
        if (std::isinf(lse_head[i]))
          REQUIRE(std::isinf(lse[row]));
        else
          REQUIRE(lse[row] == Approx(lse_head[i]).margin(2e-6));
      }
    }

  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size()), delta(lse.size());
  for (std::int64_t row = 0; row < s.lse_elements(); ++row)
    reference_rows::dq_row(d, row, w, FloatLoader{q.data()}, FloatLoader{k.data()},
                           FloatLoader{v.data()}, FloatLoader{o.data()}, FloatLoader{dout.data()},
                           lse.data(), dq.data(), delta.data());
  for (std::int64_t row = 0; row < s.batch * s.heads_kv * s.seqlen_kv; ++row)
    reference_rows::dkv_row(d, row, w, FloatLoader{q.data()}, FloatLoader{k.data()},
                            FloatLoader{v.data()}, FloatLoader{dout.data()}, lse.data(),
                            delta.data(), dk.data(), dv.data());

  std::vector<double> want_dq, want_dk, want_dv;
  const std::int64_t G = s.group();
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t hk = 0; hk < s.heads_kv; ++hk) {
      reference_backward_group(s, in, dout.data(), b, hk, want_dq, want_dk, want_dv);
      for (std::int64_t g = 0; g < G; ++g)
        for (std::int64_t i = 0; i < s.seqlen_q; ++i)
          for (std::int64_t e = 0; e < s.head_dim_qk; ++e)
            REQUIRE(
                dq[reference_rows::bshd(b, i, hk * G + g, s.seqlen_q, s.heads_q, s.head_dim_qk) +
                   e] == Approx(want_dq[(g * s.seqlen_q + i) * s.head_dim_qk + e]).margin(1e-5));
      for (std::int64_t j = 0; j < s.seqlen_kv; ++j) {
        for (std::int64_t e = 0; e < s.head_dim_qk; ++e)
          REQUIRE(dk[reference_rows::bshd(b, j, hk, s.seqlen_kv, s.heads_kv, s.head_dim_qk) + e] ==
                  Approx(want_dk[j * s.head_dim_qk + e]).margin(1e-5));
        for (std::int64_t e = 0; e < s.head_dim_v; ++e)
          REQUIRE(dv[reference_rows::bshd(b, j, hk, s.seqlen_kv, s.heads_kv, s.head_dim_v) + e] ==
                  Approx(want_dv[j * s.head_dim_v + e]).margin(1e-5));
      }
    }
}

}  // namespace

TEST_CASE("online softmax by hand: scores 0 and ln 2 give lse ln 3") {
  reference_rows::OnlineSoftmax sm;
  float rescale = -1, p = -1;
  sm.add(0.0f, rescale, p);
  CHECK(rescale == 0.0f);  // nothing accumulated yet
  CHECK(p == 1.0f);
  sm.add(std::log(2.0f), rescale, p);
  CHECK(rescale == Approx(0.5));  // the max moved from 0 to ln 2
  CHECK(p == 1.0f);
  CHECK(sm.sum == Approx(1.5));
  CHECK(sm.lse() == Approx(std::log(3.0)));
  CHECK(std::isinf(reference_rows::OnlineSoftmax{}.lse()));
}

TEST_CASE("reference rows: the bottom-right causal band and its transpose agree") {
  AttentionDims d;
  d.sq = 3;
  d.skv = 5;
  d.causal = true;
  CHECK(reference_rows::visible_keys(d, 0) == 3);  // j <= 0 + 5 - 3
  CHECK(reference_rows::visible_keys(d, 2) == 5);
  CHECK(reference_rows::first_query_seeing(d, 2) == 0);
  CHECK(reference_rows::first_query_seeing(d, 4) == 2);
  for (std::int64_t i = 0; i < d.sq; ++i)
    for (std::int64_t j = 0; j < d.skv; ++j)
      CHECK((j < reference_rows::visible_keys(d, i)) ==
            (i >= reference_rows::first_query_seeing(d, j)));
  d.sq = 6;  // Sq > Skv: the first row sees no key
  CHECK(reference_rows::visible_keys(d, 0) == 0);
}

TEST_CASE(
    "reference rows match the fp64 CPU reference: GQA 1, 2, 8; causal Sq < Skv and Sq = Skv; "
    "non-causal; Dqk != Dv; B = 2") {
  SECTION("MHA, causal Sq = Skv, B = 2") {
    check_forward_and_backward(shape(2, 32, 32, 4, 4, 32, 32, true));
  }
  SECTION("GQA 2, causal Sq < Skv, Dqk 48 / Dv 32") {
    check_forward_and_backward(shape(2, 24, 40, 4, 2, 48, 32, true));
  }
  SECTION("GQA 8 (MQA), non-causal, Sq != Skv") {
    check_forward_and_backward(shape(1, 20, 36, 8, 1, 64, 64, false));
  }
  SECTION("Dqk 192 / Dv 128, causal") {
    check_forward_and_backward(shape(1, 9, 9, 2, 1, 192, 128, true));
  }
  SECTION("causal Sq > Skv: rows that see no key are 0") {
    check_forward_and_backward(shape(1, 12, 8, 2, 2, 32, 32, true));
  }
}

TEST_CASE("the check's per-element error makes NaN fail") {
  CHECK(reference_rows::check_error(1.5f, 1.0f) == 0.5f);
  CHECK(std::isinf(reference_rows::check_error(std::nanf(""), 1.0f)));
}
