// The host-side decisions of our CUDA memory-bound kernels (memops/cuda_memops.cuh): the vector
// width for a size and alignment, the launch shapes, and a thread's share of the row reductions
// (the online softmax normaliser, Welford per vector, the fused residual add's squares), run
// here as the kernels run them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/uniform_value.hpp"
#include "memops/cpu_memops.hpp"
#include "memops/cuda_memops.cuh"
#include "memops/memop_check.hpp"
#include "tests/unit/fast_math_models.hpp"
#include "tests/unit/worst_error.hpp"

using namespace opbench;
using namespace opbench::cuda_memops;
using opbench::memop_inputs::uniform_index;

TEST_CASE("16-byte vectors when every operand is aligned, element by element otherwise") {
  CHECK(vector_elements(4, 0x1000) == 4);        // fp32
  CHECK(vector_elements(2, 0x1000) == 8);        // bf16, fp16
  CHECK(vector_elements(1, 0x1000) == 16);       // e4m3 codes
  CHECK(vector_elements(2, 0x1000 | 0x8) == 1);  // one operand 8-byte aligned only
  // Rows must start aligned too: cols a multiple of the vector.
  CHECK(row_vector_elements(2, 0x1000, 4096) == 8);
  CHECK(row_vector_elements(2, 0x1000, 4100) == 1);
  CHECK(row_vector_elements(4, 0x1000, 4100) == 4);
  CHECK(row_vector_elements(2, 0x1004, 4096) == 1);
}

TEST_CASE("row blocks take about four vectors a thread, whole warps, 32 to the cap") {
  CHECK(row_block_threads(4096, 8) == 128);     // 512 vectors
  CHECK(row_block_threads(4096, 1) == 1024);    // scalar: 4096 elements
  CHECK(row_block_threads(64, 8) == 32);        // 8 vectors: one warp
  CHECK(row_block_threads(4100, 4) == 288);     // 1025 vectors: 257 threads, nine warps
  CHECK(row_block_threads(1000, 4) == 64);      // 250 vectors -> 63 threads -> two warps
  CHECK(row_block_threads(128256, 8) == 1024);  // Llama 3's vocabulary
  CHECK(row_block_threads(16384, 8, kNormBwdMaxThreads) == 512);
  CHECK(row_grid_blocks(4096) == 4096);
  CHECK(row_grid_blocks(std::int64_t{1} << 33) == kMaxGridBlocks);
  CHECK(norm_bwd_blocks(100, 132) == 100);
  CHECK(norm_bwd_blocks(32768, 132) == 264);
  CHECK(norm_bwd_blocks(32768, 0) == 2);
}

TEST_CASE("a row splits into an unaligned head, 16-byte vectors and a tail, for any length") {
  // Every length to 300 and GPT-2's and Llama 3's vocabularies, at every element-aligned
  // address modulo 16, for 2- and 4-byte elements: head and tail under a vector, the head ends
  // on a 16-byte boundary (when vectors follow), and the three cover the row exactly.
  std::vector<std::int64_t> lengths{50257, 128256, 256000};
  for (std::int64_t n = 1; n <= 300; ++n)
    lengths.push_back(n);
  for (int bytes : {2, 4})
    for (std::int64_t cols : lengths)
      for (std::uintptr_t at = 0x1000; at < 0x1010; at += static_cast<std::uintptr_t>(bytes)) {
        const int vec = 16 / bytes;
        const RowSplit s = row_split(at, cols, bytes);
        INFO(cols << " elements of " << bytes << " bytes at " << at % 16);
        REQUIRE(s.head >= 0);
        REQUIRE(s.tail >= 0);
        CHECK(s.head + s.vectors * vec + s.tail == cols);
        CHECK(s.head < vec);
        CHECK(s.tail < vec);
        if (s.vectors > 0) CHECK((at + static_cast<std::uintptr_t>(s.head * bytes)) % 16 == 0);
        if (at % 16 == 0) CHECK(s.head == 0);
      }
  // GPT-2's vocabulary in bf16: row 1 starts 2 bytes past a boundary (50257 x 2 = 100514 = 16 x
  // 6282 + 2): 7 elements of head, 6281 vectors, a tail of 2.
  const RowSplit r1 = row_split(0x1000 + 50257 * 2, 50257, 2);
  CHECK(r1.head == 7);
  CHECK(r1.vectors == 6281);
  CHECK(r1.tail == 2);
  CHECK(same_phase(0x1000 + 2, 0x2000 + 2));
  CHECK_FALSE(same_phase(0x1000, 0x2008));
}

TEST_CASE("the blocks, threads and items of a row's plan hold each element once") {
  // As the row kernels read a row (cuda_memops_rows.cuh's RowPart): block b of the plan's blocks
  // holds its vectors, each thread its items, the first block's first threads the head and the
  // tail. Every column exactly once, for rows of many lengths and alignments, split or not.
  for (int bytes : {2, 4})
    for (int held : {1, 2})
      for (std::int64_t cols : {1, 7, 8, 9, 100, 4095, 4096, 8192, 50257, 128256, 256000})
        for (bool clusters : {false, true})
          for (std::uintptr_t at : {0x1000u, 0x1002u, 0x100Cu}) {
            if (at % static_cast<std::uintptr_t>(bytes) != 0) continue;
            const int vec = 16 / bytes;
            const RegisterRowPlan plan = register_row_plan(cols / vec, vec, held, clusters);
            const RowSplit s = row_split(at, cols, bytes);
            const std::int64_t blocks = plan.chunks > 0 ? plan.chunks : plan.cluster;
            const std::int64_t per_block = plan.chunks > 0
                                               ? plan.chunk_vectors
                                               : (cols / vec + plan.cluster - 1) / plan.cluster;
            INFO(cols << " x " << bytes << " bytes at " << at % 16 << ", held " << held
                      << (clusters ? ", clusters" : ""));
            REQUIRE(plan.threads >= s.head + s.tail);
            std::vector<int> seen(static_cast<std::size_t>(cols), 0);
            for (std::int64_t b = 0; b < blocks; ++b) {
              const BlockVectors mine = block_vectors(s, b, per_block);
              for (int t = 0; t < plan.threads; ++t) {
                for (int i = 0; i < plan.items; ++i) {
                  const int v = item_vector(mine.first, t, plan.threads, i);
                  if (v >= mine.end) continue;
                  for (int j = 0; j < vec; ++j)
                    ++seen[static_cast<std::size_t>(s.head + v * vec + j)];
                }
                if (b == 0 && t < s.head + s.tail)
                  ++seen[static_cast<std::size_t>(edge_column(s, vec, t))];
              }
            }
            CHECK(std::count(seen.begin(), seen.end(), 1) == cols);
          }
}

