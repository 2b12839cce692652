#pragma once
// The messages one training step of a model sends (one micro-batch), as collectives to
// benchmark: the tensor-parallel all-reduces of activations and of the cross-entropy's
// statistics, their sequence-parallel all-gathers / reduce-scatters, the MoE all-to-all of
// routed tokens and the expert-tensor-parallel gathers and scatters of them, or the all-gather
// dispatcher's gathers and scatters of every token (all from
// collectives/parallel_messages, as bench_step's step), and the pipeline's send/recv of
// activations, and context parallelism's ring of K and V.
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/coll_op.hpp"
#include "collectives/parallel_messages.hpp"
#include "common/model_config.hpp"

namespace opbench {

// The parallel dimension whose groups a message runs in: where its ranks lie in the launch
// (collectives/rank_groups.hpp: tensor-parallel and expert-tensor-parallel ranks consecutive, an
// expert group's etp apart, a pipeline stage's neighbour world / pp on).
// The all-gather dispatcher's tp_ep groups are etp · ep consecutive ranks.
// A context-parallel ring's cp ranks lie tp apart.
enum class ParallelAxis { tp, ep, etp, tp_ep, cp, pp };

struct ModelMessage {
  std::string label;  // what it stands for: "tp all_reduce of mbs*seq*hidden"
  CollOp op;
  std::uint64_t size_bytes;  // nccl-tests size: max(send, recv) bytes per rank
  DType dtype;               // --model-dtype, or fp32 for the cross-entropy statistics
  int group_size;  // ranks that take part (tp, ep, etp, etp·ep, or 2: a stage and the next)
  std::int64_t calls_per_step;
  ParallelAxis axis = ParallelAxis::tp;
};

struct ModelParallel {
  std::int64_t tp = 1, ep = 1, pp = 1, micro_batch = 1, seqlen = 0;
  DType dtype = DType::bf16;
  std::int64_t etp = 0;  // expert tensor parallelism; 0: tp, as Megatron-Core defaults it
  MoeDispatcher dispatcher = MoeDispatcher::alltoall;
  std::int64_t cp = 1;  // context parallelism: a rank holds seqlen / cp of each sequence
  std::int64_t expert_tp() const { return etp > 0 ? etp : tp; }
};

std::vector<ModelMessage> model_messages(const ModelConfig& model, const ModelParallel& parallel);

}  // namespace opbench
