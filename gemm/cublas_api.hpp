#pragma once
// cuBLAS and cuBLASLt, opened on first use (dlopen) instead of linked. Linked, they were loaded at
// every start of bench_gemm and bench_step: cuBLASLt's initialisers take 0.4 s, and the two
// libraries 215 MB of memory, which a CPU run, --help or a bad flag never needs. The functions
// opbench calls are listed once here; each member has the type of the library's own declaration
// (decltype), so a signature the headers change fails to compile instead of calling wrongly.
//
// Call sites read cublaslt().cublasLtMatmul(...) and cublas().cublasCreate(...): cublas_v2.h's
// macros (cublasCreate -> cublasCreate_v2) rename the member and the list's entry alike.
#include <cublasLt.h>
#include <cublas_v2.h>

#include <string>
#include <type_traits>

namespace opbench {

// clang-format off
#define OPBENCH_CUBLASLT_CALLS(X)                                                                 \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetVersion) X(cublasLtGetStatusName)             \
  X(cublasLtGetStatusString) X(cublasLtMatmul) X(cublasLtMatmulDescCreate)                        \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatmulDescGetAttribute) \
  X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute) \
  X(cublasLtMatrixLayoutGetAttribute) X(cublasLtMatmulPreferenceCreate)                           \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)                      \
  X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmulAlgoConfigGetAttribute)

// The names the library exports (the _v2 ones behind cublas_v2.h's macros).
#define OPBENCH_CUBLAS_CALLS(X)                                                                   \
  X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasSetStream_v2) X(cublasSetWorkspace_v2)           \
  X(cublasSetPointerMode_v2) X(cublasGetProperty) X(cublasGetStatusName)                          \
  X(cublasGetStatusString) X(cublasGemmGroupedBatchedEx)
// clang-format on
// cublas_api.h overloads these in C++ (inline ones taking a cudaDataType compute type, for older
// code), so decltype cannot name them: CublasCalls spells their C signatures, checked below.
#define OPBENCH_CUBLAS_OVERLOADED_CALLS(X) X(cublasGemmEx) X(cublasGemmStridedBatchedEx)

#define OPBENCH_CUBLAS_MEMBER(f) decltype(&::f) f = nullptr;
struct CublasLtCalls {
  OPBENCH_CUBLASLT_CALLS(OPBENCH_CUBLAS_MEMBER)
};
struct CublasCalls {
  OPBENCH_CUBLAS_CALLS(OPBENCH_CUBLAS_MEMBER)
  cublasStatus_t (*cublasGemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                 int, const void*, const void*, cudaDataType, int, const void*,
                                 cudaDataType, int, const void*, void*, cudaDataType, int,
                                 cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  cublasStatus_t (*cublasGemmStridedBatchedEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                               int, int, int, const void*, const void*,
                                               cudaDataType, int, long long int, const void*,
                                               cudaDataType, int, long long int, const void*, void*,
                                               cudaDataType, int, long long int, int,
                                               cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
};
#undef OPBENCH_CUBLAS_MEMBER
// Each spelled signature is one of the header's own (an unevaluated cast: nothing is linked).
#define OPBENCH_CUBLAS_SIGNATURE_CHECK(f)                                             \
  static_assert(std::is_same_v<decltype(static_cast<decltype(CublasCalls::f)>(&::f)), \
                               decltype(CublasCalls::f)>,                             \
                #f " is not the library's signature");
OPBENCH_CUBLAS_OVERLOADED_CALLS(OPBENCH_CUBLAS_SIGNATURE_CHECK)
#undef OPBENCH_CUBLAS_SIGNATURE_CHECK

// The file names opened: the sonames of the cuBLAS major version compiled against
// ("libcublasLt.so.13"), found the way the dynamic linker finds linked libraries (the binary's
// RUNPATH, LD_LIBRARY_PATH, the system's cache).
std::string cublaslt_library_name();
std::string cublas_library_name();
// dlopen(name), or a run_failure naming the library, the loader's reason and the remedy.
void* open_cuda_library(const std::string& name);

// The library's functions, opened on the first call (thread-safe). Each is the first definition
// in the process's global scope, as a linked call binds: a library preloaded in front of cuBLAS
// (the capture, LD_PRELOAD) still sees bench_gemm's calls. A library or a function that cannot
// be found is a run_failure naming it and the loader's reason; the next call tries again.
const CublasLtCalls& cublaslt();
const CublasCalls& cublas();

}  // namespace opbench
