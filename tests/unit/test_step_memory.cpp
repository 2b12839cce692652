// bench_step's memory per rank (docs/formulas.md, "Memory per rank"): parameters, gradients and
// optimizer state under each sharding, activations tensor by tensor against Korthikanti et al.'s
// formula and against what PyTorch saved, pipeline in-flight micro-batches, transients.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>

#include "common/hardware.hpp"
#include "step/step_memory.hpp"
#include "step/step_operators.hpp"
#include "step/step_rows.hpp"
#include "step_models.hpp"

using namespace opbench;
using test::model_from;
using test::small_model;

namespace {

// GPT style, as Korthikanti et al. analyse it: LayerNorm, a GELU MLP of 4h, multi-head attention.
// h = 64, a = 4 heads, 2 layers.
ModelConfig gpt_model() {
  const auto doc = nlohmann::json::parse(R"([{"model": "gpt2l", "seqlen": 32,
    "hidden_size": 64, "intermediate_size": 256, "num_attention_heads": 4,
    "num_key_value_heads": 4, "vocab_size": 256, "num_hidden_layers": 2, "gated_mlp": false,
    "norm": "layernorm", "tie_word_embeddings": false, "source": "test"}])");
  return models_from_json(doc, "gpt2l.json").front();
}

std::int64_t sum(const std::vector<SavedTensor>& list, Recompute r = Recompute::none) {
  return kept_bytes(list, r);
}

}  // namespace

TEST_CASE("step memory: parameters, gradients and AdamW state under ddp, zero1, fsdp",
          "[step][memory]") {
  StepConfig c;
  c.model = small_model();
  c.dtype = DType::bf16;
  c.grad_dtype = DType::fp32;
  REQUIRE(stage_parameters(c, 0) == 180800);
  StepMemory m = step_memory(c, 0);
  CHECK(m.weights == 180800 * 2);     // bf16
  CHECK(m.grads == 180800 * 4);       // fp32 gradients
  CHECK(m.optimizer == 180800 * 12);  // fp32 master weights, m and v
  c.sharding = Sharding::zero1;
  c.dp = 4;
  m = step_memory(c, 0);
  CHECK(m.weights == 361600);  // zero1 shards only the optimizer: 180,800 / 4 = 45,200
  CHECK(m.grads == 723200);
  CHECK(m.optimizer == 45200 * 12);
  c.sharding = Sharding::fsdp;
  m = step_memory(c, 0);
  CHECK(m.weights == 45200 * 2);  // fsdp: everything / dp
  CHECK(m.grads == 45200 * 4);
  CHECK(m.optimizer == 45200 * 12);
  c.grad_accum = 2;  // gradient sync off in the first micro-batch: unsharded gradients accumulate
  CHECK(step_memory(c, 0).grads == 180800 * 4);
  c = StepConfig{};
  c.model = small_model();
  c.dtype = DType::fp32;  // no master weights
  CHECK(step_memory(c, 0).optimizer == 180800 * 8);
}

TEST_CASE("step memory: zero1 reduce-scatters the gradients and all-gathers the parameters",
          "[step][memory]") {
  StepConfig c;
  c.model = small_model();
  c.dp = 2;
  c.sharding = Sharding::zero1;
  std::int64_t rs = 0, ag = 0;
  for (const auto& op : step_collectives(c, 0)) {
    if (op.name == "zero1 reduce_scatter (last gradient bucket)") rs = op.collective.size_bytes;
    if (op.name == "zero1 all_gather (last parameter bucket)") ag = op.collective.size_bytes;
  }
  CHECK(rs == 180800 * 4);  // fp32 gradients: 723,200 B, under one 25 MiB bucket
  CHECK(ag == 180800 * 2);  // bf16 parameters
}