namespace {

// A plan as {threads, items, cluster, chunks}, to compare at once.
std::vector<std::int64_t> plan_of(std::int64_t cols, int bytes, int held, bool clusters) {
  const int vec = 16 / bytes;
  const RegisterRowPlan p = register_row_plan(cols / vec, vec, held, clusters);
  return {p.threads, p.items, p.cluster, p.chunks};
}

}  // namespace

TEST_CASE("row plans: fewest blocks a row within 512 threads, then 1024, clusters, the split") {
  using P = std::vector<std::int64_t>;
  // Llama 3's softmax rows (8192) in bf16: one block of 512 threads, 2 vectors a thread; with
  // y and dy held (the backward) the same.
  CHECK(plan_of(8192, 2, 1, true) == P{512, 2, 1, 0});
  CHECK(plan_of(8192, 2, 2, true) == P{512, 2, 1, 0});
  // Its vocabulary (128,256) in bf16 with clusters: 8 blocks of 512 threads, 4 vectors each.
  CHECK(plan_of(128256, 2, 1, true) == P{512, 4, 8, 0});
  // 256,000 in bf16: 8 blocks of 1024; in fp32 8 of 1024 with 8 vectors (32 floats) a thread.
  CHECK(plan_of(256000, 2, 1, true) == P{1024, 4, 8, 0});
  CHECK(plan_of(256000, 4, 1, true) == P{1024, 8, 8, 0});
  // Without clusters (sm_80) 128,256 is split: 8 chunks of 512 x 4 vectors.
  CHECK(plan_of(128256, 2, 1, false) == P{kSplitThreads, 4, 1, 8});
  CHECK(register_row_plan(16032, 8, 1, false).chunk_vectors == 2048);
  // Two operands held (softmax's backward): half the vectors a thread.
  CHECK(max_row_items(8, 2) == 2);
  CHECK(max_row_items(4, 1) == 8);
  // Llama 3.1 8B's hidden size (4096): two vectors a thread, in bf16 (256 threads; one vector
  // a thread of 512 ran at 71% and 39% of the copy rate) as in fp32 (512 threads), for the
  // norms (two held) as for LayerNorm (one).
  CHECK(plan_of(4096, 2, 2, true) == P{256, 2, 1, 0});
  CHECK(plan_of(4096, 2, 1, true) == P{256, 2, 1, 0});
  CHECK(plan_of(4096, 4, 2, true) == P{512, 2, 1, 0});
  // Llama 3.2 3B's 3072 in bf16: 384 vectors, 192 threads of two.
  CHECK(plan_of(3072, 2, 2, true) == P{192, 2, 1, 0});
  // Up to two vectors for each thread of a warp (64): one a thread; 65: two.
  CHECK(plan_of(512, 2, 1, true) == P{64, 1, 1, 0});
  CHECK(plan_of(520, 2, 1, true) == P{64, 2, 1, 0});
  // Where a thread's registers take one vector alone (8 held fp32 operands): one.
  CHECK(register_row_plan(1024, 4, 8, true).items == 1);
  // Short rows: one warp. Past 8 blocks of 1024 x 4 vectors: the split even with clusters.
  CHECK(plan_of(7, 2, 1, true) == P{32, 1, 1, 0});
  CHECK(register_row_plan(1 << 20, 8, 1, true).chunks > 0);
}

TEST_CASE("streamed rows: two buffers of a block's slots, where they fit a block's shared memory") {
  // Cross-entropy's vocabularies in bf16 with clusters, 16 bytes a slot, two rows' buffers:
  // 128,256 (8 blocks of 512 x 4 vectors): 2 x 512 x 4 x 16 = 64 KiB a block, three an SM.
  auto bytes = [](std::int64_t cols, int elem_bytes) {
    const int vec = 16 / elem_bytes;
    return streamed_slots_bytes(register_row_plan(cols / vec, vec, 1, true));
  };
  CHECK(bytes(128256, 2) == 65536);
  // 256,000: 8 blocks of 1024 x 4: 128 KiB. 50,257: 4 blocks of 416 x 4: 53,248 bytes.
  CHECK(bytes(256000, 2) == 131072);
  CHECK(plan_of(50257, 2, 1, true) == std::vector<std::int64_t>{416, 4, 4, 0});
  CHECK(bytes(50257, 2) == 53248);
  // fp32 at 256,000 (8 blocks of 1024 x 8 vectors): 256 KiB, past the 227 KiB an sm_90 block may
  // opt in to: that row stays in registers.
  CHECK(bytes(256000, 4) == 262144);
}

