#pragma once
// The GEMMs of one transformer training step, derived from a model config with Megatron-style
// tensor parallelism, for the three passes of every linear layer Y[M,N] = X[M,K]·W[N,K]ᵀ:
//   fprop  Y  = X·Wᵀ    m=M, n=N, k=K   (A=X, B=W stored N x K -> layout NT)
//   dgrad  dX = dY·W    m=M, n=K, k=N   (layout NN)
//   wgrad  dW = dYᵀ·X   m=N, n=K, k=M   (A=dY stored M x N -> layout TN)
#include <cstdint>
#include <string>
#include <vector>

#include "common/model_config.hpp"
#include "gemm/gemm_problem.hpp"

namespace opbench {

enum class GemmPass { fprop, dgrad, wgrad };
std::string pass_name(GemmPass p);
std::vector<GemmPass> parse_passes(const std::string& comma_separated);

// A linear layer of the model: Y[M,N] = X[M,K]·W[N,K]ᵀ on one tensor-parallel rank.
struct LinearLayer {
  std::string name;  // attn_qkv, attn_out, mlp_gate_up, mlp_down, lm_head, moe_*, ...
  std::int64_t M = 0, N = 0, K = 0;
  std::int64_t calls_per_step = 0;  // how often one micro-batch's step runs it, per pass
  std::string note;                 // e.g. how M was balanced over experts
  // A routed expert's layer (N and K per expert; M the balanced share, calls one per expert):
  // bench_gemm runs these as grouped GEMMs over the routed token counts (expert_gemm.hpp).
  bool routed_expert = false;
  // Output columns (of N) that `replicas` tensor-parallel ranks each compute alike: GQA's KV
  // heads where tp exceeds them, MLA's down projections. Model FLOPs count that work once.
  std::int64_t replicated_n = 0, replicas = 1;
  // The FLOPs of one call (in any pass: 2·M·N·K of the layer) that other ranks repeat.
  std::int64_t repeated_flops(std::int64_t call_flops) const {
    return replicated_n == 0 ? 0 : call_flops / N * replicated_n * (replicas - 1) / replicas;
  }
};

struct ParallelConfig {
  std::int64_t tp = 1;
  std::int64_t micro_batch = 1;
  std::int64_t seqlen = 0;  // 0: the model's own seqlen
  // Hugging Face's modules instead of Megatron's fused ones: q_proj, k_proj and v_proj instead of
  // attn_qkv, gate_proj and up_proj instead of mlp_gate_up (what PyTorch eager runs).
  bool separate_projections = false;
  // Expert tensor parallelism: the ranks that split each routed expert's columns; 0: tp, as
  // Megatron-Core defaults it. The shared experts and the router stay with tp.
  std::int64_t etp = 0;
  std::int64_t expert_tp() const { return etp > 0 ? etp : tp; }
};

// The tokens an expert-parallel rank routes per micro-batch of `tokens`: the tensor-parallel
// group's tokens, tokens / tp a rank under sequence parallelism, gathered over the etp ranks that
// split each expert (Megatron-Core's all-to-all dispatcher): tokens · etp / tp, `tokens` when
// etp = tp. Throws bad_input where that is not a whole number.
std::int64_t expert_routed_tokens(std::int64_t tokens, std::int64_t tp, std::int64_t etp);

// The model's linear layers on one rank. Throws bad_input when tp does not divide what it must.
std::vector<LinearLayer> model_linear_layers(const ModelConfig& model,
                                             const ParallelConfig& parallel);

// The GEMM a pass of a layer runs (m, n, k and transposes as run), in dtype `dtype`.
GemmProblem pass_problem(const LinearLayer& layer, GemmPass pass, DType dtype);

}  // namespace opbench
