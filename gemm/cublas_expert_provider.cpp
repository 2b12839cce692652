// The routed experts of a rank on the GPU through cuBLAS, in the three implementations of
// expert_gemm.hpp: one cublasGemmGroupedBatchedEx over every expert with work (grouped), one
// cublasGemmEx per expert (loop), or one cublasGemmStridedBatchedEx over the experts padded to the
// largest token count (padded), each a strategy of gemm/cublas_expert_routines. This file holds
// what the three share: the skip rules, the memory budget, the zeroed gradients, the sampling and
// the check. No autotuning and no CUDA graph: cuBLAS's own heuristics pick the kernels, as they
// do for a framework calling these routines.
//
// NVIDIA's documentation this relies on:
// - cuBLAS API reference, cublasGemmGroupedBatchedEx and cublas<t>gemmGroupedBatched
//   (https://docs.nvidia.com/cuda/cublas/index.html#cublasgemmgroupedbatchedex), with the
//   declaration in cublas_api.h and NVIDIA's sample (CUDALibrarySamples,
//   cuBLAS/Extensions/GemmGroupedBatchedEx): the arguments come in the order handle,
//   transa_array, transb_array, m_array, n_array, k_array, alpha_array, Aarray, Atype, lda_array,
//   Barray, Btype, ldb_array, beta_array, Carray, Ctype, ldc_array, group_count, group_size,
//   computeType. The per-group arrays (transposes, sizes, leading dimensions, alpha and beta with
//   CUBLAS_POINTER_MODE_HOST, group_size) are host arrays of group_count entries; Aarray, Barray
//   and Carray are device arrays of device pointers, one per problem, group after group. Every
//   problem of a group shares the group's shape, so each expert here is a group of size 1.
// - CUDA Toolkit release notes, cuBLAS 12.5: cublasGemmGroupedBatchedEx is new and experimental,
//   enabling "grouped batched GEMMs with FP16 or BF16 inputs/outputs with the FP32 compute type";
//   cuBLAS 12.4 added the typed grouped GEMMs for single precision (TF32 through the math mode)
//   and double precision. The extended routine runs fp16, bf16, fp32 and tf32
//   (CUBLAS_COMPUTE_32F_FAST_TF32) here, never fp64 or fp8; a combination the installed cuBLAS
//   refuses anyway (CUBLAS_STATUS_NOT_SUPPORTED) becomes a skipped row. cuBLAS 12.5 Update 1
//   lists "large CPU overheads" of the grouped routines as a known issue.
// - Release notes, cuBLAS 13.1: cuBLASLt's grouped GEMM ignores groups with k = 0, leaving their
//   output unwritten. An expert without tokens in wgrad is therefore never handed to a GEMM: its
//   zero gradient is written by cudaMemsetAsync inside the timed region, as a framework must
//   write it too.
// - cuBLAS API reference, cublasSetStream: it "unconditionally resets the cuBLAS library
//   workspace back to the default workspace pool", so cublasSetWorkspace comes after it; release
//   notes 12.9 Update 1: the workspace must be 256-byte aligned (cudaMalloc's is).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/cuda/buffer.hpp"
#include "common/cuda/check.hpp"
#include "common/cuda/device.hpp"
#include "common/cuda/measure_sm_clock.hpp"
#include "common/cuda/stream_blocker.hpp"
#include "common/rotation.hpp"
#include "common/text.hpp"
#include "gemm/cublas_api.hpp"
#include "gemm/cublas_expert_routines.hpp"
#include "gemm/device_operand_pools.hpp"
#include "gemm/expert_gemm.hpp"
#include "gemm/gpu_timing_plan.hpp"
#include "gemm/operand_sets.hpp"

static_assert(CUBLAS_VERSION >= 120500, "cublasGemmGroupedBatchedEx needs cuBLAS 12.5 or newer");

