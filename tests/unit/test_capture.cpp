// The capture library's pure parts, on values worked out by hand: the histogram's quantiles and
// their error bound, the table's merge of calls and its order, the GPU sampling's choice of calls,
// the column-major -> row-major conversion and nccl-tests' bytes that the capture and bench_ccl
// share. A separate executable (capture_unit_tests): it links only opbench_capture_core, as the
// capture library does.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>

#include "capture/gpu_sampling.hpp"
#include "capture/histogram.hpp"
#include "capture/output.hpp"
#include "capture/table.hpp"
#include "common/blas_layout.hpp"
#include "common/coll_formulas.hpp"

using namespace opbench;
using namespace opbench::capture;

TEST_CASE("capture histogram: quantiles within 1% of the nearest-rank value") {
  LogHistogram h;
  for (int us = 1; us <= 1000; ++us)
    h.add(us * 1000.0);  // 1..1000 µs in ns
  REQUIRE(h.count() == 1000);
  // nearest rank: p50 is the 500th value, 500 µs; p99 the 990th, 990 µs
  CHECK(std::abs(h.quantile(0.50) - 500e3) <= 0.01 * 500e3);
  CHECK(std::abs(h.quantile(0.99) - 990e3) <= 0.01 * 990e3);
  // 1 µs .. 1 ms spans 3 decades: ln(1000) / ln(1.01/0.99) = 346 buckets, not 1000 samples
  CHECK(h.buckets() <= 350);
  // one value: every quantile is within 1% of it
  LogHistogram one;
  one.add(123456.0);
  CHECK(std::abs(one.quantile(0.99) - 123456.0) <= 0.01 * 123456.0);
}

TEST_CASE("capture table: calls and times merge per key, p99 of few calls is the max") {
  ShapeTable t;
  CaptureKey k;
  k.api = "sgemm_";
  k.kind = "gemm";
  k.op = "gemm";
  k.dtype = "fp32";
  k.m = 32;
  k.n = 688;
  k.k = 256;
  k.batch = 1;
  k.transa = 'N';
  k.transb = 'T';
  for (double us : {10.0, 20.0, 30.0, 40.0})
    t.record(k, us * 1e3);
  t.record_untimed(k, Untimed::graph_capture);  // counted, no time
  const auto rows = t.snapshot();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].calls == 5);
  CHECK(rows[0].timed_calls == 4);
  CHECK(rows[0].untimed[static_cast<std::size_t>(Untimed::graph_capture)] == 1);
  CHECK(rows[0].total_us == Approx(100.0));
  CHECK(rows[0].avg_us == Approx(25.0));
  CHECK(rows[0].min_us == Approx(10.0));
  CHECK(rows[0].max_us == Approx(40.0));
  CHECK(rows[0].p99_us == Approx(40.0));                // rank ⌈0.99·4⌉ = 4: the max, exactly
  CHECK(rows[0].p50_us == Approx(20.0).epsilon(0.01));  // rank 2
  CHECK(shape_label(k) == "32x688x256 NT");
}

TEST_CASE("capture: a column-major call as bench_gemm's row-major GEMM") {
  // torch.nn.Linear forward, Y[T,out] = X[T,in]·W[out,in]ᵀ: sgemm_("T", "N", out, T, in, W, X)
  const RowMajorGemm fprop = row_major_from_column_major(true, false, 688, 32, 256);
  CHECK(fprop.m == 32);
  CHECK(fprop.n == 688);
  CHECK(fprop.k == 256);
  CHECK(!fprop.transa);
  CHECK(fprop.transb);  // NT: bench_gemm's fprop
  const RowMajorGemm back = column_major_from_row_major(fprop);
  CHECK((back.m == 688 && back.n == 32 && back.k == 256 && back.transa && !back.transb));
  CHECK(blas_trans('t'));
  CHECK(blas_trans('C'));
  CHECK(!blas_trans('n'));
}

