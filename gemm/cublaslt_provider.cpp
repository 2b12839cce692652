// GEMM on the GPU through cuBLASLt: heuristic candidates timed briefly, the fastest measured.
// Our problems are row-major; cuBLASLt is column-major, so it computes Cᵀ = op(B)ᵀ·op(A)ᵀ:
// m and n swap, A and B swap, and each keeps its own transpose flag.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "common/cuda/buffer.hpp"
#include "common/cuda/check.hpp"
#include "common/cuda/device.hpp"
#include "common/cuda/launch_graph.hpp"
#include "common/cuda/measure_sm_clock.hpp"
#include "common/rotation.hpp"
#include "common/text.hpp"
#include "gemm/operand_sets.hpp"
#include "gemm/provider.hpp"

namespace opbench {
namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;
// A launch under this long is launch-bound: it is timed as a CUDA graph of many launches.
constexpr double kLaunchBoundUs = 20;
constexpr double kGraphTargetUs = 200;   // a graph replay lasts at least this long ...
constexpr int kMaxGraphLaunches = 4096;  // ... with at most this many launches
constexpr std::uint64_t kFillSeed = 20261121;

void lt_check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw run_failure(fmt::format("cuBLASLt {} failed: {} ({})", call,
                                  cublasLtGetStatusName(status), cublasLtGetStatusString(status)));
}

struct LtTypes {
  cudaDataType_t ab, c, scale;
  cublasComputeType_t compute;
};

LtTypes lt_types(DType t) {
  switch (t) {
    case DType::fp64:
      return {CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F};
    case DType::fp32:
      return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::tf32:
      return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
    case DType::fp16:
      return {CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::bf16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::fp8_e4m3:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    default:
      throw std::logic_error("lt_types: unsupported dtype");
  }
}

// RAII holders for the cuBLASLt descriptors of one problem.
struct LtDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr,
                         c = nullptr;  // cuBLASLt's A (our B), B (our A), C=D
  ~LtDescriptors() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
  }
};

void make_layout(cublasLtMatrixLayout_t* layout, cudaDataType_t type, std::int64_t rows,
                 std::int64_t cols, std::int64_t batch) {
  lt_check(cublasLtMatrixLayoutCreate(layout, type, static_cast<std::uint64_t>(rows),
                                      static_cast<std::uint64_t>(cols), rows),
           "MatrixLayoutCreate");
  if (batch > 1) {
    auto count = static_cast<std::int32_t>(batch);
    std::int64_t stride = rows * cols;
    lt_check(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                              sizeof(count)),
             "MatrixLayoutSetAttribute(BATCH_COUNT)");
    lt_check(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                              &stride, sizeof(stride)),
             "MatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  }
}

std::string describe_algo(const cublasLtMatmulAlgo_t& algo, std::size_t candidates) {
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr) {
    std::uint32_t v = 0;
    std::size_t written = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written);
    return v;
  };
  return fmt::format("algo {} tile {} stages {} splitk {} swizzle {} custom {} (fastest of {})",
                     get(CUBLASLT_ALGO_CONFIG_ID), get(CUBLASLT_ALGO_CONFIG_TILE_ID),
                     get(CUBLASLT_ALGO_CONFIG_STAGES_ID), get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                     get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
                     get(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION), candidates);
}

class CublasLtProvider final : public GemmProvider {
 public:
  explicit CublasLtProvider(int device) : device_(device) {
    OPBENCH_CUDA_CHECK(cudaSetDevice(device));
    info_ = cuda_device_info(device);
    lt_check(cublasLtCreate(&handle_), "Create");
    OPBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    workspace_ = DeviceBuffer(kWorkspaceBytes);
  }
  ~CublasLtProvider() override {
    if (stream_) cudaStreamDestroy(stream_);
    if (handle_) cublasLtDestroy(handle_);
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
    env.add_library("cuBLASLt", version_from_int(static_cast<long long>(cublasLtGetVersion())));
    add_cuda_environment(env, device_);
  }

  GemmProblem as_run(GemmProblem p, std::string* note) const override {
    if (p.dtype == DType::fp8_e4m3 && (p.transa || !p.transb)) {
      p.transa = false;
      p.transb = true;
      if (note)
        *note =
            "fp8 in cuBLASLt needs its TN layout (NT in this row-major table): operands "
            "pre-transposed, as Transformer Engine does";
    }
    return p;
  }