TEST_CASE(
    "elementwise grids: a thread per vector (or two) up to eight blocks an SM, at least one") {
  const Grid small = elementwise_grid(1000, 8, 132);  // 125 vectors
  CHECK(small.blocks == 1);
  CHECK(small.threads == kElementwiseThreads);
  CHECK(elementwise_grid(7, 8, 132).blocks == 1);  // only a tail
  CHECK(elementwise_grid(0, 8, 132).blocks == 1);
  CHECK(elementwise_grid(std::int64_t{1} << 20, 8, 132).blocks == 512);
  CHECK(elementwise_grid(std::int64_t{1} << 30, 8, 132).blocks == 132 * kElementwiseBlocksPerSm);
  // Two vectors a thread at a time: half the blocks, up to the same cap.
  CHECK(elementwise_grid(std::int64_t{1} << 20, 8, 132, kElementwiseUnroll).blocks == 256);
  CHECK(elementwise_grid(1000, 8, 132, kElementwiseUnroll).blocks == 1);
  CHECK(elementwise_grid(std::int64_t{1} << 30, 8, 132, kElementwiseUnroll).blocks ==
        132 * kElementwiseBlocksPerSm);
  // One wave of what an SM holds at once (AdamW with a bf16 gradient: 80 registers, 3 blocks),
  // never more than 8 blocks an SM nor fewer than 1.
  CHECK(elementwise_grid(std::int64_t{1} << 30, 8, 132, 2, 3).blocks == 132 * 3);
  CHECK(elementwise_grid(std::int64_t{1} << 30, 8, 132, 2, 16).blocks == 132 * 8);
  CHECK(elementwise_grid(std::int64_t{1} << 30, 8, 132, 2, 0).blocks == 132);
}

namespace {

// n values uniform in [-4, 4), as the softmax inputs are.
std::vector<float> logits(std::size_t n, std::uint64_t seed) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i)
    x[i] = 4.0f * uniform_value(seed, i);
  return x;
}

// The row as a block of `threads` threads reads it: thread t takes vectors t, t + threads, ...
// of 8, each folded in with max_sum_add, and the threads' results merged.
MaxSum block_max_sum(const std::vector<float>& x, int threads) {
  const int vectors = static_cast<int>(x.size() / 8);
  MaxSum block = empty_max_sum();
  for (int t = 0; t < threads; ++t) {
    MaxSum mine = empty_max_sum();
    for (int v = t; v < vectors; v += threads) {
      float a[8];
      for (int j = 0; j < 8; ++j)
        a[j] = x[static_cast<std::size_t>(v * 8 + j)];
      mine = max_sum_add(mine, a);
    }
    block = max_sum_merge(block, mine);  // threads without a vector merge the empty sum
  }
  return block;
}

}  // namespace

TEST_CASE("the online softmax normaliser matches the max and the sum of two passes") {
  for (std::size_t n : {8u, 4096u, 131072u})
    for (int threads : {32, 128, 1024}) {
      const auto x = logits(n, 7 + n);
      double max = -INFINITY;
      for (float v : x)
        max = std::max(max, static_cast<double>(v));
      double sum = 0;
      for (float v : x)
        sum += std::exp(static_cast<double>(v) - max);
      const MaxSum got = block_max_sum(x, threads);
      CHECK(got.max == max);  // the max is exact
      CHECK(std::abs(got.sum - sum) <= 1e-5 * sum);
    }
  // Merging nothing with nothing stays empty (no NaN from -inf minus itself).
  const MaxSum none = max_sum_merge(empty_max_sum(), empty_max_sum());
  CHECK(none.sum == 0.0f);
  CHECK(none.max == -INFINITY);
  const MaxSum one = max_sum_merge(empty_max_sum(), MaxSum{2.0f, 1.5f});
  CHECK(one.max == 2.0f);
  CHECK(one.sum == 1.5f);
}

TEST_CASE("the online normaliser gives masked logits 0 and a fully masked row NaN") {
  // A row of 4096 with every other vector of 8 masked (-inf), read by 32 threads: the masked
  // places add nothing, and the threads that saw only -inf merge as empty (not NaN).
  auto x = logits(4096, 5);
  for (std::size_t v = 0; v < 512; v += 2)
    for (std::size_t j = 0; j < 8; ++j)
      x[v * 8 + j] = -INFINITY;
  double max = -INFINITY, sum = 0;
  for (float v : x)
    max = std::max(max, static_cast<double>(v));
  for (float v : x)
    sum += std::exp(static_cast<double>(v) - max);
  const MaxSum got = block_max_sum(x, 32);
  CHECK(got.max == max);
  CHECK(std::abs(got.sum - sum) <= 1e-5 * sum);
  CHECK(memop_math::exp_or_zero(-INFINITY - got.max) / got.sum == 0.0f);  // a masked place's y
  // Every element -inf: max -inf, sum 0, and y = e^(x - max) / sum NaN, as torch.softmax.
  const std::vector<float> masked(64, -INFINITY);
  const MaxSum none = block_max_sum(masked, 32);
  CHECK(none.max == -INFINITY);
  CHECK(none.sum == 0.0f);
  CHECK(std::isnan(memop_math::exp_or_zero(masked[0] - none.max) / none.sum));
}