TEST_CASE("capture: collective bytes as nccl-tests counts them") {
  // 4 ranks, fp32: all_gather of 256 per rank moves 4·256·4 = 4096 bytes
  CHECK(algbw_bytes(CollOp::all_gather, exact_counts(CollOp::all_gather, 256, 4), 4, 4) == 4096.0);
  CHECK(algbw_bytes(CollOp::reduce_scatter, exact_counts(CollOp::reduce_scatter, 128, 4), 2, 4) ==
        1024.0);
  CHECK(algbw_bytes(CollOp::all_to_all, exact_counts(CollOp::all_to_all, 128, 2), 4, 2) == 1024.0);
  CHECK(algbw_bytes(CollOp::all_reduce, exact_counts(CollOp::all_reduce, 1024, 8), 4, 8) == 4096.0);
  CHECK(busbw_factor(CollOp::all_reduce, 4) == Approx(1.5));
  // The key MPI's and NCCL's hooks both make: all_gather of 256 fp32 per rank on 4 ranks.
  const CaptureKey k = collective_key("MPI_Allgather", "collective", "all_gather",
                                      CollOp::all_gather, "fp32", 4, 256, 4, "");
  CHECK(k.count == 256);
  CHECK(k.comm_size == 4);
  CHECK(k.bytes == 4096);
  CHECK(std::string(k.dtype) == "fp32");
  CHECK(std::string(k.op) == "all_gather");
  // Keys that differ only in where the communicator lies are rows apart: `once` called once,
  // `twice` twice (the larger total, so the first row)
  auto rows_of = [](const CaptureKey& once, const CaptureKey& twice) {
    ShapeTable t;
    t.record(once, 1000);
    t.record(twice, 1000);
    t.record(twice, 1000);
    return t.snapshot();
  };
  // the same call in groups whose ranks are 2 apart: it crosses other links
  CaptureKey apart = k;
  apart.comm_stride = 2;
  CHECK_FALSE(apart == k);
  const auto rows = rows_of(k, apart);
  REQUIRE(rows.size() == 2);
  CHECK((rows[0].key.comm_stride == 2 && rows[0].calls == 2 && rows[1].calls == 1));
  CHECK(shape_label(rows[0].key) == "count=256 comm_size=4 comm_stride=2");
  CHECK(shape_label(rows[1].key) == "count=256 comm_size=4");
  // on two NCCL communicators of the same size (a process in two groups of 4)
  CaptureKey first = k, second = k;
  first.comm_id = 0x1234;
  second.comm_id = 0x5678;
  CHECK_FALSE(first == second);
  const auto two = rows_of(first, second);
  REQUIRE(two.size() == 2);
  CHECK(shape_label(two[0].key) == "count=256 comm_size=4 comm_id=0000000000005678");
}

TEST_CASE("capture table: rows ordered by the time of all their calls, not of the timed ones") {
  // A shape of 1000 calls timed one in 8 (125 timed at 10 us: total_us 1250, all calls ~10 ms)
  // ranks above one of 10 calls of 200 us, all timed (total_us 2000, all calls 2 ms).
  ShapeTable t;
  CaptureKey often, rare;
  often.api = rare.api = "cublasGemmEx";
  often.kind = rare.kind = "gemm";
  often.m = 64;
  rare.m = 4096;
  for (int i = 0; i < 1000; ++i) {
    if (i % 8 == 0)
      t.record(often, 10e3);
    else
      t.record_untimed(often, Untimed::not_sampled);
  }
  for (int i = 0; i < 10; ++i)
    t.record(rare, 200e3);
  const auto rows = t.snapshot();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].key.m == 64);
  CHECK(rows[0].total_us == Approx(1250.0));
  CHECK(rows[0].untimed[static_cast<std::size_t>(Untimed::not_sampled)] == 875);
  CHECK(job_time_us(rows[0]) == Approx(10000.0));  // 1250 + 875 calls x 10 us
  CHECK(rows[1].key.m == 4096);
  CHECK(job_time_us(rows[1]) == Approx(2000.0));
  // calls made inside a graph capture did not run then: they add nothing
  for (int i = 0; i < 500; ++i)
    t.record_untimed(rare, Untimed::graph_capture);
  CHECK(job_time_us(t.snapshot()[1]) == Approx(2000.0));
}

TEST_CASE("capture GPU sampling: the first calls, then exactly one call in each window") {
  const GpuSampling every{32, 1};
  for (std::uint64_t i = 0; i < 1000; ++i)
    CHECK(sampled_call(every, 12345, i));
  const GpuSampling s{32, 8};
  for (std::uint64_t hash : {0ull, 1ull, 0xDEADBEEFull, 0xFFFFFFFFFFFFFFFFull}) {
    for (std::uint64_t i = 0; i < 32; ++i)
      CHECK(sampled_call(s, hash, i));
    std::set<std::uint64_t> positions;  // which call of its window was timed
    for (std::uint64_t window = 0; window < 200; ++window) {
      int timed = 0;
      for (std::uint64_t j = 0; j < 8; ++j)
        if (sampled_call(s, hash, 32 + window * 8 + j)) {
          ++timed;
          positions.insert(j);
        }
      CHECK(timed == 1);
    }
    // not always the same call of the window: 200 windows land on most of the 8 positions
    CHECK(positions.size() >= 6);
  }
}

TEST_CASE("capture GPU sampling: counted per shape") {
  set_gpu_sampling(GpuSampling{2, 4});
  CaptureKey a, b;
  a.api = b.api = "cublasLtMatmul";
  a.m = 1;
  b.m = 2;
  // each shape: its own first 2 calls, then one in each 4 (10 calls: 2 + 2 windows = 4 timed)
  int timed_a = 0, timed_b = 0;
  for (int i = 0; i < 10; ++i) {
    timed_a += sample_gpu_call(a) ? 1 : 0;
    timed_b += sample_gpu_call(b) ? 1 : 0;
  }
  set_gpu_sampling(GpuSampling{});
  CHECK(timed_a == 4);
  CHECK(timed_b == 4);
  CHECK(gpu_sampling().time_first == 32);
  CHECK(gpu_sampling().one_in == 8);
}
