#include "common/host_buffer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/error.hpp"

namespace opbench {
namespace {

constexpr std::size_t kAlignment = 4096;

}  // namespace

void HostBuffer::Free::operator()(void* p) const {
  std::free(p);
}

HostBuffer::HostBuffer(std::size_t bytes) : bytes_(bytes) {
  std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = rounded ? std::aligned_alloc(kAlignment, rounded) : nullptr;
  if (rounded && !p)
    throw run_failure(fmt::format("cannot allocate {} bytes of host memory", bytes));
  if (p) std::memset(p, 0, rounded);
  data_.reset(p);
}

namespace {

void fill_range(void* data, std::size_t begin, std::size_t end, DType t, std::uint64_t seed) {
  switch (t) {
    case DType::fp64: {
      auto p = static_cast<double*>(data);
      for (std::size_t i = begin; i < end; ++i)
        p[i] = uniform_value(seed, i);
      return;
    }
    case DType::fp32:
    case DType::tf32: {
      auto p = static_cast<float*>(data);
      for (std::size_t i = begin; i < end; ++i)
        p[i] = uniform_value(seed, i);
      return;
    }
    case DType::bf16:
    case DType::fp16: {
      auto p = static_cast<std::uint16_t*>(data);
      for (std::size_t i = begin; i < end; ++i)
        p[i] = t == DType::bf16 ? float_to_bf16(uniform_value(seed, i))
                                : float_to_fp16(uniform_value(seed, i));
      return;
    }
    default:
      throw std::logic_error(fmt::format("fill_uniform_host: no host fill for {}", dtype_name(t)));
  }
}

}  // namespace

void fill_uniform_host(void* data, std::size_t count, DType t, std::uint64_t seed) {
  // Each element depends only on (seed, index), so slices fill in parallel to the same values;
  // gigabyte pools (the CPU rotates over 4x its cache) would otherwise take seconds per case.
  constexpr std::size_t kMinPerThread = 1 << 20;
  const std::size_t threads = std::clamp<std::size_t>(
      count / kMinPerThread, 1, std::max(1u, std::thread::hardware_concurrency()));
  if (threads == 1) return fill_range(data, 0, count, t, seed);
  fill_range(data, 0, 0, t, seed);  // rejects an unsupported type here, not inside a thread
  std::vector<std::thread> pool;
  const std::size_t slice = (count + threads - 1) / threads;
  for (std::size_t i = 0; i < threads; ++i) {
    const std::size_t begin = i * slice, end = std::min(count, begin + slice);
    if (begin < end) pool.emplace_back(fill_range, data, begin, end, t, seed);
  }
  for (auto& th : pool)
    th.join();
}

}  // namespace opbench
