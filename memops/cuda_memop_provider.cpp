// The memory-bound operators on the GPU: our kernels (memops/cuda_memops_*.cu) and the copies
// (cudaMemcpyAsync between device memory, pinned and pageable host memory; cudaMemcpyPeerAsync
// between GPUs), timed with CUDA events under the shared stop rule on operand sets rotated over
// 4x the L2 cache (or after an L2 flush with --cold). --check runs the operator once more on
// fresh inputs, copies the results back and compares them with the fp64 reference
// (memops/reference_memops), or byte for byte for the copies.
//
// The inputs follow the CPU provider's conventions (memops/cpu_provider.cpp): the same seeds and
// spreads (uniform in [-1, 1), [-4, 4) where exp bends), ids and targets uniform in their range,
// AdamW at Llama 2's hyper-parameters at step 10, an fp8 scale of 448/4, and the backward's saved
// inputs computed by the forward from the same x.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/cuda/buffer.hpp"
#include "common/cuda/check.hpp"
#include "common/cuda/device.hpp"
#include "common/cuda/device_scope.hpp"
#include "common/cuda/measure_sm_clock.hpp"
#include "common/cuda/stream_blocker.hpp"
#include "common/dtype.hpp"
#include "common/error.hpp"
#include "common/host_buffer.hpp"
#include "common/rotation.hpp"
#include "common/text.hpp"
#include "memops/cpu_memops.hpp"
#include "memops/cuda_memops.cuh"
#include "memops/elementwise.hpp"
#include "memops/memop_check.hpp"
#include "memops/memop_inputs.hpp"
#include "memops/memop_operands.hpp"
#include "memops/memop_provider.hpp"
#include "memops/memop_spec.hpp"

namespace opbench {
namespace {

namespace cm = cuda_memops;

using namespace memop_inputs;  // the same inputs as the CPU provider

// The device memory the operand sets may take (common/rotation: one budget for every provider).
std::int64_t device_budget(int device) {
  return static_cast<std::int64_t>(
      std::min<std::uint64_t>(device_memory_budget(cuda_free_memory_bytes(device)), INT64_MAX));
}

// Device memory of one GPU, allocated and freed with that GPU current.
class GpuBuffer {
 public:
  GpuBuffer(int device, std::size_t bytes) : device_(device) {
    DeviceScope on(device);
    buffer_ = DeviceBuffer(bytes);
  }
  // Never throws: where the GPU cannot be made current the memory is freed all the same.
  ~GpuBuffer() {
    if (!buffer_.data()) return;
    DeviceScope on(device_, std::nothrow);
    buffer_ = DeviceBuffer();
  }
  GpuBuffer(GpuBuffer&&) noexcept = default;
  GpuBuffer& operator=(GpuBuffer&&) = delete;
  GpuBuffer(const GpuBuffer&) = delete;
  GpuBuffer& operator=(const GpuBuffer&) = delete;

  unsigned char* data() const { return static_cast<unsigned char*>(buffer_.data()); }
  int device() const { return device_; }