TEST_CASE("step memory: the fused lists reproduce Korthikanti et al.'s sbh(34 + 5as/h)",
          "[step][memory]") {
  // s = 32, b = 2, h = 64, a = 4, 16-bit: sbh = 4096 elements; Korthikanti's per-layer bytes
  // sbh(34 + 5as/h) = 4096 · (34 + 5·4·32/64) = 4096 · 44 = 180,224. The lists add the two
  // LayerNorms' fp32 mean and rstd (Korthikanti leaves them out): 2 · 2 · 4 B · sb = 1,024.
  StepConfig c;
  c.model = gpt_model();
  c.micro_batch = 2;
  c.dtype = DType::bf16;
  ActivationModel korthikanti;
  korthikanti.dropout = true;
  korthikanti.flash = false;  // the attention core keeps its scores
  CHECK(sum(layer_saved_tensors(c, false, korthikanti)) == 180224 + 1024);
  // Selective recomputation drops the 5as²b of the core: 34sbh = 139,264.
  CHECK(sum(layer_saved_tensors(c, false, korthikanti), Recompute::selective) == 139264 + 1024);
  // Full recomputation keeps the layer's input: 2sbh = 8,192.
  CHECK(sum(layer_saved_tensors(c, false, korthikanti), Recompute::full) == 8192);
  // tp 2 with sequence parallelism: everything / t, sbh(34/t + 5as/(ht)) = 90,112, stats 512.
  c.tp = 2;
  CHECK(sum(layer_saved_tensors(c, false, korthikanti)) == 90112 + 512);
  // Without it the norms' inputs and outputs and the residual dropout masks stay whole:
  // sbh(10 + 24/t + 5as/(ht)) = 4096 · (10 + 12 + 5) = 110,592; the stats stay whole, 1,024.
  c.sequence_parallel = false;
  CHECK(sum(layer_saved_tensors(c, false, korthikanti)) == 110592 + 1024);
  // Flash attention, no dropout (the plan's default): the scores' 5as/h and the masks' 2 go, the
  // log-sum-exp comes: 32sbh = 131,072 + b·a·s·4 B = 1,024, + stats 1,024.
  c.tp = 1;
  c.sequence_parallel = true;
  CHECK(sum(layer_saved_tensors(c, false)) == 131072 + 1024 + 1024);
}

TEST_CASE("step memory: the eager lists are what PyTorch 1.13 saved for the peer's model",
          "[step][memory]") {
  // llama-cpu-s (H 1024, 16/4 heads of 64, I 2816, V 32000, 4 layers), seq 512, fp32, the peer's
  // eager model. Per layer, T = 512: 8 [T, H] (each norm's input, x², x·rsqrt and output), 4
  // [T, Hq·d] (q and kᵀ scaled copies, v expanded, the output's transposed copy), the scores
  // [16, 512, 512], 4 [T, I] (gate, SiLU, up, product), 2 rsqrt [T]:
  // (4,194,304 + 2,097,152 + 4,194,304 + 5,767,168 + 1,024) · 4 B = 65,015,808 B.
  StepConfig c;
  c.model = model_from("/bench/peers/step_models.json", "llama-cpu-s");
  c.seqlen = 512;
  c.dtype = DType::fp32;
  c.kernels = Kernels::eager;
  c.optimizer_impl = OptimizerImpl::single;
  CHECK(sum(layer_saved_tensors(c, false)) == 65015808);
  // The stage adds the ids (512 · 8), cos and sin (2 · 512 · 64 · 4), the final norm's input,
  // x², rsqrt, x·rsqrt and output ((4 · 524,288 + 512) · 4) and log_softmax's output (512 ·
  // 32,000 · 4): 260,063,232 + 4,096 + 262,144 + 8,390,656 + 65,536,000 = 334,256,128 B.
  // torch.autograd.graph.saved_tensors_hooks over the peer's forward counted 334,256,140 B
  // (distinct storages, parameters apart): the ids tensor has the shifted target's extra
  // column, 8 B, and the loss a 4 B scalar.
  const StepMemory m = step_memory(c, 0);
  CHECK(m.activations == 334256128);
  // The backward's start: the logits the caller holds, log_softmax's gradient and the logits'
  // gradient, 3 · 512 · 32,000 · 4 B; no gradient exists yet (set_to_none, one micro-batch).
  CHECK(m.backward_transient == 3 * 512 * 32000 * 4);
  CHECK(m.grads_in_backward == 0);
  // Single-tensor AdamW: two temporaries of the largest tensor, the 32,000 x 1,024 embedding;
  // the training loop still holds the logits, 512 · 32,000 · 4 B.
  CHECK(m.optimizer_transient == 2 * 32000 * 1024 * 4 + 512 * 32000 * 4);
}

