// The memory-bound operators on the CPU (memops/cpu_memops.cpp), measured over rotating operand
// sets, and checked against the fp64 reference (memops/reference_memops.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <vector>

#include "common/cpu_parallel.hpp"
#include "common/env.hpp"
#include "common/host_buffer.hpp"
#include "common/host_sampler.hpp"
#include "common/rotation.hpp"
#include "common/uniform_value.hpp"
#include "memops/cpu_memops.hpp"
#include "memops/memop_check.hpp"
#include "memops/memop_inputs.hpp"
#include "memops/memop_operands.hpp"
#include "memops/memop_provider.hpp"

namespace opbench {
namespace {

using namespace memop_inputs;

// ---- operands ------------------------------------------------------------------------------

// An operand of the catalogue (memops/memop_operands) or a workspace, placed in the provider's
// pool: set 0's copy at `base`, the next set's `stride` bytes on.
struct Operand : OperandSpec {
  explicit Operand(OperandSpec spec) : OperandSpec(std::move(spec)) {}
  unsigned char* base = nullptr;
  std::int64_t stride = 0;  // 0 when shared

  void* raw(std::int64_t set) const { return base + set * stride; }
  template <class T>
  T* at(std::int64_t set) const {
    return static_cast<T*>(raw(set));
  }
};

// What the operator of `c` reads and writes, and the norms' backward workspace of our loops.
std::vector<Operand> operands_of(const MemopCase& c) {
  std::vector<Operand> v;
  for (OperandSpec& spec : memop_operands(c))
    v.emplace_back(std::move(spec));
  if (c.pass == MemPass::bwd && (c.op == MemOp::rmsnorm || c.op == MemOp::layernorm))
    v.emplace_back(workspace_operand(cpu_memops::norm_bwd_workspace_floats(c.rows, c.cols) * 4));
  return v;
}

// Element i scaled by a power of two (exact in every format).
void scale_elements(Operand& o, std::int64_t set) {
  if (o.scale == 1.0f) return;
  const std::int64_t chunk = 1 << 20;
  parallel_for((o.count + chunk - 1) / chunk, [&](std::int64_t t) {
    const std::int64_t end = std::min(o.count, (t + 1) * chunk);
    if (o.type == DType::bf16) {
      auto* p = o.at<std::uint16_t>(set);
      for (std::int64_t i = t * chunk; i < end; ++i)
        p[i] = float_to_bf16(bf16_to_float(p[i]) * o.scale);
    } else {
      auto* p = o.at<float>(set);
      for (std::int64_t i = t * chunk; i < end; ++i)
        p[i] *= o.scale;
    }
  });
}

class CaseOperands {
 public:
  CaseOperands(const MemopCase& c, std::vector<Operand> operands)
      : c_(c), ops_(std::move(operands)) {}

  Operand& get(const std::string& name) {
    for (auto& o : ops_)
      if (o.name == name) return o;
    throw std::logic_error("memops: no operand " + name);
  }
  template <class T>
  T* at(const std::string& name, std::int64_t set) {
    return get(name).at<T>(set);
  }
  std::vector<Operand>& all() { return ops_; }

  // Set s's operands by name, for the dispatch (cpu_memops::run).
  SetAddresses<std::vector<Operand>> addresses(std::int64_t s) const { return {ops_, s}; }

  // The bytes of one set, of what it touches, and of the shared operands.
  OperandFootprint footprint() const { return operand_footprint(ops_); }

  // Lays the operands out in `pool` (footprint's shared + sets x set bytes): each operand's
  // copies for every set side by side.
  void place(std::int64_t sets, unsigned char* pool) {
    sets_ = sets;
    for (auto& o : ops_) {
      o.base = pool;
      o.stride = o.shared ? 0 : align_up(o.bytes(), kAlign);
      pool += o.shared ? align_up(o.bytes(), kAlign) : sets * o.stride;
    }
  }

  // Fills every input of set 0 and copies them to the other sets (the ids are drawn anew).
  void fill_all() {
    for (auto& o : ops_)
      if (o.shared && o.fill == OperandFill::uniform) fill_uniform(o, 0);
    fill_set(0);
    for (std::int64_t s = 1; s < sets_; ++s)
      for (auto& o : ops_) {
        if (o.shared || o.fill == OperandFill::none || o.fill == OperandFill::scratch) continue;
        if (o.fill == OperandFill::ids)
          fill_indices(o, s, c_.vocab);
        else
          std::memcpy(o.raw(s), o.raw(0), static_cast<std::size_t>(o.bytes()));
      }
  }

  // Fills the inputs of one set (again, for the check of an operator that updates them).
  void fill_set(std::int64_t set) {
    for (auto& o : ops_) {
      if (o.shared) continue;
      switch (o.fill) {
        case OperandFill::uniform:
          fill_uniform(o, set);
          break;
        case OperandFill::ids:
          fill_indices(o, set, c_.vocab);
          break;
        case OperandFill::targets:
          fill_indices(o, set, c_.cols);
          break;
        case OperandFill::fp8_scale:
          *o.at<float>(set) = kFp8Scale;
          break;
        default:
          break;
      }
    }
    derive(set);
  }