 private:
  int device_;
  DeviceBuffer buffer_;
};

// Page-locked host memory (cudaMallocHost): the copy engines read and write it directly.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes) {
    void* p = nullptr;
    const cudaError_t err = cudaMallocHost(&p, bytes);
    if (err != cudaSuccess) {
      cudaGetLastError();
      throw run_failure(fmt::format("cudaMallocHost of {} failed: {}",
                                    human_bytes(static_cast<double>(bytes)),
                                    cudaGetErrorString(err)));
    }
    data_ = static_cast<unsigned char*>(p);
  }
  ~PinnedBuffer() {
    if (data_) cudaFreeHost(data_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  unsigned char* data() const { return data_; }

 private:
  unsigned char* data_ = nullptr;
};

// ---- operands ------------------------------------------------------------------------------

// An operand of the catalogue (memops/memop_operands) or a workspace, on the device: every
// set's copy, `stride` bytes apart (one copy when shared).
struct Operand : OperandSpec {
  explicit Operand(OperandSpec spec) : OperandSpec(std::move(spec)) {}
  DeviceBuffer buffer;
  std::int64_t stride = 0;

  std::int64_t padded() const { return align_up(bytes(), kAlign); }
  unsigned char* raw(std::int64_t set) const {
    return static_cast<unsigned char*>(buffer.data()) + (shared ? 0 : set * stride);
  }
  template <class T>
  T* at(std::int64_t set) const {
    return reinterpret_cast<T*>(raw(set));
  }
};

// What the operator of `c` reads and writes: the catalogue (memops/memop_operands), whose order
// and seeds the CPU provider keeps too, so an fp32 case sees the CPU's very inputs; then the
// workspaces of our kernels.
std::vector<Operand> operands_of(const MemopCase& c, int sm_count) {
  if (is_copy(c.op) && c.op != MemOp::copy)
    throw std::logic_error("memops: no CUDA operands for " + memop_name(c.op));
  std::vector<Operand> v;
  for (OperandSpec& spec : memop_operands(c))
    v.emplace_back(std::move(spec));
  const bool bwd = c.pass == MemPass::bwd;
  if (bwd && (c.op == MemOp::rmsnorm || c.op == MemOp::layernorm))
    v.emplace_back(
        workspace_operand(cm::norm_bwd_workspace_floats(c.dtype, c.rows, c.cols, sm_count) * 4));
  if (bwd && c.op == MemOp::embedding)
    if (const std::int64_t ws = cm::embedding_bwd_workspace_bytes(c.dtype, c.rows, c.cols, c.vocab))
      v.emplace_back(workspace_operand(ws));
  if (const std::int64_t ws = cm::row_stats_workspace_bytes(c.dtype, c.op, c.pass, c.rows, c.cols))
    v.emplace_back(workspace_operand(ws));
  return v;
}

// A case's operands on the device: every set's copies, filled on the device.
class CaseOperands {
 public:
  CaseOperands(const MemopCase& c, std::vector<Operand> operands, const cm::Launch& device)
      : c_(c), ops_(std::move(operands)), device_(device) {}

  Operand& get(const std::string& name) {
    for (auto& o : ops_)
      if (o.name == name) return o;
    throw std::logic_error("memops: no operand " + name);
  }
  bool has(const std::string& name) const {
    return std::any_of(ops_.begin(), ops_.end(), [&](const Operand& o) { return o.name == name; });
  }
  template <class T>
  T* at(const std::string& name, std::int64_t set) {
    return get(name).at<T>(set);
  }
  std::vector<Operand>& all() { return ops_; }
  std::int64_t sets() const { return sets_; }

  // Set s's operands by name, for the dispatch (enqueue).
  SetAddresses<std::vector<Operand>> addresses(std::int64_t s) const { return {ops_, s}; }

  // The bytes of one set, of what it touches, and of the shared operands.
  OperandFootprint footprint() const { return operand_footprint(ops_); }

  void allocate(std::int64_t sets) {
    sets_ = sets;
    for (auto& o : ops_) {
      o.stride = o.shared ? 0 : o.padded();
      o.buffer = DeviceBuffer(static_cast<std::size_t>(o.shared ? o.padded() : sets * o.stride));
    }
  }

  // Fills set 0 and copies it to the other sets (the ids drawn anew for each).
  void fill_all(cudaStream_t stream) {
    for (auto& o : ops_)
      if (o.shared && o.fill == OperandFill::uniform) fill_uniform_scaled(o, 0, stream);
    fill_set(0, stream);
    for (std::int64_t s = 1; s < sets_; ++s)
      for (auto& o : ops_) {
        if (o.shared || o.fill == OperandFill::none || o.fill == OperandFill::scratch) continue;
        if (o.fill == OperandFill::ids)
          cm::fill_indices(o.at<std::int64_t>(s), o.count, o.seed, s, c_.vocab, stream);
        else
          OPBENCH_CUDA_CHECK(cudaMemcpyAsync(o.raw(s), o.raw(0),
                                             static_cast<std::size_t>(o.bytes()),
                                             cudaMemcpyDeviceToDevice, stream));
      }
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  // Fills the inputs of one set (again, for the check of an operator that updates them).
  void fill_set(std::int64_t set, cudaStream_t stream) {
    for (auto& o : ops_) {
      if (o.shared) continue;
      switch (o.fill) {
        case OperandFill::uniform:
          fill_uniform_scaled(o, set, stream);
          break;
        case OperandFill::ids:
          cm::fill_indices(o.at<std::int64_t>(set), o.count, o.seed, set, c_.vocab, stream);
          break;
        case OperandFill::targets:
          cm::fill_indices(o.at<std::int64_t>(set), o.count, o.seed, set, c_.cols, stream);
          break;
        case OperandFill::fp8_scale:
          OPBENCH_CUDA_CHECK(cudaMemcpyAsync(o.raw(set), &kFp8Scale, sizeof(float),
                                             cudaMemcpyHostToDevice, stream));
          break;
        default:
          break;
      }
    }
    derive(set, stream);
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

 private:
  void fill_uniform_scaled(Operand& o, std::int64_t set, cudaStream_t stream) {
    fill_uniform(o.raw(set), static_cast<std::size_t>(o.count), o.type, o.seed, stream);
    if (o.scale != 1.0f) cm::scale_elements(o.type, o.raw(set), o.count, o.scale, stream);
  }

  // The saved inputs of a backward come from our forward on this set's x, as in training (the
  // backward's dx serves as the forward's y meanwhile); rope's tables are the CPU's, uploaded;
  // AdamW's v follows m as on the CPU (memop_inputs::adamw_second_moment).
  void derive(std::int64_t set, cudaStream_t stream) {
    const std::int64_t rows = c_.rows, cols = c_.cols;
    const DType t = c_.dtype;
    const cm::Launch l{stream, device_.sm_count, nullptr, device_.cc_major};
    if (c_.op == MemOp::adamw || c_.op == MemOp::adamw_bf16) {
      cm::derive_second_moment(at<float>("m", set), at<float>("v", set), c_.elements(), stream);
    } else if (c_.op == MemOp::rope) {
      const std::size_t table = static_cast<std::size_t>(rows * (c_.head_dim / 2));
      std::vector<float> cos(table), sin(table);
      cpu_memops::rope_tables(cos.data(), sin.data(), rows, c_.head_dim);
      OPBENCH_CUDA_CHECK(cudaMemcpyAsync(get("cos").raw(set), cos.data(), table * sizeof(float),
                                         cudaMemcpyHostToDevice, stream));
      OPBENCH_CUDA_CHECK(cudaMemcpyAsync(get("sin").raw(set), sin.data(), table * sizeof(float),
                                         cudaMemcpyHostToDevice, stream));
      OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));  // before the vectors go
    } else if (c_.pass != MemPass::bwd) {
      return;
    } else if (c_.op == MemOp::rmsnorm) {
      cm::rmsnorm_fwd(t, get("x").raw(set), get("w").raw(set), get("dx").raw(set),
                      at<float>("rstd", set), rows, cols, l);
    } else if (c_.op == MemOp::layernorm) {
      // The bias does not touch the statistics: w stands in for it.
      cm::layernorm_fwd(t, get("x").raw(set), get("w").raw(set), get("w").raw(set),
                        get("dx").raw(set), at<float>("mean", set), at<float>("rstd", set), rows,
                        cols, l);
    } else if (c_.op == MemOp::softmax) {
      // y is the softmax of other logits (uniform in [-4, 4), the CPU's seed for them).
      void* logits = get("dx").raw(set);
      fill_uniform(logits, static_cast<std::size_t>(c_.elements()), t, kSeed - 1, stream);
      cm::scale_elements(t, logits, c_.elements(), 4.0f, stream);
      cm::softmax_fwd(t, logits, get("y").raw(set), workspace(), rows, cols, l);
    }
  }

  // The case's workspace (one for every set), or null.
  void* workspace() { return has("workspace") ? get("workspace").raw(0) : nullptr; }

  const MemopCase& c_;
  std::vector<Operand> ops_;
  cm::Launch device_;  // the device's SMs and compute capability
  std::int64_t sets_ = 1;
};

using Run = void (*)(const MemopCase& c, const OperandAddresses& a, const cm::Launch& l);

struct Dispatch {
  MemOp op;
  MemPass pass;
  Run run;
};

constexpr MemPass kFwd = MemPass::fwd, kBwd = MemPass::bwd;

// Each operator's kernel and the operands it binds, by name (memop_operands' lists and our
// kernels' workspaces): the CUDA backend's one dispatch.
const Dispatch kDispatch[] = {
    {MemOp::rmsnorm, kFwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::rmsnorm_fwd(c.dtype, a("x"), a("w"), a("y"), a.as<float>("rstd"), c.rows, c.cols, l);
     }},
    {MemOp::rmsnorm, kBwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::rmsnorm_bwd(c.dtype, a("dy"), a("x"), a("w"), a.as<float>("rstd"), a("dx"), a("dw"),
                       a.as<float>("workspace"), c.rows, c.cols, l);
     }},
    {MemOp::add_rmsnorm, kFwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::add_rmsnorm_fwd(c.dtype, a("x"), a("residual"), a("w"), a("y"), a("residual_out"),
                           a.as<float>("rstd"), c.rows, c.cols, l);
     }},
    {MemOp::layernorm, kFwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::layernorm_fwd(c.dtype, a("x"), a("w"), a("b"), a("y"), a.as<float>("mean"),
                         a.as<float>("rstd"), c.rows, c.cols, l);
     }},
    {MemOp::layernorm, kBwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::layernorm_bwd(c.dtype, a("dy"), a("x"), a("w"), a.as<float>("mean"), a.as<float>("rstd"),
                         a("dx"), a("dw"), a("db"), a.as<float>("workspace"), c.rows, c.cols, l);
     }},
    {MemOp::softmax, kFwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::softmax_fwd(c.dtype, a("x"), a("y"), a.find("workspace"), c.rows, c.cols, l);
     }},
    {MemOp::softmax, kBwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::softmax_bwd(c.dtype, a("y"), a("dy"), a("dx"), a.find("workspace"), c.rows, c.cols, l);
     }},
    {MemOp::rope, kFwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::rope(c.dtype, a("x"), a.as<float>("cos"), a.as<float>("sin"), a("y"), c.rows,
                c.heads + c.kv_heads, c.head_dim, false, l);
     }},
    {MemOp::rope, kBwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::rope(c.dtype, a("dy"), a.as<float>("cos"), a.as<float>("sin"), a("dx"), c.rows,
                c.heads + c.kv_heads, c.head_dim, true, l);
     }},
    {MemOp::cross_entropy, kFwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::cross_entropy(c.dtype, a("logits"), a.as<std::int64_t>("targets"), a("dlogits"),
                         a.as<float>("loss"), a.find("workspace"), c.rows, c.cols, l);
     }},
    {MemOp::embedding, kFwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::embedding_fwd(c.dtype, a("table"), a.as<std::int64_t>("ids"), a("y"), c.rows, c.cols,
                         c.vocab, l);
     }},
    {MemOp::embedding, kBwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::embedding_bwd(c.dtype, a("dy"), a.as<std::int64_t>("ids"), a("dtable"),
                         a.find("workspace"), c.rows, c.cols, c.vocab, l);
     }},
    {MemOp::adamw, kFwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::adamw(a.as<float>("param"), a.as<float>("grad"), a.as<float>("m"), a.as<float>("v"),
                 c.elements(), kAdamW, l);
     }},
    {MemOp::adamw_bf16, kFwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::adamw_bf16(a.as<float>("param"), a.as<std::uint16_t>("grad"), a.as<float>("m"),
                      a.as<float>("v"), a.as<std::uint16_t>("param_bf16"), c.elements(), kAdamW, l);
     }},
    {MemOp::cast_to_bf16, kFwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::cast_to_bf16(a.as<float>("x"), a.as<std::uint16_t>("y"), c.elements(), l);
     }},
    {MemOp::cast_to_fp32, kFwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::cast_to_fp32(a.as<std::uint16_t>("x"), a.as<float>("y"), c.elements(), l);
     }},
    {MemOp::fp8_quantize, kFwd,
     [](const MemopCase& c, const OperandAddresses& a, const cm::Launch& l) {
       cm::fp8_quantize(a.as<std::uint16_t>("x"), a.as<float>("scale"), a.as<std::uint8_t>("y"),
                        a.as<float>("amax"), c.elements(), l);
     }},
};

