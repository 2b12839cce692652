// LayerNorm and RMSNorm on the GPU through cuDNN's norm graphs (memops/cudnn_norm_graph): the
// forward in the training phase (y and the saved statistics) and the backward (dx and the weight
// gradients). The heuristics' configurations are tried in order and the first that finalizes and
// runs is kept for the shape (cudnn/cudnn_plan_cache, policy first); the samples are timed under
// the shared stop rule, stream-blocked and with the SM clock read, on rotated operand sets (or
// after an L2 flush with --cold). --check is bench_memops's own (memops/memop_check): every output
// against the fp64 reference from the very inputs cuDNN read, under the one tolerance rule.
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/cuda/buffer.hpp"
#include "common/cuda/check.hpp"
#include "common/cuda/device.hpp"
#include "common/cuda/measure_sm_clock.hpp"
#include "common/cuda/stream_blocker.hpp"
#include "common/dtype.hpp"
#include "common/error.hpp"
#include "common/rotation.hpp"
#include "common/text.hpp"
#include "common/version.hpp"
#include "cudnn/cudnn_backend.hpp"
#include "cudnn/cudnn_device.hpp"
#include "cudnn/cudnn_engines.hpp"
#include "cudnn/cudnn_plan_cache.hpp"
#include "memops/cudnn_norm_graph.hpp"
#include "memops/memop_check.hpp"
#include "memops/memop_math.hpp"
#include "memops/memop_provider.hpp"

namespace opbench {
namespace {

constexpr int kCandidates = 8;  // heuristic configurations tried, in order, until one runs

// Seeds of the inputs (fill_uniform: values in [-1, 1), the same in every rotated set).
constexpr std::uint64_t kSeedX = 31, kSeedScale = 32, kSeedBias = 33, kSeedDY = 34;

// One operand of a case: its variant-pack uid, its bytes, and the seed of its fill (0: written
// by cuDNN, or the backward's statistics, computed on the host).
struct Operand {
  std::int64_t uid = 0;
  std::int64_t bytes = 0;
  std::uint64_t seed = 0;
};

std::vector<Operand> case_operands(const MemopCase& c) {
  const bool layer = c.op == MemOp::layernorm;
  const auto s = static_cast<std::int64_t>(dtype_size(c.dtype));
  const std::int64_t act = c.elements() * s, weight = c.cols * s, stats = c.rows * 4;
  std::vector<Operand> out{{kNormUidX, act, kSeedX}, {kNormUidScale, weight, kSeedScale}};
  if (c.pass == MemPass::fwd) {
    if (layer) out.push_back({kNormUidBias, weight, kSeedBias});
    out.push_back({kNormUidY, act, 0});
  } else {
    out.push_back({kNormUidDY, act, kSeedDY});
    out.push_back({kNormUidDX, act, 0});
    out.push_back({kNormUidDScale, weight, 0});
    if (layer) out.push_back({kNormUidDBias, weight, 0});
  }
  if (layer) out.push_back({kNormUidMean, stats, 0});
  out.push_back({kNormUidInvVar, stats, 0});
  return out;
}

// Every operand's place in a set, 256-byte aligned (cuDNN's norm engines want 16 bytes at least,
// 128 for their best on sm90 and later).
std::int64_t operand_stride(const Operand& op) {
  return align_up(op.bytes, 256);
}

// `sets` copies of the case's operands, one pool per operand with set k at k x stride: rotating
// over the sets touches a working set of several times the L2 cache.
class OperandSets {
 public:
  OperandSets(const MemopCase& c, std::int64_t sets) : sets_(sets) {
    for (const Operand& op : case_operands(c)) {
      Pool& p = pools_[op.uid];
      p.op = op;
      p.stride = operand_stride(op);
      p.buffer = DeviceBuffer(static_cast<std::size_t>(p.stride * sets));
    }
  }
  static std::int64_t set_bytes(const MemopCase& c) {
    std::int64_t bytes = 0;
    for (const Operand& op : case_operands(c))
      bytes += operand_stride(op);
    return bytes;
  }
  std::int64_t sets() const { return sets_; }
  bool has(std::int64_t uid) const { return pools_.count(uid) > 0; }
  void* at(std::int64_t uid, std::int64_t set) const {
    const Pool& p = pools_.at(uid);
    return static_cast<unsigned char*>(p.buffer.data()) + set * p.stride;
  }
  std::int64_t bytes(std::int64_t uid) const { return pools_.at(uid).op.bytes; }
  // The first set's copy of an operand, on the host.
  std::vector<unsigned char> first_to_host(std::int64_t uid) const {
    const Pool& p = pools_.at(uid);
    return p.buffer.to_host(0, static_cast<std::size_t>(p.op.bytes));
  }
  // Fills the first set's inputs (uniform in [-1, 1) by their seeds).
  void fill_inputs(DType t, cudaStream_t stream) {
    const auto s = static_cast<std::int64_t>(dtype_size(t));
    for (auto& [uid, p] : pools_)
      if (p.op.seed)
        fill_uniform(p.buffer.data(), static_cast<std::size_t>(p.op.bytes / s), t, p.op.seed,
                     stream);
  }
  // Copies the first set's operand `uid` into every other set, doubling the copied span.
  void replicate(std::int64_t uid, cudaStream_t stream) {
    const Pool& p = pools_.at(uid);
    for (std::int64_t have = 1; have < sets_;) {
      const std::int64_t n = std::min(have, sets_ - have);
      OPBENCH_CUDA_CHECK(cudaMemcpyAsync(at(uid, have), p.buffer.data(),
                                         static_cast<std::size_t>(n * p.stride),
                                         cudaMemcpyDeviceToDevice, stream));
      have += n;
    }
  }
  void replicate_inputs(cudaStream_t stream) {
    for (auto& [uid, p] : pools_)
      if (p.op.seed) replicate(uid, stream);
  }