namespace opbench {
namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;
// A sample's launches all wait behind the stream blocker; past this many the launch queue could
// fill and block the host inside a launch (the blocker would time out), so such samples run
// unblocked from the start.
constexpr std::size_t kMaxBlockedLaunches = 512;

bool fits_int(std::int64_t v) {
  return v <= std::numeric_limits<int>::max();
}

bool fits_cublas(const GemmProblem& p) {
  return fits_int(p.m) && fits_int(p.n) && fits_int(p.k) && fits_int(p.lda()) &&
         fits_int(p.ldb()) && fits_int(p.ldc()) && fits_int(p.batch);
}

std::int64_t c_bytes(const GemmProblem& p) {
  return p.batch * p.c_elements() * static_cast<std::int64_t>(dtype_size(p.out_dtype));
}

std::vector<unsigned char> copy_to_host(const DeviceBuffer& buffer, std::int64_t offset,
                                        std::int64_t bytes) {
  if (bytes == 0) return {};
  return buffer.to_host(static_cast<std::size_t>(offset), static_cast<std::size_t>(bytes));
}

// `r` as a skipped row saying why (no cache or working set: nothing was measured).
GemmResult skipped(GemmResult r, std::string why) {
  r.status = Status::skipped;
  r.note = std::move(why);
  r.cache.clear();
  r.working_set_bytes = 0;
  return r;
}

// Why the calls of `problems` are not run: no work at all, or sizes beyond cuBLAS's int.
std::optional<std::string> calls_problem(const std::vector<GemmProblem>& problems,
                                         const ExpertCalls& calls) {
  if (calls.gemms.empty() && calls.zeroed.empty())
    return "no expert of the rank has tokens: nothing to compute";
  for (std::size_t i : calls.gemms)
    if (!fits_cublas(problems[i]))
      return fmt::format("{} exceeds the 32-bit sizes of cuBLAS's GEMM routines",
                         problems[i].dims());
  return std::nullopt;
}

class CublasExpertProvider final : public ExpertGemmProvider {
 public:
  explicit CublasExpertProvider(int device) : device_(device) {
    OPBENCH_CUDA_CHECK(cudaSetDevice(device));
    info_ = cuda_device_info(device);
    blas_check(cublas().cublasCreate(&handle_), "cublasCreate");
    OPBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    blas_check(cublas().cublasSetStream(handle_, stream_), "cublasSetStream");
    // Our own workspace: cuBLAS then allocates nothing while a sample is queued.
    workspace_ = DeviceBuffer(kWorkspaceBytes);
    blas_check(cublas().cublasSetWorkspace(handle_, workspace_.data(), workspace_.bytes()),
               "cublasSetWorkspace");
    blas_check(cublas().cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST),
               "cublasSetPointerMode");
  }
  ~CublasExpertProvider() override {
    // cublasDestroy synchronizes the device, so nothing still runs on the stream or the buffers.
    if (handle_) cublas().cublasDestroy(handle_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cublas"; }
  std::string backend() const override { return "cuda"; }
  std::string device() const override { return info_.name; }

  std::optional<std::string> unsupported(DType t, MoeImpl impl) const override {
    switch (t) {
      case DType::fp32:
      case DType::tf32:
      case DType::fp16:
      case DType::bf16:
        return std::nullopt;
      case DType::fp64:
        if (impl == MoeImpl::grouped)
          return std::string(
              "cublasGemmGroupedBatchedEx runs fp16, bf16, fp32 and tf32, not fp64 (--moe-impl "
              "loop and padded run fp64)");
        return std::nullopt;
      case DType::fp8_e4m3:
      case DType::fp8_e5m2:
        return std::string(
            "cuBLAS's GemmEx routines take no fp8 operands (fp8 GEMMs run through cuBLASLt)");
      default:
        return fmt::format("cuBLAS GEMMs run floating-point types; {} is not one", dtype_name(t));
    }
  }

  void describe(Environment& env) const override {
    int major = 0, minor = 0, patch = 0;
    cublas().cublasGetProperty(MAJOR_VERSION, &major);
    cublas().cublasGetProperty(MINOR_VERSION, &minor);
    cublas().cublasGetProperty(PATCH_LEVEL, &patch);
    env.add_library("cuBLAS", version_from_int(major * 10000LL + minor * 100LL + patch));
    // The dense cuBLASLt provider of the same run may have described this GPU already.
    const nlohmann::json& known = env.json();
    if (known.contains("devices"))
      for (const auto& d : known["devices"])
        if (d.contains("pci_bus_id") && d["pci_bus_id"] == info_.pci_bus_id) return;
    add_cuda_environment(env, device_);
  }

  GemmResult run(const ExpertGemm& x, MoeImpl impl, const GemmRunOptions& o) override {
    OPBENCH_CUDA_CHECK(cudaSetDevice(device_));
    GemmResult r;
    if (auto why = unsupported(x.dtype, impl)) return skipped(r, *why);
    if (x.experts() == 0) return skipped(r, "the rank has no experts");
    // A padded batch of zero tokens is no GEMM at all; grouped and loop still zero wgrad's C.
    if (impl == MoeImpl::padded && x.max_tokens() == 0)
      return skipped(r, "no expert has tokens: nothing to pad to");
    const std::vector<GemmProblem> problems = x.problems(impl);
    const ExpertCalls calls = expert_calls(problems);
    if (auto why = calls_problem(problems, calls)) return skipped(r, *why);

    const ExpertOperandLayout layout(problems);
    if (o.cold && !flusher_) flusher_ = std::make_unique<L2Flusher>(info_.l2_bytes);
    const std::uint64_t budget = device_memory_budget(cuda_free_memory_bytes(device_),
                                                      pools_.held_bytes() + pointers_.bytes());
    auto planned =
        plan_operand_sets(layout.set_bytes() + expert_routine_set_bytes(impl, calls.gemms.size()),
                          o, info_.l2_bytes, budget, "device memory", r);
    if (!planned) return r;
    const RotationPlan plan = *planned;
    pools_.prepare(x.dtype, plan.sets * layout.input_stride, plan.sets * layout.output_stride,
                   stream_);
    const ExpertOperands operands{handle_,         problems,         calls.gemms, layout,
                                  pools_.inputs(), pools_.outputs(), x.dtype};
    const auto routine = make_expert_routine(impl, operands, plan.sets, pointers_, stream_);

    std::int64_t set = 0;
    // One pass over every expert: the zero gradients, then the routine's GEMMs.
    auto pass = [&]() -> cublasStatus_t {
      for (std::size_t e : calls.zeroed)
        OPBENCH_CUDA_CHECK(
            cudaMemsetAsync(operands.outputs + set * layout.output_stride + layout.c_at[e], 0,
                            static_cast<std::size_t>(c_bytes(problems[e])), stream_));
      return calls.gemms.empty() ? CUBLAS_STATUS_SUCCESS : routine->launch(set);
    };
    // One untimed call first: a type combination this cuBLAS does not run is a skipped row, not
    // a failed one (the grouped routine is still experimental), and kernels load outside timing.
    const cublasStatus_t first = pass();
    if (first == CUBLAS_STATUS_NOT_SUPPORTED) {
      OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
      return skipped(r, fmt::format("{} returned {} for {} {}", routine->routine(),
                                    cublas().cublasGetStatusName(first), dtype_name(x.dtype),
                                    problems[0].layout()));
    }
    blas_check(first, routine->routine());
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));

    const std::size_t launches =
        calls.zeroed.size() + (calls.gemms.empty() ? 0 : routine->launches());
    r.algo = routine->algo();
    r.launches_per_sample = static_cast<int>(launches);
    if (!calls.zeroed.empty())
      append_note(r.note, fmt::format("{} experts without tokens: their zero gradient is written "
                                      "by cudaMemsetAsync, timed with the GEMMs",
                                      calls.zeroed.size()));
    sample_passes([&] { blas_check(pass(), routine->routine()); }, launches, plan.sets, set, o, r);
    if (o.check) r.check = check_pass(x, impl, problems, layout, set, o.corrupt_for_test);
    return r;
  }