// Enqueues the case's operator on set `s`.
void enqueue(const MemopCase& c, CaseOperands& d, std::int64_t s, const cm::Launch& l) {
  const auto a = d.addresses(s);
  const bool elementwise = elementwise::visit_elementwise(c.op, c.pass, [&](auto kernel) {
    using F = decltype(kernel);
    cm::run_elementwise(c.dtype, c.op, c.pass,
                        elementwise::bind_elementwise<F, cm::ElementwisePointers>(
                            [&](const char* name) { return a(name); }),
                        c.elements(), l);
  });
  if (elementwise) return;
  for (const Dispatch& k : kDispatch)
    if (k.op == c.op && k.pass == c.pass) return k.run(c, a, l);
  throw std::logic_error("memops: the CUDA provider has no kernel for " + memop_name(c.op));
}

// ---- check ---------------------------------------------------------------------------------

// Elements [first, first + count) of an operand of set s, on the host.
template <class T>
std::vector<T> fetch(const Operand& o, std::int64_t s, std::int64_t first, std::int64_t count) {
  std::vector<T> host(static_cast<std::size_t>(count));
  const std::size_t size = dtype_size(o.type);
  if (sizeof(T) != size)
    throw std::logic_error("memops: fetch of " + o.name + " by the wrong size");
  if (count > 0)
    OPBENCH_CUDA_CHECK(cudaMemcpy(host.data(), o.raw(s) + first * static_cast<std::int64_t>(size),
                                  static_cast<std::size_t>(count) * size, cudaMemcpyDeviceToHost));
  return host;
}

