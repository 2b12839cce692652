#include "gemm/cublas_expert_routines.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "common/cuda/check.hpp"
#include "common/error.hpp"
#include "gemm/cublas_api.hpp"

namespace opbench {

void blas_check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw run_failure(fmt::format("cuBLAS {} failed: {} ({})", call,
                                  cublas().cublasGetStatusName(status),
                                  cublas().cublasGetStatusString(status)));
}

namespace {

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

// What the three routines share: the operands, their types, and alpha = 1, beta = 0 in the
// scale type of the compute type (fp64 for fp64, fp32 otherwise).
class RoutineBase : public ExpertRoutine {
 protected:
  explicit RoutineBase(const ExpertOperands& x)
      : x_(x),
        ab_type_(storage_type(x.dtype)),
        c_type_(storage_type(x.problems[0].out_dtype)),
        compute_(compute_type(x.dtype)),
        alpha_(x.dtype == DType::fp64 ? static_cast<const void*>(&one_d_) : &one_f_),
        beta_(x.dtype == DType::fp64 ? static_cast<const void*>(&zero_d_) : &zero_f_) {}

  unsigned char* set_inputs(std::int64_t set) const {
    return x_.inputs + set * x_.layout.input_stride;
  }
  unsigned char* set_outputs(std::int64_t set) const {
    return x_.outputs + set * x_.layout.output_stride;
  }

  const ExpertOperands& x_;
  cudaDataType_t ab_type_, c_type_;
  cublasComputeType_t compute_;
  static constexpr double one_d_ = 1.0, zero_d_ = 0.0;
  static constexpr float one_f_ = 1.0f, zero_f_ = 0.0f;
  const void* alpha_;
  const void* beta_;
};

// One call over every expert with work, each a group of size 1 (cublasGemmGroupedBatchedEx: the
// per-group arrays are host arrays, the A, B and C pointers device tables, group after group).
class GroupedRoutine final : public RoutineBase {
 public:
  GroupedRoutine(const ExpertOperands& x, std::int64_t sets, DeviceBuffer& tables,
                 cudaStream_t stream)
      : RoutineBase(x) {
    for (std::size_t i : x.gemms) {
      const ColumnMajorGemm g = column_major(x.problems[i]);
      op_a_.push_back(g.op_a);
      op_b_.push_back(g.op_b);
      m_.push_back(g.m);
      n_.push_back(g.n);
      k_.push_back(g.k);
      lda_.push_back(g.lda);
      ldb_.push_back(g.ldb);
      ldc_.push_back(g.ldc);
      size_.push_back(1);
      alpha_array_.push_back(1.0f);  // the scale type of CUBLAS_COMPUTE_32F and its TF32 variant
      beta_array_.push_back(0.0f);
    }
    upload_tables(sets, tables, stream);
  }

  cublasStatus_t launch(std::int64_t set) override {
    const std::size_t groups = x_.gemms.size();
    void* const* table = tables_ + static_cast<std::size_t>(set) * 3 * groups;
    return cublas().cublasGemmGroupedBatchedEx(
        x_.handle, op_a_.data(), op_b_.data(), m_.data(), n_.data(), k_.data(), alpha_array_.data(),
        table, ab_type_, lda_.data(), table + groups, ab_type_, ldb_.data(), beta_array_.data(),
        table + 2 * groups, c_type_, ldc_.data(), static_cast<int>(groups), size_.data(), compute_);
  }
  const char* routine() const override { return "cublasGemmGroupedBatchedEx"; }
  std::size_t launches() const override { return 1; }