 private:
  // Samples whole passes under the shared stop rule, the operand set moving on (or the L2
  // flushed) before each. A sample times the GPU work of one pass: its launches are queued behind
  // the stream blocker and then run back to back, so host launch gaps stay out of it (as for
  // cuBLASLt), unless a pass makes too many launches to queue.
  void sample_passes(const std::function<void()>& enqueue, std::size_t launches, std::int64_t sets,
                     std::int64_t& set, const GemmRunOptions& o, GemmResult& r) {
    const bool blocked = launches <= kMaxBlockedLaunches;
    if (!blocked)
      append_note(r.note, fmt::format("{} launches per sample, too many to queue behind a "
                                      "blocked stream: timed unblocked, host launch gaps included",
                                      launches));
    CudaEventTimer timer;
    sampler_.reset();
    auto sample = [&] {
      return blocked ? sampler_.sample_us(stream_, timer, enqueue)
                     : GpuSampler::unblocked_sample_us(stream_, timer, enqueue);
    };
    auto prepare = [&] {
      set = (set + 1) % sets;
      if (o.cold) flusher_->flush(stream_);
    };
    // A routine that waits on its own stream (staging its host arrays, say) holds the host until
    // the blocker gives up: the shared sampler then times that sample and the rest unblocked.
    r.measurement = measure_with_sm_clock(stream_, o.measure, sample, prepare);
    if (sampler_.fell_back()) append_note(r.note, GpuSampler::fallback_note());
    append_note(r.note, throttle_note(r.measurement, info_.max_sm_clock_khz / 1e3));
  }