TEST_CASE("step memory: recomputation, pipeline in flight, optimizer temporaries",
          "[step][memory]") {
  StepConfig c;
  c.model = small_model();
  c.dtype = DType::bf16;
  c.recompute = Recompute::full;
  // T = 32 tokens. Full: each of 4 layers keeps its input, 32 · 64 · 2 = 4,096 B -> 16,384. The
  // stage adds the ids 32 · 8 = 256, the final norm's input 4,096 and rstd 32 · 4 = 128, the LM
  // head's input 4,096 and the loss's fp32 softmax 32 · 256 · 4 = 32,768: 57,728 in all.
  StepMemory m = step_memory(c, 0);
  CHECK(m.activations == 57728);
  // The backward recomputes one layer at a time: its whole list is transient, beside the
  // logits' gradient (32 · 256 · 2 = 16,384). A layer: norm 1 input 4,096, rstd 128, QKV input
  // 4,096, Q 32·4·16·2 = 4,096, K and V 2,048 each, log-sum-exp 4·32·4 = 512, output 4,096,
  // norm 2 4,096 + 128, MLP input 4,096, gate/up 32·256·2 = 16,384, SwiGLU out 8,192: 54,016.
  CHECK(m.backward_transient == 54016 + 16384);
  CHECK(m.optimizer_transient == 0);  // fused AdamW
  c.optimizer_impl = OptimizerImpl::foreach;
  CHECK(step_memory(c, 0).optimizer_transient == 180800 * 4);  // one fp32 list of every param
  c.optimizer_impl = OptimizerImpl::single;
  CHECK(step_memory(c, 0).optimizer_transient == 2 * 16384 * 4);  // the embedding, twice

  // 1F1B: stage s holds min(pp − s, m) micro-batches.
  c.pp = 4;
  c.grad_accum = 8;
  // a middle stage holds neither the embedding nor the LM head: its largest tensor is an MLP
  // weight, 64 x 128 (the temporaries were the model's largest tensor's on every stage)
  CHECK(step_memory(c, 1).optimizer_transient == 2 * 8192 * 4);
  CHECK(in_flight_micro_batches(c, 0) == 4);
  CHECK(in_flight_micro_batches(c, 3) == 1);
  c.grad_accum = 2;
  CHECK(in_flight_micro_batches(c, 0) == 2);
  // Interleaved, vpp 2: pp · (1 + (pp − 1)/(pp · vpp)) = 4 · 1.375 = 5.5 (Korthikanti et al.).
  c.grad_accum = 8;
  c.vpp = 2;
  c.model.num_hidden_layers = 8;
  CHECK(in_flight_micro_batches(c, 0) == 5.5);
}

TEST_CASE("step memory: a tied table's two gradients at the backward's end", "[step][memory]") {
  // test::small_gpt_model (tied, a 256 x 64 table) at 2 tokens in fp32, fused AdamW: the
  // activations are small, so the backward's end is the peak. Its one micro-batch's sum (in
  // place into the LM head's contribution) becomes the gradient; the embedding's dense one is
  // the transient: 256 · 64 · 4 = 65,536 B.
  StepConfig c;
  c.model = test::small_gpt_model();
  c.seqlen = 2;
  c.dtype = DType::fp32;
  StepMemory m = step_memory(c, 0);
  CHECK(m.backward_end_transient == 65536);
  CHECK(m.peak_at_backward_end());
  CHECK(m.peak() == m.weights + m.optimizer + m.grads + 65536);
  // After the first micro-batch the accumulated gradient exists beside both contributions.
  c.grad_accum = 2;
  CHECK(step_memory(c, 0).backward_end_transient == 2 * 65536);
  // Unless the wgrad GEMM accumulates in place (Megatron's fused gradient accumulation).
  c.fused_grad_accum = true;
  CHECK(step_memory(c, 0).backward_end_transient == 65536);
  c.fused_grad_accum = false;
  // The eager loop holds its logits too (2 · 256 · 4 B).
  c.kernels = Kernels::eager;
  c.optimizer_impl = OptimizerImpl::fused;
  CHECK(step_memory(c, 0).backward_end_transient == 2 * 65536 + 2048);
  // None untied, nor on a stage holding one end of a pipeline.
  c.model.tie_word_embeddings = false;
  CHECK(step_memory(c, 0).backward_end_transient == 0);
  c.model = test::small_gpt_model();
  c.pp = 2;
  for (std::int64_t stage : {0, 1})
    CHECK(step_memory(c, stage).backward_end_transient == 0);
}

