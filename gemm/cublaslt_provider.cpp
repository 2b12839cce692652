// GEMM on the GPU through cuBLASLt: heuristic candidates ranked under the measured conditions,
// the fastest measured. The descriptors (row-major problems seen column-major) are built in
// cublaslt_descriptors; the host-side timing decisions live in gpu_timing_plan.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "common/cuda/buffer.hpp"
#include "common/cuda/check.hpp"
#include "common/cuda/device.hpp"
#include "common/cuda/launch_graph.hpp"
#include "common/cuda/measure_sm_clock.hpp"
#include "common/cuda/stream_blocker.hpp"
#include "common/rotation.hpp"
#include "common/text.hpp"
#include "common/timer.hpp"
#include "gemm/cublas_api.hpp"
#include "gemm/cublaslt_descriptors.hpp"
#include "gemm/device_operand_pools.hpp"
#include "gemm/fp8_policy.hpp"
#include "gemm/gpu_timing_plan.hpp"
#include "gemm/operand_sets.hpp"
#include "gemm/provider.hpp"

namespace opbench {
namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;
// A launch under this long is launch-bound: it is timed as a CUDA graph of many launches.
constexpr double kLaunchBoundUs = 20;
constexpr double kGraphTargetUs = 200;  // a graph replay lasts at least this long ...
// ... with at most this many launches. A graph's launches queue behind the stream blocker: on an
// H200 (driver 580) graphs of 1280 small cuBLASLt launches sampled blocked, graphs of 1536 and
// 10240 held the host inside cudaGraphLaunch until the blocker timed out. 1024 leaves room.
constexpr int kMaxGraphLaunches = 1024;
// Autotune: each candidate gets this many short samples, interleaved with the other candidates'
// (a clock change or a neighbour then disturbs every candidate alike), ranked by their median.
constexpr int kTrialRounds = 5;
constexpr int kTrialLaunches = 3;  // launches per trial sample, each on the next operand set
constexpr double kTrialBudgetS = 2;

std::string describe_algo(const cublasLtMatmulAlgo_t& algo, std::size_t candidates,
                          const std::string& accumulation) {
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr) {
    std::uint32_t v = 0;
    std::size_t written = 0;
    cublaslt().cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written);
    return v;
  };
  std::string text = fmt::format(
      "algo {} tile {} stages {} splitk {} swizzle {} custom {} (fastest of {})",
      get(CUBLASLT_ALGO_CONFIG_ID), get(CUBLASLT_ALGO_CONFIG_TILE_ID),
      get(CUBLASLT_ALGO_CONFIG_STAGES_ID), get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
      get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING), get(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION), candidates);
  if (!accumulation.empty()) text += ", " + accumulation;
  return text;
}

class CublasLtProvider final : public GemmProvider {
 public:
  explicit CublasLtProvider(int device) : device_(device) {
    OPBENCH_CUDA_CHECK(cudaSetDevice(device));
    info_ = cuda_device_info(device);
    lt_check(cublaslt().cublasLtCreate(&handle_), "Create");
    OPBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    workspace_ = DeviceBuffer(kWorkspaceBytes);
  }
  ~CublasLtProvider() override {
    if (stream_) cudaStreamDestroy(stream_);
    if (handle_) cublaslt().cublasLtDestroy(handle_);
  }

  std::string name() const override { return "cublaslt"; }
  std::string backend() const override { return "cuda"; }
  std::string device() const override { return info_.name; }

  std::optional<std::string> unsupported(DType t) const override {
    switch (t) {
      case DType::fp64:
      case DType::fp32:
      case DType::tf32:
      case DType::fp16:
      case DType::bf16:
        return std::nullopt;
      case DType::fp8_e4m3:
        if (info_.cc_major * 10 + info_.cc_minor < 89)
          return fmt::format("fp8 needs compute capability 8.9 or newer; {} is {}.{}", info_.name,
                             info_.cc_major, info_.cc_minor);
        return std::nullopt;
      case DType::fp8_e5m2:
        return std::string("fp8 GEMMs run with e4m3 inputs here (--dtype fp8_e4m3)");
      default:
        return fmt::format("cuBLASLt GEMMs run floating-point types; {} is not one", dtype_name(t));
    }
  }

  void describe(Environment& env) const override {
    env.add_library("cuBLASLt",
                    version_from_int(static_cast<long long>(cublaslt().cublasLtGetVersion())));
    add_cuda_environment(env, device_);
  }

