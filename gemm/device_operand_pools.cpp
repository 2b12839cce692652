#include "gemm/device_operand_pools.hpp"

#include "common/cuda/check.hpp"

namespace opbench {
namespace {

constexpr std::uint64_t kFillSeed = 20261121;

}  // namespace

void DeviceOperandPools::prepare(DType t, std::int64_t input_bytes, std::int64_t output_bytes,
                                 cudaStream_t stream) {
  if (static_cast<std::size_t>(input_bytes) > inputs_.bytes() || t != inputs_dtype_) {
    inputs_ = DeviceBuffer();  // free before allocating the larger pool
    inputs_ = DeviceBuffer(static_cast<std::size_t>(input_bytes));
    fill_uniform(inputs_.data(), inputs_.bytes() / dtype_size(t), t, kFillSeed, stream);
    inputs_dtype_ = t;
  }
  if (static_cast<std::size_t>(output_bytes) > outputs_.bytes()) {
    outputs_ = DeviceBuffer();
    outputs_ = DeviceBuffer(static_cast<std::size_t>(output_bytes));
    OPBENCH_CUDA_CHECK(cudaMemsetAsync(outputs_.data(), 0, outputs_.bytes(), stream));
  }
  OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace opbench