 private:
  void fill_uniform(Operand& o, std::int64_t set) {
    fill_uniform_host(o.raw(set), static_cast<std::size_t>(o.count), o.type, o.seed);
    scale_elements(o, set);
  }

  void fill_indices(Operand& o, std::int64_t set, std::int64_t range) {
    auto* p = o.at<std::int64_t>(set);
    for (std::int64_t i = 0; i < o.count; ++i)
      p[i] = uniform_index(o.seed, set, i, range);
  }

  // The saved inputs of a backward come from its forward on this set's x, as in training; rope's
  // tables are built once, as a model caches them; AdamW's second moment follows its first
  // (memop_inputs::adamw_second_moment).
  void derive(std::int64_t set) {
    const std::int64_t rows = c_.rows, cols = c_.cols;
    std::vector<float> scratch;
    auto scratch_n = [&] {
      scratch.assign(static_cast<std::size_t>(c_.elements()), 0.0f);
      return scratch.data();
    };
    if (c_.op == MemOp::adamw || c_.op == MemOp::adamw_bf16) {
      const float* m = at<float>("m", set);
      float* v = at<float>("v", set);
      for (std::int64_t i = 0; i < c_.elements(); ++i)
        v[i] = adamw_second_moment(m[i]);
    } else if (c_.op == MemOp::rope) {
      cpu_memops::rope_tables(at<float>("cos", set), at<float>("sin", set), rows, c_.head_dim);
    } else if (c_.pass != MemPass::bwd) {
      return;
    } else if (c_.op == MemOp::rmsnorm) {
      cpu_memops::rmsnorm_fwd(at<float>("x", set), at<float>("w", set), scratch_n(),
                              at<float>("rstd", set), rows, cols);
    } else if (c_.op == MemOp::layernorm) {
      std::vector<float> b(static_cast<std::size_t>(cols), 0.0f);
      cpu_memops::layernorm_fwd(at<float>("x", set), at<float>("w", set), b.data(), scratch_n(),
                                at<float>("mean", set), at<float>("rstd", set), rows, cols);
    } else if (c_.op == MemOp::softmax) {
      float* logits = scratch_n();
      fill_uniform_host(logits, scratch.size(), DType::fp32, kSeed - 1);
      for (float& x : scratch)
        x *= 4.0f;
      cpu_memops::softmax_fwd(logits, at<float>("y", set), rows, cols);
    }
  }

  const MemopCase& c_;
  std::vector<Operand> ops_;
  std::int64_t sets_ = 1;
};

// Runs the case's operator on one set.
void run_op(const MemopCase& c, CaseOperands& d, std::int64_t s) {
  cpu_memops::run(c, d.addresses(s));
}

// ---- check ---------------------------------------------------------------------------------

// The check's reads of set s: slices of the host pool, decoded as the check wants them.
class HostReader final : public OperandReader {
 public:
  HostReader(CaseOperands& d, std::int64_t s) : d_(d), s_(s) {}
  std::vector<float> floats(const std::string& name, std::int64_t first,
                            std::int64_t count) override {
    const Operand& o = d_.get(name);
    if (o.type == DType::fp32) {
      const auto* p = o.at<float>(s_) + first;
      return {p, p + count};
    }
    std::vector<float> out(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i)
      out[static_cast<std::size_t>(i)] = static_cast<float>(
          element_as_double(o.raw(s_), o.type, static_cast<std::size_t>(first + i)));
    return out;
  }
  std::vector<std::int64_t> ids(const std::string& name, std::int64_t first,
                                std::int64_t count) override {
    const auto* p = d_.at<std::int64_t>(name, s_) + first;
    return {p, p + count};
  }
  std::vector<std::uint16_t> bits16(const std::string& name, std::int64_t first,
                                    std::int64_t count) override {
    const auto* p = d_.at<std::uint16_t>(name, s_) + first;
    return {p, p + count};
  }

 private:
  CaseOperands& d_;
  std::int64_t s_;
};

// Adds 1000 to the middle element of the case's first output.
void spoil_for_test(const MemopCase& c, CaseOperands& d, std::int64_t s) {
  for (auto& o : d.all()) {
    if (!o.written()) continue;
    const auto i = static_cast<std::size_t>(o.count / 2);
    const DType t = c.op == MemOp::copy ? c.dtype : o.type;
    if (t == DType::fp8_e4m3) {
      auto* p = o.at<std::uint8_t>(s);
      p[i] = float_to_fp8_e4m3(fp8_e4m3_to_float(p[i]) + 1000.0f);  // saturates: 448
    } else {
      store_from_double(o.raw(s), t, i, element_as_double(o.raw(s), t, i) + 1000.0);
    }
    return;
  }
}

class CpuMemopProvider final : public MemopProvider {
 public:
  CpuMemopProvider() : llc_bytes_(cpu_cache_bytes_to_evict()) {}