 private:
  // Set s's tables: cuBLAS's A pointers (our B), its B pointers (our A), then C pointers.
  void upload_tables(std::int64_t sets, DeviceBuffer& tables, cudaStream_t stream) {
    const std::size_t groups = x_.gemms.size();
    if (groups == 0) return;  // experts without tokens only: no GEMM reads a table
    std::vector<void*> host(static_cast<std::size_t>(sets) * 3 * groups);
    for (std::int64_t s = 0; s < sets; ++s)
      for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t e = x_.gemms[g];
        const std::size_t at = static_cast<std::size_t>(s) * 3 * groups + g;
        host[at] = set_inputs(s) + x_.layout.b_at[e];
        host[at + groups] = set_inputs(s) + x_.layout.a_at[e];
        host[at + 2 * groups] = set_outputs(s) + x_.layout.c_at[e];
      }
    const std::size_t bytes = host.size() * sizeof(void*);
    if (bytes > tables.bytes()) {
      tables = DeviceBuffer();
      tables = DeviceBuffer(bytes);
    }
    OPBENCH_CUDA_CHECK(
        cudaMemcpyAsync(tables.data(), host.data(), bytes, cudaMemcpyHostToDevice, stream));
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
    tables_ = static_cast<void* const*>(tables.data());
  }

  std::vector<cublasOperation_t> op_a_, op_b_;
  std::vector<int> m_, n_, k_, lda_, ldb_, ldc_, size_;
  std::vector<float> alpha_array_, beta_array_;
  void* const* tables_ = nullptr;
};

// One cublasGemmEx per expert with work, back to back.
class LoopRoutine final : public RoutineBase {
 public:
  explicit LoopRoutine(const ExpertOperands& x) : RoutineBase(x) {}
  cublasStatus_t launch(std::int64_t set) override {
    for (std::size_t e : x_.gemms) {
      const ColumnMajorGemm g = column_major(x_.problems[e]);
      const cublasStatus_t status = cublas().cublasGemmEx(
          x_.handle, g.op_a, g.op_b, g.m, g.n, g.k, alpha_, set_inputs(set) + x_.layout.b_at[e],
          ab_type_, g.lda, set_inputs(set) + x_.layout.a_at[e], ab_type_, g.ldb, beta_,
          set_outputs(set) + x_.layout.c_at[e], c_type_, g.ldc, compute_, CUBLAS_GEMM_DEFAULT);
      if (status != CUBLAS_STATUS_SUCCESS) return status;
    }
    return CUBLAS_STATUS_SUCCESS;
  }
  const char* routine() const override { return "cublasGemmEx"; }
  std::string algo() const override { return fmt::format("cublasGemmEx x {}", x_.gemms.size()); }
  std::size_t launches() const override { return x_.gemms.size(); }
};

// One strided-batched call over the padded problem (problems[0]: batch = experts).
class PaddedRoutine final : public RoutineBase {
 public:
  explicit PaddedRoutine(const ExpertOperands& x) : RoutineBase(x) {}
  cublasStatus_t launch(std::int64_t set) override {
    const GemmProblem& p = x_.problems[0];
    const ColumnMajorGemm g = column_major(p);
    return cublas().cublasGemmStridedBatchedEx(
        x_.handle, g.op_a, g.op_b, g.m, g.n, g.k, alpha_, set_inputs(set) + x_.layout.b_at[0],
        ab_type_, g.lda, p.b_elements(), set_inputs(set) + x_.layout.a_at[0], ab_type_, g.ldb,
        p.a_elements(), beta_, set_outputs(set) + x_.layout.c_at[0], c_type_, g.ldc, p.c_elements(),
        static_cast<int>(p.batch), compute_, CUBLAS_GEMM_DEFAULT);
  }
  const char* routine() const override { return "cublasGemmStridedBatchedEx"; }
  std::size_t launches() const override { return 1; }
};

}  // namespace

std::int64_t expert_routine_set_bytes(MoeImpl impl, std::size_t gemms) {
  return impl == MoeImpl::grouped ? static_cast<std::int64_t>(3 * gemms * sizeof(void*)) : 0;
}

std::unique_ptr<ExpertRoutine> make_expert_routine(MoeImpl impl, const ExpertOperands& operands,
                                                   std::int64_t sets, DeviceBuffer& tables,
                                                   cudaStream_t stream) {
  switch (impl) {
    case MoeImpl::grouped:
      return std::make_unique<GroupedRoutine>(operands, sets, tables, stream);
    case MoeImpl::loop:
      return std::make_unique<LoopRoutine>(operands);
    case MoeImpl::padded:
      return std::make_unique<PaddedRoutine>(operands);
  }
  throw std::logic_error("cublas expert provider: an implementation without a routine");
}

}  // namespace opbench
