#pragma once
// The tensor- and expert-parallel messages of one micro-batch, written once for bench_ccl --model
// (what to benchmark) and bench_step (what a step waits for). Megatron's tensor parallelism
// (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"):
//   without sequence parallelism: an all-reduce after the attention and after the MLP output
//     projections in forward, and one of the input gradient of the QKV and up projections in
//     backward: 2 + 2 per layer;
//   with it: forward all-gathers the sequence-split input of the QKV and up projections (2) and
//     reduce-scatters the outputs of the attention and MLP output projections (2); backward
//     all-gathers that input again for the weight gradient (2), all-gathers the output
//     projections' output gradient (2) and reduce-scatters the input gradients (2).
// Each is half the attention's, in every layer, and half the MLP's, in the layers whose MLP runs
// in the tensor-parallel group (ModelConfig::tp_mlp_layers): an MoE layer's routed experts get
// their tokens through the dispatcher below instead, its shared experts as a dense MLP.
// The vocabulary-parallel embedding (first stage) and LM head (last stage) add one each way, and
// the vocabulary-parallel cross-entropy all-reduces the logits' max, the target logit and the sum
// of exponentials, one fp32 value per token (last stage). Full recomputation repeats the
// layers' forward messages. Every buffer is the whole activation tokens x hidden (nccl-tests'
// size: the gathered or scattered buffer).
// MoE (Megatron-Core's all-to-all token dispatcher, megatron/core/transformer/moe/
// token_dispatcher.py): per MoE layer, the dispatch and combine all-to-all over the expert-parallel
// group in forward and again in backward, each rank sending its tokens' top-k copies (its
// sequence-parallel share of the tokens with sp); with expert tensor parallelism etp > 1, the
// tokens a rank received are then all-gathered over its etp group before the experts (each holds
// I_e / etp of every expert's columns) and their outputs reduce-scattered back before the combine,
// an all-gather and a reduce-scatter each way, of etp times the tokens. The routing probabilities
// recent versions send along (top-k fp32 per token: 1 / (H / 2) of the tokens' bytes in bf16) are
// not counted.
// Megatron-Core's all-gather token dispatcher (its default, --moe-token-dispatcher-type allgather)
// instead all-gathers every rank's tokens (not their top-k copies) over the etp · ep ranks that
// hold all the experts of a layer between them (its tp_ep group) and picks out the copies for the
// rank's own experts; it reduce-scatters the unpermuted outputs back: an all-gather and a
// reduce-scatter of etp · ep times the rank's tokens, each way. The routing map and probabilities
// it gathers beside them (E values a token) are not counted.
// Context parallelism (Transformer Engine's AttnFuncWithCPAndKVP2P, Megatron-Core's default
// --cp-comm-type p2p): every layer's attention passes each rank's K and V (its 1/cp of the tokens)
// around the cp ranks in a ring, cp − 1 sends forward; backward the ring runs again with K and V
// and the gradients of the block before: K and V alone first, the last block's gradients alone
// last, both packed into one message in the cp − 2 steps between.
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/coll_op.hpp"
#include "common/dtype.hpp"

namespace opbench {

enum class MessagePass { forward, backward };
// How often per micro-batch: in every layer of a stage, every layer whose MLP runs in the
// tensor-parallel group (tp_mlp_layers), every MoE layer, or once on the first or last stage.
enum class MessageScope { per_layer, per_tp_mlp_layer, per_moe_layer, first_stage, last_stage };
// Whose group a message runs in: the tensor-parallel group, the expert-parallel one, or the
// expert-tensor-parallel one (etp ranks, consecutive: Megatron's expert dimensions "tp-ep-dp-pp"
// with its tp the etp), or both expert groups together (etp · ep consecutive ranks: Megatron-Core's
// tp_ep group), or the context-parallel ring (cp ranks, tp apart: Megatron's "tp-cp-ep-dp-pp").
enum class MessageGroup { tp, ep, etp, tp_ep, cp };

// Megatron-Core's MoE token dispatchers (--moe-token-dispatcher-type): alltoall, which it
// recommends with expert parallelism, and allgather, its default.
enum class MoeDispatcher { alltoall, allgather };
std::string moe_dispatcher_name(MoeDispatcher d);
MoeDispatcher parse_moe_dispatcher(const std::string& text);  // bad_input naming --moe-dispatcher

struct ParallelMessage {
  CollOp op;
  MessagePass pass;
  MessageScope scope;
  std::int64_t count;  // per micro-batch and per unit of `scope`
  std::int64_t bytes;  // nccl-tests size
  DType dtype;
  std::string what;  // "outputs of attention and MLP"
  MessageGroup group = MessageGroup::tp;
  // A layer message that full recomputation repeats (the layers' forward ones).
  bool recomputed() const {
    return pass == MessagePass::forward &&
           (scope == MessageScope::per_layer || scope == MessageScope::per_tp_mlp_layer ||
            scope == MessageScope::per_moe_layer);
  }
};

struct ParallelShape {
  std::int64_t tokens = 0;  // per micro-batch on a rank: micro_batch x sequence length / cp
  std::int64_t hidden = 0;
  std::int64_t tp = 1;
  bool sp = false;  // sequence parallelism (with tp > 1)
  std::int64_t ep = 1;
  std::int64_t etp = 1;    // expert tensor parallelism (Megatron-Core's default: tp)
  std::int64_t top_k = 0;  // MoE: experts per token
  MoeDispatcher dispatcher = MoeDispatcher::alltoall;
  std::int64_t cp = 1;
  std::int64_t kv_width = 0;  // K and V elements a token on a tp rank (kv_elements_per_token)
  DType dtype = DType::bf16;
};

// Empty when tp is 1.
std::vector<ParallelMessage> tensor_parallel_messages(const ParallelShape& s);
// Empty when cp is 1.
std::vector<ParallelMessage> context_parallel_messages(const ParallelShape& s);
// Empty when ep and etp are 1 or the model has no experts (top_k 0).
// The all-gather dispatcher's messages run in the tp_ep group, the all-to-all one's in the ep and
// etp groups.
std::vector<ParallelMessage> expert_parallel_messages(const ParallelShape& s);

}  // namespace opbench
