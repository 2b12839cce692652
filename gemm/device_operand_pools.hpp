#pragma once
// The GPU providers' operand pools: inputs (filled once with random values of the dtype on the
// device, reused while large enough) and outputs (zeroed, so nothing uninitialised is read back).
// The device twin of HostOperandPools (cblas_gemm.hpp).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/cuda/buffer.hpp"
#include "common/dtype.hpp"

namespace opbench {

class DeviceOperandPools {
 public:
  // Grows the pools to at least these sizes (freeing the smaller ones first) and waits for the
  // fill on `stream`.
  void prepare(DType t, std::int64_t input_bytes, std::int64_t output_bytes, cudaStream_t stream);
  unsigned char* inputs() const { return static_cast<unsigned char*>(inputs_.data()); }
  unsigned char* outputs() const { return static_cast<unsigned char*>(outputs_.data()); }
  const DeviceBuffer& input_buffer() const { return inputs_; }
  const DeviceBuffer& output_buffer() const { return outputs_; }
  // What the pools hold: freed before larger ones are allocated, so part of the next budget.
  std::uint64_t held_bytes() const { return inputs_.bytes() + outputs_.bytes(); }

 private:
  DeviceBuffer inputs_, outputs_;
  DType inputs_dtype_ = DType::int8;  // nothing filled yet
};

}  // namespace opbench
