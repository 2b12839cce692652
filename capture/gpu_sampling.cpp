#include "capture/gpu_sampling.hpp"

#include <array>
#include <atomic>

namespace opbench::capture {
namespace {

// splitmix64's finaliser: a well-mixed 64-bit value from the shape's hash and the window.
std::uint64_t scramble(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Calls counted per shape: a fixed table of counters that a hook updates without a lock (a job
// with more distinct GPU shapes than counters shares some, as the header says).
constexpr std::size_t kCounters = 4096;
std::array<std::atomic<std::uint64_t>, kCounters>& counters() {
  // never destroyed: hooks run during exit
  static auto* c = new std::array<std::atomic<std::uint64_t>, kCounters>();
  return *c;
}

GpuSampling& setting() {
  static GpuSampling s;
  return s;
}

}  // namespace

bool sampled_call(const GpuSampling& s, std::uint64_t hash, std::uint64_t index) {
  if (s.one_in <= 1 || index < s.time_first) return true;
  const std::uint64_t after = index - s.time_first;
  const std::uint64_t window = after / s.one_in;
  return after % s.one_in == scramble(hash ^ scramble(window)) % s.one_in;
}

void set_gpu_sampling(const GpuSampling& s) {
  setting() = s;
}

const GpuSampling& gpu_sampling() {
  return setting();
}

bool sample_gpu_call(const CaptureKey& key) {
  const GpuSampling& s = gpu_sampling();
  if (s.one_in <= 1) return true;
  const std::uint64_t hash = CaptureKeyHash{}(key);
  const std::uint64_t index = counters()[hash % kCounters].fetch_add(1, std::memory_order_relaxed);
  return sampled_call(s, hash, index);
}

}  // namespace opbench::capture
