#pragma once
// An attention implementation that can be measured: cuDNN SDPA on the GPU, blocked flash-style
// or the naive fp64 reference on the CPU.
#include <memory>
#include <optional>
#include <string>

#include "attention/attention_shape.hpp"
#include "common/backend.hpp"
#include "common/env.hpp"
#include "common/measure.hpp"
#include "common/record.hpp"

namespace opbench {

struct AttentionRunOptions {
  MeasureOptions measure;
  bool check = false;  // compare with the reference on a subset of heads
  std::int64_t check_heads = 4;
};

struct AttentionResult {
  Status status = Status::ok;
  std::string note;
  Measurement measurement;
  std::string engine;                 // what ran (cuDNN engine id, "blocked 128x128 tiles", ...)
  std::string cache = "hot";          // "flush": the GPU's L2 is flushed before each sample
  std::optional<double> max_abs_err;  // with check: the largest |result - reference|
  std::optional<double> tolerance;
};

class AttentionProvider {
 public:
  virtual ~AttentionProvider() = default;
  virtual std::string name() const = 0;
  virtual std::string backend() const = 0;
  virtual std::string device() const = 0;
  virtual std::optional<std::string> unsupported(const AttentionShape& s,
                                                 AttentionPass p) const = 0;
  virtual AttentionResult run(const AttentionShape& s, AttentionPass p,
                              const AttentionRunOptions& o) = 0;
  virtual void describe(Environment& env) const = 0;
};

// The provider `name` of `backend` (empty: the backend's default; attention_providers.cpp lists
// them), or bad_input naming --provider.
std::unique_ptr<AttentionProvider> make_attention_provider(Backend backend, const std::string& name,
                                                           int device);
// "blocked" (default) or "reference" (the naive fp64 loops, for comparison).
std::unique_ptr<AttentionProvider> make_cpu_attention_provider(const std::string& which);
#ifdef OPBENCH_HAVE_CUDA
// cuDNN SDPA (backend API) on GPU `device`.
std::unique_ptr<AttentionProvider> make_cudnn_attention_provider(int device);
#endif

}  // namespace opbench
