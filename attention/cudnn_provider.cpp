// Attention on the GPU through cuDNN's SDPA graphs (backend API): the engine configurations the
// heuristics offer are finalized and timed briefly, the fastest is measured, and the choice is
// kept for the rest of the run under the case's shape (cudnn/cudnn_plan_cache, policy fastest).
// --check compares with the naive CUDA reference on the same inputs.
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include "attention/attention_provider.hpp"
#include "attention/cudnn_sdpa_graph.hpp"
#include "attention/cudnn_version_policy.hpp"
#include "attention/reference_attention.hpp"
#include "common/cuda/buffer.hpp"
#include "common/cuda/check.hpp"
#include "common/cuda/device.hpp"
#include "common/cuda/measure_sm_clock.hpp"
#include "common/cuda/stream_blocker.hpp"
#include "common/error.hpp"
#include "common/rotation.hpp"
#include "common/text.hpp"
#include "common/version.hpp"
#include "cudnn/cudnn_backend.hpp"
#include "cudnn/cudnn_device.hpp"
#include "cudnn/cudnn_engines.hpp"
#include "cudnn/cudnn_plan_cache.hpp"

namespace opbench {
namespace {

constexpr int kCandidates = 8;  // heuristic configurations tried per shape
constexpr int kTrialRuns = 3;   // timed runs per candidate when choosing
// bf16/fp16 results against the fp32 reference, relative to the largest reference value (>= 1):
// the inputs round to 8 (bf16) or 11 (fp16) bits and P is rounded before P·V.
constexpr double kForwardTolerance = 2e-2, kBackwardTolerance = 5e-2;

std::string shape_key(const AttentionShape& s, AttentionPass p) {
  return fmt::format("{} {} {}", s.dims(), dtype_name(s.dtype), attention_pass_name(p));
}

// The buffers of one case, and the variant pack that points at them.
struct SdpaBuffers {
  DeviceBuffer q, k, v, o, stats, dout, dq, dk, dv, softmax_sum, dq_accum, workspace;
  float scale = 1, neg_inf = -std::numeric_limits<float>::infinity(), one = 1;
  std::int32_t seq_q = 0, seq_kv = 0;
};

class CudnnAttentionProvider final : public AttentionProvider {
 public:
  explicit CudnnAttentionProvider(int device) : gpu_(device) {
    // cuDNN before 9.10 wants the most negative float rather than -inf for masked scores.
    if (cudnnGetVersion() < 91000) neg_inf_ = std::numeric_limits<float>::lowest();
  }

  std::string name() const override { return "cudnn"; }
  std::string backend() const override { return "cuda"; }
  std::string device() const override { return gpu_.info().name; }
  void describe(Environment& env) const override { gpu_.describe(env); }

  std::optional<std::string> unsupported(const AttentionShape& s,
                                         AttentionPass pass) const override {
    if (auto why = cudnn_version_refusal(static_cast<long>(cudnnGetVersion()), pass)) return why;
    return cudnn_sdpa_unsupported(s);
  }