// The same, decoded to float (exactly: fp32, bf16, fp16 and e4m3 all fit in fp32).
std::vector<float> fetch_floats(const Operand& o, std::int64_t s, std::int64_t first,
                                std::int64_t count) {
  std::vector<float> out(static_cast<std::size_t>(count));
  switch (o.type) {
    case DType::fp32:
      return fetch<float>(o, s, first, count);
    case DType::bf16:
    case DType::fp16: {
      const auto bits = fetch<std::uint16_t>(o, s, first, count);
      for (std::size_t i = 0; i < bits.size(); ++i)
        out[i] = o.type == DType::bf16 ? bf16_to_float(bits[i]) : fp16_to_float(bits[i]);
      return out;
    }
    case DType::fp8_e4m3: {
      const auto bits = fetch<std::uint8_t>(o, s, first, count);
      for (std::size_t i = 0; i < bits.size(); ++i)
        out[i] = fp8_e4m3_to_float(bits[i]);
      return out;
    }
    default:
      throw std::logic_error("memops: " + o.name + " is not a floating-point operand");
  }
}

// The check's reads of set s: fetched from the device block by block.
class DeviceReader final : public OperandReader {
 public:
  DeviceReader(CaseOperands& d, std::int64_t s) : d_(d), s_(s) {}
  std::vector<float> floats(const std::string& name, std::int64_t first,
                            std::int64_t count) override {
    return fetch_floats(d_.get(name), s_, first, count);
  }
  std::vector<std::int64_t> ids(const std::string& name, std::int64_t first,
                                std::int64_t count) override {
    return fetch<std::int64_t>(d_.get(name), s_, first, count);
  }
  std::vector<std::uint16_t> bits16(const std::string& name, std::int64_t first,
                                    std::int64_t count) override {
    return fetch<std::uint16_t>(d_.get(name), s_, first, count);
  }

 private:
  CaseOperands& d_;
  std::int64_t s_;
};

// Test only (--test-corrupt-result): the middle element of the case's first output, off by 1000
// (e4m3 saturates at 448), written back to the device before the check reads it.
void spoil_for_test(CaseOperands& d, std::int64_t s) {
  for (auto& o : d.all()) {
    if (!o.written()) continue;
    const std::int64_t i = o.count / 2;
    const std::size_t size = dtype_size(o.type);
    unsigned char* at = o.raw(s) + i * static_cast<std::int64_t>(size);
    unsigned char host[8] = {};
    OPBENCH_CUDA_CHECK(cudaMemcpy(host, at, size, cudaMemcpyDeviceToHost));
    if (o.type == DType::fp8_e4m3)
      host[0] = float_to_fp8_e4m3(fp8_e4m3_to_float(host[0]) + 1000.0f);
    else
      store_from_double(host, o.type, 0, element_as_double(host, o.type, 0) + 1000.0);
    OPBENCH_CUDA_CHECK(cudaMemcpy(at, host, size, cudaMemcpyHostToDevice));
    return;
  }
}

std::vector<unsigned char> device_bytes(const unsigned char* p, int device, std::size_t bytes) {
  DeviceScope on(device);
  std::vector<unsigned char> host(bytes);
  OPBENCH_CUDA_CHECK(cudaMemcpy(host.data(), p, bytes, cudaMemcpyDeviceToHost));
  return host;
}

// ---- the provider --------------------------------------------------------------------------

class CudaMemopProvider final : public MemopProvider {
 public:
  explicit CudaMemopProvider(int device) : device_(device) {
    OPBENCH_CUDA_CHECK(cudaGetDeviceCount(&device_count_));
    OPBENCH_CUDA_CHECK(cudaSetDevice(device));
    info_ = cuda_device_info(device);
    stream_ = stream_on(device);
  }
  ~CudaMemopProvider() override {
    flusher_.reset();
    for (auto& [device, stream] : streams_) {
      cudaSetDevice(device);
      cudaStreamDestroy(stream);
    }
    cudaSetDevice(device_);
  }

  std::string name() const override { return "cuda"; }
  std::string backend() const override { return "cuda"; }
  std::string device() const override { return info_.name; }
  void describe(Environment& env) const override { add_cuda_environment(env, device_); }