  // Every expert's result of set `set`, read back: Freivalds per expert (check_experts), or on the
  // padded batch as one strided-batched GEMM.
  CheckResult check_pass(const ExpertGemm& x, MoeImpl impl,
                         const std::vector<GemmProblem>& problems,
                         const ExpertOperandLayout& layout, std::int64_t set, bool corrupt) {
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const bool padded = impl == MoeImpl::padded;
    std::vector<unsigned char> in_host =
        copy_to_host(pools_.input_buffer(), set * layout.input_stride, layout.input_stride);
    std::vector<unsigned char> out_host =
        copy_to_host(pools_.output_buffer(), set * layout.output_stride, layout.output_stride);
    if (corrupt) {
      // The busiest expert's result (or the padded batch's middle) gets one wrong element.
      const std::size_t e = padded ? 0 : x.busiest();
      const GemmProblem& p = problems[e];
      if (p.c_elements() > 0)
        spoil_element_for_test(out_host.data() + layout.c_at[e], p.out_dtype,
                               static_cast<std::size_t>(p.batch * p.c_elements() / 2));
    }
    const CheckPrecision precision = gemm_check_precision(x.dtype);
    std::vector<const void*> a, b, c;
    for (std::size_t e = 0; e < problems.size(); ++e) {
      a.push_back(in_host.data() + layout.a_at[e]);
      b.push_back(in_host.data() + layout.b_at[e]);
      c.push_back(out_host.data() + layout.c_at[e]);
    }
    return padded ? freivalds_check(problems[0], a[0], b[0], c[0], precision)
                  : check_experts(x, a, b, c, precision);
  }

  int device_;
  CudaDeviceInfo info_;
  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer workspace_, pointers_;
  DeviceOperandPools pools_;
  std::unique_ptr<L2Flusher> flusher_;
  GpuSampler sampler_;
};

}  // namespace

std::unique_ptr<ExpertGemmProvider> make_cublas_expert_provider(int device) {
  return std::make_unique<CublasExpertProvider>(device);
}

}  // namespace opbench
