#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "attention/attention_shape.hpp"
#include "attention/cpu_attention.hpp"
#include "common/error.hpp"
#include "common/host_buffer.hpp"
#include "temp_files.hpp"
#include "tests/unit/worst_error.hpp"

using namespace opbench;

namespace {

AttentionShape shape(std::int64_t b, std::int64_t sq, std::int64_t skv, std::int64_t hq,
                     std::int64_t hkv, std::int64_t dqk, std::int64_t dv, bool causal) {
  AttentionShape s;
  s.model = "test";
  s.batch = b, s.seqlen_q = sq, s.seqlen_kv = skv, s.heads_q = hq, s.heads_kv = hkv;
  s.head_dim_qk = dqk, s.head_dim_v = dv, s.causal = causal, s.dtype = DType::fp32;
  return s;
}

std::vector<float> random(std::int64_t n, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  fill_uniform_host(v.data(), v.size(), DType::fp32, seed);
  return v;
}

// Largest |blocked - reference| over every head, forward and backward.
std::pair<double, double> blocked_vs_reference(const AttentionShape& s) {
  auto q = random(s.q_elements(), 1), k = random(s.k_elements(), 2), v = random(s.v_elements(), 3);
  auto dout = random(s.o_elements(), 4);
  std::vector<float> out(s.o_elements()), lse(s.lse_elements()), dq(s.q_elements()),
      dk(s.k_elements()), dv(s.v_elements());
  AttentionInputs in{q.data(), k.data(), v.data()};
  flash_forward(s, in, out.data(), lse.data());
  flash_backward(s, in, out.data(), lse.data(), dout.data(), dq.data(), dk.data(), dv.data());
  double fwd = 0, bwd = 0;
  const auto Dq = s.head_dim_qk, Dv = s.head_dim_v;
  for (std::int64_t b = 0; b < s.batch; ++b) {
    for (std::int64_t h = 0; h < s.heads_q; ++h) {
      std::vector<double> o, l;
      reference_forward_head(s, in, b, h, o, l);
      for (std::int64_t i = 0; i < s.seqlen_q; ++i)
        for (std::int64_t d = 0; d < Dv; ++d)
          fwd = worse(
              fwd, std::fabs(out[((b * s.seqlen_q + i) * s.heads_q + h) * Dv + d] - o[i * Dv + d]));
    }
    for (std::int64_t hk = 0; hk < s.heads_kv; ++hk) {
      std::vector<double> rq, rk, rv;
      reference_backward_group(s, in, dout.data(), b, hk, rq, rk, rv);
      for (std::int64_t g = 0; g < s.group(); ++g)
        for (std::int64_t i = 0; i < s.seqlen_q; ++i)
          for (std::int64_t d = 0; d < Dq; ++d)
            bwd = worse(
                bwd,
                std::fabs(dq[((b * s.seqlen_q + i) * s.heads_q + hk * s.group() + g) * Dq + d] -
                          rq[(g * s.seqlen_q + i) * Dq + d]));
      for (std::int64_t j = 0; j < s.seqlen_kv; ++j) {
        for (std::int64_t d = 0; d < Dq; ++d)
          bwd = worse(bwd, std::fabs(dk[((b * s.seqlen_kv + j) * s.heads_kv + hk) * Dq + d] -
                                     rk[j * Dq + d]));
        for (std::int64_t d = 0; d < Dv; ++d)
          bwd = worse(bwd, std::fabs(dv[((b * s.seqlen_kv + j) * s.heads_kv + hk) * Dv + d] -
                                     rv[j * Dv + d]));
      }
    }
  }
  return {fwd, bwd};
}

}  // namespace

TEST_CASE("attention FLOPs follow the FlashAttention-3 convention") {
  // causal, Sq = Skv = 1024: Savg = 512; 2·B·Hq·Sq·Savg·(Dqk+Dv) = 2·2·16·1024·512·256
  auto causal = shape(2, 1024, 1024, 16, 16, 128, 128, true);
  CHECK(causal.fwd_flops() == 8589934592LL);
  CHECK(causal.flops(AttentionPass::bwd) == 21474836480LL);  // 2.5x
  // non-causal, Sq 512, Skv 2048, Dqk 192, Dv 128: 2·1·8·512·2048·320
  CHECK(shape(1, 512, 2048, 8, 8, 192, 128, false).fwd_flops() == 5368709120LL);
  // causal with Sq < Skv, bottom-right: Savg = (2048 - 512 + 2048) / 2 = 1792; 2·1·8·512·1792·320
  CHECK(shape(1, 512, 2048, 8, 8, 192, 128, true).fwd_flops() == 4697620480LL);
  // GQA changes bytes, not FLOPs
  auto mha = shape(1, 256, 256, 8, 8, 64, 64, true), gqa = shape(1, 256, 256, 8, 2, 64, 64, true);
  CHECK(mha.fwd_flops() == gqa.fwd_flops());
  mha.dtype = gqa.dtype = DType::bf16;
  // fwd bytes: Q + K + V + O (bf16) + LSE (fp32); GQA reads K and V with 2 heads instead of 8
  CHECK(mha.io_bytes(AttentionPass::fwd) == (4 * 256 * 8 * 64) * 2 + 8 * 256 * 4);
  CHECK(mha.io_bytes(AttentionPass::fwd) - gqa.io_bytes(AttentionPass::fwd) ==
        2 * (256 * 6 * 64) * 2);
}