  std::string name() const override { return "cpu"; }
  std::string backend() const override { return "cpu"; }
  std::string device() const override {
    return fmt::format("{} ({} threads)", cpu_model_name(), threads());
  }

  std::optional<std::string> unsupported(const MemopCase& c) const override {
    if (is_copy(c.op) && c.op != MemOp::copy)
      return fmt::format(
          "{} copies between host and GPU memory or between GPUs: run it with --backend cuda",
          memop_name(c.op));
    if (!memop_accepts(c.op, c.dtype))
      return fmt::format("{} does not take {}", memop_name(c.op), dtype_name(c.dtype));
    // A dtype the operator leaves free (memop_accepts takes fp16 only then): the CPU computes
    // in fp32. The copy moves bytes whatever they hold.
    if (c.op != MemOp::copy && c.dtype != DType::fp32 && memop_accepts(c.op, DType::fp16))
      return fmt::format("the CPU provider runs {} in fp32; {} needs --backend cuda",
                         memop_name(c.op), dtype_name(c.dtype));
    if (const auto problem = memop_shape_problem(c)) return problem->why;
    return std::nullopt;
  }

  void describe(Environment& env) const override {
    env.add_device({{"name", cpu_model_name()},
                    {"kind", "cpu"},
                    {"threads", threads()},
                    {"last_level_cache_bytes", llc_bytes_}});
  }

  MemopResult run(const MemopCase& c, const MemopRunOptions& o) override {
    MemopResult r;
    CaseOperands d(c, operands_of(c));
    // The pool this provider holds counts in the budget (it is reused).
    const auto budget = static_cast<std::int64_t>(
        std::min<std::uint64_t>(host_memory_budget(pool_.bytes()), INT64_MAX));
    const OperandFootprint bytes = d.footprint();
    const std::optional<RotationPlan> rotation =
        plan_or_skip(plan_operand_rotation(bytes.set, bytes.touched, o.cold, llc_bytes_,
                                           budget - bytes.shared, "host memory"),
                     r);
    if (!rotation) return r;
    const RotationPlan& plan = *rotation;
    const auto pool_bytes = static_cast<std::size_t>(bytes.shared + plan.sets * bytes.set);
    if (pool_.bytes() < pool_bytes) {
      pool_ = HostBuffer();  // free before allocating the larger pool
      pool_ = HostBuffer(pool_bytes);
    }
    d.place(plan.sets, static_cast<unsigned char*>(pool_.data()));
    d.fill_all();
    std::int64_t set = 0;
    r.measurement = sampler_.time(
        o.measure, o.cold, plan.sets, static_cast<double>(memop_io_bytes(c)), 0,
        [&](std::int64_t s) { run_op(c, d, s); }, set);
    r.impl = c.op == MemOp::copy ? fmt::format("memcpy, {} threads", threads())
                                 : fmt::format("vectorised loops, {} threads", threads());
    if (o.check) check(c, d, set, o, r);
    return r;
  }

 private:
  static unsigned threads() { return parallel_threads(INT64_MAX); }

  void check(const MemopCase& c, CaseOperands& d, std::int64_t set, const MemopRunOptions& o,
             MemopResult& r) {
    // An operator that updates its inputs (AdamW) has stepped this set many times: give it its
    // inputs again, keep them for the reference, and step once more.
    std::vector<std::vector<float>> saved;
    for (const auto& op : d.all())
      if (op.in_place()) {
        d.fill_set(set);
        break;
      }
    for (const auto& op : d.all())
      if (op.in_place()) saved.emplace_back(op.at<float>(set), op.at<float>(set) + op.count);
    if (!saved.empty()) run_op(c, d, set);
    if (o.corrupt_for_test) spoil_for_test(c, d, set);

    if (c.op == MemOp::copy) {
      const Operand& src = d.get("src");
      summarize_checks({compare_bytes("dst", static_cast<const unsigned char*>(src.raw(set)),
                                      static_cast<const unsigned char*>(d.get("dst").raw(set)),
                                      static_cast<std::size_t>(src.bytes()), c.dtype, c.cols)},
                       "byte for byte", r);
      return;
    }
    HostReader reader(d, set);
    summarize_checks(check_memop_outputs(c, reader, saved), memop_tolerance_rule(c), r);
  }

  std::uint64_t llc_bytes_;
  HostBuffer pool_;  // every case's operands, reused from case to case (grown when short)
  HostSampler sampler_;
};

}  // namespace

std::unique_ptr<MemopProvider> make_cpu_memop_provider() {
  return std::make_unique<CpuMemopProvider>();
}

}  // namespace opbench
