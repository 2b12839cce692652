#pragma once
// The naive CUDA reference for --check on the GPU: one warp per query row (or key row for
// dK/dV), accumulators in registers, fp32, no tiling, no shared memory — obviously right, and
// fast enough for S = 8192 checks. The per-row logic is reference_attention_rows.hpp, which the
// host tests run against the CPU's fp64 reference. Inputs are bf16 or fp16 in the (B, S, H, D)
// layout, head dims up to 256; outputs are fp32.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "attention/reference_attention_rows.hpp"
#include "common/dtype.hpp"

namespace opbench {

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
