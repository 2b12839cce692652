// A stand-in for cuBLAS, cuBLASLt's cublasLtMatmul, NCCL and the few CUDA driver calls the
// capture makes, for testing the capture's GPU hooks on a machine without a GPU (test-only: never
// built into the product). Every "GPU operation" here runs on the host for kStandinUs
// microseconds, and its events carry host timestamps, so the capture's event timing reads back
// at least that much. It exports the real libraries' symbols with their real signatures (the
// toolkit's headers declare them), which is all the capture sees of them.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <nccl.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

namespace {
constexpr int kStandinUs = 300;

double now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

void work() {
  const double until = now_ms() + kStandinUs / 1e3;
  while (now_ms() < until) {
  }
}

struct FakeEvent {
  double at_ms = 0;
  int queries = 0;
};
int fake_context = 1;
int fake_handle = 2;
int fake_comm = 3;
}  // namespace

#define STANDIN extern "C" __attribute__((visibility("default")))

// ---- CUDA driver: events carry host timestamps; the first query of an event says not ready
STANDIN int cuCtxGetCurrent(void** ctx) {
  *ctx = &fake_context;
  return 0;
}
STANDIN int cuCtxSetCurrent(void*) {
  return 0;
}
STANDIN int cuEventCreate(void** e, unsigned) {
  *e = new FakeEvent();
  return 0;
}
STANDIN int cuEventRecord(void* e, void*) {
  static_cast<FakeEvent*>(e)->at_ms = now_ms();
  static_cast<FakeEvent*>(e)->queries = 0;
  return 0;
}
STANDIN int cuEventQuery(void* e) {
  return static_cast<FakeEvent*>(e)->queries++ == 0 ? 600 : 0;
}
STANDIN int cuEventElapsedTime_v2(float* ms, void* a, void* b) {
  *ms = static_cast<float>(static_cast<FakeEvent*>(b)->at_ms - static_cast<FakeEvent*>(a)->at_ms);
  return 0;
}

// ---- cuBLAS
STANDIN cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  *h = reinterpret_cast<cublasHandle_t>(&fake_handle);
  return CUBLAS_STATUS_SUCCESS;
}
STANDIN cublasStatus_t cublasGetStream_v2(cublasHandle_t, cudaStream_t* s) {
  *s = nullptr;
  return CUBLAS_STATUS_SUCCESS;
}
STANDIN cublasStatus_t cublasSgemm_v2(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                      int, int, const float*, const float*, int, const float*, int,
                                      const float*, float*, int) {
  work();
  return CUBLAS_STATUS_SUCCESS;
}
STANDIN cublasStatus_t cublasHgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                   int, const __half*, const __half*, int, const __half*, int,
                                   const __half*, __half*, int) {
  work();
  return CUBLAS_STATUS_SUCCESS;
}
// As the real cuBLAS does for many GEMMs, GemmEx runs cublasLtMatmul inside (through the
// dynamic symbol, so the capture's hook sees it, nested).
STANDIN cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t) {
  return cublasLtMatmul(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, nullptr);
}
STANDIN cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
    cudaDataType, int, long long int, const void*, cudaDataType, int, long long int, const void*,
    void*, cudaDataType, int, long long int, int, cublasComputeType_t, cublasGemmAlgo_t) {
  work();
  return CUBLAS_STATUS_SUCCESS;
}
STANDIN cublasStatus_t cublasGemmBatchedEx(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                           int, int, int, const void*, const void* const[],
                                           cudaDataType, int, const void* const[], cudaDataType,
                                           int, const void*, void* const[], cudaDataType, int, int,
                                           cublasComputeType_t, cublasGemmAlgo_t) {
  work();
  return CUBLAS_STATUS_SUCCESS;
}
STANDIN cublasStatus_t cublasGemmGroupedBatchedEx(
    cublasHandle_t, const cublasOperation_t[], const cublasOperation_t[], const int[], const int[],
    const int[], const void*, const void* const[], cudaDataType_t, const int[], const void* const[],
    cudaDataType_t, const int[], const void*, void* const[], cudaDataType_t, const int[], int,
    const int[], cublasComputeType_t) {
  work();
  return CUBLAS_STATUS_SUCCESS;
}
// cuBLASLt: only the matmul is stood in; the descriptors are the real library's.
STANDIN cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*,
                                      const void*, cublasLtMatrixLayout_t, const void*,
                                      cublasLtMatrixLayout_t, const void*, const void*,
                                      cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t,
                                      const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t) {
  work();
  return CUBLAS_STATUS_SUCCESS;
}

// ---- NCCL: a communicator of 4 ranks
STANDIN ncclResult_t ncclCommCount(const ncclComm_t, int* n) {
  *n = 4;
  return ncclSuccess;
}
STANDIN ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                   ncclComm_t, cudaStream_t) {
  work();
  return ncclSuccess;
}
STANDIN ncclResult_t ncclAllGather(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                                   cudaStream_t) {
  work();
  return ncclSuccess;
}
STANDIN ncclResult_t ncclReduceScatter(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                       ncclComm_t, cudaStream_t) {
  work();
  return ncclSuccess;
}
STANDIN ncclResult_t ncclBroadcast(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                                   cudaStream_t) {
  work();
  return ncclSuccess;
}
// Inside a group NCCL only queues; the work happens at ncclGroupEnd.
int group_depth = 0;
STANDIN ncclResult_t ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  if (group_depth == 0) work();
  return ncclSuccess;
}
STANDIN ncclResult_t ncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  if (group_depth == 0) work();
  return ncclSuccess;
}
STANDIN ncclResult_t ncclGroupStart() {
  ++group_depth;
  return ncclSuccess;
}
STANDIN ncclResult_t ncclGroupEnd() {
  if (--group_depth == 0) work();
  return ncclSuccess;
}
STANDIN ncclComm_t standin_comm() {
  return reinterpret_cast<ncclComm_t>(&fake_comm);
}
