#include "step/step_memory.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/int_math.hpp"
#include "common/param_layout.hpp"
#include "common/rotation.hpp"
#include "fsdp/fsdp_plan.hpp"
#include "step/step_operators.hpp"
#include "step/step_stage.hpp"

namespace opbench {
namespace {

constexpr std::int64_t kFp32 = 4;

// The sizes one rank's tensors have (Megatron's tensor-parallel split).
struct Dims {
  std::int64_t B, S, T;  // sequences, tokens per sequence, tokens of the micro-batch
  std::int64_t rows;     // tokens in the norms and residuals: T / tp with sequence parallelism
  std::int64_t H, d, q, kv, I;  // hidden, head dim, query and KV heads per rank, MLP width / tp
  std::int64_t b;               // bytes of the model's dtype
  explicit Dims(const StepConfig& c) {
    const ModelConfig& m = c.model;
    B = c.micro_batch;
    S = c.cp_seq();
    T = c.tokens_per_micro_batch();
    rows = c.sp() ? T / c.tp : T;
    H = m.hidden_size;
    d = m.head_dim;
    if (m.mla) {
      q = kv = m.num_attention_heads / c.tp;
    } else {
      const TpHeads h = heads_per_tp_rank(m, c.tp);
      q = h.q;
      kv = h.kv;
    }
    I = m.intermediate_size / c.tp;
    b = static_cast<std::int64_t>(dtype_size(c.dtype));
  }
};

struct Lists {
  std::vector<SavedTensor>& out;
  void add(std::string what, std::int64_t elements, std::int64_t element_bytes, bool core = false,
           bool checkpoint_input = false) {
    out.push_back({std::move(what), elements, element_bytes, core, checkpoint_input});
  }
};

// A norm saves its input (the residual stream) and its statistics; its output is listed by the
// GEMM it feeds. Fused (Apex / Transformer Engine): rstd (and the mean of a LayerNorm) in fp32.
// Eager RMSNorm, x * rsqrt(mean(x^2) + eps) * w as the peer writes it: pow saves x, rsqrt its
// result, the first product x and the rsqrt, the second its input x * rsqrt (and the weight);
// mean's backward keeps x^2 in PyTorch 1.13 (measured with saved_tensors_hooks). nn.LayerNorm
// is one kernel in both plans.
void add_norm(Lists& l, const StepConfig& c, const Dims& x, const std::string& which) {
  const bool layernorm = c.model.norm == "layernorm";
  l.add(which + " input (residual)", x.rows * x.H, x.b);
  if (c.kernels == Kernels::fused || layernorm) {
    l.add(which + (layernorm ? " mean and rstd (fp32)" : " rstd (fp32)"),
          x.rows * (layernorm ? 2 : 1), kFp32);
    return;
  }
  l.add(which + " x^2", x.rows * x.H, x.b);
  l.add(which + " rsqrt(mean(x^2) + eps)", x.rows, x.b);
  l.add(which + " x * rsqrt", x.rows * x.H, x.b);
}

void add_attention(Lists& l, const StepConfig& c, const Dims& x, const ActivationModel& am) {
  const ModelConfig& m = c.model;
  const std::int64_t scores = x.B * x.q * x.S * x.S;
  if (c.kernels == Kernels::eager && c.attention() == Kernels::fused) {
    // The peer's attention around scaled_dot_product_attention's flash kernel (PyTorch on the
    // GPU): separate projections of the norm's output, RoPE (its products keep only cos and
    // sin), k and v expanded to the query heads by a copy (GQA), then the kernel keeps q, the
    // expanded k and v, its output and the log-sum-exp of each query row (fp32); the output's
    // transpose-reshape is a copy the o projection keeps.
    const std::int64_t heads = x.T * x.q * x.d;
    l.add("q, k, v projection input (norm 1 output)", x.rows * x.H, x.b);
    l.add("q after rotary", heads, x.b);
    l.add("k after rotary, expanded to the query heads", heads, x.b);
    l.add("v expanded to the query heads", heads, x.b);
    l.add("attention output (kept by the fused kernel)", heads, x.b, true);
    l.add("softmax log-sum-exp (fp32)", x.B * x.q * x.S, kFp32, true);
    l.add("o projection input (transposed copy of the output)", heads, x.b);
    return;
  }
  if (c.kernels == Kernels::eager) {
    // The peer's attention: separate q, k, v projections of the norm's output, RoPE as
    // q * cos + rotate_half(q) * sin (the products keep only cos and sin), k and v expanded to
    // the query heads by a copy (GQA), then PyTorch 1.13's math path: q / sqrt(d) and k^T /
    // sqrt(d) are new tensors the score GEMM keeps, softmax keeps its output, the second GEMM
    // keeps the scores and v; the output's transpose-reshape is a copy the o projection keeps.
    const std::int64_t heads = x.T * x.q * x.d;
    l.add("q, k, v projection input (norm 1 output)", x.rows * x.H, x.b);
    l.add("q / sqrt(d) (scaled copy)", heads, x.b, true);
    l.add("k^T / sqrt(d) (scaled copy of the expanded k)", heads, x.b, true);
    l.add("scores (softmax output)", scores, x.b, true);
    l.add("v (expanded to the query heads)", heads, x.b);
    l.add("q after rotary (checkpoint input)", heads, x.b, false, true);
    l.add("k after rotary, expanded (checkpoint input)", heads, x.b, false, true);
    l.add("o projection input (transposed copy of the output)", heads, x.b);
    return;
  }
  // Megatron with fused kernels: one QKV GEMM of the norm's output, rotary fused, the core
  // keeps Q, K and V (flash: and the log-sum-exp of each query row; unfused: the softmax output,
  // with dropout also its mask and the dropped scores), the output projection keeps the output.
  l.add("QKV input (norm 1 output)", x.rows * x.H, x.b);
  if (m.mla) {
    const MlaConfig& a = *m.mla;
    const std::int64_t latents = a.q_lora_rank.value_or(0) + a.kv_lora_rank + a.qk_rope_head_dim;
    l.add("q and kv latents (MLA)", x.T * latents, x.b);
    l.add("Q", x.T * x.q * (a.qk_nope_head_dim + a.qk_rope_head_dim), x.b);
    l.add("K", x.T * x.q * (a.qk_nope_head_dim + a.qk_rope_head_dim), x.b);
    l.add("V", x.T * x.q * a.v_head_dim, x.b);
  } else {
    l.add("Q after rotary", x.T * x.q * x.d, x.b);
    l.add("K after rotary", x.T * x.kv * x.d, x.b);
    l.add("V", x.T * x.kv * x.d, x.b);
  }
  const bool flash = am.flash.value_or(true);
  if (flash) {
    l.add("softmax log-sum-exp (fp32)", x.B * x.q * x.S, kFp32, true);
  } else {
    l.add("scores (softmax output)", scores, x.b, true);
    if (am.dropout) {
      l.add("score dropout mask", scores, 1, true);
      l.add("dropped scores", scores, x.b, true);
    }
  }
  const std::int64_t v_head = m.mla ? m.mla->v_head_dim : x.d;
  l.add("output projection input (attention output)", x.T * x.q * v_head, x.b);
  if (am.dropout) l.add("attention output dropout mask", x.rows * x.H, 1);
}

void add_mlp(Lists& l, const StepConfig& c, const Dims& x, const ActivationModel& am) {
  const bool eager = c.kernels == Kernels::eager;
  l.add("MLP input (norm 2 output)", x.rows * x.H, x.b);
  if (!c.model.gated_mlp) {
    l.add("up output (GELU input)", x.T * x.I, x.b);
    l.add("GELU output (down input)", x.T * x.I, x.b);
  } else if (eager) {  // down(silu(gate(x)) * up(x)): silu keeps its input, the product both
    l.add("gate output (SiLU input)", x.T * x.I, x.b);
    l.add("SiLU output", x.T * x.I, x.b);
    l.add("up output", x.T * x.I, x.b);
    l.add("SiLU * up (down input)", x.T * x.I, x.b);
  } else {  // the fused gate/up GEMM's output is SwiGLU's one input
    l.add("gate/up output (SwiGLU input)", x.T * 2 * x.I, x.b);
    l.add("SwiGLU output (down input)", x.T * x.I, x.b);
  }
  if (am.dropout) l.add("MLP output dropout mask", x.rows * x.H, 1);
}

// An expert MLP's saved tensors over `rows` tokens of width `width`: the fused plan's as its
// SwiGLU keeps them (the gate/up GEMM's output, the activation's), the eager one's as the dense
// eager MLP above (silu keeps its input, the product both operands).
void add_expert_activations(Lists& l, const StepConfig& c, const Dims& x, const std::string& who,
                            std::int64_t rows, std::int64_t width) {
  const std::int64_t n = rows * width;
  if (!c.model.gated_mlp) {
    l.add(who + " up output (GELU input)", n, x.b);
    l.add(who + " GELU output (down input)", n, x.b);
  } else if (c.kernels == Kernels::eager) {
    l.add(who + " gate output (SiLU input)", n, x.b);
    l.add(who + " SiLU output", n, x.b);
    l.add(who + " up output", n, x.b);
    l.add(who + " SiLU * up (down input)", n, x.b);
  } else {
    l.add(who + " gate/up output (SwiGLU input)", 2 * n, x.b);
    l.add(who + " SwiGLU output (down input)", n, x.b);
  }
}

// An MoE layer's feed-forward part: the router's probabilities (fp32); the tokens the most
// loaded expert-parallel rank receives through its experts; the rank's T·k token copies'
// outputs, which the routing weights' gradient needs (PyTorch's mul by the weights saves them,
// as Megatron's unpermute does), and with eager kernels the weighted copies too (index_add_'s
// backward keeps its source); the shared experts on every token.
void add_moe(Lists& l, const StepConfig& c, const Dims& x) {
  const MoeConfig& e = *c.model.moe;
  l.add("router and experts input (norm 2 output)", x.rows * x.H, x.b);
  // the router and the combine see the rank's own tokens (x.rows: T / tp, sequence parallel as
  // Megatron-Core's MoE layers are at tp > 1); the all-gather dispatcher weights the copies of
  // the rank's experts before its reduce-scatter instead
  l.add("router probabilities (fp32)", x.rows * e.n_routed_experts, kFp32);
  const RankLoad load = busiest_expert_rank(c, x.T);
  const std::int64_t R = load.total, Ie = e.moe_intermediate_size / c.expert_tp();
  const std::int64_t copies = c.allgather_group() > 1 ? R : x.rows * e.num_experts_per_tok;
  l.add("routed tokens (experts' input)", R * x.H, x.b);
  add_expert_activations(l, c, x, "experts'", R, Ie);
  l.add("experts' output (for the routing weights' gradient)", copies * x.H, x.b);
  if (c.kernels == Kernels::eager)
    l.add("weighted copies (index_add_'s source)", copies * x.H, x.b);
  if (e.n_shared_experts > 0)
    add_expert_activations(l, c, x, "shared experts'", x.T,
                           e.n_shared_experts * e.moe_intermediate_size / c.tp);
}

std::int64_t sum_bytes(const std::vector<SavedTensor>& list) {
  std::int64_t n = 0;
  for (const auto& t : list)
    n += t.bytes();
  return n;
}

// What a stage saves besides its layers, per micro-batch, by where it lives: eager rotary's cos
// and sin tables beside every chunk's layers; the token ids (int64) for the embedding's backward
// in the first stage's first chunk; in the last stage's last chunk the final norm, the LM head's
// input and the loss's saved probabilities (fused: Megatron's vocab-parallel cross-entropy keeps
// the fp32 softmax of its [T, V/tp] logits; eager: log_softmax keeps its output).
struct StageExtras {
  std::int64_t with_layers = 0, first_chunk = 0, last_chunk = 0;
};

StageExtras stage_extras(const StepConfig& c, const Dims& x, std::int64_t stage) {
  StageExtras e;
  if (stage == 0) e.first_chunk = x.T * 8;  // token ids (int64)
  if (c.kernels == Kernels::eager && !c.model.learned_position_embeddings && !c.model.mla)
    e.with_layers = 2 * x.S * x.d * x.b;  // rotary cos and sin tables
  std::vector<SavedTensor> list;
  Lists l{list};
  if (stage == c.pp - 1) {
    add_norm(l, c, x, "final norm");
    l.add("LM head input (final norm output)", x.rows * x.H, x.b);
    const std::int64_t vocab = ceil_div(c.model.vocab_size, c.tp);
    if (c.kernels == Kernels::eager)
      l.add("log-softmax output", x.T * vocab, x.b);
    else
      l.add("cross-entropy softmax (fp32)", x.T * vocab, kFp32);
  }
  e.last_chunk = sum_bytes(list);
  return e;
}

// The largest optimizer shard of a parameter tensor the rank of the stage holds (a dense one after
// tp, a routed expert's after etp, each over its optimizer shards): the size of single-tensor
// AdamW's temporaries.
std::int64_t largest_tensor_shard(const StepConfig& c, std::int64_t stage) {
  std::int64_t most = 0;
  for (const RankTensors& t : rank_parameter_tensors(c, stage))
    most = std::max(most,
                    ceil_div(t.numel, t.expert ? expert_optimizer_shards(c) : optimizer_shards(c)));
  return most;
}

std::int64_t weight_shards(const StepConfig& c) {
  return c.sharding == Sharding::fsdp ? c.dp : c.sharding == Sharding::hsdp ? c.shard_group : 1;
}

// The all-gather MoE dispatcher's buffers while an MoE layer runs: every token of its etp · ep
// ranks, gathered (into Megatron-Core's global buffer, use_global_buffer) and, beside it, the
// unpermuted outputs of the same size before their reduce-scatter (backward: the gathered output
// gradients and the tokens' gradients before theirs). Zero for a stage without MoE layers.
std::int64_t allgather_dispatch_buffers(const StepConfig& c, std::int64_t stage) {
  if (c.allgather_group() <= 1 || stage_model(c, stage).moe_layers() == 0) return 0;
  const std::int64_t own = c.tokens_per_micro_batch() / c.tp;  // sequence parallel
  return 2 * c.allgather_group() * own * c.model.hidden_size *
         static_cast<std::int64_t>(dtype_size(c.dtype));
}

// FSDP's gathered parameters at the backward's start: the root unit (embedding, final norm, LM
// head), which FSDP keeps gathered from forward to backward, and two decoder-layer units (the
// one computing and the one prefetched), in the compute dtype; plus one unit's unsharded
// gradient, in grad_dtype, before its reduce-scatter.
std::int64_t fsdp_gathered(const StepConfig& c) {
  if (weight_shards(c) == 1) return 0;
  std::int64_t root = 0, unit = 0;
  for (const FsdpUnit& u : fsdp_units(c.model, WrapPolicy::layer)) {
    if (u.is_root)
      root += u.numel();
    else
      unit = std::max(unit, u.numel());
  }
  const auto b = static_cast<std::int64_t>(dtype_size(c.dtype));
  const auto gb = static_cast<std::int64_t>(dtype_size(c.grad_dtype));
  return (root + 2 * unit) * b + unit * gb;
}

}  // namespace

std::vector<SavedTensor> layer_saved_tensors(const StepConfig& c, bool moe_layer,
                                             const ActivationModel& am) {
  const Dims x(c);
  ActivationModel model = am;
  if (!model.flash) model.flash = c.attention() == Kernels::fused;
  std::vector<SavedTensor> out;
  Lists l{out};
  add_norm(l, c, x, "norm 1");
  add_attention(l, c, x, model);
  add_norm(l, c, x, "norm 2");
  if (moe_layer && c.model.moe)
    add_moe(l, c, x);
  else
    add_mlp(l, c, x, model);
  return out;
}

std::int64_t kept_bytes(const std::vector<SavedTensor>& layer, Recompute r) {
  if (r == Recompute::full) return layer.empty() ? 0 : layer.front().bytes();  // the input
  std::int64_t n = 0;
  for (const auto& t : layer) {
    if (r == Recompute::none && t.checkpoint_input) continue;
    if (r == Recompute::selective && t.attention_core) continue;
    n += t.bytes();
  }
  return n;
}

// Under the interleaved schedule a chunk's micro-batches are not all the stage's: the last stage's
// last chunk (the LM head) runs each micro-batch's backward right after its forward, so one is
// alive; the first stage's first chunk (the embedding) keeps 2·pp before its first backward comes
// (Megatron's order: chunk 0 of micro-batches 0..pp−1, and of pp..2pp−1 after every other chunk of
// the first pp). Without interleaving, a stage's one chunk is its micro-batches.
static double last_chunk_in_flight(const StepConfig& c, std::int64_t stage) {
  return c.vpp == 1 ? in_flight_micro_batches(c, stage)
                    : std::min(1.0, static_cast<double>(c.micro_batches()));
}
static double first_chunk_in_flight(const StepConfig& c, std::int64_t stage) {
  return c.vpp == 1 ? in_flight_micro_batches(c, stage)
                    : static_cast<double>(std::min(2 * c.pp, c.micro_batches()));
}

double in_flight_micro_batches(const StepConfig& c, std::int64_t stage) {
  const auto m = static_cast<double>(c.micro_batches());
  if (c.pp == 1) return 1;
  if (c.vpp == 1) return std::min(static_cast<double>(c.pp - stage), m);
  // Megatron's interleaved 1F1B: (pp − stage − 1)·2 + (vpp − 1)·pp warm-up forward chunks, and
  // one more in the steady state, each chunk 1/vpp of the stage's layers. Stage 0: pp + (pp −
  // 1)/vpp micro-batches, Korthikanti et al.'s factor 1 + (pp − 1)/(pp·vpp) over pp.
  const double chunks = static_cast<double>(2 * (c.pp - stage - 1) + (c.vpp - 1) * c.pp + 1);
  return std::min(chunks / static_cast<double>(c.vpp), m);
}

StepMemory step_memory(const StepConfig& c, std::int64_t stage) {
  const Dims x(c);
  StepMemory r;
  r.stage = stage;
  const std::int64_t params = rank_parameters(c, stage).total();
  const std::int64_t ws = weight_shards(c), os = optimizer_shards(c);
  const auto gb = static_cast<std::int64_t>(dtype_size(c.grad_dtype));
  const std::int64_t m = c.micro_batches();
  r.weights = ceil_div(params, ws) * x.b;
  // FSDP with several micro-batches accumulates unsharded gradients (gradient sync off until
  // the last micro-batch, as step_collectives times it).
  r.grads = (ws > 1 && m > 1 ? params : ceil_div(params, ws)) * gb;
  // AdamW's m and v (fp32, or the model's dtype in pure 16-bit training), and fp32 master
  // weights when the model computes in 16 bits with fp32 moments.
  const auto ob = static_cast<std::int64_t>(dtype_size(c.optimizer_dtype));
  const std::int64_t state_bytes = 2 * ob + (c.master_weights() ? kFp32 : 0);
  r.optimizer = optimizer_elements(c, stage) * state_bytes;

  // Activations: the stage's layers (dense and MoE) under the recompute mode, its extras, for
  // every micro-batch in flight.
  const ModelConfig sm = stage_model(c, stage);
  const auto dense = layer_saved_tensors(c, false);
  std::int64_t per_mb = kept_bytes(dense, c.recompute) * sm.dense_mlp_layers();
  std::int64_t working = 0;  // the layer recomputed inside the backward
  auto recomputed = [&](const std::vector<SavedTensor>& layer) {
    std::int64_t n = 0;
    if (c.recompute == Recompute::full) n = kept_bytes(layer, Recompute::none);
    if (c.recompute == Recompute::selective)
      for (const auto& t : layer)
        if (t.attention_core) n += t.bytes();
    return n;
  };
  if (sm.dense_mlp_layers() > 0) working = recomputed(dense);
  if (sm.moe_layers() > 0) {
    const auto moe = layer_saved_tensors(c, true);
    per_mb += kept_bytes(moe, c.recompute) * sm.moe_layers();
    working = std::max(working, recomputed(moe));
  }
  const StageExtras extras = stage_extras(c, x, stage);
  per_mb += extras.with_layers;
  r.in_flight = in_flight_micro_batches(c, stage);
  r.activations =
      std::llround(r.in_flight * static_cast<double>(per_mb) +
                   first_chunk_in_flight(c, stage) * static_cast<double>(extras.first_chunk) +
                   last_chunk_in_flight(c, stage) * static_cast<double>(extras.last_chunk));

  // PyTorch's zero_grad(set_to_none=True) frees the gradients after the optimizer step; with one
  // micro-batch the backward allocates them as it frees the activations, so none exist at its
  // start. Megatron's gradient buffer is allocated once, and several micro-batches accumulate.
  r.grads_in_backward = c.kernels == Kernels::eager && m == 1 ? 0 : r.grads;
  r.backward_transient = working + fsdp_gathered(c) + allgather_dispatch_buffers(c, stage);
  const std::int64_t logits =
      stage == c.pp - 1 ? x.T * ceil_div(c.model.vocab_size, c.tp) * x.b : 0;
  // Fused: the logits (kept for the loss in forward) or their gradient (in backward) beside the
  // saved fp32 softmax. Eager: the logits the caller holds, log_softmax's gradient and the
  // logits' gradient, at once when log_softmax's backward runs.
  r.backward_transient += c.kernels == Kernels::eager ? 3 * logits : logits;
  // The optimizer step's temporaries, in the moments' dtype: single-tensor AdamW computes
  // (exp_avg_sq.sqrt() / bias_correction2_sqrt) tensor by tensor, two temporaries of the largest
  // tensor at once; foreach one list the size of every parameter (torch._foreach_sqrt, then in
  // place); fused none.
  switch (c.optimizer_impl) {
    case OptimizerImpl::fused:
      break;
    case OptimizerImpl::single:
      r.optimizer_transient = 2 * largest_tensor_shard(c, stage) * ob;
      break;
    case OptimizerImpl::foreach:
      r.optimizer_transient = ceil_div(params, os) * ob;
      break;
  }
  // An eager training loop (logits = model(x); loss.backward(); opt.step()) still holds the last
  // micro-batch's logits while the optimizer runs; Megatron's loss function does not keep them.
  if (c.kernels == Kernels::eager) r.optimizer_transient += logits;
  // A tied table on a stage holding both ends: autograd keeps the LM head's gradient of it from
  // the start of the backward, and at the embedding's backward the embedding's dense one exists
  // beside it until their sum (in place into the first: PyTorch 2's InputBuffer::accumulate,
  // can_accumulate_inplace; 1.13 made a third tensor) goes to the AccumulateGrad. With one
  // micro-batch the sum becomes the gradient (counted above), so one table-sized tensor is
  // transient; after the first, the accumulated gradient exists beside both. The eager loop
  // still holds its logits.
  if (c.model.tie_word_embeddings && stage == 0 && stage == c.pp - 1) {
    const std::int64_t table = ceil_div(c.model.vocab_size, c.tp) * c.model.hidden_size * gb;
    // Megatron's fused gradient accumulation sends the LM head's wgrad to the accumulated
    // gradient: only the embedding's is ever held beside it.
    const std::int64_t tables = m > 1 && !c.fused_grad_accum ? 2 : 1;
    r.backward_end_transient = tables * table + (c.kernels == Kernels::eager ? logits : 0);
  }
  return r;
}

StepMemory busiest_memory(const StepConfig& c) {
  StepMemory best = step_memory(c, 0);
  for (std::int64_t s = 1; s < c.pp; ++s) {
    StepMemory m = step_memory(c, s);
    if (m.peak() > best.peak()) best = m;
  }
  return best;
}

std::optional<double> host_memory_gib() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemTotal:", 0) != 0) continue;
    std::istringstream fields(line.substr(9));
    double kib = 0;
    if (fields >> kib && kib > 0) return kib * 1024 / kGiB;
  }
  return std::nullopt;
}

}  // namespace opbench