  GemmProblem as_run(GemmProblem p, std::string* note) const override {
    return fp8_layout_as_run(p, info_.cc_major, info_.cc_minor, note);
  }

  GemmResult run(const GemmProblem& p, const GemmRunOptions& o) override {
    OPBENCH_CUDA_CHECK(cudaSetDevice(device_));
    GemmResult r;
    if (p.batch > std::numeric_limits<std::int32_t>::max()) {
      r.status = Status::skipped;
      r.note = fmt::format("batch {} exceeds cuBLASLt's batch count limit of {}", p.batch,
                           std::numeric_limits<std::int32_t>::max());
      return r;
    }
    const OperandLayout layout(p);
    if (o.cold && !flusher_) flusher_ = std::make_unique<L2Flusher>(info_.l2_bytes);
    const std::uint64_t budget =
        device_memory_budget(cuda_free_memory_bytes(device_), pools_.held_bytes());
    auto planned =
        plan_operand_sets(layout.set_bytes(), o, info_.l2_bytes, budget, "device memory", r);
    if (!planned) return r;
    const RotationPlan plan = *planned;
    pools_.prepare(p.dtype, plan.sets * layout.input_stride, plan.sets * layout.output_stride,
                   stream_);

    LtDescriptors d;
    make_lt_descriptors(p, o.fp8_fast_accum, d);
    const std::string accumulation =
        p.dtype == DType::fp8_e4m3 ? fp8_accumulation_name(o.fp8_fast_accum) : "";

    std::int64_t set = 0;
    auto in = pools_.inputs();
    auto out = pools_.outputs();
    const double one_d = 1.0, zero_d = 0.0;
    const float one_f = 1.0f, zero_f = 0.0f;
    const void* alpha = p.dtype == DType::fp64 ? static_cast<const void*>(&one_d) : &one_f;
    const void* beta = p.dtype == DType::fp64 ? static_cast<const void*>(&zero_d) : &zero_f;
    auto launch = [&](const cublasLtMatmulAlgo_t& algo) {
      void* c = out + layout.c_offset(set);
      return cublaslt().cublasLtMatmul(handle_, d.op, alpha, in + layout.b_offset(set), d.a,
                                       in + layout.a_offset(set), d.b, beta, c, d.c, c, d.c, &algo,
                                       workspace_.data(), kWorkspaceBytes, stream_);
    };
    // Before each sample (warm-up, trial or timed): the next operand set, or a flush with --cold.
    auto prepare = [&] {
      set = (set + 1) % plan.sets;
      if (flusher_ && o.cold) flusher_->flush(stream_);
    };

    sampler_.reset();  // a shape whose launches once waited on the host does not mark the next
    std::string key = fmt::format("{} {} {} {} {} {}", p.dims(), p.layout(), dtype_name(p.dtype),
                                  o.algo_candidates, accumulation, o.cold ? "flush" : "rotate");
    auto cached = tuned_.find(key);
    if (cached == tuned_.end()) {
      Autotuned tuned = autotune(d, o, launch, prepare, plan.sets, accumulation);
      if (!tuned.best) {
        r.status = Status::skipped;
        r.note = fmt::format("no cuBLASLt algorithm for {} {} {}: {}", p.dims(), p.layout(),
                             dtype_name(p.dtype), tuned.why_none);
        return r;
      }
      cached = tuned_.emplace(key, *tuned.best).first;
    }
    const Tuned& best = cached->second;
    r.algo = best.description;

    const std::unique_ptr<LaunchGraph> graph =
        launch_graph(best.us, plan.sets, layout.set_bytes(), o.cold, r, [&] {
          set = (set + 1) % plan.sets;
          lt_check(launch(best.algo), "Matmul (graph capture)");
        });

    CudaEventTimer timer;
    auto sample = [&] {
      const double us = sampler_.sample_us(stream_, timer, [&] {
        if (graph)
          graph->launch(stream_);
        else
          lt_check(launch(best.algo), "Matmul");
      });
      return us / r.launches_per_sample;
    };
    auto prepare_sample = [&] {
      if (!graph) prepare();  // a graph (never with --cold) walks the operand sets itself
    };
    r.measurement = measure_with_sm_clock(stream_, o.measure, sample, prepare_sample);
    append_note(r.note, throttle_note(r.measurement, info_.max_sm_clock_khz / 1e3));
    if (sampler_.fell_back()) append_note(r.note, GpuSampler::fallback_note());

    if (o.check) r.check = check_set(p, layout, set, o.corrupt_for_test);
    return r;
  }