TEST_CASE("the split row's chunk statistics, merged with the GPU's exp, give the row's softmax") {
  // A row of 128,256 logits in [-4, 4), or those plus 4000, cut into 8 chunks, the third all
  // masked: each chunk's max and its sum of exp_shifted against it, merged in chunk order
  // (fast_max_sum_merge), then y = exp_shifted against the merged max / the merged sum, with ex2
  // at its documented worst, against the exact softmax; as the row kernels' split runs it. With
  // the offset, chunks whose maxes differ by less than 8 but whose max log2 e rounded apart
  // (each chunk's terms were taken against its own rounded max log2 e, the merge rescaled by
  // the exact difference): 742u off at an offset of 1000, past the tolerance near 2000.
  using opbench::testing::for_each_model;
  const std::int64_t cols = 128256, chunk = 16032;
  const float offset = GENERATE(0.0f, 4000.0f);
  CAPTURE(offset);
  auto x = logits(static_cast<std::size_t>(cols), 3);
  for (float& v : x)
    v += offset;
  for (std::int64_t j = 2 * chunk; j < 3 * chunk; ++j)
    x[static_cast<std::size_t>(j)] = -INFINITY;
  std::vector<double> want(x.size());
  double max = -INFINITY, sum = 0;
  for (float v : x)
    max = std::max(max, static_cast<double>(v));
  for (float v : x)
    sum += std::exp(v - max);
  for (std::size_t j = 0; j < x.size(); ++j)
    want[j] = std::exp(x[j] - max) / sum;
  for_each_model([&](auto model) {
    using P = decltype(model);
    MaxSum total = empty_max_sum();
    for (std::int64_t c0 = 0; c0 < cols; c0 += chunk) {
      float m = -INFINITY, s = 0;
      for (std::int64_t j = c0; j < c0 + chunk; ++j)
        m = std::max(m, x[static_cast<std::size_t>(j)]);
      for (std::int64_t j = c0; j < c0 + chunk; ++j)
        s += fast_math::exp_shifted<P>(x[static_cast<std::size_t>(j)], fast_math::exp_origin(m));
      if (c0 == 2 * chunk) CHECK(s == 0.0f);  // the masked chunk adds nothing
      total = fast_max_sum_merge<P>(total, MaxSum{m, s});
    }
    CHECK(total.max == max);
    const float shift = fast_math::exp_origin(total.max), inv = 1.0f / total.sum;
    double worst = 0, scale = 0;
    for (std::size_t j = 0; j < x.size(); ++j) {
      const float y = fast_math::exp_shifted<P>(x[j], shift) * inv;
      worst = worse(worst, std::fabs(y - want[j]));
      scale = std::max(scale, want[j]);
    }
    CHECK(worst / scale <= kFastExpAllowance + reduction_tolerance(cols));
  });
  // Every chunk masked: max -inf, sum 0, and the row NaN (0 x 1/0).
  const MaxSum none =
      fast_max_sum_merge<opbench::testing::Model<2, 1>>(empty_max_sum(), MaxSum{-INFINITY, 0.0f});
  CHECK(none.max == -INFINITY);
  CHECK(none.sum == 0.0f);
  CHECK(std::isnan(fast_math::exp_shifted<opbench::testing::Model<2, 1>>(
                       -INFINITY, fast_math::exp_origin(none.max)) *
                   (1.0f / none.sum)));
}

TEST_CASE("Welford per vector, merged, gives the mean and variance of two passes") {
  const auto x = logits(4096, 11);
  memop_math::Welford acc{};
  for (std::size_t v = 0; v < x.size() / 8; ++v) {
    float a[8];
    for (int j = 0; j < 8; ++j)
      a[j] = x[v * 8 + static_cast<std::size_t>(j)] + 3.0f;  // off-centre, as activations are
    acc = memop_math::welford_merge(acc, welford_of(a));
  }
  double mean = 0;
  for (float v : x)
    mean += v + 3.0;
  mean /= static_cast<double>(x.size());
  double var = 0;
  for (float v : x)
    var += (v + 3.0 - mean) * (v + 3.0 - mean);
  var /= static_cast<double>(x.size());
  CHECK(acc.count == 4096.0f);
  CHECK(std::abs(acc.mean - mean) <= 1e-6 * std::abs(mean) + 1e-7);
  CHECK(std::abs(acc.m2 / acc.count - var) <= 1e-5 * var);
  // One element is Welford's push.
  const float one[1] = {5.0f};
  const memop_math::Welford pushed = memop_math::welford_push(memop_math::Welford{}, 5.0f);
  const memop_math::Welford merged =
      memop_math::welford_merge(memop_math::Welford{}, welford_of(one));
  CHECK(merged.count == pushed.count);
  CHECK(merged.mean == pushed.mean);
  CHECK(merged.m2 == pushed.m2);
}

TEST_CASE("the fused residual add + RMSNorm, as a block runs it, gives the CPU loop's row") {
  // 3 rows of 1024: h and its squares per vector of 8 (residual_add_squares), summed over 128
  // threads; then rms_scale of h, as held in registers (the register-row kernel) or recomputed
  // from x and the residual (the two-pass kernel): the same fp32 value. Against
  // cpu_memops::add_rmsnorm_fwd.
  const std::int64_t rows = 3, cols = 1024;
  const auto x = logits(rows * cols, 21), r = logits(rows * cols, 22), w = logits(cols, 23);
  std::vector<float> y(x.size()), h(x.size()), rstd(rows);
  cpu_memops::add_rmsnorm_fwd(x.data(), r.data(), w.data(), y.data(), h.data(), rstd.data(), rows,
                              cols);
  for (std::int64_t row = 0; row < rows; ++row) {
    std::vector<float> thread_sums(128, 0.0f);
    for (std::int64_t v = 0; v < cols / 8; ++v) {
      float a[8], b[8];
      for (int j = 0; j < 8; ++j) {
        a[j] = x[static_cast<std::size_t>(row * cols + v * 8 + j)];
        b[j] = r[static_cast<std::size_t>(row * cols + v * 8 + j)];
      }
      thread_sums[static_cast<std::size_t>(v % 128)] += residual_add_squares(a, b);
      for (int j = 0; j < 8; ++j)  // the stored sum is the CPU's, to the bit
        CHECK(a[j] == h[static_cast<std::size_t>(row * cols + v * 8 + j)]);
    }
    float squares = 0.0f;
    for (float t : thread_sums)
      squares += t;
    const float rs = memop_math::rms_rstd(squares, cols, memop_math::kRmsNormEps);
    CHECK(rs == Approx(rstd[static_cast<std::size_t>(row)]).epsilon(1e-6));
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto at = static_cast<std::size_t>(row * cols + j);
      const float got = memop_math::rms_scale(memop_math::residual_add(x[at], r[at]), rs,
                                              w[static_cast<std::size_t>(j)]);
      CHECK(got == Approx(y[at]).epsilon(1e-5).margin(1e-6));
    }
  }
}