 private:
  struct Pool {
    Operand op;
    std::int64_t stride = 0;
    DeviceBuffer buffer;
  };
  std::int64_t sets_;
  std::map<std::int64_t, Pool> pools_;
};

std::string shape_key(const MemopCase& c) {
  return fmt::format("{} {} {} {}", memop_name(c.op), mem_pass_name(c.pass), dtype_name(c.dtype),
                     c.dims());
}

// A device buffer's contents on the host, read as doubles.
struct HostCopy {
  std::vector<unsigned char> bytes;
  DType type = DType::fp32;
  HostCopy() = default;
  HostCopy(const OperandSets& sets, std::int64_t uid, DType t)
      : bytes(sets.first_to_host(uid)), type(t) {}
  double operator[](std::int64_t i) const {
    return element_as_double(bytes.data(), type, static_cast<std::size_t>(i));
  }
};

// The statistics of row r of x, in double: mean (0 for RMSNorm) and 1 / sqrt(var + eps), var the
// biased variance (LayerNorm) or the mean square (RMSNorm).
void row_stats(const HostCopy& x, std::int64_t r, std::int64_t cols, bool layer, double eps,
               double* mean, double* rstd) {
  double sum = 0;
  if (layer)
    for (std::int64_t j = 0; j < cols; ++j)
      sum += x[r * cols + j];
  const double m = layer ? sum / static_cast<double>(cols) : 0.0;
  double sq = 0;
  for (std::int64_t j = 0; j < cols; ++j) {
    const double d = x[r * cols + j] - m;
    sq += d * d;
  }
  *mean = m;
  *rstd = 1.0 / std::sqrt(sq / static_cast<double>(cols) + eps);
}

// The epsilon of the case's norm: bench_memops's own (memop_math), which the reference uses too.
float norm_epsilon(const MemopCase& c) {
  return c.op == MemOp::rmsnorm ? memop_math::kRmsNormEps : memop_math::kLayerNormEps;
}

// The variant-pack uid and dtype of an operand of memop_operands' list for the norms.
std::pair<std::int64_t, DType> operand_uid(const MemopCase& c, const std::string& name) {
  static const std::map<std::string, std::int64_t> uids = {
      {"x", kNormUidX},       {"w", kNormUidScale},     {"b", kNormUidBias}, {"y", kNormUidY},
      {"mean", kNormUidMean}, {"rstd", kNormUidInvVar}, {"dy", kNormUidDY},  {"dx", kNormUidDX},
      {"dw", kNormUidDScale}, {"db", kNormUidDBias}};
  const auto it = uids.find(name);
  if (it == uids.end()) throw std::logic_error("cudnn norms: no operand " + name);
  const bool stats = name == "mean" || name == "rstd";
  return {it->second, stats ? DType::fp32 : c.dtype};
}

// The check's reads (memops/memop_check): the first set's operands fetched once each, the
// backward's saved statistics from the host vectors they were uploaded from; with
// --test-corrupt-result the middle element of the first output off by 1000, as every memops
// provider spoils it.
class NormReader final : public OperandReader {
 public:
  NormReader(const MemopCase& c, const OperandSets& sets, const std::vector<float>& saved_mean,
             const std::vector<float>& saved_rstd, bool spoil)
      : c_(c), sets_(sets), saved_mean_(saved_mean), saved_rstd_(saved_rstd), spoil_(spoil) {}