 private:
  // Launch-bound (a launch under kLaunchBoundUs): one sample replays a graph of launches that
  // walks the operand sets (launch_next: the next set's launch) and lasts at least
  // kGraphTargetUs, so every launch still finds its inputs out of cache; `r` says so. With
  // --cold each launch needs its own flush, so it stays a single launch and the row says so.
  // nullptr: single launches.
  std::unique_ptr<LaunchGraph> launch_graph(double launch_us, std::int64_t sets,
                                            std::int64_t set_bytes, bool cold, GemmResult& r,
                                            const std::function<void()>& launch_next) {
    if (launch_us >= kLaunchBoundUs) return nullptr;
    if (cold) {
      r.note =
          fmt::format("launch-bound ({:.1f} us per launch) and flushed before each", launch_us);
      return nullptr;
    }
    const GraphLaunchPlan launches =
        plan_graph_launches(launch_us, sets, kGraphTargetUs, kMaxGraphLaunches);
    try {
      auto graph =
          std::make_unique<LaunchGraph>(stream_, launches.launches, [&](int) { launch_next(); });
      r.launches_per_sample = launches.launches;
      r.note = fmt::format("CUDA graph of {} launches per sample (one launch takes {:.1f} us)",
                           launches.launches, launch_us);
      if (launches.sets_walked < sets) {
        r.working_set_bytes = launches.sets_walked * set_bytes;
        append_note(r.note, fmt::format("the graph walks {} of {} operand sets: working set "
                                        "{}, under 4x the {} L2",
                                        launches.sets_walked, sets,
                                        human_bytes(static_cast<double>(r.working_set_bytes)),
                                        human_bytes(static_cast<double>(info_.l2_bytes))));
      }
      return graph;
    } catch (const Error& e) {
      r.note = fmt::format("launch-bound ({:.1f} us per launch); graph capture failed: {}",
                           launch_us, e.what());
      return nullptr;
    }
  }

  // Freivalds' test of set `set`'s result, read back (its middle element spoiled first with
  // --test-corrupt-result).
  CheckResult check_set(const GemmProblem& p, const OperandLayout& layout, std::int64_t set,
                        bool corrupt) {
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    auto a = pools_.input_buffer().to_host(static_cast<std::size_t>(layout.a_offset(set)),
                                           static_cast<std::size_t>(layout.a_bytes));
    auto b = pools_.input_buffer().to_host(static_cast<std::size_t>(layout.b_offset(set)),
                                           static_cast<std::size_t>(layout.b_bytes));
    auto c = pools_.output_buffer().to_host(static_cast<std::size_t>(layout.c_offset(set)),
                                            static_cast<std::size_t>(layout.c_bytes));
    if (corrupt)
      spoil_element_for_test(c.data(), p.out_dtype,
                             static_cast<std::size_t>(p.batch * p.c_elements() / 2));
    return freivalds_check(p, a.data(), b.data(), c.data(), gemm_check_precision(p.dtype));
  }

  struct Tuned {
    cublasLtMatmulAlgo_t algo;
    std::string description;
    double us = 0;  // one launch, as timed while choosing
  };

  struct Autotuned {
    std::optional<Tuned> best;
    std::string why_none;  // cuBLASLt's status or what failed, when there is no best
  };