  GemmResult run(const GemmProblem& p, const GemmRunOptions& o) override {
    OPBENCH_CUDA_CHECK(cudaSetDevice(device_));
    GemmResult r;
    const OperandLayout layout(p);
    if (o.cold && !flusher_) flusher_ = std::make_unique<L2Flusher>(info_.l2_bytes);
    const std::uint64_t budget = cuda_free_memory_bytes(device_) / 10 * 9;
    auto planned = plan_operand_sets(layout, o, info_.l2_bytes, budget, "device memory", r);
    if (!planned) return r;
    const RotationPlan plan = *planned;
    prepare_pools(p.dtype, plan.sets * layout.input_stride, plan.sets * layout.output_stride);

    LtDescriptors d;
    const LtTypes types = lt_types(p.dtype);
    lt_check(cublasLtMatmulDescCreate(&d.op, types.compute, types.scale), "MatmulDescCreate");
    const cublasOperation_t op_a = p.transb ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's A is our B
    const cublasOperation_t op_b = p.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
    lt_check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)),
             "TRANSA");
    lt_check(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)),
             "TRANSB");
    // Column-major shapes of the stored matrices (a row-major R x C matrix is column-major C x R).
    make_layout(&d.a, types.ab, p.transb ? p.k : p.n, p.transb ? p.n : p.k, p.batch);
    make_layout(&d.b, types.ab, p.transa ? p.m : p.k, p.transa ? p.k : p.m, p.batch);
    make_layout(&d.c, types.c, p.n, p.m, p.batch);

    std::int64_t set = 0;
    auto in = static_cast<unsigned char*>(inputs_.data());
    auto out = static_cast<unsigned char*>(outputs_.data());
    const double one_d = 1.0, zero_d = 0.0;
    const float one_f = 1.0f, zero_f = 0.0f;
    const void* alpha = p.dtype == DType::fp64 ? static_cast<const void*>(&one_d) : &one_f;
    const void* beta = p.dtype == DType::fp64 ? static_cast<const void*>(&zero_d) : &zero_f;
    auto launch = [&](const cublasLtMatmulAlgo_t& algo) {
      void* c = out + layout.c_offset(set);
      return cublasLtMatmul(handle_, d.op, alpha, in + layout.b_offset(set), d.a,
                            in + layout.a_offset(set), d.b, beta, c, d.c, c, d.c, &algo,
                            workspace_.data(), kWorkspaceBytes, stream_);
    };

    std::string key =
        fmt::format("{} {} {} {}", p.dims(), p.layout(), dtype_name(p.dtype), o.algo_candidates);
    auto cached = tuned_.find(key);
    if (cached == tuned_.end()) {
      auto tuned = autotune(d, o.algo_candidates, launch);
      if (!tuned) {
        r.status = Status::skipped;
        r.note = fmt::format("cuBLASLt has no algorithm for {} {} {}", p.dims(), p.layout(),
                             dtype_name(p.dtype));
        return r;
      }
      cached = tuned_.emplace(key, *tuned).first;
    }
    const Tuned& best = cached->second;
    r.algo = best.description;

    // Launch-bound: one sample replays a graph that walks the operand sets once (or long enough
    // to last kGraphTargetUs), so every launch still finds its inputs out of cache. With --cold
    // each launch needs its own flush, so it stays a single launch and the row says so.
    std::unique_ptr<LaunchGraph> graph;
    if (best.us < kLaunchBoundUs && !o.cold) {
      const int launches = static_cast<int>(
          std::clamp<double>(std::max(std::ceil(kGraphTargetUs / std::max(best.us, 0.1)),
                                      static_cast<double>(plan.sets)),
                             2, kMaxGraphLaunches));
      try {
        graph = std::make_unique<LaunchGraph>(stream_, launches, [&](int) {
          set = (set + 1) % plan.sets;
          lt_check(launch(best.algo), "Matmul (graph capture)");
        });
        r.launches_per_sample = launches;
        r.note = fmt::format("CUDA graph of {} launches per sample (one launch takes {:.1f} us)",
                             launches, best.us);
      } catch (const Error& e) {
        r.note = fmt::format("launch-bound ({:.1f} us per launch); graph capture failed: {}",
                             best.us, e.what());
      }
    } else if (best.us < kLaunchBoundUs) {
      r.note = fmt::format("launch-bound ({:.1f} us per launch) and flushed before each", best.us);
    }

    CudaEventTimer timer;
    auto prepare = [&] {
      if (graph) return;  // the graph rotates the operand sets itself
      set = (set + 1) % plan.sets;
      if (flusher_ && o.cold) flusher_->flush(stream_);
    };
    auto sample = [&] {
      timer.start(stream_);
      if (graph)
        graph->launch(stream_);
      else
        lt_check(launch(best.algo), "Matmul");
      timer.stop(stream_);
      return timer.elapsed_us() / r.launches_per_sample;
    };
    r.measurement = measure_with_sm_clock(stream_, o.measure, sample, prepare);
    append_note(r.note, throttle_note(r.measurement, info_.max_sm_clock_khz / 1e3));

    if (o.check) {
      OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
      auto a = inputs_.to_host(static_cast<std::size_t>(layout.a_offset(set)),
                               static_cast<std::size_t>(layout.a_bytes));
      auto b = inputs_.to_host(static_cast<std::size_t>(layout.b_offset(set)),
                               static_cast<std::size_t>(layout.b_bytes));
      auto c = outputs_.to_host(static_cast<std::size_t>(layout.c_offset(set)),
                                static_cast<std::size_t>(layout.c_bytes));
      if (o.corrupt_for_test) c[c.size() / 2] ^= 0x40;  // flips an exponent bit of one element
      CheckPrecision precision;
      precision.input_roundoff = p.dtype == DType::tf32 ? unit_roundoff(DType::tf32) : 0.0;
      // fp64 accumulates in fp64; Hopper's fp8 tensor cores keep about 14 bits while accumulating.
      precision.accumulate_roundoff = p.dtype == DType::fp64       ? unit_roundoff(DType::fp64)
                                      : p.dtype == DType::fp8_e4m3 ? std::ldexp(1.0, -14)
                                                                   : unit_roundoff(DType::fp32);
      r.check = freivalds_check(p, a.data(), b.data(), c.data(), precision);
    }
    return r;
  }

 private:
  struct Tuned {
    cublasLtMatmulAlgo_t algo;
    std::string description;
    double us = 0;  // one launch, as timed while choosing
  };

  template <typename Launch>
  std::optional<Tuned> autotune(const LtDescriptors& d, int candidates, Launch& launch) {
    cublasLtMatmulPreference_t pref = nullptr;
    lt_check(cublasLtMatmulPreferenceCreate(&pref), "MatmulPreferenceCreate");
    std::unique_ptr<void, void (*)(void*)> pref_guard(pref, [](void* x) {
      cublasLtMatmulPreferenceDestroy(static_cast<cublasLtMatmulPreference_t>(x));
    });
    std::uint64_t ws = kWorkspaceBytes;
    lt_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof(ws)),
             "PREF_MAX_WORKSPACE_BYTES");
    std::vector<cublasLtMatmulHeuristicResult_t> results(
        static_cast<std::size_t>(std::max(1, candidates)));
    int returned = 0;
    cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(handle_, d.op, d.a, d.b, d.c, d.c, pref,
                                       static_cast<int>(results.size()), results.data(), &returned);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || returned == 0) return std::nullopt;
    lt_check(st, "MatmulAlgoGetHeuristic");

    // Time each candidate briefly (1 warm-up, 5 timed launches) and keep the fastest.
    CudaEventTimer timer;
    std::optional<Tuned> best;
    double best_us = 0;
    for (int i = 0; i < returned; ++i) {
      if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
      if (launch(results[i].algo) != CUBLAS_STATUS_SUCCESS) continue;
      timer.start(stream_);
      bool ok = true;
      for (int rep = 0; rep < 5 && ok; ++rep)
        ok = launch(results[i].algo) == CUBLAS_STATUS_SUCCESS;
      timer.stop(stream_);
      double us = timer.elapsed_us() / 5;
      if (ok && (!best || us < best_us)) {
        best_us = us;
        best = Tuned{results[i].algo, {}, us};
      }
    }
    if (best) best->description = describe_algo(best->algo, static_cast<std::size_t>(returned));
    return best;
  }

  void prepare_pools(DType t, std::int64_t input_bytes, std::int64_t output_bytes) {
    if (static_cast<std::size_t>(input_bytes) > inputs_.bytes() || t != inputs_dtype_) {
      inputs_ = DeviceBuffer();
      inputs_ = DeviceBuffer(static_cast<std::size_t>(input_bytes));
      fill_uniform(inputs_.data(), inputs_.bytes() / dtype_size(t), t, kFillSeed, stream_);
      inputs_dtype_ = t;
    }
    if (static_cast<std::size_t>(output_bytes) > outputs_.bytes()) {
      outputs_ = DeviceBuffer();
      outputs_ = DeviceBuffer(static_cast<std::size_t>(output_bytes));
      OPBENCH_CUDA_CHECK(cudaMemsetAsync(outputs_.data(), 0, outputs_.bytes(), stream_));
    }
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  int device_;
  CudaDeviceInfo info_;
  cublasLtHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer workspace_, inputs_, outputs_;
  DType inputs_dtype_ = DType::int8;  // nothing filled yet
  std::unique_ptr<L2Flusher> flusher_;
  std::map<std::string, Tuned> tuned_;  // autotune results, per shape, for the whole run
};

}  // namespace

LibraryVersion cublaslt_library_version() {
  return {"cuBLASLt", version_from_int(CUBLAS_VERSION),
          version_from_int(static_cast<long long>(cublasLtGetVersion()))};
}

std::unique_ptr<GemmProvider> make_cublaslt_provider(int device) {
  return std::make_unique<CublasLtProvider>(device);
}

}  // namespace opbench
