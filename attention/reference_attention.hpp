#pragma once
// The naive CUDA reference for --check on the GPU: one thread per query row (or key row for
// dK/dV), fp32 accumulation, no tiling, no shared memory — slow and obviously right. Inputs
// are bf16 or fp16 in the (B, S, H, D) layout; outputs are fp32.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/dtype.hpp"

namespace opbench {

// The facts of an AttentionShape the kernels need (this header is compiled by nvcc as C++17).
struct AttentionDims {
  std::int64_t b = 1, sq = 0, skv = 0, hq = 0, hkv = 0, dqk = 0, dv = 0;
  bool causal = true;
  float scale = 1;
  DType dtype = DType::bf16;
};

// O [B, Sq, Hq, Dv] and lse [B, Hq, Sq] (the log-sum-exp of each scaled score row).
void reference_attention_forward(const AttentionDims& s, const void* q, const void* k,
                                 const void* v, float* o, float* lse, cudaStream_t stream);

// dQ, dK, dV (fp32, the layouts of Q, K, V) from the forward's O (in the input type) and lse.
// `delta` is scratch of B·Hq·Sq floats.
void reference_attention_backward(const AttentionDims& s, const void* q, const void* k,
                                  const void* v, const void* o, const float* lse, const void* dout,
                                  float* dq, float* dk, float* dv, float* delta,
                                  cudaStream_t stream);

// Rounds `count` floats to the input type (bf16 or fp16) into `out`.
void convert_floats(const float* in, void* out, std::int64_t count, DType t, cudaStream_t stream);

struct DeviceComparison {
  double max_abs_err = 0;  // max |got - want|; +inf when `got` holds a NaN
  double max_abs_ref = 0;  // max |want|
};
// Compares `count` elements of `got` (bf16 or fp16) with the fp32 `want`.
DeviceComparison compare_with_reference(const void* got, const float* want, std::int64_t count,
                                        DType t, cudaStream_t stream);

}  // namespace opbench