  std::vector<float> floats(const std::string& name, std::int64_t first,
                            std::int64_t count) override {
    std::vector<float> out(static_cast<std::size_t>(count));
    if (c_.pass == MemPass::bwd && (name == "mean" || name == "rstd")) {
      const auto& saved = name == "mean" ? saved_mean_ : saved_rstd_;
      std::copy_n(saved.begin() + first, count, out.begin());
      return out;
    }
    const HostCopy& h = fetch(name);
    for (std::int64_t i = 0; i < count; ++i)
      out[static_cast<std::size_t>(i)] = static_cast<float>(h[first + i]);
    return out;
  }
  std::vector<std::int64_t> ids(const std::string& name, std::int64_t, std::int64_t) override {
    throw std::logic_error("cudnn norms: " + name + " is not a token-id operand");
  }
  std::vector<std::uint16_t> bits16(const std::string& name, std::int64_t, std::int64_t) override {
    throw std::logic_error("cudnn norms: " + name + " is not read as bits");
  }

 private:
  const HostCopy& fetch(const std::string& name) {
    auto it = copies_.find(name);
    if (it != copies_.end()) return it->second;
    const auto [uid, type] = operand_uid(c_, name);
    HostCopy h(sets_, uid, type);
    const char* first_output = c_.pass == MemPass::fwd ? "y" : "dx";
    if (spoil_ && name == first_output) {
      const std::int64_t i = c_.elements() / 2;
      store_from_double(h.bytes.data(), h.type, static_cast<std::size_t>(i), h[i] + 1000.0);
    }
    return copies_.emplace(name, std::move(h)).first->second;
  }

  const MemopCase& c_;
  const OperandSets& sets_;
  const std::vector<float>& saved_mean_;
  const std::vector<float>& saved_rstd_;
  bool spoil_;
  std::map<std::string, HostCopy> copies_;
};

class CudnnNormProvider final : public MemopProvider {
 public:
  explicit CudnnNormProvider(int device) : gpu_(device) {}

  std::string name() const override { return "cudnn"; }
  std::string backend() const override { return "cuda"; }
  std::string device() const override { return gpu_.info().name; }
  void describe(Environment& env) const override { gpu_.describe(env); }

  std::optional<std::string> unsupported(const MemopCase& c) const override {
    return cudnn_norm_unsupported(c);
  }