  std::optional<std::string> unsupported(const MemopCase& c) const override {
    if (!memop_accepts(c.op, c.dtype))
      return fmt::format("{} does not take {}", memop_name(c.op), dtype_name(c.dtype));
    if (c.op == MemOp::peer || c.op == MemOp::peer_all) {
      if (device_count_ < 2)
        return fmt::format("{} copies between GPUs: it needs at least 2, and {} is visible",
                           memop_name(c.op), device_count_);
      if (c.op == MemOp::peer) {
        if (c.src_device == c.dst_device)
          return fmt::format("peer: the source and destination are the same GPU ({})",
                             c.src_device);
        if (std::max(c.src_device, c.dst_device) >= device_count_ ||
            std::min(c.src_device, c.dst_device) < 0)
          return fmt::format("peer: gpu{} -> gpu{} with {} GPUs visible", c.src_device,
                             c.dst_device, device_count_);
      } else if (c.devices < 2 || c.devices > device_count_) {
        return fmt::format("peer_all over {} GPUs: {} are visible", c.devices, device_count_);
      }
    }
    if (is_copy(c.op)) return std::nullopt;
    const MemopSpec* spec = memop_spec(c.op);
    if (spec && spec->rows && c.cols > std::numeric_limits<int>::max())
      return fmt::format("{}: rows of {} elements exceed our kernels' 2^31 - 1", memop_name(c.op),
                         c.cols);
    if (const auto problem = memop_shape_problem(c)) return problem->why;
    if (c.op == MemOp::embedding && c.pass == MemPass::bwd &&
        c.rows >= std::numeric_limits<unsigned>::max())
      return "embedding backward: our kernel numbers tokens in 32 bits";
    return std::nullopt;
  }

  MemopResult run(const MemopCase& c, const MemopRunOptions& o) override {
    MemopResult r;
    OPBENCH_CUDA_CHECK(cudaSetDevice(device_));
    if (o.cold && !flusher_) flusher_ = std::make_unique<L2Flusher>(info_.l2_bytes);
    if (c.op == MemOp::peer || c.op == MemOp::peer_all) return run_peer(c, o);
    if (is_copy(c.op)) return run_local_copy(c, o);
    return run_kernel(c, o);
  }

 private:
  // The provider's stream on `device` (made on first use).
  cudaStream_t stream_on(int device) {
    auto it = streams_.find(device);
    if (it != streams_.end()) return it->second;
    DeviceScope on(device);
    cudaStream_t s = nullptr;
    OPBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    streams_.emplace(device, s);
    return s;
  }

  // The sets a case rotates over: 4x the L2 at least (one with --cold), within `budget` bytes
  // of device memory; nullopt with `r` a skipped row when not one set fits.
  std::optional<RotationPlan> plan_sets(std::int64_t set_bytes, std::int64_t touched_bytes,
                                        std::int64_t budget, const MemopRunOptions& o,
                                        MemopResult& r) const {
    return plan_or_skip(plan_operand_rotation(set_bytes, touched_bytes, o.cold, info_.l2_bytes,
                                              budget, "device memory"),
                        r);
  }

  // Samples `enqueue` on `stream` under the shared stop rule, each stream-blocked (the work is
  // all queued before any of it runs) between CUDA events, `prepare` before each outside the
  // timed region. `blocked` false: plain event pairs (a pageable copy may wait on the stream).
  Measurement measure_on(cudaStream_t stream, const MemopRunOptions& o,
                         const std::function<void()>& enqueue, const std::function<void()>& prepare,
                         bool blocked = true) {
    CudaEventTimer timer;
    sampler_.reset();  // each case tries stream-blocked samples again
    auto sample = [&] {
      return blocked ? sampler_.sample_us(stream, timer, enqueue)
                     : GpuSampler::unblocked_sample_us(stream, timer, enqueue);
    };
    return measure_with_sm_clock(stream, o.measure, sample, prepare);
  }

  void finish(MemopResult& r) const {
    append_note(r.note, throttle_note(r.measurement, info_.max_sm_clock_khz / 1e3));
    if (sampler_.fell_back()) append_note(r.note, GpuSampler::fallback_note());
  }

  // ---- our kernels ----

  // Where our kernels go: `stream` on this GPU (its SMs and compute capability), describing the
  // launch into `shape` when set.
  cm::Launch launch_on(cudaStream_t stream, std::string* shape) const {
    return cm::Launch{stream, info_.sm_count, shape, info_.cc_major};
  }

  MemopResult run_kernel(const MemopCase& c, const MemopRunOptions& o) {
    MemopResult r;
    CaseOperands d(c, operands_of(c, info_.sm_count), launch_on(stream_, nullptr));
    const OperandFootprint bytes = d.footprint();
    const std::int64_t flush = o.cold ? static_cast<std::int64_t>(2 * info_.l2_bytes) : 0;
    const auto plan =
        plan_sets(bytes.set, bytes.touched, device_budget(device_) - bytes.shared - flush, o, r);
    OPBENCH_CUDA_CHECK(cudaSetDevice(device_));
    if (!plan) return r;
    d.allocate(plan->sets);
    d.fill_all(stream_);

    std::int64_t set = 0;
    // The first run loads the module, untimed, and says what it launched.
    enqueue(c, d, set, launch_on(stream_, &r.impl));
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    auto prepare = [&] {
      set = (set + 1) % d.sets();
      if (o.cold) flusher_->flush(stream_);
    };
    r.measurement = measure_on(
        stream_, o, [&] { enqueue(c, d, set, launch_on(stream_, nullptr)); }, prepare);
    finish(r);
    if (o.check) check_kernel(c, d, o, r);
    return r;
  }

