#include "collectives/ccl_cases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>

#include "collectives/capture_messages.hpp"
#include "collectives/model_messages.hpp"
#include "common/error.hpp"
#include "common/json_reader.hpp"
#include "common/model_config.hpp"
#include "common/text.hpp"
#include "trace/trace_source.hpp"

namespace opbench {
namespace {

// The roots of an op: -r, or with -r -1 every rank of the group in turn (nccl-tests' -r -1).
std::vector<int> roots(const CclOptions& o, CollOp op, int group_size) {
  if (!has_root(op)) return {0};
  if (o.root >= 0) return {o.root};
  std::vector<int> all(static_cast<std::size_t>(group_size));
  for (int r = 0; r < group_size; ++r)
    all[static_cast<std::size_t>(r)] = r;
  return all;
}

std::vector<CclCase> sweep_cases(const CclOptions& o, int group_size) {
  std::vector<CclCase> cases;
  for (CollOp op : o.ops)
    for (DType dtype : o.dtypes)
      for (RedOp redop : is_reduction(op) ? o.redops : std::vector<RedOp>{RedOp::sum})
        for (std::uint64_t size : o.sizes)
          for (int root : roots(o, op, group_size))
            for (Placement placement : o.placements)
              cases.push_back({op, dtype, redop, root, size, placement, group_size, "", 0});
  return cases;
}

std::vector<CclCase> model_cases(const CclOptions& o, int world_size) {
  std::string path =
      o.model_config_path.empty() ? find_config_file("models.json") : o.model_config_path;
  auto model = select_models(load_models(path), o.model, path);
  if (model.size() != 1) throw bad_input("--model: name one model");
  ModelParallel parallel{o.tp,          o.ep,  o.pp,         o.micro_batch, o.seqlen,
                         o.model_dtype, o.etp, o.dispatcher, o.cp};
  const std::int64_t etp = parallel.expert_tp();
  // how the messages below name the layout
  const std::string degrees = fmt::format(
      "tp {}{}, ep {}{}, pp {}{}", o.tp, o.cp > 1 ? fmt::format(", cp {}", o.cp) : std::string(),
      o.ep, etp != o.tp ? fmt::format(", etp {}", etp) : std::string(), o.pp,
      o.dispatcher != MoeDispatcher::alltoall
          ? fmt::format(", the {} dispatcher", moe_dispatcher_name(o.dispatcher))
          : std::string());
  if (o.cp > 1)  // refuses a sequence it cannot cut
    context_parallel_seqlens(
        model.front(), o.seqlen > 0 ? std::vector{o.seqlen} : std::vector<std::int64_t>{}, o.cp);
  auto messages = model_messages(model.front(), parallel);
  if (messages.empty())
    throw bad_input(fmt::format(
        "--model {}: no messages at {} (set --tp, --cp, --ep or --pp above 1)", o.model, degrees));
  // --op picks among the model's messages (all of them by default).
  std::vector<std::string> offered;
  for (const auto& m : messages)
    if (std::find(offered.begin(), offered.end(), coll_op_name(m.op)) == offered.end())
      offered.push_back(coll_op_name(m.op));
  std::erase_if(messages, [&](const ModelMessage& m) {
    return std::find(o.ops.begin(), o.ops.end(), m.op) == o.ops.end();
  });
  if (messages.empty())
    throw bad_input(fmt::format("--op: the messages of --model {} at {} are {}", o.model, degrees,
                                join(offered, ", ")));
  // Where each message's ranks lie, as Megatron-LM lays them out (collectives/rank_groups.hpp): an
  // expert group's etp apart, a stage's neighbour world / pp on (consecutive ranks where pp does
  // not divide the launch; ranks past the last whole block of a stride group consecutively).
  auto stride = [&](const ModelMessage& m) {
    switch (m.axis) {
      case ParallelAxis::tp:
      case ParallelAxis::etp:
      case ParallelAxis::tp_ep:
        return 1;
      case ParallelAxis::ep:
        return static_cast<int>(etp);
      case ParallelAxis::cp:
        return static_cast<int>(o.tp);
      case ParallelAxis::pp:
        return world_size % o.pp == 0 ? world_size / static_cast<int>(o.pp) : 1;
    }
    return 1;
  };
  // The experts' ranks are each pipeline stage's laid out again, etp innermost, then ep
  // (Megatron-Core's expert rank generator): their groups lie so only where etp · ep · pp ranks
  // divide the launch, as Megatron-Core requires of the world.
  const bool experts = std::any_of(messages.begin(), messages.end(), [](const ModelMessage& m) {
    return m.axis == ParallelAxis::ep || m.axis == ParallelAxis::etp ||
           m.axis == ParallelAxis::tp_ep;
  });
  if (experts && world_size % (etp * o.ep * o.pp) != 0)
    throw bad_input(fmt::format(
        "--model {} at {}: the experts' groups take etp x ep x pp = {} ranks (each pipeline "
        "stage's ranks laid out again, etp innermost), which do not divide the {} rank{} of this "
        "launch: launch a multiple of {} ranks or lower --etp/--ep/--pp",
        o.model, degrees, etp * o.ep * o.pp, world_size, world_size > 1 ? "s" : "",
        etp * o.ep * o.pp));
  // A ring's cp ranks lie tp apart within each pipeline stage's tp · cp · dp ranks
  // (Megatron-LM's order "tp-cp-ep-dp-pp").
  const bool ring = std::any_of(messages.begin(), messages.end(),
                                [](const ModelMessage& m) { return m.axis == ParallelAxis::cp; });
  if (ring && world_size % (o.tp * o.cp * o.pp) != 0)
    throw bad_input(fmt::format(
        "--model {} at {}: the context-parallel rings take tp x cp x pp = {} ranks, which do not "
        "divide the {} rank{} of this launch: launch a multiple of {} ranks or lower "
        "--tp/--cp/--pp",
        o.model, degrees, o.tp * o.cp * o.pp, world_size, world_size > 1 ? "s" : "",
        o.tp * o.cp * o.pp));
  std::vector<CclCase> cases;
  for (const auto& m : messages) {
    if (world_size % m.group_size != 0)
      throw bad_input(fmt::format(
          "--model {} at {}: {} needs groups of {} ranks, which do not divide the {} rank{} of "
          "this launch: launch a multiple of {} ranks (mpirun -np {}) or lower "
          "--tp/--ep/--etp/--pp",
          o.model, degrees, m.label, m.group_size, world_size, world_size > 1 ? "s" : "",
          m.group_size, m.group_size));
    for (Placement placement : o.placements)
      cases.push_back({m.op, m.dtype, RedOp::sum, 0, m.size_bytes, placement, m.group_size, m.label,
                       m.calls_per_step, stride(m)});
  }
  return cases;
}

std::vector<CclCase> capture_cases(const CclOptions& o, int world_size, bool lead) {
  std::vector<std::string> left_out;
  const ShapeSource source = trace::job_shape_source(o.job);
  if (lead) print_source_notes(source);
  const auto messages = captured_messages(source, o.job.rank, &left_out);
  std::vector<std::string> moved;  // groups this launch cannot space as the job did
  // The job's groups as far apart as they were (a data-parallel group across nodes stays across
  // them), where this launch has the size · stride ranks that takes; else consecutive ranks.
  auto replay_stride = [&](const CapturedMessage& m) {
    if (m.comm_stride <= 1 || m.comm_size <= 1) return 1;
    if (m.comm_stride <= world_size / m.comm_size) {
      const std::int64_t block = m.comm_size * m.comm_stride;
      if (world_size % block != 0)
        moved.push_back(fmt::format(
            "{} {} {} B: groups of {} ranks {} apart fill blocks of {} ranks; the last {} of this "
            "launch's {} form consecutive groups",
            m.api, coll_op_name(m.op), m.size_bytes, m.comm_size, m.comm_stride, block,
            world_size % block, world_size));
      return static_cast<int>(m.comm_stride);
    }
    moved.push_back(fmt::format(
        "{} {} {} B: the job's groups of {} ranks were {} ranks apart, which takes {} x {} ranks; "
        "this launch has {}: run on consecutive ranks instead",
        m.api, coll_op_name(m.op), m.size_bytes, m.comm_size, m.comm_stride, m.comm_size,
        m.comm_stride, world_size));
    return 1;
  };
  std::vector<CclCase> cases;
  for (const auto& m : messages) {
    if (m.comm_size > world_size || world_size % m.comm_size != 0) {
      left_out.push_back(fmt::format(
          "{} {} {} B: the job's communicator had {} ranks, which do not divide the {} of this "
          "launch (mpirun -np {})",
          m.api, coll_op_name(m.op), m.size_bytes, m.comm_size, world_size, m.comm_size));
      continue;
    }
    // the placement the job called, with the job's time for it (both where the tables do not say)
    const std::size_t first = cases.size();
    bool placed = false;
    for (Placement placement : o.placements) {
      if (!m.placement.empty() && m.placement != placement_name(placement)) continue;
      CclCase c{m.op, m.dtype, m.redop, 0, m.size_bytes, placement, m.comm_size, m.api, 0};
      c.captured = true;
      c.captured_calls = m.calls;
      c.in_job_us = m.in_job_us;
      cases.push_back(c);
      placed = true;
    }
    if (!placed) {
      left_out.push_back(
          fmt::format("{} {} {} B: the job called it {}, which --placement leaves out", m.api,
                      coll_op_name(m.op), m.size_bytes, m.placement));
      continue;
    }
    const int stride = replay_stride(m);  // (its warnings only for what runs)
    for (std::size_t i = first; i < cases.size(); ++i)
      cases[i].stride = stride;
  }
  if (lead) {
    for (const auto& why : left_out)
      fmt::print(stderr, "warning: {}: left out {}\n", o.job.flag(), why);
    for (const auto& why : moved)
      fmt::print(stderr, "warning: {}: {}\n", o.job.flag(), why);
  }
  if (messages.empty())
    throw bad_input(fmt::format(
        "{} {}: no collective call in the job's tables (a job of one process makes none): "
        "nothing for bench_ccl to run",
        o.job.flag(), o.job.path()));
  if (cases.empty())
    throw bad_input(
        fmt::format("{} {}: none of the job's {} collective{} can run here (each "
                    "left out above)",
                    o.job.flag(), o.job.path(), messages.size(), messages.size() == 1 ? "" : "s"));
  return cases;
}

}  // namespace

CclWorld ccl_world(const CclOptions& o, int launched) {
  const int world = o.dry_run && o.world_size > 0 ? static_cast<int>(o.world_size) : launched;
  const int group_size = o.group_size > 0 ? o.group_size : world;
  if (group_size > world || world % group_size != 0)
    throw bad_input(
        fmt::format("--group-size {}: must divide the world size {}", group_size, world));
  if (o.root >= group_size)
    throw bad_input(fmt::format("-r/--root {}: the groups have {} ranks", o.root, group_size));
  for (auto [flag, rank] : {std::pair{"--test-corrupt-rank", o.run.corrupt_rank},
                            {"--test-stall-rank", o.run.stall_rank},
                            {"--test-fail-rank", o.run.fail_rank},
                            {"--test-lead-rank", o.run.lead_rank}})
    if (rank >= world)
      throw bad_input(fmt::format("{} {}: the world has {} ranks", flag, rank, world));
  return {world, group_size};
}

std::vector<CclCase> ccl_cases(const CclOptions& o, const CclWorld& w, bool lead) {
  return o.wants_capture() ? capture_cases(o, w.world, lead)
         : o.wants_model() ? model_cases(o, w.world)
                           : sweep_cases(o, w.group_size);
}

}  // namespace opbench
