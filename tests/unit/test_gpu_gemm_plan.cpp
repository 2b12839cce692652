// The host-side decisions of the cuBLASLt provider: fp8 accumulation and layout, CUDA-graph
// launch plans, autotune ranking and the operand memory budget.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/rotation.hpp"
#include "gemm/fp8_policy.hpp"
#include "gemm/gpu_timing_plan.hpp"

using namespace opbench;

TEST_CASE("fp8 accumulation follows Transformer Engine by pass, or the flag") {
  CHECK(fp8_fast_accumulation(Fp8Accumulation::by_pass, "fprop"));
  CHECK_FALSE(fp8_fast_accumulation(Fp8Accumulation::by_pass, "dgrad"));
  CHECK_FALSE(fp8_fast_accumulation(Fp8Accumulation::by_pass, "wgrad"));
  CHECK(fp8_fast_accumulation(Fp8Accumulation::by_pass, ""));  // shapes and sweeps
  CHECK(fp8_fast_accumulation(Fp8Accumulation::fast, "wgrad"));
  CHECK_FALSE(fp8_fast_accumulation(Fp8Accumulation::split, "fprop"));
  CHECK(parse_fp8_accumulation("Split") == Fp8Accumulation::split);
  CHECK(parse_fp8_accumulation("auto") == Fp8Accumulation::by_pass);
  CHECK_THROWS_WITH(parse_fp8_accumulation("slow"), Catch::Contains("--fp8-accum: unknown mode"));
  CHECK(fp8_accumulation_name(true) == "fast accumulation");
}

TEST_CASE("fp8 is forced to the TN layout before Blackwell only, and the note says so only then") {
  CHECK(fp8_needs_tn_layout(8, 9));
  CHECK(fp8_needs_tn_layout(9, 0));
  CHECK_FALSE(fp8_needs_tn_layout(10, 0));
  CHECK_FALSE(fp8_needs_tn_layout(10, 3));
  CHECK(fp8_needs_tn_layout(12, 0));  // consumer Blackwell: still TN in Transformer Engine
  CHECK_FALSE(fp8_needs_tn_layout(13, 0));

  GemmProblem dgrad{4096, 8192, 1280, 1, false, false, DType::fp8_e4m3, DType::bf16, false};
  std::string note;
  GemmProblem hopper = fp8_layout_as_run(dgrad, 9, 0, &note);
  CHECK((!hopper.transa && hopper.transb));
  CHECK_THAT(note, Catch::Contains("TN layout on compute capability 9.0"));
  note.clear();
  GemmProblem blackwell = fp8_layout_as_run(dgrad, 10, 0, &note);
  CHECK((!blackwell.transa && !blackwell.transb));
  CHECK(note.empty());
  GemmProblem bf16 = dgrad;
  bf16.dtype = DType::bf16;
  CHECK_FALSE(fp8_layout_as_run(bf16, 9, 0, &note).transb);
  CHECK(note.empty());
}

TEST_CASE("a launch-bound graph walks every operand set, or says how many it walks") {
  // 5 us per launch, 100 sets: 100 launches (every set once) outlast the 200 us target.
  auto p = plan_graph_launches(5, 100, 200, 16384);
  CHECK(p.launches == 100);
  CHECK(p.sets_walked == 100);
  // 1 us per launch, 8 sets: 200 launches for the time; every set walked.
  p = plan_graph_launches(1, 8, 200, 16384);
  CHECK(p.launches == 200);
  CHECK(p.sets_walked == 8);
  // A 64^3 bf16 GEMM on a 50 MiB L2 rotates over ~8500 sets; a cap of 4096 walks fewer.
  p = plan_graph_launches(3, 8534, 200, 4096);
  CHECK(p.launches == 4096);
  CHECK(p.sets_walked == 4096);
  p = plan_graph_launches(3, 8534, 200, 16384);
  CHECK(p.launches == 8534);
  CHECK(p.sets_walked == 8534);
  CHECK(plan_graph_launches(500, 1, 200, 16384).launches == 2);  // at least two
}

TEST_CASE("autotune keeps the candidate with the lowest median, whatever one outlier says") {
  // Candidate 0 has one lucky sample (a clock boost); 1 is steadily faster.
  std::vector<std::vector<double>> trials{{10.0, 10.1, 2.0, 10.2, 10.0},
                                          {9.0, 9.1, 9.2, 9.0, 30.0}};
  CHECK(fastest_by_median(trials) == 1);
  CHECK(fastest_by_median({{}, {5.0, 6.0}}) == 1);  // a candidate that never ran is not chosen
  CHECK(fastest_by_median({{}, {}}) == -1);
  CHECK(fastest_by_median({{4.0, 8.0}, {5.0, 6.0}}) == 1);  // medians 6 and 5.5
}

TEST_CASE("the operand budget counts the provider's own pools as available") {
  // 10 GB free while the pools of the previous case hold 60 GB: a 50 GB case fits.
  CHECK(device_memory_budget(10'000'000'000ull, 60'000'000'000ull) == 63'000'000'000ull);
  CHECK(device_memory_budget(10'000'000'000ull, 0) == 9'000'000'000ull);
}