TEST_CASE("step memory: Llama-3.1 70B with ddp does not fit 8 H100 80GB", "[step][memory]") {
  StepConfig c;
  c.model = model_from("/configs/models.json", "llama3.1-70b");
  c.seqlen = 8192;
  c.dp = 8;
  c.dtype = DType::bf16;
  // Every replica holds all 70,553,706,496 parameters: 141.1 GB of bf16 weights alone.
  const StepMemory m = busiest_memory(c);
  CHECK(m.weights == 70553706496LL * 2);
  const auto table =
      load_hardware_table(std::string(OPBENCH_SOURCE_DIR) + "/configs/hardware.json");
  const auto h100 = match_device(table, "NVIDIA H100 80GB HBM3");
  REQUIRE(h100);
  REQUIRE(h100->memory_gib == 80);
  CHECK(memory_fits(m, h100->memory_gib) == false);
  CHECK_FALSE(memory_fits(m, std::nullopt).has_value());  // unknown device: no verdict
  // tp 8, pp 4 (20 layers a stage): 2.2 billion parameters a rank, 18 B each, about 37 GiB,
  // plus the first stage's 4 micro-batches in flight of about 0.28 GB a layer: fits.
  c.tp = 8;
  c.pp = 4;
  c.dp = 1;
  c.grad_accum = 8;
  c.recompute = Recompute::selective;
  CHECK(memory_fits(busiest_memory(c), 80.0) == true);
}

TEST_CASE("step memory: interleaved pipelines keep one micro-batch of the LM head, 2pp of the ids",
          "[step][memory]") {
  // Llama-3.1 70B at tp 8, pp 4 (20 layers a stage), full recompute: a layer keeps its input,
  // 8192 tokens x 8192 / 8 (sequence parallel) in bf16 = 16 MiB.
  StepConfig c;
  c.model = model_from("/configs/models.json", "llama3.1-70b");
  c.seqlen = 8192;
  c.tp = 8;
  c.pp = 4;
  c.dp = 2;
  c.dtype = DType::bf16;
  c.recompute = Recompute::full;
  const std::int64_t layers = 20 * 16777216LL;
  CHECK(step_memory(c, 1).activations == layers);  // a middle stage: its layers, 1 micro-batch
  // The last stage adds the final norm, the LM head's input and the fp32 softmax of the logits
  // (8192 x 128,256 / 8 columns x 4 B = 0.489 GiB), once per micro-batch of its last chunk.
  const std::int64_t last_extras = step_memory(c, 3).activations - layers;
  CHECK(last_extras >= 8192LL * 16032 * 4);
  // vpp 5, 16 micro-batches: the last stage holds 17 chunks of 4 layers (3.4 micro-batches), and
  // one micro-batch of the LM head, whose backward follows its forward (not 3.4 of them).
  c.vpp = 5;
  c.grad_accum = 16;
  const StepMemory last = step_memory(c, 3);
  CHECK(last.in_flight == Approx(3.4));
  CHECK(last.activations == std::llround(3.4 * layers) + last_extras);
  CHECK(static_cast<double>(last.activations) / (1 << 30) == Approx(1.58).epsilon(0.01));
  // The first stage: 23 chunks (4.6 micro-batches) of layers, and the token ids (int64) of the
  // 2 x pp = 8 micro-batches whose first chunk has run before its first backward.
  const StepMemory first = step_memory(c, 0);
  CHECK(first.in_flight == Approx(4.6));
  CHECK(first.activations == std::llround(4.6 * layers) + 8 * 8192 * 8);
}