namespace {

// A thread's sum of f over the elements of a row it holds in registers, as the norms' forward
// kernels hold it (RowPart: thread t the vectors t + i threads, i < items, of 8 elements; the
// slots past the row's vectors not held, their fill left out), for every thread of the block.
template <class F>
std::vector<float> held_sums(const float* row, std::int64_t cols, const RegisterRowPlan& plan,
                             F f) {
  const int vectors = static_cast<int>(cols / 8);
  std::vector<float> sums(static_cast<std::size_t>(plan.threads), 0.0f);
  for (int t = 0; t < plan.threads; ++t)
    for (int i = 0; i < plan.items; ++i) {
      const int v = item_vector(0, t, plan.threads, i);
      if (v >= vectors) continue;
      for (int j = 0; j < 8; ++j)
        sums[static_cast<std::size_t>(t)] += f(row[v * 8 + j]);
    }
  return sums;
}

float total(const std::vector<float>& v) {
  float s = 0.0f;
  for (float x : v)
    s += x;
  return s;
}

}  // namespace

TEST_CASE("the norms' forward with the row in registers gives the CPU loop's rows") {
  // 3 rows of 4160 bf16 (520 vectors): 288 threads of 2 vectors, so 56 slots hold nothing. The
  // kernels' statistics from the held elements (RMSNorm: one reduction of squares; LayerNorm:
  // the mean, then the centred squares), then y from the row as held, against cpu_memops.
  const std::int64_t rows = 3, cols = 4160;
  const RegisterRowPlan plan = register_row_plan(cols / 8, 8, 1, false);
  REQUIRE(plan.threads == 288);
  REQUIRE(plan.items == 2);
  REQUIRE(plan.chunks == 0);
  // RMSNorm's registers are those of two held rows (cuda_memops_norms.cu): the same plan here.
  CHECK(register_row_plan(cols / 8, 8, 2, false).threads == 288);
  // The norms have no split: one block (1024 threads) holds up to 16,384 elements at two held
  // rows (RMSNorm, the residual add), 32,768 at one (LayerNorm), in bf16 and in fp32; past that
  // they take the two-pass kernel (cuda_memops_rows.cuh, launch_register_rows).
  for (int vec : {8, 4}) {
    CHECK(register_row_plan(16384 / vec, vec, 2, false).chunks == 0);
    CHECK(register_row_plan(16384 / vec + 1, vec, 2, false).chunks > 0);
    CHECK(register_row_plan(32768 / vec, vec, 1, false).chunks == 0);
    CHECK(register_row_plan(32768 / vec + 1, vec, 1, false).chunks > 0);
  }
  auto x = logits(rows * cols, 41);
  for (float& v : x)
    v += 3.0f;  // off-centre, as activations are: a slot counted as 0 would move the variance
  const auto w = logits(cols, 42), b = logits(cols, 43);
  std::vector<float> y(x.size()), mean(rows), rstd(rows), ry(x.size()), rrstd(rows);
  cpu_memops::layernorm_fwd(x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), rows,
                            cols);
  cpu_memops::rmsnorm_fwd(x.data(), w.data(), ry.data(), rrstd.data(), rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * cols;
    const auto at = static_cast<std::size_t>(r);
    const float squares = total(held_sums(row, cols, plan, [](float v) { return v * v; }));
    const float rs = memop_math::rms_rstd(squares, cols, memop_math::kRmsNormEps);
    CHECK(rs == Approx(rrstd[at]).epsilon(1e-6));
    const float mu =
        memop_math::row_mean(total(held_sums(row, cols, plan, [](float v) { return v; })), cols);
    const float centred =
        total(held_sums(row, cols, plan, [mu](float v) { return (v - mu) * (v - mu); }));
    const float ls = memop_math::layernorm_rstd(centred, cols, memop_math::kLayerNormEps);
    CHECK(mu == Approx(mean[at]).epsilon(1e-6));
    CHECK(ls == Approx(rstd[at]).epsilon(1e-5));
    // The 56 empty slots' fill (0) in the centred squares would add 448 mu^2: rstd 8% off.
    const float filled = centred + 56.0f * 8.0f * mu * mu;
    CHECK(std::abs(memop_math::layernorm_rstd(filled, cols, memop_math::kLayerNormEps) - rstd[at]) >
          0.05f * rstd[at]);
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto e = static_cast<std::size_t>(r * cols + j);
      const auto c = static_cast<std::size_t>(j);
      CHECK(memop_math::rms_scale(x[e], rs, w[c]) == Approx(ry[e]).epsilon(1e-5).margin(1e-6));
      CHECK((x[e] - mu) * ls * w[c] + b[c] == Approx(y[e]).epsilon(1e-4).margin(1e-5));
    }
  }
}

TEST_CASE("token ids and targets fall in their range, the same for a set every time") {
  for (std::int64_t i = 0; i < 1000; ++i) {
    const std::int64_t id = uniform_index(42, 3, i, 128256);
    CHECK(id >= 0);
    CHECK(id < 128256);
    CHECK(id == uniform_index(42, 3, i, 128256));
  }
  CHECK(uniform_index(42, 3, 0, 1) == 0);
  bool differs = false;  // another set draws other ids
  for (std::int64_t i = 0; i < 16; ++i)
    differs = differs || uniform_index(42, 3, i, 128256) != uniform_index(42, 4, i, 128256);
  CHECK(differs);
}