  void check_kernel(const MemopCase& c, CaseOperands& d, const MemopRunOptions& o, MemopResult& r) {
    const std::int64_t s = 0;
    // An operator that updates its inputs (AdamW) has stepped this set many times: give it its
    // inputs again, keep them for the reference, and step once more; every other operator
    // runs once more on set 0's inputs, which no run changes.
    std::vector<std::vector<float>> saved;
    for (const auto& op : d.all())
      if (op.in_place()) {
        d.fill_set(s, stream_);
        break;
      }
    for (const auto& op : d.all())
      if (op.in_place()) saved.push_back(fetch_floats(op, s, 0, op.count));
    enqueue(c, d, s, launch_on(stream_, nullptr));
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (o.corrupt_for_test) spoil_for_test(d, s);
    DeviceReader reader(d, s);
    summarize_checks(check_memop_outputs(c, reader, saved), memop_tolerance_rule(c), r);
  }

  // ---- copies on one GPU and over its host link ----

  MemopResult run_local_copy(const MemopCase& c, const MemopRunOptions& o) {
    MemopResult r;
    const std::int64_t bytes = c.copied_bytes();
    const std::int64_t padded = align_up(bytes, kAlign);
    const bool d2d = c.op == MemOp::copy;
    const bool to_device = c.op == MemOp::h2d || c.op == MemOp::h2d_pageable;
    const bool pageable = c.op == MemOp::h2d_pageable || c.op == MemOp::d2h_pageable;
    // Device memory rotates (source and destination for a device copy); the host side is one
    // buffer.
    const std::int64_t set_bytes = (d2d ? 2 : 1) * padded;
    const std::int64_t flush = o.cold ? static_cast<std::int64_t>(2 * info_.l2_bytes) : 0;
    const auto plan = plan_sets(set_bytes, set_bytes, device_budget(device_) - flush, o, r);
    OPBENCH_CUDA_CHECK(cudaSetDevice(device_));
    if (!plan) return r;
    const std::int64_t sets = plan->sets;
    DeviceBuffer dev(static_cast<std::size_t>(sets * padded));
    DeviceBuffer dev_dst(d2d ? static_cast<std::size_t>(sets * padded) : 0);
    std::unique_ptr<PinnedBuffer> pinned;
    std::unique_ptr<unsigned char[]> paged;
    unsigned char* host = nullptr;
    if (!d2d) {
      if (pageable) {
        paged.reset(new unsigned char[static_cast<std::size_t>(bytes)]);
        host = paged.get();
      } else {
        pinned = std::make_unique<PinnedBuffer>(static_cast<std::size_t>(bytes));
        host = pinned->data();
      }
    }
    auto dev_at = [&](std::int64_t s) {
      return static_cast<unsigned char*>(dev.data()) + s * padded;
    };
    auto dst_at = [&](std::int64_t s) {
      return static_cast<unsigned char*>(dev_dst.data()) + s * padded;
    };
    const auto count = static_cast<std::size_t>(c.elements());
    if (to_device) {
      fill_uniform_host(host, count, c.dtype, kSeed);  // the source; every set receives it
    } else {
      fill_uniform(dev.data(), count, c.dtype, kSeed, stream_);
      for (std::int64_t s = 1; s < sets; ++s)
        OPBENCH_CUDA_CHECK(cudaMemcpyAsync(dev_at(s), dev.data(), static_cast<std::size_t>(bytes),
                                           cudaMemcpyDeviceToDevice, stream_));
      OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }

    std::int64_t set = 0;
    const auto n = static_cast<std::size_t>(bytes);
    auto copy = [&](std::int64_t s) {
      if (d2d)
        OPBENCH_CUDA_CHECK(
            cudaMemcpyAsync(dst_at(s), dev_at(s), n, cudaMemcpyDeviceToDevice, stream_));
      else if (to_device)
        OPBENCH_CUDA_CHECK(cudaMemcpyAsync(dev_at(s), host, n, cudaMemcpyHostToDevice, stream_));
      else
        OPBENCH_CUDA_CHECK(cudaMemcpyAsync(host, dev_at(s), n, cudaMemcpyDeviceToHost, stream_));
    };
    copy(set);
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    auto prepare = [&] {
      set = (set + 1) % sets;
      if (o.cold) flusher_->flush(stream_);
    };
    // A copy from or to pageable memory goes through the driver's pinned staging buffers, and
    // cudaMemcpyAsync may then synchronize with the stream before it returns (CUDA Runtime API,
    // "API synchronization behavior"): a stream held by the blocker would never drain, so those
    // samples are plain event pairs, and the time includes the driver's staging.
    r.measurement = measure_on(
        stream_, o, [&] { copy(set); }, prepare, !pageable);
    const char* kind = d2d ? "device to device" : to_device ? "host to device" : "device to host";
    const char* host_kind = d2d        ? ""
                            : pageable ? ", pageable host memory (new[]) staged by the driver "
                                         "through pinned buffers"
                                       : ", pinned host memory (cudaMallocHost)";
    r.impl = fmt::format("cudaMemcpyAsync {} of {}{}", kind,
                         human_bytes(static_cast<double>(bytes)), host_kind);
    if (pageable)
      r.note =
          "pageable: timed with plain CUDA events, not stream-blocked (the copy may wait on "
          "the stream); includes the driver's staging";
    finish(r);
    if (o.check) {
      copy(0);
      OPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
      std::vector<unsigned char> want, got;
      if (d2d) {
        want = device_bytes(dev_at(0), device_, n);
        got = device_bytes(dst_at(0), device_, n);
      } else if (to_device) {
        want.assign(host, host + n);
        got = device_bytes(dev_at(0), device_, n);
      } else {
        want = device_bytes(dev_at(0), device_, n);
        got.assign(host, host + n);
      }
      if (o.corrupt_for_test) spoil_bytes(got, c.dtype);
      summarize_checks({compare_bytes("dst", want.data(), got.data(), n, c.dtype, c.cols)},
                       "byte for byte", r);
    }
    return r;
  }

