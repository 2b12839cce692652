// The routed experts of a rank on the GPU through cuBLAS, in the three implementations of
// expert_gemm.hpp: one cublasGemmGroupedBatchedEx over every expert with work (grouped), one
// cublasGemmEx per expert (loop), or one cublasGemmStridedBatchedEx over the experts padded to the
// largest token count (padded). No autotuning and no CUDA graph: cuBLAS's own heuristics pick the
// kernels, as they do for a framework calling these routines.
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
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
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

void blas_check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw run_failure(fmt::format("cuBLAS {} failed: {} ({})", call,
                                  cublas().cublasGetStatusName(status),
                                  cublas().cublasGetStatusString(status)));
}

cudaDataType_t storage_type(DType t) {
  switch (t) {
    case DType::fp64:
      return CUDA_R_64F;
    case DType::fp32:
    case DType::tf32:  // stored as fp32; the compute type asks for the TF32 tensor cores
      return CUDA_R_32F;
    case DType::fp16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      throw std::logic_error("cublas expert provider: no cuBLAS storage type for this dtype");
  }
}

cublasComputeType_t compute_type(DType t) {
  if (t == DType::fp64) return CUBLAS_COMPUTE_64F;
  if (t == DType::tf32) return CUBLAS_COMPUTE_32F_FAST_TF32;
  return CUBLAS_COMPUTE_32F;
}

// Our problems are row-major and cuBLAS is column-major: a row-major R x C matrix is a
// column-major C x R one, so cuBLAS computes Cᵀ[n,m] = op(B)ᵀ·op(A)ᵀ. Its A is our B and its B our
// A, m and n swap, and each operand keeps its own transpose flag (as cublaslt_descriptors does).
struct ColumnMajorGemm {
  cublasOperation_t op_a, op_b;  // on cuBLAS's A (our B) and B (our A)
  int m, n, k, lda, ldb, ldc;
};

bool fits_int(std::int64_t v) {
  return v <= std::numeric_limits<int>::max();
}

bool fits_cublas(const GemmProblem& p) {
  return fits_int(p.m) && fits_int(p.n) && fits_int(p.k) && fits_int(p.lda()) &&
         fits_int(p.ldb()) && fits_int(p.ldc()) && fits_int(p.batch);
}

ColumnMajorGemm column_major(const GemmProblem& p) {
  return {p.transb ? CUBLAS_OP_T : CUBLAS_OP_N,
          p.transa ? CUBLAS_OP_T : CUBLAS_OP_N,
          static_cast<int>(p.n),
          static_cast<int>(p.m),
          static_cast<int>(p.k),
          static_cast<int>(p.ldb()),
          static_cast<int>(p.lda()),
          static_cast<int>(p.ldc())};
}

std::int64_t c_bytes(const GemmProblem& p) {
  return p.batch * p.c_elements() * static_cast<std::int64_t>(dtype_size(p.out_dtype));
}

std::vector<unsigned char> copy_to_host(const DeviceBuffer& buffer, std::int64_t offset,
                                        std::int64_t bytes) {
  if (bytes == 0) return {};
  return buffer.to_host(static_cast<std::size_t>(offset), static_cast<std::size_t>(bytes));
}

// The host-side arrays of one grouped call: every expert with work is a group of size 1.
struct GroupArrays {
  std::vector<cublasOperation_t> op_a, op_b;
  std::vector<int> m, n, k, lda, ldb, ldc, size;
  std::vector<float> alpha, beta;  // the scale type of CUBLAS_COMPUTE_32F and its TF32 variant

