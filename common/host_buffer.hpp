#pragma once
// Page-aligned host memory that is owned, and a deterministic uniform fill that matches the
// device fill element for element.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/dtype.hpp"
#include "common/uniform_value.hpp"

namespace opbench {

class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(std::size_t bytes);  // zero-filled, so every page is touched up front
  void* data() const { return data_.get(); }
  std::size_t bytes() const { return bytes_; }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> data_;
  std::size_t bytes_ = 0;
};

// Values uniform in [-1, 1) (uniform_value, the device fill's too), rounded to `t`; element i
// depends only on (seed, i).
void fill_uniform_host(void* data, std::size_t count, DType t, std::uint64_t seed);

}  // namespace opbench