  // Ranks the heuristics' candidates under the conditions they will be measured in: after the
  // clock warm-up, each trial sample on the next operand sets (or after a flush with --cold),
  // blocked like a timed sample, rounds interleaved across candidates, ranked by the median.
  template <typename Launch, typename Prepare>
  Autotuned autotune(const LtDescriptors& d, const GemmRunOptions& o, Launch& launch,
                     Prepare& prepare, std::int64_t sets, const std::string& accumulation) {
    Autotuned out;
    cublasLtMatmulPreference_t pref = nullptr;
    lt_check(cublaslt().cublasLtMatmulPreferenceCreate(&pref), "MatmulPreferenceCreate");
    std::unique_ptr<void, void (*)(void*)> pref_guard(pref, [](void* x) {
      cublaslt().cublasLtMatmulPreferenceDestroy(static_cast<cublasLtMatmulPreference_t>(x));
    });
    std::uint64_t ws = kWorkspaceBytes;
    lt_check(cublaslt().cublasLtMatmulPreferenceSetAttribute(
                 pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
             "PREF_MAX_WORKSPACE_BYTES");
    std::vector<cublasLtMatmulHeuristicResult_t> results(
        static_cast<std::size_t>(std::max(1, o.algo_candidates)));
    int returned = 0;
    const cublasStatus_t st = cublaslt().cublasLtMatmulAlgoGetHeuristic(
        handle_, d.op, d.a, d.b, d.c, d.c, pref, static_cast<int>(results.size()), results.data(),
        &returned);
    if (st != CUBLAS_STATUS_SUCCESS) {
      out.why_none = "cublasLtMatmulAlgoGetHeuristic returned " + lt_status_text(st);
      return out;
    }
    if (returned == 0) {
      out.why_none = "cublasLtMatmulAlgoGetHeuristic returned no candidate";
      return out;
    }

    // Candidates that launch at all (the first launch also loads their kernels, untimed).
    std::vector<int> usable;
    cublasStatus_t last_failure = CUBLAS_STATUS_SUCCESS;
    for (int i = 0; i < returned; ++i) {
      if (results[i].state != CUBLAS_STATUS_SUCCESS) {
        last_failure = results[i].state;
        continue;
      }
      prepare();
      const cublasStatus_t launched = launch(results[i].algo);
      if (launched == CUBLAS_STATUS_SUCCESS)
        usable.push_back(i);
      else
        last_failure = launched;
    }
    if (usable.empty()) {
      out.why_none = fmt::format("none of the {} candidates launched (last: {})", returned,
                                 lt_status_text(last_failure));
      return out;
    }

    // Clock warm-up, as the measurement itself gets, on the first usable candidate.
    CpuTimer warm;
    for (int n = 0; warm.elapsed_s() < o.measure.warmup_time_s || n < 2; ++n) {
      prepare();
      lt_check(launch(results[usable[0]].algo), "Matmul (autotune warm-up)");
      if (n % 16 == 15) OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));

    const int per_sample = o.cold || sets < 2 ? 1 : kTrialLaunches;
    CudaEventTimer timer;
    std::vector<std::vector<double>> trials(usable.size());
    // Long GEMMs stop adding rounds after kTrialBudgetS (one round always runs).
    CpuTimer trial_clock;
    for (int round = 0;
         round < kTrialRounds && (round == 0 || trial_clock.elapsed_s() < kTrialBudgetS); ++round)
      for (std::size_t c = 0; c < usable.size(); ++c) {
        prepare();
        const cublasLtMatmulAlgo_t& algo = results[usable[c]].algo;
        bool ok = true;
        const double us = sampler_.sample_us(stream_, timer, [&] {
          for (int l = 0; l < per_sample && ok; ++l) {
            if (l > 0) prepare();
            ok = launch(algo) == CUBLAS_STATUS_SUCCESS;
          }
        });
        if (ok) trials[c].push_back(us / per_sample);
      }
    const int best = fastest_by_median(trials);
    if (best < 0) {
      out.why_none = "every candidate failed while timed";
      return out;
    }
    std::vector<double> sorted = trials[best];
    std::sort(sorted.begin(), sorted.end());
    out.best = Tuned{results[usable[best]].algo,
                     describe_algo(results[usable[best]].algo, usable.size(), accumulation),
                     sorted[sorted.size() / 2]};
    return out;
  }

  int device_;
  CudaDeviceInfo info_;
  cublasLtHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer workspace_;
  DeviceOperandPools pools_;
  std::unique_ptr<L2Flusher> flusher_;
  GpuSampler sampler_;  // blocked samples, or plain ones once the library waited on the host
  std::map<std::string, Tuned> tuned_;  // autotune results, per shape, for the whole run
};

}  // namespace

// --version on a machine without cuBLAS says so rather than failing: the library is opened on
// first use (gemm/cublas_api), not at the binary's start.
LibraryVersion cublaslt_library_version() {
  std::string runs;
  try {
    runs = version_from_int(static_cast<long long>(cublaslt().cublasLtGetVersion()));
  } catch (const std::exception&) {
    runs = fmt::format("none ({} not found)", cublaslt_library_name());
  }
  return {"cuBLASLt", version_from_int(CUBLAS_VERSION), runs};
}

std::unique_ptr<GemmProvider> make_cublaslt_provider(int device) {
  return std::make_unique<CublasLtProvider>(device);
}

}  // namespace opbench