  explicit GroupArrays(const std::vector<GemmProblem>& problems,
                       const std::vector<std::size_t>& groups) {
    for (std::size_t i : groups) {
      const ColumnMajorGemm g = column_major(problems[i]);
      op_a.push_back(g.op_a);
      op_b.push_back(g.op_b);
      m.push_back(g.m);
      n.push_back(g.n);
      k.push_back(g.k);
      lda.push_back(g.lda);
      ldb.push_back(g.ldb);
      ldc.push_back(g.ldc);
      size.push_back(1);
      alpha.push_back(1.0f);
      beta.push_back(0.0f);
    }
  }
  int count() const { return static_cast<int>(size.size()); }
};

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
    auto skip = [&](std::string why) {
      r.status = Status::skipped;
      r.note = std::move(why);
      r.cache.clear();
      r.working_set_bytes = 0;
      return r;
    };
    if (auto why = unsupported(x.dtype, impl)) return skip(*why);
    if (x.experts() == 0) return skip("the rank has no experts");
    const bool padded = impl == MoeImpl::padded;
    // A padded batch of zero tokens is no GEMM at all; grouped and loop still zero wgrad's C.
    if (padded && x.max_tokens() == 0) return skip("no expert has tokens: nothing to pad to");

    const std::vector<GemmProblem> problems = x.problems(impl);
    // Not structured bindings: the launch lambda captures them (clang 14 cannot).
    const ExpertCalls calls = expert_calls(problems);
    const std::vector<std::size_t>& gemms = calls.gemms;
    const std::vector<std::size_t>& zeroed = calls.zeroed;
    if (gemms.empty() && zeroed.empty())
      return skip("no expert of the rank has tokens: nothing to compute");
    for (std::size_t i : gemms)
      if (!fits_cublas(problems[i]))
        return skip(fmt::format("{} exceeds the 32-bit sizes of cuBLAS's GEMM routines",
                                problems[i].dims()));

    const ExpertOperandLayout layout(problems);
    const bool grouped = impl == MoeImpl::grouped;
    const std::size_t groups = grouped ? gemms.size() : 0;
    // A grouped call reads its operands' addresses from device memory: three tables per set.
    const auto table_bytes = static_cast<std::int64_t>(3 * groups * sizeof(void*));
    if (o.cold && !flusher_) flusher_ = std::make_unique<L2Flusher>(info_.l2_bytes);
    const std::uint64_t budget = device_memory_budget(cuda_free_memory_bytes(device_),
                                                      pools_.held_bytes() + pointers_.bytes());
    auto planned = plan_operand_sets(layout.set_bytes() + table_bytes, o, info_.l2_bytes, budget,
                                     "device memory", r);
    if (!planned) return r;
    const RotationPlan plan = *planned;
    pools_.prepare(x.dtype, plan.sets * layout.input_stride, plan.sets * layout.output_stride,
                   stream_);
    auto in = pools_.inputs();
    auto out = pools_.outputs();

    // Set s's tables: cuBLAS's A pointers (our B), its B pointers (our A), then C pointers. They
    // are uploaded once, untimed: the comparison is of the GEMM calls, and the tables never change.
    const GroupArrays group(problems, grouped ? gemms : std::vector<std::size_t>{});
    void* const* tables = nullptr;
    if (groups > 0) {
      std::vector<void*> host(static_cast<std::size_t>(plan.sets) * 3 * groups);
      for (std::int64_t s = 0; s < plan.sets; ++s)
        for (std::size_t g = 0; g < groups; ++g) {
          const std::size_t e = gemms[g];
          const std::size_t at = static_cast<std::size_t>(s) * 3 * groups + g;
          host[at] = in + s * layout.input_stride + layout.b_at[e];
          host[at + groups] = in + s * layout.input_stride + layout.a_at[e];
          host[at + 2 * groups] = out + s * layout.output_stride + layout.c_at[e];
        }
      const std::size_t bytes = host.size() * sizeof(void*);
      if (bytes > pointers_.bytes()) {
        pointers_ = DeviceBuffer();
        pointers_ = DeviceBuffer(bytes);
      }
      OPBENCH_CUDA_CHECK(
          cudaMemcpyAsync(pointers_.data(), host.data(), bytes, cudaMemcpyHostToDevice, stream_));
      OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
      tables = static_cast<void* const*>(pointers_.data());
    }

    const cudaDataType_t ab_type = storage_type(x.dtype);
    const cudaDataType_t c_type = storage_type(problems[0].out_dtype);
    const cublasComputeType_t compute = compute_type(x.dtype);
    const double one_d = 1.0, zero_d = 0.0;
    const float one_f = 1.0f, zero_f = 0.0f;
    const bool fp64 = x.dtype == DType::fp64;
    const void* alpha = fp64 ? static_cast<const void*>(&one_d) : &one_f;
    const void* beta = fp64 ? static_cast<const void*>(&zero_d) : &zero_f;

    const char* routine = grouped  ? "cublasGemmGroupedBatchedEx"
                          : padded ? "cublasGemmStridedBatchedEx"
                                   : "cublasGemmEx";
    std::int64_t set = 0;
    // One pass over every expert; the first status that is not a success, if any.
    auto launch = [&]() -> cublasStatus_t {
      unsigned char* set_in = in + set * layout.input_stride;
      unsigned char* set_out = out + set * layout.output_stride;
      for (std::size_t e : zeroed)
        OPBENCH_CUDA_CHECK(cudaMemsetAsync(
            set_out + layout.c_at[e], 0, static_cast<std::size_t>(c_bytes(problems[e])), stream_));
      if (gemms.empty()) return CUBLAS_STATUS_SUCCESS;
      switch (impl) {
        case MoeImpl::grouped: {
          void* const* table = tables + static_cast<std::size_t>(set) * 3 * groups;
          return cublas().cublasGemmGroupedBatchedEx(
              handle_, group.op_a.data(), group.op_b.data(), group.m.data(), group.n.data(),
              group.k.data(), group.alpha.data(), table, ab_type, group.lda.data(), table + groups,
              ab_type, group.ldb.data(), group.beta.data(), table + 2 * groups, c_type,
              group.ldc.data(), group.count(), group.size.data(), compute);
        }
        case MoeImpl::loop:
          for (std::size_t e : gemms) {
            const ColumnMajorGemm g = column_major(problems[e]);
            const cublasStatus_t status = cublas().cublasGemmEx(
                handle_, g.op_a, g.op_b, g.m, g.n, g.k, alpha, set_in + layout.b_at[e], ab_type,
                g.lda, set_in + layout.a_at[e], ab_type, g.ldb, beta, set_out + layout.c_at[e],
                c_type, g.ldc, compute, CUBLAS_GEMM_DEFAULT);
            if (status != CUBLAS_STATUS_SUCCESS) return status;
          }
          return CUBLAS_STATUS_SUCCESS;
        case MoeImpl::padded: {
          const GemmProblem& p = problems[0];
          const ColumnMajorGemm g = column_major(p);
          return cublas().cublasGemmStridedBatchedEx(
              handle_, g.op_a, g.op_b, g.m, g.n, g.k, alpha, set_in + layout.b_at[0], ab_type,
              g.lda, p.b_elements(), set_in + layout.a_at[0], ab_type, g.ldb, p.a_elements(), beta,
              set_out + layout.c_at[0], c_type, g.ldc, p.c_elements(), static_cast<int>(p.batch),
              compute, CUBLAS_GEMM_DEFAULT);
        }
      }
      return CUBLAS_STATUS_SUCCESS;
    };
    auto enqueue = [&] { blas_check(launch(), routine); };

    // One untimed call first: a type combination this cuBLAS does not run is a skipped row, not
    // a failed one (the grouped routine is still experimental), and kernels load outside timing.
    const cublasStatus_t first = launch();
    if (first == CUBLAS_STATUS_NOT_SUPPORTED) {
      OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
      return skip(fmt::format("{} returned {} for {} {}", routine,
                              cublas().cublasGetStatusName(first), dtype_name(x.dtype),
                              problems[0].layout()));
    }
    blas_check(first, routine);
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));

    const std::size_t launches = zeroed.size() + (gemms.empty()           ? 0
                                                  : impl == MoeImpl::loop ? gemms.size()
                                                                          : 1);
    r.algo = impl == MoeImpl::loop ? fmt::format("cublasGemmEx x {}", gemms.size()) : routine;
    r.launches_per_sample = static_cast<int>(launches);
    if (!zeroed.empty())
      append_note(r.note, fmt::format("{} experts without tokens: their zero gradient is written "
                                      "by cudaMemsetAsync, timed with the GEMMs",
                                      zeroed.size()));

    // A sample times the GPU work of one whole pass: its launches are queued behind the stream
    // blocker and then run back to back, so host launch gaps stay out of it (as for cuBLASLt).
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
      set = (set + 1) % plan.sets;
      if (o.cold) flusher_->flush(stream_);
    };
    // A routine that waits on its own stream (staging its host arrays, say) holds the host until
    // the blocker gives up: the shared sampler then times that sample and the rest unblocked.
    r.measurement = measure_with_sm_clock(stream_, o.measure, sample, prepare);
    if (sampler_.fell_back()) append_note(r.note, GpuSampler::fallback_note());
    append_note(r.note, throttle_note(r.measurement, info_.max_sm_clock_khz / 1e3));

    if (o.check) {
      OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
      std::vector<unsigned char> in_host =
          copy_to_host(pools_.input_buffer(), set * layout.input_stride, layout.input_stride);
      std::vector<unsigned char> out_host =
          copy_to_host(pools_.output_buffer(), set * layout.output_stride, layout.output_stride);
      if (o.corrupt_for_test) {
        // The busiest expert's result (or the padded batch's middle) gets one wrong element.
        const std::size_t e = padded ? 0 : x.busiest();
        const GemmProblem& p = problems[e];
        if (p.c_elements() > 0)
          spoil_element_for_test(out_host.data() + layout.c_at[e], p.out_dtype,
                                 static_cast<std::size_t>(p.batch * p.c_elements() / 2));
      }
      CheckPrecision precision;
      precision.input_roundoff = x.dtype == DType::tf32 ? unit_roundoff(DType::tf32) : 0.0;
      precision.accumulate_roundoff =
          fp64 ? unit_roundoff(DType::fp64) : unit_roundoff(DType::fp32);
      std::vector<const void*> a, b, c;
      for (std::size_t e = 0; e < problems.size(); ++e) {
        a.push_back(in_host.data() + layout.a_at[e]);
        b.push_back(in_host.data() + layout.b_at[e]);
        c.push_back(out_host.data() + layout.c_at[e]);
      }
      r.check = padded ? freivalds_check(problems[0], a[0], b[0], c[0], precision)
                       : check_experts(x, a, b, c, precision);
    }
    return r;
  }

 private:
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