  MemopResult run(const MemopCase& c, const MemopRunOptions& o) override {
    MemopResult r;
    // Rotated sets fill four times the L2 cache (common/rotation); --cold keeps one set and
    // flushes the cache before each sample instead.
    const std::int64_t set_bytes = OperandSets::set_bytes(c);
    const auto free_bytes = static_cast<std::int64_t>(cuda_free_memory_bytes(gpu_.info().index));
    const std::int64_t flush_bytes =
        o.cold ? static_cast<std::int64_t>(2 * gpu_.info().l2_bytes) : 0;
    const std::optional<RotationPlan> planned =
        plan_or_skip(plan_operand_rotation(
                         set_bytes, set_bytes, o.cold, gpu_.info().l2_bytes,
                         static_cast<std::int64_t>(device_memory_budget(free_bytes)) - flush_bytes,
                         "device memory"),
                     r);
    if (!planned) return r;
    const RotationPlan rotation = *planned;

    epsilon_ = norm_epsilon(c);
    OperandSets sets(c, rotation.sets);
    sets.fill_inputs(c.dtype, gpu_.stream());
    std::vector<float> saved_mean, saved_rstd;  // the backward's statistics, on the host
    if (c.pass == MemPass::bwd) upload_saved_stats(c, sets, &saved_mean, &saved_rstd);
    sets.replicate_inputs(gpu_.stream());
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(gpu_.stream()));

    CudnnPlan* chosen = nullptr;
    try {
      chosen = &plan_for(c, sets);
    } catch (const Error& e) {
      r.status = Status::skipped;  // cuDNN refused the graph or every configuration
      r.note = e.what();
      return r;
    }
    grow_workspace(chosen->workspace_bytes);

    // The variant pack of the set the next sample runs on, made outside the timed region.
    std::int64_t current = 0;
    Descriptor pack = variant_pack(sets, current, *chosen->graph.builder);
    std::unique_ptr<L2Flusher> flusher;
    if (o.cold) flusher = std::make_unique<L2Flusher>(gpu_.info().l2_bytes);
    CudaEventTimer timer;
    sampler_.reset();  // each case tries stream-blocked samples again
    r.measurement = measure_with_sm_clock(
        gpu_.stream(), o.measure,
        [&] { return sample_us(timer, [&] { gpu_.execute(*chosen->plan, *pack); }); },
        [&] {
          if (flusher) return flusher->flush(gpu_.stream());
          if (sets.sets() == 1) return;
          current = (current + 1) % sets.sets();
          pack = variant_pack(sets, current, *chosen->graph.builder);
        });
    r.note = throttle_note(r.measurement, gpu_.info().max_sm_clock_khz / 1e3);
    if (sampler_.fell_back()) append_note(r.note, GpuSampler::fallback_note());
    r.impl = fmt::format("cudnn engine {}{} (configuration {} of {} offered)", chosen->engine,
                         chosen->knobs.empty() ? "" : " [" + chosen->knobs + "]", chosen->position,
                         chosen->offered);
    if (o.check) check(c, o, *chosen, sets, saved_mean, saved_rstd, r);
    return r;
  }

 private:
  double sample_us(CudaEventTimer& timer, const std::function<void()>& enqueue) {
    return sampler_.sample_us(gpu_.stream(), timer, enqueue);
  }

  void grow_workspace(std::int64_t bytes) {
    if (static_cast<std::int64_t>(workspace_.bytes()) < bytes)
      workspace_ = DeviceBuffer(static_cast<std::size_t>(bytes));
  }

  // The backward reads the statistics the forward saved: computed here from the first set's x
  // (in double, rounded to fp32 as cuDNN stores them) into the first set, and kept on the host
  // for the check.
  void upload_saved_stats(const MemopCase& c, OperandSets& sets, std::vector<float>* saved_mean,
                          std::vector<float>* saved_rstd) {
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(gpu_.stream()));
    const bool layer = c.op == MemOp::layernorm;
    const HostCopy x(sets, kNormUidX, c.dtype);
    saved_mean->assign(static_cast<std::size_t>(c.rows), 0.0f);
    saved_rstd->assign(static_cast<std::size_t>(c.rows), 0.0f);
    for (std::int64_t r = 0; r < c.rows; ++r) {
      double mean = 0, rstd = 0;
      row_stats(x, r, c.cols, layer, norm_epsilon(c), &mean, &rstd);
      (*saved_mean)[static_cast<std::size_t>(r)] = static_cast<float>(mean);
      (*saved_rstd)[static_cast<std::size_t>(r)] = static_cast<float>(rstd);
    }
    // On the stream, so the copies into the other sets follow them (the host vectors outlive the
    // run).
    OPBENCH_CUDA_CHECK(cudaMemcpyAsync(sets.at(kNormUidInvVar, 0), saved_rstd->data(),
                                       static_cast<std::size_t>(sets.bytes(kNormUidInvVar)),
                                       cudaMemcpyHostToDevice, gpu_.stream()));
    sets.replicate(kNormUidInvVar, gpu_.stream());
    if (layer) {
      OPBENCH_CUDA_CHECK(cudaMemcpyAsync(sets.at(kNormUidMean, 0), saved_mean->data(),
                                         static_cast<std::size_t>(sets.bytes(kNormUidMean)),
                                         cudaMemcpyHostToDevice, gpu_.stream()));
      sets.replicate(kNormUidMean, gpu_.stream());
    }
  }