TEST_CASE("step memory: eager kernels around a fused attention kernel, and pure bf16 AdamW state",
          "[step][memory]") {
  // test::small_model, micro-batch 2 x 32 tokens (T = 64), fp32: 4 query heads of 16.
  StepConfig c;
  c.model = small_model();
  c.micro_batch = 2;
  c.dtype = DType::fp32;
  c.kernels = Kernels::eager;
  c.optimizer_impl = OptimizerImpl::foreach;
  const std::int64_t eager = sum(layer_saved_tensors(c, false));
  c.attention_kernels = Kernels::fused;
  const std::int64_t mixed = sum(layer_saved_tensors(c, false));
  // Eager attention keeps 4 [T, Hq·d] tensors (q and kᵀ scaled, v expanded, the transposed
  // output) and the scores [2 · 4, 32, 32]: 4 · 4,096 · 4 + 8,192 · 4 = 98,304 B. Around the
  // fused kernel: 5 [T, Hq·d] (q, k and v expanded, its output, the transposed copy) and the
  // fp32 log-sum-exp 2 · 4 · 32: 81,920 + 1,024 = 82,944 B. 15,360 B less a layer.
  CHECK(eager - mixed == 15360);

  // Pure bf16 training: weights, gradients and both moments in bf16, no master copy.
  c = StepConfig{};
  c.model = small_model();
  c.dtype = DType::bf16;
  c.grad_dtype = DType::bf16;
  c.optimizer_dtype = DType::bf16;
  c.optimizer_impl = OptimizerImpl::foreach;
  StepMemory m = step_memory(c, 0);
  CHECK(m.weights == 180800 * 2);
  CHECK(m.grads == 180800 * 2);
  CHECK(m.optimizer == 180800 * 4);
  CHECK(m.optimizer_transient == 180800 * 2);  // foreach's list of sqrt(v), in bf16
  c.optimizer_dtype = DType::fp32;
  CHECK(step_memory(c, 0).optimizer == 180800 * 12);
  // The moments are fp32 or the model's dtype.
  c.dtype = DType::fp32;
  c.optimizer_dtype = DType::bf16;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("--optimizer-dtype bf16") &&
                                     Catch::Contains("fp32 or the model's own dtype (fp32)"));
  // Eager attention inside the fused plan has no meaning.
  c = StepConfig{};
  c.model = small_model();
  c.attention_kernels = Kernels::eager;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("--attention-kernels eager: only with --kernels "
                                                 "eager"));
}

// The all-gather MoE dispatcher holds every token of its etp x ep ranks while an MoE layer runs:
// Mixtral at tp 2 (etp 2), ep 4, dp 4, one sequence of 4096 tokens: each rank's 2048, 8 ranks'
// gathered (32 MiB x 8 = 256 MiB in bf16), and the unpermuted outputs of the same size beside
// them. The outputs kept for the routing weights' gradient are the copies weighted on the rank:
// with the all-to-all dispatcher its own 2048 tokens' 2 copies each (the combine's), with the
// all-gather one the 8192 copies its 2 experts computed (before the reduce-scatter), in each of
// the 32 layers. The router's probabilities are of the rank's own 2048 tokens either way.
TEST_CASE("step memory: the all-gather dispatcher's gathered tokens are transient in the backward",
          "[step]") {
  StepConfig c;
  c.model = test::configs_model("mixtral-8x7b");
  c.seqlen = 4096;
  c.tp = 2;
  c.ep = 4;
  c.dp = 4;
  const StepMemory all_to_all = step_memory(c, 0);
  c.dispatcher = MoeDispatcher::allgather;
  const StepMemory all_gather = step_memory(c, 0);
  CHECK(all_gather.backward_transient - all_to_all.backward_transient == 2 * 8 * 2048 * 4096 * 2);
  CHECK(all_gather.activations - all_to_all.activations == 32LL * (8192 - 4096) * 4096 * 2);
  for (const SavedTensor& t : layer_saved_tensors(c, true))
    if (t.what == "router probabilities (fp32)") CHECK(t.elements == 2048 * 8);  // not 4096 x 8
}
