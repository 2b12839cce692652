#pragma once
// The check pattern on device buffers (fill, poison, count wrong elements), in CUDA.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "collectives/pattern.hpp"
#include "common/dtype.hpp"

namespace opbench {

// data[offset + i] = pattern_input(spec, rank, i) for i < n.
void device_pattern_fill(void* data, DType t, std::int64_t n, std::int64_t offset,
                         const PatternSpec& spec, int rank, cudaStream_t stream);
void device_pattern_poison(void* data, DType t, std::int64_t n, cudaStream_t stream);
// Elements of data[0, n) that differ from pattern_expected; waits for the stream.
std::int64_t device_pattern_count_wrong(const void* data, DType t, std::int64_t n, CollOp op,
                                        const PatternSpec& spec, int rank, int root,
                                        std::int64_t count, cudaStream_t stream);

}  // namespace opbench