  // Test only: the middle element of a copy's result, off by 1000.
  static void spoil_bytes(std::vector<unsigned char>& bytes, DType t) {
    const std::size_t i = bytes.size() / dtype_size(t) / 2;
    store_from_double(bytes.data(), t, i, element_as_double(bytes.data(), t, i) + 1000.0);
  }

  // ---- copies between GPUs ----

  // Lets `a` and `b` read and write each other's memory where the topology allows it, both ways
  // as nvbandwidth does for its device-to-device copies (cudaDeviceEnablePeerAccess is one-way,
  // and returns cudaErrorPeerAccessAlreadyEnabled the second time: CUDA Runtime API, "Peer Device
  // Memory Access"). Without it cudaMemcpyPeerAsync still copies, but staged through host
  // memory (CUDA C++ Programming Guide, "Peer-to-Peer Memory Copy"): the note says so.
  void enable_peer(int a, int b, std::string& note) {
    for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
      int can = 0;
      OPBENCH_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, from, to));
      if (!can) {
        append_note(note, fmt::format("gpu{} cannot access gpu{} directly: the copy is staged "
                                      "through host memory",
                                      from, to));
        continue;
      }
      DeviceScope on(from);
      const cudaError_t err = cudaDeviceEnablePeerAccess(to, 0);
      if (err == cudaErrorPeerAccessAlreadyEnabled)
        cudaGetLastError();  // clear it: not a failure
      else if (err != cudaSuccess)
        throw_cuda_error(err, "cudaDeviceEnablePeerAccess", __FILE__, __LINE__);
    }
  }

  using GpuPairs = std::vector<std::pair<int, int>>;  // {source, destination}

  // The pairs of a case: gpu i sends to gpu (i + 1) % devices at once (peer_all), or the one pair.
  static GpuPairs peer_pairs(const MemopCase& c) {
    if (c.op != MemOp::peer_all) return {{c.src_device, c.dst_device}};
    GpuPairs pairs;
    for (int i = 0; i < c.devices; ++i)
      pairs.emplace_back(i, (i + 1) % c.devices);
    return pairs;
  }

  // Every GPU holds a source (and receives a destination) per set of each pair it is in: the
  // sets fit the tightest, less the flush with --cold.
  std::int64_t peer_budget(const GpuPairs& pairs, bool cold) const {
    std::int64_t budget = std::numeric_limits<std::int64_t>::max();
    std::map<int, int> buffers_on;
    for (const auto& [src, dst] : pairs) {
      ++buffers_on[src];
      ++buffers_on[dst];
    }
    for (const auto& [dev, count] : buffers_on)
      budget = std::min(budget, device_budget(dev) / count);
    if (cold) budget -= static_cast<std::int64_t>(2 * info_.l2_bytes);
    return budget;
  }

  // The copies of every pair, `sets` sets of `bytes` (`padded` apart), the sources filled. peer:
  // the source GPU's stream is the timed one. peer_all: the provider's GPU forks every pair's
  // stream off its own (cudaStreamWaitEvent waits across GPUs; an event and the stream it is
  // recorded on must share a GPU, and so must the two events cudaEventElapsedTime compares: CUDA
  // C++ Programming Guide, "Stream and Event Behavior") and joins them back, so its events span
  // the first copy's start to the last one's end.
  class PeerCopies {
   public:
    PeerCopies(CudaMemopProvider& gpu, const MemopCase& c, GpuPairs pairs, std::int64_t sets,
               std::int64_t padded)
        : gpu_(gpu),
          pairs_(std::move(pairs)),
          all_(c.op == MemOp::peer_all),
          bytes_(c.elements() * static_cast<std::int64_t>(dtype_size(c.dtype))),
          padded_(padded),
          timed_device_(all_ ? gpu.device_ : pairs_.front().first) {
      for (const auto& [src, dst] : pairs_) {
        sources_.emplace_back(src, static_cast<std::size_t>(sets * padded));
        destinations_.emplace_back(dst, static_cast<std::size_t>(sets * padded));
        DeviceScope on(src);
        const cudaStream_t s = gpu_.stream_on(src);
        fill_uniform(sources_.back().data(), static_cast<std::size_t>(c.elements()), c.dtype,
                     kSeed + static_cast<std::uint64_t>(src), s);
        for (std::int64_t k = 1; k < sets; ++k)
          OPBENCH_CUDA_CHECK(
              cudaMemcpyAsync(sources_.back().data() + k * padded, sources_.back().data(),
                              static_cast<std::size_t>(bytes_), cudaMemcpyDeviceToDevice, s));
        OPBENCH_CUDA_CHECK(cudaStreamSynchronize(s));
      }
      DeviceScope on(timed_device_);
      timed_ = gpu_.stream_on(timed_device_);
      OPBENCH_CUDA_CHECK(cudaEventCreateWithFlags(&events_.fork, cudaEventDisableTiming));
      events_.joins.assign(pairs_.size(), nullptr);
      for (std::size_t p = 0; p < pairs_.size() && all_; ++p) {
        DeviceScope at(pairs_[p].first);
        OPBENCH_CUDA_CHECK(cudaEventCreateWithFlags(&events_.joins[p], cudaEventDisableTiming));
      }
    }
    PeerCopies(const PeerCopies&) = delete;
    PeerCopies& operator=(const PeerCopies&) = delete;

    int timed_device() const { return timed_device_; }
    cudaStream_t timed_stream() const { return timed_; }

    // Every pair's copy of set k, on the timed stream's timeline.
    void enqueue(std::int64_t k) {
      if (!all_) return copy_pair(0, k);
      OPBENCH_CUDA_CHECK(cudaEventRecord(events_.fork, timed_));
      for (std::size_t p = 0; p < pairs_.size(); ++p) {
        const int src = pairs_[p].first;
        DeviceScope at(src);
        const cudaStream_t s = gpu_.stream_on(src);
        OPBENCH_CUDA_CHECK(cudaStreamWaitEvent(s, events_.fork, 0));
        copy_pair(p, k);
        OPBENCH_CUDA_CHECK(cudaEventRecord(events_.joins[p], s));
      }
      for (std::size_t p = 0; p < pairs_.size(); ++p)
        OPBENCH_CUDA_CHECK(cudaStreamWaitEvent(timed_, events_.joins[p], 0));
    }

    void sync_all() {
      for (const auto& [src, dst] : pairs_) {
        DeviceScope at(src);
        OPBENCH_CUDA_CHECK(cudaStreamSynchronize(gpu_.stream_on(src)));
      }
      OPBENCH_CUDA_CHECK(cudaStreamSynchronize(timed_));
    }

    // Set 0 of every pair compared byte for byte (with --test-corrupt-result the first pair's
    // result spoiled first).
    std::deque<OutputCheck> checks(const MemopCase& c, bool corrupt) {
      std::deque<OutputCheck> out;
      const auto n = static_cast<std::size_t>(bytes_);
      for (std::size_t p = 0; p < pairs_.size(); ++p) {
        const auto want = device_bytes(sources_[p].data(), pairs_[p].first, n);
        auto got = device_bytes(destinations_[p].data(), pairs_[p].second, n);
        if (corrupt && p == 0) spoil_bytes(got, c.dtype);
        out.push_back(compare_bytes(fmt::format("gpu{}->gpu{}", pairs_[p].first, pairs_[p].second),
                                    want.data(), got.data(), n, c.dtype, c.cols));
      }
      return out;
    }

   private:
    // One copy of pair p, set k, on the source GPU's stream.
    void copy_pair(std::size_t p, std::int64_t k) {
      const auto [src, dst] = pairs_[p];
      DeviceScope on(src);
      OPBENCH_CUDA_CHECK(cudaMemcpyPeerAsync(
          destinations_[p].data() + k * padded_, dst, sources_[p].data() + k * padded_, src,
          static_cast<std::size_t>(bytes_), gpu_.stream_on(src)));
    }

    // The fork and join events, destroyed with the copies (or as the constructor fails: the ones
    // made so far).
    struct Events {
      cudaEvent_t fork = nullptr;
      std::vector<cudaEvent_t> joins;
      Events() = default;
      Events(const Events&) = delete;
      Events& operator=(const Events&) = delete;
      ~Events() {
        for (auto e : joins)
          if (e) cudaEventDestroy(e);
        if (fork) cudaEventDestroy(fork);
      }
    };

    CudaMemopProvider& gpu_;
    GpuPairs pairs_;
    bool all_;
    std::int64_t bytes_, padded_;
    int timed_device_;
    cudaStream_t timed_ = nullptr;
    std::vector<GpuBuffer> sources_, destinations_;
    Events events_;
  };

  MemopResult run_peer(const MemopCase& c, const MemopRunOptions& o) {
    MemopResult r;
    const bool all = c.op == MemOp::peer_all;
    GpuPairs pairs = peer_pairs(c);
    const std::int64_t bytes = c.elements() * static_cast<std::int64_t>(dtype_size(c.dtype));
    const std::int64_t padded = align_up(bytes, kAlign);
    const auto plan = plan_sets(padded, padded, peer_budget(pairs, o.cold), o, r);
    OPBENCH_CUDA_CHECK(cudaSetDevice(device_));
    if (!plan) return r;
    if (all) r.working_set_bytes *= c.devices;
    for (const auto& [src, dst] : pairs)
      enable_peer(src, dst, r.note);

    PeerCopies copies(*this, c, std::move(pairs), plan->sets, padded);
    DeviceScope on(copies.timed_device());
    std::int64_t set = 0;
    copies.enqueue(set);  // connects the GPUs, untimed
    copies.sync_all();
    auto prepare = [&] {
      set = (set + 1) % plan->sets;
      if (o.cold && copies.timed_device() == device_) flusher_->flush(copies.timed_stream());
    };
    r.measurement = measure_on(
        copies.timed_stream(), o, [&] { copies.enqueue(set); }, prepare);
    copies.sync_all();
    r.impl =
        all ? fmt::format(
                  "cudaMemcpyPeerAsync on {} streams at once, gpu i -> gpu (i + 1) % "
                  "{}, {} each; timed on gpu{} from the first copy's start to the "
                  "last one's end",
                  c.devices, c.devices, human_bytes(static_cast<double>(bytes)), device_)
            : fmt::format("cudaMemcpyPeerAsync gpu{} -> gpu{}, {} on gpu{}'s stream", c.src_device,
                          c.dst_device, human_bytes(static_cast<double>(bytes)), c.src_device);
    if (o.cold && copies.timed_device() != device_)
      append_note(r.note, fmt::format("--cold flushes gpu{}'s L2 only", device_));
    finish(r);
    if (o.check) {
      copies.enqueue(0);
      copies.sync_all();
      summarize_checks(copies.checks(c, o.corrupt_for_test), "byte for byte", r);
    }
    return r;
  }

  int device_;
  int device_count_ = 0;
  CudaDeviceInfo info_;
  std::map<int, cudaStream_t> streams_;  // the provider's stream on each GPU it uses
  cudaStream_t stream_ = nullptr;        // on device_
  GpuSampler sampler_;
  std::unique_ptr<L2Flusher> flusher_;
};

}  // namespace

std::unique_ptr<MemopProvider> make_cuda_memop_provider(int device) {
  return std::make_unique<CudaMemopProvider>(device);
}

}  // namespace opbench
