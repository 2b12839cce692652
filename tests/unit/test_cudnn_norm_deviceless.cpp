// cuDNN's LayerNorm and RMSNorm graphs without a GPU: the graphs finalize with no handle, name
// exactly the tensors a variant pack must hold, and on device descriptions of an A100, H100 and
// B200 (configs/cudnn_devices.json) the heuristics offer engines whose plans cuDNN accepts — up to
// kernel loading, where the CUDA toolkit's stub libcuda stops them (docs/architecture.md, "Which
// cuDNN engines accept a graph"). The stub is loaded into this process for the rest of its life
// (ctest runs every test case in a process of its own).
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "common/device_profile.hpp"
#include "common/error.hpp"
#include "cudnn/cudnn_engines.hpp"
#include "cudnn/cudnn_plan_cache.hpp"
#include "memops/cudnn_norm_graph.hpp"
#include "tests/unit/memop_case.hpp"

using namespace opbench;

namespace {

MemopCase norm_case(MemOp op, MemPass pass, DType t, std::int64_t rows, std::int64_t cols) {
  return testing::memop_case(op, pass, t, rows, cols);
}

std::vector<std::int64_t> sorted(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE("the cudnn norm provider takes layernorm and rmsnorm in bf16, fp16 and fp32") {
  for (MemOp op : {MemOp::layernorm, MemOp::rmsnorm})
    for (DType t : {DType::bf16, DType::fp16, DType::fp32})
      CHECK_FALSE(cudnn_norm_unsupported(norm_case(op, MemPass::fwd, t, 8, 64)));
  const auto softmax =
      cudnn_norm_unsupported(norm_case(MemOp::softmax, MemPass::fwd, DType::bf16, 8, 64));
  REQUIRE(softmax);
  CHECK(softmax->find("softmax") != std::string::npos);
  CHECK(cudnn_norm_unsupported(norm_case(MemOp::rmsnorm, MemPass::fwd, DType::fp64, 8, 64)));
  CHECK(cudnn_norm_unsupported(norm_case(MemOp::layernorm, MemPass::bwd, DType::fp8_e4m3, 8, 64)));
  CHECK_THROWS(build_norm_graph(nullptr, norm_case(MemOp::add, MemPass::fwd, DType::bf16, 8, 64)));
}

TEST_CASE("the norm graphs finalize with no handle and name the tensors of their variant packs") {
  using U = std::vector<std::int64_t>;
  auto uids = [](MemOp op, MemPass pass) {
    return sorted(
        build_norm_graph(nullptr, norm_case(op, pass, DType::bf16, 4096, 4096)).pack_uids());
  };
  // Forward (training): y and the saved statistics, epsilon by value.
  CHECK(uids(MemOp::layernorm, MemPass::fwd) ==
        sorted(U{kNormUidX, kNormUidScale, kNormUidBias, kNormUidY, kNormUidMean, kNormUidInvVar,
                 kNormUidEpsilon}));
  CHECK(uids(MemOp::rmsnorm, MemPass::fwd) ==
        sorted(U{kNormUidX, kNormUidScale, kNormUidY, kNormUidInvVar, kNormUidEpsilon}));
  // Backward: no epsilon (cuDNN 8.9.6 and later read it from the saved inverse variance).
  CHECK(uids(MemOp::layernorm, MemPass::bwd) ==
        sorted(U{kNormUidDY, kNormUidX, kNormUidScale, kNormUidMean, kNormUidInvVar, kNormUidDX,
                 kNormUidDScale, kNormUidDBias}));
  CHECK(
      uids(MemOp::rmsnorm, MemPass::bwd) ==
      sorted(U{kNormUidDY, kNormUidX, kNormUidScale, kNormUidInvVar, kNormUidDX, kNormUidDScale}));
  // Odd shapes finalize too: cuDNN checks them against a device only when plans are made.
  for (MemOp op : {MemOp::layernorm, MemOp::rmsnorm})
    for (MemPass pass : {MemPass::fwd, MemPass::bwd}) {
      CHECK_NOTHROW(build_norm_graph(nullptr, norm_case(op, pass, DType::fp16, 1, 1000)));
      CHECK_NOTHROW(build_norm_graph(nullptr, norm_case(op, pass, DType::fp32, 3, 4100)));
    }
}

TEST_CASE("cuDNN engines accept the norm graphs on A100, H100 and B200 descriptions") {
  // Without a driver the toolkit's stub stands in (cuDNN needs a libcuda to list its engines).
  const std::string libcuda = load_cuda_driver_or_stub();
  fmt::print("cuDNN {} norm graphs, libcuda: {}\n", cudnnGetVersion(), libcuda);
  // Every graph at the memops family's headline shapes (4096 rows of 4096 and 8192), bf16 and
  // fp16, and fp32 at 4096 columns. With cuDNN 9.19 every one is accepted on every description
  // (on H100 and B200 by the generic norm engine 1 at least); none is refused for want of a GPU.
  // Each case costs a plan finalize, which compiles a kernel (about 0.4 s): H100 gets every
  // case, A100 and B200 a fixed sample (bf16 at 4096 columns, both norms and passes) to keep
  // the suite short.
  for (const char* profile : {"a100", "h100", "b200"}) {
    const bool sampled = std::string(profile) != "h100";
    const Descriptor device = make_device_description(load_device_profile(profile).device.dump());
    const CudnnTarget target{nullptr, device.get()};
    for (MemOp op : {MemOp::layernorm, MemOp::rmsnorm})
      for (MemPass pass : {MemPass::fwd, MemPass::bwd})
        for (DType t : {DType::bf16, DType::fp16, DType::fp32})
          for (std::int64_t cols : {4096, 8192}) {
            if (t == DType::fp32 && cols != 4096) continue;
            if (sampled && (t != DType::bf16 || cols != 4096)) continue;
            const MemopCase c = norm_case(op, pass, t, 4096, cols);
            const std::string label = fmt::format("{} {} {} {} {}", profile, memop_name(op),
                                                  mem_pass_name(pass), dtype_name(t), c.dims());
            // One accepting engine is enough here: each plan finalize compiles a kernel.
            const EngineReport r = cudnn_norm_engine_report(c, target, 1);
            fmt::print("{}: {} of {} offered configurations finalized, first accepted: {}{}\n",
                       label, r.configurations, r.offered, r.engines.empty() ? "none" : r.engines,
                       r.note.empty() ? "" : " (" + r.note + ")");
            INFO(label << ": " << r.note);
            CHECK(r.status == Status::ok);
            CHECK(r.accepted == 1);
            CHECK(r.offered >= 1);
          }
  }
}

TEST_CASE("the plan cache passes over configurations whose plans cannot run, and says why") {
  // On a device description every plan stops at kernel loading (the stub libcuda), so no
  // configuration ever reaches the caller's trial: the cache refuses the graph with cuDNN's words
  // and keeps nothing, so the next call asks cuDNN again.
  load_cuda_driver_or_stub();
  // Where a GPU answers, plans made for a description may well run: the test is for the stub.
  // (Asked of CUDA itself: an earlier test case may have loaded the stub as libcuda.so.1.)
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) == cudaSuccess && gpus > 0) {
    WARN("a GPU is here: plans for a description may run, so this test of the stub is passed over");
    return;
  }
  const Descriptor device = make_device_description(load_device_profile("h100").device.dump());
  const CudnnTarget target{nullptr, device.get()};
  const MemopCase c = norm_case(MemOp::rmsnorm, MemPass::fwd, DType::bf16, 4096, 4096);
  for (PlanPolicy policy : {PlanPolicy::first, PlanPolicy::fastest}) {
    INFO(plan_policy_name(policy));
    CudnnPlanCache cache(policy, 2);  // two plan finalizes: each compiles a kernel
    int trials = 0, builds = 0;
    auto build = [&] {
      ++builds;
      return build_norm_graph(nullptr, c);
    };
    auto trial = [&](const PlanCandidate&) {
      ++trials;
      return 1.0;
    };
    for (int call = 1; call <= 2; ++call) {
      try {
        cache.plan_for("key", "rmsnorm fwd", target, build, trial);
        FAIL("a plan was kept although none can run here");
      } catch (const Error& e) {
        const std::string what = e.what();
        CHECK(what.find("cuDNN has no plan for this rmsnorm fwd graph") != std::string::npos);
        CHECK(what.find("configurations offered") != std::string::npos);
      }
      CHECK(builds == call);
    }
    CHECK(trials == 0);
  }
}