// Context parallelism over 4 ranks of a causal 8192-token sequence: a rank's own two chunks
// (2048 queries and keys, causal) and a block that came round (2048 queries against the block's
// earlier 1024 keys, unmasked) 3 times; together a quarter of the sequence's FLOPs.
TEST_CASE("context parallelism's calls on a rank do 1/cp of the sequence's attention") {
  const auto whole = shape(1, 8192, 8192, 32, 8, 128, 128, true);
  const CpAttention split = context_parallel_attention(whole, 4);
  CHECK((split.own.seqlen_q == 2048 && split.own.seqlen_kv == 2048 && split.own.causal));
  CHECK((split.ring.seqlen_q == 2048 && split.ring.seqlen_kv == 1024 && !split.ring.causal));
  CHECK((split.ring.heads_q == 32 && split.ring.heads_kv == 8 && split.ring.head_dim_v == 128));
  CHECK(4 * (split.own.fwd_flops() + 3 * split.ring.fwd_flops()) == whole.fwd_flops());
}

TEST_CASE("causal masks align bottom-right") {
  auto s = shape(1, 4, 10, 1, 1, 8, 8, true);
  CHECK(s.visible_keys(0) == 7);  // query 0 sees keys 0..6 (Skv - Sq = 6 ahead)
  CHECK(s.visible_keys(3) == 10);
  auto t = shape(1, 10, 4, 1, 1, 8, 8, true);
  CHECK(t.visible_keys(5) == 0);  // Sq > Skv: the first rows see no key
  CHECK(t.visible_keys(9) == 4);
}

TEST_CASE("the blocked CPU provider matches the fp64 reference") {
  struct Case {
    const char* what;
    AttentionShape s;
  };
  for (const auto& c :
       {Case{"causal, rows not a multiple of the tile", shape(1, 200, 200, 2, 2, 32, 32, true)},
        Case{"non-causal", shape(2, 150, 150, 2, 2, 32, 32, false)},
        Case{"GQA", shape(1, 160, 160, 4, 2, 32, 32, true)},
        Case{"Dqk != Dv", shape(1, 140, 140, 2, 1, 48, 32, true)},
        Case{"causal Sq < Skv", shape(1, 70, 300, 2, 2, 32, 32, true)},
        Case{"causal Sq > Skv: rows that see nothing", shape(1, 300, 70, 2, 2, 32, 32, true)}}) {
    auto [fwd, bwd] = blocked_vs_reference(c.s);
    INFO(c.what << ": forward error " << fwd << ", backward error " << bwd);
    CHECK(fwd < 1e-5);
    CHECK(bwd < 1e-4);
  }
}

TEST_CASE("check heads spread over the batch and heads") {
  auto all = check_heads(1, 3, 8);
  CHECK(all.size() == 3);
  auto some = check_heads(2, 8, 4);  // 16 pairs, 4 taken: first, last, and evenly between
  REQUIRE(some.size() == 4);
  CHECK(some.front() == std::pair<std::int64_t, std::int64_t>{0, 0});
  CHECK(some.back() == std::pair<std::int64_t, std::int64_t>{1, 7});
}

TEST_CASE("attention shapes files are validated") {
  auto shapes = load_attention_shapes(test::repo_config("attention_shapes.json"));
  CHECK(shapes.size() == 48);
  auto bad = [](const std::string& name, const std::string& fields) {
    auto path = test::write_temp(
        name,
        std::string(R"([{"model": "m", "batch_size": 1, "seqlen_q": 128, "seqlen_kv": 128, )") +
            fields + R"(, "causal": true, "dtype": "bf16"}])");
    return [path] { load_attention_shapes(path); };
  };
  CHECK_THROWS_WITH(
      bad("gqa.json",
          R"("num_head_q": 6, "num_head_kv": 4, "head_dim_qk": 64, "head_dim_v": 64)")(),
      Catch::Contains("key 'num_head_kv': num_head_q (6) is not a multiple of num_head_kv (4)"));
  CHECK_THROWS_WITH(
      bad("zero.json",
          R"("num_head_q": 4, "num_head_kv": 4, "head_dim_qk": 0, "head_dim_v": 64)")(),
      Catch::Contains("key 'head_dim_qk': 0 is out of range"));
  CHECK_THROWS_WITH(
      bad("type.json",
          R"("num_head_q": "32", "num_head_kv": 4, "head_dim_qk": 64, "head_dim_v": 64)")(),
      Catch::Contains("key 'num_head_q': expected an integer, got a string"));
}