  AttentionResult run(const AttentionShape& s, AttentionPass pass,
                      const AttentionRunOptions& o) override {
    AttentionResult r;
    const bool bwd = pass == AttentionPass::bwd;
    const std::int64_t io = static_cast<std::int64_t>(dtype_size(s.dtype));
    std::int64_t need = (s.q_elements() + s.k_elements() + s.v_elements() + s.o_elements()) * io +
                        s.lse_elements() * 4;
    if (bwd)
      need += (s.o_elements() + s.q_elements() + s.k_elements() + s.v_elements()) * io +
              s.lse_elements() * 4 + s.q_elements() * 4;
    if (o.check || bwd)  // fp32 reference outputs
      need +=
          (s.o_elements() + s.lse_elements() + s.q_elements() + s.k_elements() + s.v_elements()) *
          4;
    const auto free_bytes = static_cast<std::int64_t>(cuda_free_memory_bytes(gpu_.info().index));
    if (need > static_cast<std::int64_t>(device_memory_budget(free_bytes))) {
      r.status = Status::skipped;
      r.note = fmt::format("needs {} of device memory; {} free", human_bytes(need * 1.0),
                           human_bytes(free_bytes * 1.0));
      return r;
    }

    SdpaBuffers b;
    auto alloc = [&](DeviceBuffer& buf, std::int64_t count, std::int64_t size, std::uint64_t seed) {
      buf = DeviceBuffer(static_cast<std::size_t>(count * size));
      if (seed)
        fill_uniform(buf.data(), static_cast<std::size_t>(count), s.dtype, seed, gpu_.stream());
    };
    alloc(b.q, s.q_elements(), io, 11);
    alloc(b.k, s.k_elements(), io, 12);
    alloc(b.v, s.v_elements(), io, 13);
    alloc(b.o, s.o_elements(), io, 0);
    alloc(b.stats, s.lse_elements(), 4, 0);
    b.scale = static_cast<float>(s.softmax_scale());
    b.neg_inf = neg_inf_;
    b.seq_q = static_cast<std::int32_t>(s.seqlen_q);
    b.seq_kv = static_cast<std::int32_t>(s.seqlen_kv);
    const AttentionDims dims = attention_dims(s);
    DeviceBuffer ref_o, ref_lse;
    if (bwd || o.check) {
      alloc(ref_o, s.o_elements(), 4, 0);
      alloc(ref_lse, s.lse_elements(), 4, 0);
      reference_attention_forward(dims, b.q.data(), b.k.data(), b.v.data(),
                                  static_cast<float*>(ref_o.data()),
                                  static_cast<float*>(ref_lse.data()), gpu_.stream());
    }
    if (bwd) {
      // The backward's O and statistics come from the reference forward, so the reference
      // backward sees exactly the inputs cuDNN does.
      convert_floats(static_cast<const float*>(ref_o.data()), b.o.data(), s.o_elements(), s.dtype,
                     gpu_.stream());
      OPBENCH_CUDA_CHECK(cudaMemcpyAsync(b.stats.data(), ref_lse.data(), b.stats.bytes(),
                                         cudaMemcpyDeviceToDevice, gpu_.stream()));
      alloc(b.dout, s.o_elements(), io, 14);
      alloc(b.dq, s.q_elements(), io, 0);
      alloc(b.dk, s.k_elements(), io, 0);
      alloc(b.dv, s.v_elements(), io, 0);
      alloc(b.softmax_sum, s.lse_elements(), 4, 0);
      alloc(b.dq_accum, s.q_elements(), 4, 0);
      OPBENCH_CUDA_CHECK(cudaMemsetAsync(b.dq_accum.data(), 0, b.dq_accum.bytes(), gpu_.stream()));
    }
    OPBENCH_CUDA_CHECK(cudaStreamSynchronize(gpu_.stream()));

    CudnnPlan* chosen = nullptr;
    try {
      chosen = &plan_for(s, pass, b);
    } catch (const Error& e) {
      r.status = Status::skipped;  // cuDNN refused the graph or every configuration
      r.note = e.what();
      return r;
    }
    if (static_cast<std::int64_t>(b.workspace.bytes()) < chosen->workspace_bytes)
      b.workspace = DeviceBuffer(static_cast<std::size_t>(chosen->workspace_bytes));
    Descriptor pack = variant_pack(b, *chosen->graph.builder);

    L2Flusher flusher(gpu_.info().l2_bytes);
    CudaEventTimer timer;
    sampler_.reset();  // each case tries stream-blocked samples again
    r.measurement = measure_with_sm_clock(
        gpu_.stream(), o.measure,
        [&] { return sample_us(timer, [&] { gpu_.execute(*chosen->plan, *pack); }); },
        [&] { flusher.flush(gpu_.stream()); });
    r.note = throttle_note(r.measurement, gpu_.info().max_sm_clock_khz / 1e3);
    if (sampler_.fell_back()) append_note(r.note, GpuSampler::fallback_note());
    r.cache = "flush";
    r.engine = fmt::format("cudnn engine {} ({} of {} configurations finalized)", chosen->engine,
                           chosen->ran, chosen->offered);
    if (o.check) check(s, pass, dims, b, ref_o, ref_lse, r);
    return r;
  }

 private:
  double sample_us(CudaEventTimer& timer, const std::function<void()>& enqueue) {
    return sampler_.sample_us(gpu_.stream(), timer, enqueue);
  }

  // Device buffers, or host addresses for the by-value scalars, under the uids the graph uses.
  static Descriptor variant_pack(SdpaBuffers& b, const GraphBuilder& graph) {
    const std::map<std::int64_t, void*> address{{kUidQ, b.q.data()},
                                                {kUidK, b.k.data()},
                                                {kUidV, b.v.data()},
                                                {kUidO, b.o.data()},
                                                {kUidStats, b.stats.data()},
                                                {kUidScale, &b.scale},
                                                {kUidNegInf, &b.neg_inf},
                                                {kUidOne, &b.one},
                                                {kUidSeqKv, &b.seq_kv},
                                                {kUidSeqQ, &b.seq_q},
                                                {kUidDO, b.dout.data()},
                                                {kUidDQ, b.dq.data()},
                                                {kUidDK, b.dk.data()},
                                                {kUidDV, b.dv.data()},
                                                {kUidSoftmaxSum, b.softmax_sum.data()},
                                                {kUidDQAccum, b.dq_accum.data()}};
    const std::vector<std::int64_t>& uids = graph.pack_uids();
    std::vector<void*> ptrs;
    for (std::int64_t uid : uids)
      ptrs.push_back(address.at(uid));
    auto pack = std::make_shared<BackendDescriptor>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack->set_int64s(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids, "variant pack uids");
    pack->set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
              static_cast<std::int64_t>(ptrs.size()), ptrs.data(), "variant pack pointers");
    void* workspace = b.workspace.data();
    pack->set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace,
              "variant pack workspace");
    pack->finalize("variant pack finalize");
    return pack;
  }

