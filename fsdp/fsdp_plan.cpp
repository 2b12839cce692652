#include "fsdp/fsdp_plan.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/int_math.hpp"
#include "common/text.hpp"

namespace opbench {
namespace {

std::vector<ParamTensor> flatten(const std::vector<ModuleParams>& modules) {
  std::vector<ParamTensor> out;
  for (const auto& m : modules)
    out.insert(out.end(), m.params.begin(), m.params.end());
  return out;
}

// The units of one kind of decoder layer under a wrap policy.
void add_layer_units(std::vector<FsdpUnit>& out, const std::string& kind, std::int64_t count,
                     const std::vector<ModuleParams>& modules, WrapPolicy wrap) {
  if (count == 0) return;
  if (wrap == WrapPolicy::layer) {
    out.push_back({kind, count, false, flatten(modules)});
    return;
  }
  // submodule: attention and MLP are units of their own; the layer keeps its norms.
  for (const auto& m : modules)
    out.push_back({kind + "." + m.name, count, false, m.params});
}

}  // namespace

WrapPolicy parse_wrap_policy(const std::string& text) {
  std::string t = to_lower(trim(text));
  if (t == "layer") return WrapPolicy::layer;
  if (t == "submodule") return WrapPolicy::submodule;
  if (t == "model") return WrapPolicy::model;
  throw bad_input(
      fmt::format("--wrap: unknown policy '{}' (accepted: layer, submodule, model)", text));
}

std::vector<FsdpUnit> fsdp_units(const ModelConfig& m, WrapPolicy wrap) {
  std::vector<FsdpUnit> out;
  const auto root = flatten(root_modules(m));
  if (wrap == WrapPolicy::model) {
    FsdpUnit all{"model", 1, true, root};
    for (std::int64_t i = 0; i < m.num_hidden_layers; ++i) {
      auto layer = flatten(decoder_layer_modules(m, i >= m.dense_mlp_layers()));
      all.params.insert(all.params.end(), layer.begin(), layer.end());
    }
    out.push_back(std::move(all));
    return out;
  }
  add_layer_units(out, m.moe ? "dense_layer" : "decoder_layer", m.dense_mlp_layers(),
                  decoder_layer_modules(m, false), wrap);
  add_layer_units(out, "moe_layer", m.moe_layers(), decoder_layer_modules(m, true), wrap);
  out.push_back({"root", 1, true, root});
  return out;
}

std::int64_t fsdp1_per_rank_count(const FsdpUnit& unit, std::int64_t shard_size) {
  return ceil_div(unit.numel(), shard_size);
}

std::int64_t fsdp2_per_rank_count(const FsdpUnit& unit, std::int64_t shard_size) {
  std::int64_t n = 0;
  for (const auto& p : unit.params)
    n += ceil_div(p.dim0(), shard_size) * (p.numel() / p.dim0());
  return n;
}

CollCounts PlanEntry::counts() const {
  return exact_counts(op, per_rank_count, group_size);
}

void validate(const FsdpConfig& c) {
  if (c.world_size < 1)
    throw bad_input(fmt::format("--world-size: must be at least 1, got {}", c.world_size));
  if (c.version != 1 && c.version != 2)
    throw bad_input(fmt::format("--fsdp-version: must be 1 or 2, got {}", c.version));
  if (c.shard_group_size < 0 || (c.shard_group_size > 0 && c.world_size % c.shard_group_size != 0))
    throw bad_input(fmt::format("--shard-group {}: must divide the world size {}",
                                c.shard_group_size, c.world_size));
}

std::vector<PlanEntry> fsdp_plan(const std::vector<FsdpUnit>& units, const FsdpConfig& c) {
  validate(c);
  const std::int64_t S = c.shard_size();
  std::vector<PlanEntry> plan;
  for (const auto& u : units) {
    const std::int64_t shard =
        c.version == 1 ? fsdp1_per_rank_count(u, S) : fsdp2_per_rank_count(u, S);
    auto entry = [&](CollOp op, const char* phase, DType dtype, std::int64_t group,
                     std::int64_t calls) {
      plan.push_back({u.name, u.instances, u.numel(), op, phase, dtype, shard, group, calls});
    };
    entry(CollOp::all_gather, "forward", c.param_dtype, S, u.instances);
    // Resharded after forward, a unit is gathered again for backward; the root never is.
    if (c.reshard_after_forward && !u.is_root)
      entry(CollOp::all_gather, "backward", c.param_dtype, S, u.instances);
    entry(CollOp::reduce_scatter, "backward", c.reduce_dtype, S, u.instances);
    if (c.replicas() > 1)
      entry(CollOp::all_reduce, "backward", c.reduce_dtype, c.replicas(), u.instances);
  }
  return plan;
}

std::string nccl_tests_command(const PlanEntry& e, RedOp reduce_op) {
  const char* binary = e.op == CollOp::all_gather       ? "all_gather_perf"
                       : e.op == CollOp::reduce_scatter ? "reduce_scatter_perf"
                                                        : "all_reduce_perf";
  std::string redop = e.op == CollOp::all_gather ? "" : " -o " + red_op_name(reduce_op);
  return fmt::format("mpirun -np {} {} -b {} -e {} -d {}{} -g 1", e.group_size, binary,
                     e.buffer_bytes(), e.buffer_bytes(), nccl_tests_type_name(e.dtype), redop);
}

}  // namespace opbench