  // Set `set`'s device addresses, and the host address of epsilon (by value), under the uids the
  // graph names.
  Descriptor variant_pack(const OperandSets& sets, std::int64_t set, const GraphBuilder& graph) {
    const std::vector<std::int64_t>& uids = graph.pack_uids();
    std::vector<void*> ptrs;
    for (std::int64_t uid : uids)
      ptrs.push_back(uid == kNormUidEpsilon ? static_cast<void*>(&epsilon_) : sets.at(uid, set));
    auto pack = std::make_shared<BackendDescriptor>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack->set_int64s(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids, "variant pack uids");
    pack->set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
              static_cast<std::int64_t>(ptrs.size()), ptrs.data(), "variant pack pointers");
    void* workspace = workspace_.data();
    pack->set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace,
              "variant pack workspace");
    pack->finalize("variant pack finalize");
    return pack;
  }

  // The plan for this shape, chosen once per run: the heuristics' configurations in order, the
  // first whose plan finalizes and runs once (module loading, untimed) on the first set. A
  // refusal carries cuDNN's reason, including what it writes only to its log.
  CudnnPlan& plan_for(const MemopCase& c, const OperandSets& sets) {
    return plans_.plan_for(
        shape_key(c), memop_name(c.op) + " " + mem_pass_name(c.pass),
        CudnnTarget{gpu_.handle(), nullptr}, [&] { return build_norm_graph(gpu_.handle(), c); },
        [&](const PlanCandidate& candidate) {
          grow_workspace(candidate.workspace_bytes);
          Descriptor pack = variant_pack(sets, 0, *candidate.graph.builder);
          gpu_.execute(candidate.plan, *pack);
          OPBENCH_CUDA_CHECK(cudaStreamSynchronize(gpu_.stream()));
          return 0.0;  // the first policy keeps the first that runs, whatever its time
        });
  }

  // Runs the plan once more on the first set (whose inputs no run changes), then compares every
  // output with the fp64 reference from the same inputs (memops/memop_check).
  void check(const MemopCase& c, const MemopRunOptions& o, const CudnnPlan& chosen,
             const OperandSets& sets, const std::vector<float>& saved_mean,
             const std::vector<float>& saved_rstd, MemopResult& r) {
    gpu_.execute(*chosen.plan, *variant_pack(sets, 0, *chosen.graph.builder));
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(gpu_.stream()));
    NormReader reader(c, sets, saved_mean, saved_rstd, o.corrupt_for_test);
    summarize_checks(check_memop_outputs(c, reader, {}), memop_tolerance_rule(c), r);
  }

  CudnnDevice gpu_;    // first: the plans and buffers below go before its handle and stream
  float epsilon_ = 0;  // the by-value epsilon the variant packs point at: norm_epsilon(case)
  DeviceBuffer workspace_;
  GpuSampler sampler_;  // blocked samples, or plain ones for good once cuDNN waited on the host
  CudnnPlanCache plans_{PlanPolicy::first, kCandidates};
};

}  // namespace

std::unique_ptr<MemopProvider> make_cudnn_norm_provider(int device) {
  return std::make_unique<CudnnNormProvider>(device);
}

}  // namespace opbench