  // The fastest configuration for this shape, chosen once per run: the heuristics' first
  // kCandidates configurations are finalized, each timed over kTrialRuns blocked runs after an
  // untimed first one (module loading), and the fastest kept. A refusal carries cuDNN's reason,
  // including what it writes only to its log.
  CudnnPlan& plan_for(const AttentionShape& s, AttentionPass pass, SdpaBuffers& b) {
    const bool bwd = pass == AttentionPass::bwd;
    std::optional<CudaEventTimer> timer;  // made on the first trial: a cached plan needs none
    return plans_.plan_for(
        shape_key(s, pass), attention_pass_name(pass), CudnnTarget{gpu_.handle(), nullptr},
        [&] {
          return bwd ? build_sdpa_backward(gpu_.handle(), s) : build_sdpa_forward(gpu_.handle(), s);
        },
        [&](const PlanCandidate& c) {
          if (static_cast<std::int64_t>(b.workspace.bytes()) < c.workspace_bytes)
            b.workspace = DeviceBuffer(static_cast<std::size_t>(c.workspace_bytes));
          Descriptor pack = variant_pack(b, *c.graph.builder);
          gpu_.execute(c.plan, *pack);  // first run: module loading, not timed
          if (!timer) timer.emplace();
          return sample_us(*timer,
                           [&] {
                             for (int run = 0; run < kTrialRuns; ++run)
                               gpu_.execute(c.plan, *pack);
                           }) /
                 kTrialRuns;
        });
  }

  void check(const AttentionShape& s, AttentionPass pass, const AttentionDims& dims, SdpaBuffers& b,
             DeviceBuffer& ref_o, DeviceBuffer& ref_lse, AttentionResult& r) {
    double err = 0, ref = 0;
    auto compare = [&](const DeviceBuffer& got, const DeviceBuffer& want, std::int64_t count) {
      auto c = compare_with_reference(got.data(), static_cast<const float*>(want.data()), count,
                                      s.dtype, gpu_.stream());
      err = std::max(err, c.max_abs_err);
      ref = std::max(ref, c.max_abs_ref);
    };
    double tolerance = kForwardTolerance;
    if (pass == AttentionPass::fwd) {
      compare(b.o, ref_o, s.o_elements());
    } else {
      tolerance = kBackwardTolerance;
      DeviceBuffer dq(static_cast<std::size_t>(s.q_elements()) * 4),
          dk(static_cast<std::size_t>(s.k_elements()) * 4),
          dv(static_cast<std::size_t>(s.v_elements()) * 4),
          delta(static_cast<std::size_t>(s.lse_elements()) * 4);
      reference_attention_backward(dims, b.q.data(), b.k.data(), b.v.data(), b.o.data(),
                                   static_cast<const float*>(ref_lse.data()), b.dout.data(),
                                   static_cast<float*>(dq.data()), static_cast<float*>(dk.data()),
                                   static_cast<float*>(dv.data()),
                                   static_cast<float*>(delta.data()), gpu_.stream());
      compare(b.dq, dq, s.q_elements());
      compare(b.dk, dk, s.k_elements());
      compare(b.dv, dv, s.v_elements());
    }
    r.max_abs_err = err;
    r.tolerance = tolerance * std::max(1.0, ref);
    if (!(err <= *r.tolerance)) {
      r.status = Status::failed;
      std::string failed =
          fmt::format("check failed: max |error| {:.3g} > tolerance {:.3g}", err, *r.tolerance);
      append_note(failed, r.note);
      r.note = failed;
    }
  }

  CudnnDevice gpu_;  // first: the plans and buffers below go before its handle and stream
  float neg_inf_ = -std::numeric_limits<float>::infinity();
  GpuSampler sampler_;  // blocked samples, or plain ones for the rest of a case once cuDNN waited
  CudnnPlanCache plans_{PlanPolicy::fastest, kCandidates};
};

}  // namespace

std::unique_ptr<AttentionProvider> make_cudnn_attention_provider(int device) {
  return std::make_unique<CudnnAttentionProvider>(device);
}

}  // namespace opbench