TEST_CASE("RMSNorm's backward plan: a wave of persistent blocks, w and dw in registers") {
  // {threads, items, blocks, rows a block} on an H100's 132 SMs, 8192 tokens.
  auto plan = [](std::int64_t rows, std::int64_t cols, int vec) {
    const NormBwdPlan p = norm_bwd_plan(rows, cols, vec, 132);
    return std::vector<std::int64_t>{p.threads, p.items, p.blocks, p.rows_per_block};
  };
  using P = std::vector<std::int64_t>;
  // Llama 3.1 8B (4096) in bf16: 512 threads (a vector each), two blocks an SM.
  CHECK(plan(8192, 4096, 8) == P{512, 1, 264, 32});
  // 70B (8192) in bf16: 1024 threads, a block an SM; in fp32 two vectors a thread.
  CHECK(plan(8192, 8192, 8) == P{1024, 1, 132, 63});
  CHECK(plan(8192, 8192, 4) == P{1024, 2, 132, 63});
  // 405B (16384) in bf16: beyond 8 elements a thread of 1024; the block-per-row kernel's.
  CHECK(plan(8192, 16384, 8)[0] == 0);
  // Fewer rows than a wave: a block a row. Small rows: at most 8 blocks an SM.
  CHECK(plan(5, 4096, 8)[2] == 5);
  CHECK(plan(100000, 256, 8)[2] == 132 * kNormBwdMostBlocksPerSm);
  // The workspace holds the persistent blocks' partial rows or the block-per-row kernel's.
  CHECK(norm_bwd_workspace_floats(DType::bf16, 8192, 4096, 132) == 2 * 264 * 4096);
  CHECK(norm_bwd_workspace_floats(DType::bf16, 8192, 16384, 132) ==
        2 * norm_bwd_blocks(8192, 132) * 16384);
}

TEST_CASE("a norm's persistent backward loads the next row ahead where ptxas fits it") {
  // The live words as norm_bwd_live_words counts them: per vector 12 raw words of w, dy and x
  // plus the gradients, 3 vectors of floats, the coefficients (RMSNorm 2, LayerNorm 4).
  const int rms_bf16 = 1 * (12 + 8) + 3 * 8 + 2;                // 46
  const int layernorm_bf16 = 1 * (12 + 2 * 8) + 3 * 8 + 4;      // 56
  const int layernorm_fp32_two = 2 * (12 + 2 * 4) + 3 * 4 + 4;  // 56
  for (int cc : {8, 9, 10})
    CHECK(norm_bwd_loads_ahead(rms_bf16, 1, cc));
  // LayerNorm bf16 at 4096 columns: one vector a thread; sm_100's ptxas spilled it by 8 bytes.
  CHECK(norm_bwd_loads_ahead(layernorm_bf16, 1, 8));
  CHECK(norm_bwd_loads_ahead(layernorm_bf16, 1, 9));
  CHECK_FALSE(norm_bwd_loads_ahead(layernorm_bf16, 1, 10));
  // LayerNorm fp32 at 8192 columns: two vectors a thread spill everywhere.
  for (int cc : {8, 9, 10})
    CHECK_FALSE(norm_bwd_loads_ahead(layernorm_fp32_two, 2, cc));
  CHECK_FALSE(norm_bwd_loads_ahead(57, 1, 9));
}

// Block b of plan p's rows, as norm_bwd_rows_kernel gives them out; every row once.
template <class Row>
void for_each_block_row(const NormBwdPlan& p, std::int64_t rows, Row row) {
  std::vector<int> rows_seen(static_cast<std::size_t>(rows), 0);
  for (std::int64_t b = 0; b < p.blocks; ++b)
    for (std::int64_t r = b * p.rows_per_block; r < std::min(rows, (b + 1) * p.rows_per_block);
         ++r) {
      ++rows_seen[static_cast<std::size_t>(r)];
      row(b, r);
    }
  CHECK(std::count(rows_seen.begin(), rows_seen.end(), 1) == rows);
}

// Column j of the sum of partial rows g (partials + (g blocks + b) cols), as sum_partials adds
// them.
float column_sum(const std::vector<float>& partials, std::int64_t g, std::int64_t blocks,
                 std::int64_t cols, std::int64_t j) {
  float sum = 0.0f;
  for (std::int64_t b = 0; b < blocks; ++b)
    sum += partials[static_cast<std::size_t>((g * blocks + b) * cols + j)];
  return sum;
}

