#pragma once
// The three cuBLAS routines the GPU expert provider runs a rank's experts with (--moe-impl), each
// a small strategy over the same operands: one cublasGemmGroupedBatchedEx over every expert with
// work (grouped), one cublasGemmEx per expert (loop), or one cublasGemmStridedBatchedEx over the
// experts padded to the largest token count (padded). What they share — the skip rules, the
// memory budget, the zeroed gradients, the sampling and the check — is the provider's
// (gemm/cublas_expert_provider.cpp), written once. The sources each routine follows are cited
// there.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/cuda/buffer.hpp"
#include "gemm/expert_gemm.hpp"
#include "gemm/operand_sets.hpp"

namespace opbench {

// Throws run_failure naming the call and cuBLAS's status.
void blas_check(cublasStatus_t status, const char* call);

// What every routine's calls work on: the handle, the problems (ExpertGemm::problems) and those a
// GEMM computes (expert_calls), where set 0's operands are in the input and output pools (the
// next set's input_stride and output_stride bytes on), and the dtype of A and B.
struct ExpertOperands {
  cublasHandle_t handle = nullptr;
  const std::vector<GemmProblem>& problems;
  const std::vector<std::size_t>& gemms;
  const ExpertOperandLayout& layout;
  unsigned char* inputs = nullptr;
  unsigned char* outputs = nullptr;
  DType dtype = DType::fp32;
};

class ExpertRoutine {
 public:
  virtual ~ExpertRoutine() = default;
  // The GEMM calls of one pass over set `set`'s operands: the first status that is not a
  // success, if any.
  virtual cublasStatus_t launch(std::int64_t set) = 0;
  virtual const char* routine() const = 0;                // the cuBLAS routine it calls
  virtual std::string algo() const { return routine(); }  // the row's algo
  virtual std::size_t launches() const = 0;               // GEMM launches a pass makes
};

// Device memory a routine takes beside the operands, per set: the grouped routine reads its
// operands' addresses from three device tables.
std::int64_t expert_routine_set_bytes(MoeImpl impl, std::size_t gemms);

// The routine of `impl` over `operands`, which must outlive it. The grouped routine uploads its
// tables for `sets` sets into `tables` (grown when short) on `stream` and waits: untimed, as
// the tables never change.
std::unique_ptr<ExpertRoutine> make_expert_routine(MoeImpl impl, const ExpertOperands& operands,
                                                   std::int64_t sets, DeviceBuffer& tables,
                                                   cudaStream_t stream);

}  // namespace opbench