TEST_CASE("RMSNorm's backward as the persistent blocks run it gives the CPU loop's dx and dw") {
  // 37 rows of 64 on 2 SMs: 16 blocks of 3 rows (the last three own none and write zero
  // partials); each block's dw from memop_math's rms_bwd_dw in registers, dx from the block's dot
  // product; then the partial rows added column by column. Against cpu_memops::rmsnorm_bwd.
  const std::int64_t rows = 37, cols = 64;
  const auto dy = logits(rows * cols, 31), x = logits(rows * cols, 32), w = logits(cols, 33);
  std::vector<float> rstd(rows), y(x.size());
  cpu_memops::rmsnorm_fwd(x.data(), w.data(), y.data(), rstd.data(), rows, cols);
  std::vector<float> dx(x.size()), dw(cols),
      ws(static_cast<std::size_t>(cpu_memops::norm_bwd_workspace_floats(rows, cols)));
  cpu_memops::rmsnorm_bwd(dy.data(), x.data(), w.data(), rstd.data(), dx.data(), dw.data(),
                          ws.data(), rows, cols);
  const NormBwdPlan p = norm_bwd_plan(rows, cols, 8, 2);
  REQUIRE(p.blocks == 16);
  REQUIRE(p.rows_per_block == 3);
  std::vector<float> partial(static_cast<std::size_t>(p.blocks * cols), 0.0f);
  for_each_block_row(p, rows, [&](std::int64_t b, std::int64_t r) {
    const auto at = [&](std::int64_t j) { return static_cast<std::size_t>(r * cols + j); };
    float dot = 0.0f;
    for (std::int64_t j = 0; j < cols; ++j)
      dot += dy[at(j)] * w[static_cast<std::size_t>(j)] * x[at(j)];
    const float rs = rstd[static_cast<std::size_t>(r)];
    const float c = memop_math::rms_bwd_c(rs, dot, 1.0f / static_cast<float>(cols));
    for (std::int64_t j = 0; j < cols; ++j) {
      partial[static_cast<std::size_t>(b * cols + j)] +=
          memop_math::rms_bwd_dw(dy[at(j)], x[at(j)], rs);
      const float got =
          memop_math::rms_bwd_dx(dy[at(j)], x[at(j)], w[static_cast<std::size_t>(j)], rs, c);
      CHECK(got == Approx(dx[at(j)]).epsilon(1e-5).margin(1e-6));
    }
  });
  for (std::int64_t j = 0; j < cols; ++j)  // 37 terms of about 1
    CHECK(column_sum(partial, 0, p.blocks, cols, j) ==
          Approx(dw[static_cast<std::size_t>(j)]).margin(1e-5));
}

TEST_CASE("LayerNorm's backward as the persistent blocks run it gives the CPU loop's dx, dw, db") {
  // 45 rows of 96 (fp32: 24 vectors, 32 threads) on 3 SMs: 24 blocks of 2 rows (the last
  // one's none). Each block's dw and db from memop_math's layernorm_xhat in registers, dx from the
  // block's two sums (sum g, sum g xhat), the gradients' partial rows one after the other in the
  // workspace; then added column by column. Against cpu_memops::layernorm_bwd.
  const std::int64_t rows = 45, cols = 96;
  const auto dy = logits(rows * cols, 41), x = logits(rows * cols, 42), w = logits(cols, 43),
             bias = logits(cols, 44);
  std::vector<float> mean(rows), rstd(rows), y(x.size());
  cpu_memops::layernorm_fwd(x.data(), w.data(), bias.data(), y.data(), mean.data(), rstd.data(),
                            rows, cols);
  std::vector<float> dx(x.size()), dw(cols), db(cols),
      ws(static_cast<std::size_t>(cpu_memops::norm_bwd_workspace_floats(rows, cols)));
  cpu_memops::layernorm_bwd(dy.data(), x.data(), w.data(), mean.data(), rstd.data(), dx.data(),
                            dw.data(), db.data(), ws.data(), rows, cols);
  const NormBwdPlan p = norm_bwd_plan(rows, cols, 4, 3);
  REQUIRE(p.threads == 32);
  REQUIRE(p.blocks == 24);
  REQUIRE(p.rows_per_block == 2);
  // The kernel's workspace holds both gradients' partial rows.
  REQUIRE(norm_bwd_workspace_floats(DType::fp32, rows, cols, 3) >= 2 * p.blocks * cols);
  std::vector<float> partials(static_cast<std::size_t>(2 * p.blocks * cols), 0.0f);
  for_each_block_row(p, rows, [&](std::int64_t b, std::int64_t r) {
    const auto at = [&](std::int64_t j) { return static_cast<std::size_t>(r * cols + j); };
    const float mu = mean[static_cast<std::size_t>(r)], rs = rstd[static_cast<std::size_t>(r)];
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (std::int64_t j = 0; j < cols; ++j) {
      const float g = dy[at(j)] * w[static_cast<std::size_t>(j)];
      sum_g += g;
      sum_gx += g * memop_math::layernorm_xhat(x[at(j)], mu, rs);
    }
    const float inv_cols = 1.0f / static_cast<float>(cols);
    for (std::int64_t j = 0; j < cols; ++j) {
      const float xhat = memop_math::layernorm_xhat(x[at(j)], mu, rs);
      partials[static_cast<std::size_t>(b * cols + j)] += dy[at(j)] * xhat;
      partials[static_cast<std::size_t>((p.blocks + b) * cols + j)] += dy[at(j)];
      const float got = memop_math::layernorm_bwd_dx(dy[at(j)], w[static_cast<std::size_t>(j)],
                                                     xhat, rs, sum_g * inv_cols, sum_gx * inv_cols);
      CHECK(got == Approx(dx[at(j)]).epsilon(1e-4).margin(1e-5));
    }
  });
  for (std::int64_t j = 0; j < cols; ++j) {  // 45 terms of about 1 each
    CHECK(column_sum(partials, 0, p.blocks, cols, j) ==
          Approx(dw[static_cast<std::size_t>(j)]).margin(1e-4));
    CHECK(column_sum(partials, 1, p.blocks, cols, j) ==
          Approx(db[static_cast<std::size_t>(j)]).margin(1e-4));
  }
}

TEST_CASE("the embedding's backward as the kernels run it: sort, segments, a warp per 32 rows") {
  // 300 tokens over a vocabulary of 50 (most ids shared, some rows untouched, two ids out of
  // range) and rows of 24: the keys (out-of-range ids sort last), a stable sort of (key,
  // position) pairs as CUB's radix sort is, every row's segment by segment_begin, and each row
  // summed in fp32 in sorted order: the CPU loop's gradient to the bit (the same order), zeros
  // included, every element of the table written once.
  const std::int64_t rows = 300, cols = 24, vocab = 50;
  std::vector<std::int64_t> ids(rows);
  for (std::int64_t r = 0; r < rows; ++r)
    ids[static_cast<std::size_t>(r)] = uniform_index(9, 0, r, 40);  // rows 40..49 untouched
  ids[7] = -1;
  ids[8] = vocab;
  const auto dy = logits(rows * cols, 41);
  std::vector<float> want(static_cast<std::size_t>(vocab * cols));  // skips ids out of range too
  cpu_memops::embedding_bwd(dy.data(), ids.data(), want.data(), rows, cols, vocab);

  CHECK(embedding_key_bits(vocab) == 6);  // 0 .. 50
  CHECK(embedding_key_bits(128256) == 17);
  // CUB's item count is an int: 2^31 - 1 tokens fit, 2^31 do not (the guard let 2^32 - 2 in)
  CHECK(embedding_sort_fits((std::int64_t{1} << 31) - 1, 128256));
  CHECK_FALSE(embedding_sort_fits(std::int64_t{1} << 31, 128256));
  CHECK_FALSE(embedding_sort_fits(8192, std::int64_t{1} << 31));
  CHECK(embedding_sort_key(-1, vocab) == vocab);
  CHECK(embedding_sort_key(49, vocab) == 49);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  for (std::int64_t r = 0; r < rows; ++r)
    pairs.emplace_back(embedding_sort_key(ids[static_cast<std::size_t>(r)], vocab), r);
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::uint32_t> keys, positions;
  for (const auto& [k, p] : pairs) {
    keys.push_back(k);
    positions.push_back(p);
  }
  std::vector<std::uint32_t> starts(vocab + 1);
  for (std::int64_t v = 0; v <= vocab; ++v)
    starts[static_cast<std::size_t>(v)] =
        segment_begin(keys.data(), rows, static_cast<std::uint32_t>(v));
  CHECK(starts[vocab] == rows - 2);  // the two out-of-range tokens sort last
  CHECK(starts[40] == starts[49]);   // untouched rows: empty segments
  std::vector<float> got(want.size(), -7.0f);
  std::vector<int> written(want.size(), 0);
  // The rows kernel's groups: a warp per 32 rows at one slice; lane l holds row l's segment and
  // the warp takes row r's from lane r (the shuffle), as embedding_rows_kernel does. 50 rows are
  // two groups a slice, the second of 18 rows.
  const int vec = 8;
  const std::int64_t slices = embedding_slices(cols, vec);
  CHECK(embedding_groups(vocab, slices) == 2 * slices);
  CHECK(embedding_group(2 * slices - 1, slices, vec).first_row == 32);
  for (std::int64_t g = 0; g < embedding_groups(vocab, slices); ++g) {
    const EmbeddingGroup group = embedding_group(g, slices, vec);
    std::uint32_t begin[32] = {}, end[32] = {};
    for (int lane = 0; lane < 32; ++lane)
      if (group.first_row + lane < vocab) {
        begin[lane] = starts[static_cast<std::size_t>(group.first_row + lane)];
        end[lane] = starts[static_cast<std::size_t>(group.first_row + lane + 1)];
      }
    const int rows_here = static_cast<int>(std::min<std::int64_t>(32, vocab - group.first_row));
    for (int r = 0; r < rows_here; ++r)
      for (int lane = 0; lane < 32; ++lane)
        for (int u = 0; u < kEmbeddingUnroll; ++u) {
          const std::int64_t v = group.first_row + r;
          const std::int64_t col = group.first_col + (u * 32 + lane) * vec;
          if (col + vec > cols) continue;
          for (int j = 0; j < vec; ++j) {
            float acc = 0.0f;
            for (std::uint32_t p = begin[r]; p < end[r]; ++p)
              acc += dy[static_cast<std::size_t>(positions[p] * cols + col + j)];
            got[static_cast<std::size_t>(v * cols + col + j)] = acc;
            ++written[static_cast<std::size_t>(v * cols + col + j)];
          }
        }
  }
  CHECK(std::count(written.begin(), written.end(), 1) == vocab * cols);
  CHECK(got == want);
  // Wider rows take several slices: 70 rows of 1104 columns in vectors of 8 are 3 slices of 512
  // (the last holding 80 columns) in 3 row groups, 9 groups whose warps write every 8-column
  // vector of the table once.
  {
    const std::int64_t wide = 1104, table_rows = 70;
    const std::int64_t n = embedding_slices(wide, vec);
    CHECK(n == 3);
    CHECK(embedding_groups(table_rows, n) == 9);
    std::vector<int> hits(static_cast<std::size_t>(table_rows * wide / vec), 0);
    for (std::int64_t g = 0; g < embedding_groups(table_rows, n); ++g) {
      const EmbeddingGroup group = embedding_group(g, n, vec);
      for (std::int64_t v = group.first_row; v < std::min(group.first_row + 32, table_rows); ++v)
        for (int lane = 0; lane < 32; ++lane)
          for (int u = 0; u < kEmbeddingUnroll; ++u) {
            const std::int64_t col = group.first_col + (u * 32 + lane) * vec;
            if (col + vec <= wide) ++hits[static_cast<std::size_t>((v * wide + col) / vec)];
          }
    }
    CHECK(std::count(hits.begin(), hits.end(), 1) == table_rows * wide / vec);
  }
  // The workspace's parts do not overlap and the temporary storage comes last.
  const EmbeddingSortLayout at = embedding_sort_layout(8192, 128256, 1000);
  CHECK(at.positions_in == 32768);
  CHECK(at.starts == 4 * 32768);
  CHECK(at.temp == at.starts + (128257 * 4 + 255) / 256 * 256);
  CHECK(at.total == at.temp + 1024);
}
