// bench_step's operator list: Megatron's model FLOPs to the FLOP, and every collective of a
// small configuration counted by hand.
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>

#include "common/error.hpp"
#include "memops/memop_cases.hpp"
#include "memops/memop_operands.hpp"
#include "step/megatron_flops.hpp"
#include "step/step_compose.hpp"
#include "step/step_memory.hpp"
#include "step/step_operators.hpp"
#include "step_models.hpp"

using namespace opbench;
using test::configs_model;
using test::small_model;

namespace {

std::vector<StageOperators> all_stages(const StepConfig& c) {
  std::vector<StageOperators> stages;
  for (std::int64_t s = 0; s < c.pp; ++s) {
    StageOperators timed;
    for (const auto& op : step_operators(c, s))
      timed.push_back({op, std::nullopt});
    stages.push_back(timed);
  }
  return stages;
}

// Calls per step of the collectives named `name` ("tp all_gather (...)") in `phase`, and their
// size; fails when there is none or two differ in size.
struct Found {
  std::int64_t count = 0, bytes = 0, group = 0;
};
Found collective(const std::vector<StepOperator>& ops, const std::string& name, StepPhase phase) {
  Found f;
  for (const auto& op : ops)
    if (op.family == StepFamily::collective && op.name == name && op.phase == phase) {
      f.count += op.count;
      f.bytes = op.collective.size_bytes;
      f.group = op.collective.group_size;
    }
  return f;
}

// An operator of `count` calls a step at `us` each, as the composition tests time them.
TimedOperator timed_op(StepFamily family, StepPhase phase, std::int64_t count, double us) {
  TimedOperator t;
  t.op.family = family;
  t.op.phase = phase;
  t.op.name = "op";
  t.op.count = count;
  t.time = OperatorTime{us, "test", "", std::nullopt};
  return t;
}

}  // namespace

// The small model in 2 pipeline stages over 2 replicas, 4 micro-batches each.
StepConfig small_pipeline() {
  StepConfig c;
  c.model = small_model();
  c.grad_accum = 4;
  c.pp = 2;
  c.dp = 2;
  return c;
}

// configs/models.json's `name`, micro-batches of one sequence of `seqlen` tokens (0: the model's).
StepConfig configs_step(const std::string& name, std::int64_t seqlen) {
  StepConfig c;
  c.model = configs_model(name);
  c.seqlen = seqlen;
  return c;
}

// Mixtral 8x7B (8 experts of 3 x 4096 x 14336 in 32 MoE layers, top-2, hidden 4096) at tp 2,
// ep 2 and `dp` replicas, one micro-batch of 1024 tokens (sequence parallel).
StepConfig mixtral_tp2_ep2(std::int64_t dp) {
  StepConfig c = configs_step("mixtral-8x7b", 1024);
  c.tp = 2;
  c.ep = 2;
  c.dp = dp;
  return c;
}

// Llama-3.1 8B, one sequence of its 8192 tokens a micro-batch.
StepConfig llama_8b(std::int64_t tp, std::int64_t grad_accum) {
  StepConfig c = configs_step("llama3.1-8b", 0);
  c.micro_batch = 1;
  c.grad_accum = grad_accum;
  c.tp = tp;
  return c;
}

TEST_CASE("step: Llama-3.1 8B at tp 8, pp 4 lists exactly Megatron's model FLOPs", "[step]") {
  StepConfig c = llama_8b(8, 8);
  c.pp = 4;
  // 8 sequences of 8192 tokens; Megatron's formula multiplied out by hand:
  //   attention 12·8·8192·32·(4096·4096 + 4096·128·8)
  //              + 6·8·8192·32·8192·4096 (the causal half)     =   949,978,046,398,464
  //   MLP       18·8·8192·4096·32·14336                        = 2,216,615,441,596,416
  //   logits     6·8·8192·4096·128256                          =   206,570,747,068,416
  const __int128 megatron = 3373164235063296LL;
  REQUIRE(megatron_model_flops(c.model, 8, 8192, 8).value() == megatron);
  const auto stages = all_stages(c);
  CHECK(total_model_flops(c, stages) == megatron);
  // No recomputation: the hardware does what the model counts.
  CHECK(total_hardware_flops(c, stages) == megatron);
  // 8 layers per stage: stage 0 has the embedding, stage 3 the LM head and loss.
  CHECK(c.stage_layers(0) == 8);
  bool head_on_last = false, head_elsewhere = false;
  for (std::int64_t s = 0; s < 4; ++s)
    for (const auto& t : stages[s])
      if (t.op.name == "lm_head fprop") (s == 3 ? head_on_last : head_elsewhere) = true;
  CHECK(head_on_last);
  CHECK_FALSE(head_elsewhere);

  SECTION("with data parallelism the step's FLOPs scale with the replicas") {
    c.dp = 2;
    CHECK(total_model_flops(c, all_stages(c)) == 2 * megatron);
  }
  SECTION("context parallelism splits the same FLOPs over its ranks") {
    // cp 4: a rank's GEMMs see 2048 tokens, its attention one causal 2048 x 2048 call and three
    // unmasked 2048 x 1024 ones a layer; the 4 ranks do the whole sequence's FLOPs once
    c.cp = 4;
    CHECK(total_model_flops(c, all_stages(c)) == megatron);
    CHECK(total_hardware_flops(c, all_stages(c)) == megatron);
  }
  SECTION("recomputation adds hardware FLOPs, not model FLOPs") {
    c.recompute = Recompute::selective;
    auto s2 = all_stages(c);
    CHECK(total_model_flops(c, s2) == megatron);
    // Selective: the attention core once more, forward only: its causal half, 2·8·8192²·4096·32.
    const __int128 attention_fwd = static_cast<__int128>(2) * 8 * 8192 * 8192 * 4096 * 32;
    CHECK(total_hardware_flops(c, s2) == megatron + attention_fwd);
    c.recompute = Recompute::full;
    auto s3 = all_stages(c);
    // Full: every layer's forward again (a third of the layers' FLOPs; the LM head is not).
    const __int128 layers = 949978046398464LL + 2216615441596416LL;
    CHECK(total_hardware_flops(c, s3) == megatron + layers / 3);
  }
}

// tp 16 over Llama-3.1 8B's 8 KV heads: each rank computes one, every head on two ranks. The
// model FLOPs count that work once (Megatron's formula, one sequence of 8192 tokens); the
// hardware FLOPs count it twice: k and v, 2·8192·128·4096 FLOPs a rank, layer and pass, over 3
// passes, 32 layers and 16 ranks, half of it repeated: 13,194,139,533,312 FLOPs.
TEST_CASE("step: KV heads replicated over tp count once in the model FLOPs", "[step]") {
  const StepConfig c = llama_8b(16, 1);
  const auto stages = all_stages(c);
  CHECK(total_model_flops(c, stages) == megatron_model_flops(c.model, 1, 8192, 16).value());
  CHECK(total_hardware_flops(c, stages) - total_model_flops(c, stages) == 13194139533312LL);
}

TEST_CASE("step: every collective of tp 2, pp 2, dp 2 with 4 micro-batches, by hand", "[step]") {
  StepConfig c = small_pipeline();
  c.tp = 2;
  c.bucket_bytes = 65536;
  // A micro-batch is 32 tokens: the activation 32 x 64 in bf16 = 4096 bytes.
  const auto first = step_operators(c, 0), last = step_operators(c, 1);
  const auto F = StepPhase::forward, B = StepPhase::backward, G = StepPhase::grad_sync;
  // Per layer and micro-batch 2 all-gathers and 2 reduce-scatters forward, 4 and 2 backward,
  // half the attention's and half the MLP's: 2 layers x 4 micro-batches.
  for (const auto* ops : {&first, &last}) {
    for (const char* part : {"input of the QKV projection", "input of the MLP"}) {
      Found ag = collective(*ops, fmt::format("tp all_gather ({})", part), F);
      CHECK(ag.count == 8);
      CHECK(ag.bytes == 4096);
      CHECK(ag.group == 2);
    }
    CHECK(collective(*ops, "tp reduce_scatter (output of attention)", F).count == 8);
    CHECK(collective(*ops, "tp reduce_scatter (output of the MLP)", F).count == 8);
    CHECK(collective(*ops, "tp all_gather (attention: input again for wgrad, output gradient)", B)
              .count == 16);
    CHECK(
        collective(*ops, "tp all_gather (MLP: input again for wgrad, output gradient)", B).count ==
        16);
    CHECK(collective(*ops, "tp reduce_scatter (input gradient of the QKV projection)", B).count ==
          8);
    CHECK(collective(*ops, "tp reduce_scatter (input gradient of the MLP)", B).count == 8);
    // First and last stage: one exchange with the neighbour per micro-batch, of the
    // sequence-parallel share (16 tokens x 64 x 2 bytes).
    Found pp = collective(*ops, "pp send_recv (activations)", F);
    CHECK(pp.count == 4);
    CHECK(pp.bytes == 2048);
  }
  CHECK(collective(first, "tp reduce_scatter (embedding output)", F).count == 4);
  CHECK(collective(first, "tp all_gather (embedding output gradient)", B).count == 4);
  CHECK(collective(first, "tp all_gather (LM head input)", F).count == 0);
  CHECK(collective(last, "tp all_gather (LM head input)", F).count == 4);
  CHECK(collective(last, "tp reduce_scatter (LM head input gradient)", B).count == 4);
  Found ce = collective(last, "tp all_reduce (cross-entropy max, target, sum)", F);
  CHECK(ce.count == 12);
  CHECK(ce.bytes == 128);  // one fp32 per token
  // DDP: stage 0 holds 2 layers of 36,992 parameters (q 4096, k 2048, v 2048, o 4096, gate, up
  // and down 8192 each, two norms of 64) and the 16,384 of the embedding: 90,368 / tp 2 =
  // 45,184 fp32 gradients = 180,736 bytes, two 64 KiB buckets and 49,664 bytes.
  CHECK(stage_parameters(c, 0) == 45184);
  CHECK(collective(first, "dp all_reduce (gradient buckets)", G).count == 2);
  Found rest = collective(first, "dp all_reduce (last gradient bucket)", G);
  CHECK(rest.count == 1);
  CHECK(rest.bytes == 49664);
  CHECK(rest.group == 2);
  // Stage 1: 2 layers, the final norm (64) and the LM head (16,384): 90,432 / 2 = 45,216.
  CHECK(stage_parameters(c, 1) == 45216);
  CHECK(collective(last, "dp all_reduce (last gradient bucket)", G).bytes == 180864 - 131072);

  SECTION("without sequence parallelism: all-reduces, 2 forward and 2 backward per layer") {
    c.sequence_parallel = false;
    const auto ops = step_operators(c, 0);
    CHECK(collective(ops, "tp all_reduce (output of attention)", F).count == 8);
    CHECK(collective(ops, "tp all_reduce (output of the MLP)", F).count == 8);
    CHECK(collective(ops, "tp all_reduce (input gradient of the QKV projection)", B).count == 8);
    CHECK(collective(ops, "tp all_reduce (input gradient of the MLP)", B).count == 8);
    CHECK(collective(ops, "tp all_gather (input of the QKV projection)", F).count == 0);
    // The whole activation crosses the pipeline: 32 tokens x 64 x 2 bytes.
    CHECK(collective(ops, "pp send_recv (activations)", F).bytes == 4096);
    // Every rank norms every token, so tp need not split the sequence: 30 tokens at tp 2 is
    // not 15 a rank but all 30 (it was refused, the memory-bound cases assuming the split)
    c.seqlen = 30;
    c.global_batch = 0;
    c.grad_accum = 4;
    int norms = 0;
    for (const auto& op : step_operators(c, 0))
      if (op.name == "rmsnorm fwd") norms += op.memop.rows == 30;
    CHECK(norms == 1);
  }
  SECTION("an inner stage exchanges twice per micro-batch") {
    c.pp = 4;
    c.tp = 1;
    const auto ops = step_operators(c, 1);
    CHECK(collective(ops, "pp send_recv (activations)", F).count == 4);
    CHECK(collective(ops, "pp send_recv (gradients)", B).count == 4);
  }
}

TEST_CASE("step: a MoE layer's all-to-all over ep and its gathers over the experts' tp ranks",
          "[step]") {
  // Mixtral 8x7B (32 MoE layers, top-2, hidden 4096) at tp 2, ep 2 (dp 2), one micro-batch of 1024
  // tokens, sequence parallel: each rank routes 512 tokens' 2 copies, 512 x 2 x 4096 x 2 B =
  // 8 MiB, dispatched and combined forward and backward over ep. Megatron-Core splits every expert
  // over tp ranks too (expert tensor parallelism, by default tp): the tokens received are
  // all-gathered over them before the experts (2 x 8 MiB) and the outputs reduce-scattered, and
  // the reverse in backward, once each per MoE layer; bench_step left those out.
  StepConfig c = mixtral_tp2_ep2(2);
  const auto ops = step_operators(c, 0);
  const auto F = StepPhase::forward, B = StepPhase::backward;
  const Found a2a = collective(ops, "ep all_to_all (dispatch and combine)", F);
  CHECK((a2a.count == 64 && a2a.bytes == 8388608 && a2a.group == 2));
  CHECK(collective(ops, "ep all_to_all (dispatch and combine gradients)", B).count == 64);
  const Found ag = collective(ops, "etp all_gather (dispatched tokens)", F);
  CHECK((ag.count == 32 && ag.bytes == 16777216 && ag.group == 2));
  CHECK(collective(ops, "etp reduce_scatter (expert outputs)", F).count == 32);
  CHECK(collective(ops, "etp all_gather (expert output gradients)", B).count == 32);
  CHECK(collective(ops, "etp reduce_scatter (dispatched tokens' gradients)", B).count == 32);
  // Its MoE layers gather and scatter over tp only around the attention: the routed experts get
  // their tokens through the dispatcher (the MLP's tp messages were counted besides, twice over
  // with the etp ones)
  CHECK(collective(ops, "tp all_gather (input of the QKV projection)", F).count == 32);
  CHECK(collective(ops, "tp all_gather (input of the MLP)", F).count == 0);
  // at tp 1 each expert is whole on its rank: nothing gathered
  c.tp = 1;
  CHECK(collective(step_operators(c, 0), "etp all_gather (dispatched tokens)", F).count == 0);
}

TEST_CASE("step: the all-gather dispatcher gathers every token over etp x ep, and permutes them",
          "[step]") {
  // The same Mixtral at tp 2, ep 2, dp 2 with Megatron-Core's default dispatcher: each rank's 512
  // tokens (4 MiB) all-gathered over the etp x ep = 4 ranks holding a layer's experts (16 MiB),
  // the outputs reduce-scattered back, and the reverse in backward; no all-to-all, no etp
  // messages. The permute picks the 512 x 2 x 2 = 2048 copies for the rank's 4 experts (those of
  // its 1024 tp-group tokens, top-2) out of the 2048 gathered tokens, and the unpermute adds them
  // back into all 2048 of them.
  StepConfig c = mixtral_tp2_ep2(2);
  c.dispatcher = MoeDispatcher::allgather;
  const auto ops = step_operators(c, 0);
  const auto F = StepPhase::forward, B = StepPhase::backward;
  const Found ag = collective(ops, "etp*ep all_gather (tokens of every rank holding experts)", F);
  CHECK((ag.count == 32 && ag.bytes == 16777216 && ag.group == 4));
  CHECK(collective(ops, "etp*ep reduce_scatter (expert outputs)", F).count == 32);
  CHECK(collective(ops, "etp*ep all_gather (expert output gradients)", B).count == 32);
  CHECK(collective(ops, "etp*ep reduce_scatter (tokens' gradients)", B).count == 32);
  CHECK(collective(ops, "ep all_to_all (dispatch and combine)", F).count == 0);
  CHECK(collective(ops, "etp all_gather (dispatched tokens)", F).count == 0);
  int permutes = 0;
  for (const auto& op : ops)
    if (op.name == "moe permute: the copies gathered" ||
        op.name == "moe unpermute: the copies weighted and added into their tokens") {
      CHECK((op.memop.rows == 2048 && op.memop.vocab == 2048 && op.memop.cols == 4096));
      ++permutes;
    }
  CHECK(permutes == 2);
  auto sorts = [](const std::vector<StepOperator>& list) {
    std::vector<StepOperator> out;
    for (const auto& op : list)
      if (op.name.rfind("moe sort", 0) == 0 || op.name.rfind("moe unsort", 0) == 0)
        out.push_back(op);
    return out;
  };
  CHECK(sorts(ops).empty());  // its permute takes the copies in expert order
  // The all-to-all dispatcher permutes the rank's own 512 tokens into their 1024 copies; after
  // the all-to-all and the etp gather it sorts the 2048 copies it holds by its 4 local experts,
  // and back before the combine (Megatron-Core's sort_chunks_by_idxs): 2048 x 4096 copied each
  // way, forward and backward, in every MoE layer.
  c.dispatcher = MoeDispatcher::alltoall;
  const auto a2a_ops = step_operators(c, 0);
  for (const auto& op : a2a_ops)
    if (op.name == "moe permute: the copies gathered")
      CHECK((op.memop.rows == 1024 && op.memop.vocab == 512));
  const auto sorted = sorts(a2a_ops);
  REQUIRE(sorted.size() == 4);
  for (const auto& op : sorted)
    CHECK((op.memop.op == MemOp::copy && op.memop.rows == 2048 && op.memop.cols == 4096 &&
           op.count == 32));
  // one expert a rank (ep 8): nothing to sort
  c.ep = 8;
  c.dp = 8;
  CHECK(sorts(step_operators(c, 0)).empty());
  // tp 1, ep 1: the all-gather dispatcher gathers nothing, and sorts nothing either (its permute
  // puts the copies in expert order)
  c.dispatcher = MoeDispatcher::allgather;
  c.tp = c.ep = c.dp = 1;
  CHECK(sorts(step_operators(c, 0)).empty());
}

TEST_CASE("step: --etp splits the routed experts over its own ranks, not tp's", "[step]") {
  // Mixtral 8x7B (8 experts of 3 x 4096 x 14336 in 32 layers), tp 2, ep 2, dp 2, 1024 tokens.
  // By default (etp = tp) each rank routes the tp group's 1024 tokens (512 of its own, gathered
  // over 2): 2 ranks x 1024 x top-2 / 8 experts = 512 tokens an expert, 14336 x 2 / 2 columns.
  // --etp 1: each expert whole on its rank (28672 columns), which routes its own 512 tokens: 256
  // an expert; the experts' weights split over etp x ep = 2 ranks instead of 4; no gathers; the
  // same model FLOPs.
  StepConfig c = mixtral_tp2_ep2(2);
  auto gate_up = [](const StepConfig& cfg) {
    for (const auto& op : step_operators(cfg, 0))
      if (op.family == StepFamily::experts && op.name == "moe_expert_gate_up fprop") return op;
    FAIL("no moe_expert_gate_up fprop");
    return StepOperator{};
  };
  const StepOperator by_tp = gate_up(c);
  CHECK((by_tp.experts.N == 14336 && by_tp.experts.tokens == std::vector<std::int64_t>(4, 512)));
  const std::int64_t weights_by_tp = step_memory(c, 0).weights;
  c.etp = 1;
  validate(c);
  const StepOperator whole = gate_up(c);
  CHECK((whole.experts.N == 28672 && whole.experts.tokens == std::vector<std::int64_t>(4, 256)));
  CHECK(whole.model_flops == by_tp.model_flops);
  CHECK(collective(step_operators(c, 0), "etp all_gather (dispatched tokens)", StepPhase::forward)
            .count == 0);
  // the rank's experts: 45,097,156,608 / 2 instead of / 4, in bf16
  CHECK(step_memory(c, 0).weights - weights_by_tp == 45097156608 / 4 * 2);
  // --etp 4 (at dp 4: etp x ep must divide tp x dp, the experts' ranks being the stage's laid
  // out again): 4 x 512 tokens gathered, 3584 x 2 columns, 32 MiB gathered over 4 ranks
  c.etp = 4;
  CHECK_THROWS_WITH(validate(c),
                    Catch::Contains("--etp 4 x --ep 2: does not divide --tp 2 x --dp 2 (the "
                                    "experts' ranks are a stage's ranks laid out again)"));
  c.dp = 4;
  validate(c);
  CHECK(gate_up(c).experts.N == 7168);
  const Found wide =
      collective(step_operators(c, 0), "etp all_gather (dispatched tokens)", StepPhase::forward);
  CHECK((wide.group == 4 && wide.bytes == 4 * 512 * 2 * 4096 * 2));
  c.etp = 2;
  c.model = small_model();
  c.ep = 1;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("--etp 2: model 'small4' has no routed experts"));
}

TEST_CASE("step: the routed experts' gradients are reduced apart, over the ranks holding them",
          "[step]") {
  // Mixtral 8x7B at tp 2, ep 2, dp 4 (etp 2): a rank holds 45,097,156,608 / (2 x 2) expert
  // parameters, the same as 8 / 4 = 2 ranks do (Megatron-Core's expert data-parallel group), and
  // the rest after tp, which the 4 replicas share. DDP reduced all of them, experts / tp, over
  // the 4; the optimizer's zero1 shards split the same way.
  StepConfig c = mixtral_tp2_ep2(4);
  const std::int64_t experts = 45097156608 / 4, dense = stage_parameters(c, 0) - 45097156608 / 2;
  const RankParameters held = rank_parameters(c, 0);
  CHECK((held.experts == experts && held.dense == dense && expert_dp(c) == 2));
  auto reduced = [](const std::vector<StepOperator>& ops, const std::string& whose) {
    std::int64_t bytes = 0, group = 0;
    for (const auto& op : ops)
      if (op.family == StepFamily::collective && op.phase == StepPhase::grad_sync &&
          (op.name.find("(" + whose + "gradient bucket") != std::string::npos ||
           op.name.find("(last " + whose + "gradient bucket") != std::string::npos)) {
        bytes += op.collective.size_bytes * op.count;
        group = op.collective.group_size;
      }
    return std::pair{bytes, group};
  };
  const auto ops = step_operators(c, 0);
  CHECK(reduced(ops, "expert ") == std::pair{experts * 4, std::int64_t{2}});  // fp32 gradients
  CHECK(reduced(ops, "") == std::pair{dense * 4, std::int64_t{4}});
  c.sharding = Sharding::zero1;
  CHECK(optimizer_elements(c, 0) == ceil_div(dense, 4) + ceil_div(experts, 2));
}

TEST_CASE("step: FSDP's gathers per micro-batch, reduce-scatters once per step", "[step]") {
  StepConfig c;
  c.model = small_model();
  c.grad_accum = 3;
  c.dp = 4;
  c.sharding = Sharding::fsdp;
  const auto ops = step_operators(c, 0);
  // 4 decoder-layer units and the root; resharded after forward, a layer is gathered twice per
  // micro-batch (forward, backward), the root once.
  std::int64_t gathers = 0, scatters = 0;
  for (const auto& op : ops)
    if (op.family == StepFamily::collective) {
      if (op.collective.op == CollOp::all_gather) gathers += op.count;
      if (op.collective.op == CollOp::reduce_scatter) scatters += op.count;
    }
  CHECK(gathers == (4 * 2 + 1) * 3);
  CHECK(scatters == 4 + 1);
}

TEST_CASE("step: composition of a step from timed operators", "[step]") {
  StepConfig c = small_pipeline();
  c.overlap = 0.5;
  std::vector<StageOperators> stages = all_stages(c);
  // Every operator 10 µs per call: stage times follow the counts.
  for (auto& stage : stages)
    for (auto& t : stage)
      t.time = OperatorTime{10, "test", "", std::nullopt};
  const StepProjection p = compose_step(c, stages, 100.0);
  REQUIRE(p.step_ms);
  CHECK(p.missing.empty());
  CHECK(*p.step_ms == Approx(p.parts.total()));
  CHECK(*p.tokens_per_s == Approx(4 * 2 * 32 / (*p.step_ms / 1e3)));
  CHECK(*p.mfu == Approx(*p.tflops_per_device / 100));

  SECTION("an operator without a time is named and leaves the step time empty") {
    stages[1][0].time.reset();
    const StepProjection q = compose_step(c, stages, 100.0);
    CHECK_FALSE(q.step_ms);
    REQUIRE(q.missing.size() == 1);
    CHECK(q.missing[0] == stages[1][0].op.name + " [" + stages[1][0].op.args() + "] (" +
                              std::to_string(stages[1][0].op.count) + " calls)");
  }
  SECTION("two operators that share their arguments are both named, each with its calls") {
    // As FSDP's forward and backward all-gathers of one unit: same collective, other names.
    StageOperators twins(2, stages[0][0]);
    twins[0].time.reset();
    twins[1].time.reset();
    twins[0].op.name = "fsdp all_gather (forward)";
    twins[0].op.count = 3;
    twins[1].op.name = "fsdp all_gather (backward)";
    twins[1].op.count = 5;
    const StepProjection q = compose_step(c, {twins}, 100.0);
    REQUIRE(q.missing.size() == 2);
    CHECK(q.missing[0] == "fsdp all_gather (forward) [" + twins[0].op.args() + "] (3 calls)");
    CHECK(q.missing[1] == "fsdp all_gather (backward) [" + twins[1].op.args() + "] (5 calls)");
  }
}

// Two pipeline stages built by hand, 4 micro-batches, dp 2, half the gradient all-reduce
// overlappable. Stage 0 per step: forward GEMMs 4 x 100 us, backward 4 x 200 us, its pp sends
// 4 x 25 us (critical: 1.3 ms), the all-reduce 1 ms, AdamW 0.3 ms; stage 1 half of each.
//   t_mb = 1.3 / 4 = 0.325 ms; bubble = (pp - 1) t_mb = 0.325
//   hidden = min(0.5 x 1.0, backward 0.8 / 4) = 0.2; exposed = 0.1 + 1.0 - 0.2 = 0.9
//   step = GEMM 1.2 + exposed 0.9 + bubble 0.325 + optimizer 0.3 = 2.725 ms
TEST_CASE("step: a two-stage pipeline's step by hand: bubble, hidden all-reduce, busiest stage",
          "[step]") {
  const auto op = timed_op;
  auto stage = [&](double scale) {
    return StageOperators{op(StepFamily::gemm, StepPhase::forward, 4, 100 * scale),
                          op(StepFamily::gemm, StepPhase::backward, 4, 200 * scale),
                          op(StepFamily::collective, StepPhase::forward, 4, 25 * scale),
                          op(StepFamily::collective, StepPhase::grad_sync, 1, 1000 * scale),
                          op(StepFamily::memop, StepPhase::optimizer, 1, 300 * scale)};
  };
  StepConfig c = small_pipeline();
  c.overlap = 0.5;
  const StepProjection p = compose_step(c, {stage(0.5), stage(1.0)}, std::nullopt);
  REQUIRE(p.step_ms);
  CHECK(p.micro_batch_ms == Approx(0.325));
  CHECK(p.parts.gemm_ms == Approx(1.2));
  CHECK(p.parts.bubble_ms == Approx(0.325));
  CHECK(p.dp_comm_ms == Approx(1.0));
  CHECK(p.hidden_comm_ms == Approx(0.2));
  CHECK(p.parts.exposed_comm_ms == Approx(0.9));
  CHECK(p.parts.optimizer_ms == Approx(0.3));
  CHECK(*p.step_ms == Approx(2.725));
  // 8 sequences of the model's 32 tokens a step
  CHECK(*p.tokens_per_s == Approx(8 * 32 / 2.725e-3));
}

TEST_CASE(
    "step: context parallelism's ring messages wait only beyond the attention call beside them",
    "[step]") {
  // cp 3, one layer. Forward: the own chunks' call (300 us) and 2 ring blocks' (200 us each),
  // 2 messages of K and V (250 us): the first hides under the own call, the second waits
  // 250 - 200 = 50 us (the last block has none beside it). Backward: the 2 blocks (400 us), then
  // the own chunks (600 us); K and V alone (250 us) beside the first block and the last
  // gradients alone beside the own call: hidden; the packed message (500 us, twice the bytes)
  // beside the second block waits 100 us. A tp message (50 us) is exposed whatever runs.
  const auto op = timed_op;
  auto attention = [&](StepPhase phase, std::int64_t count, double us, bool causal) {
    TimedOperator t = op(StepFamily::attention, phase, count, us);
    t.op.attention.causal = causal;
    return t;
  };
  auto message = [&](const char* purpose, StepPhase phase, std::int64_t count, double us,
                     std::int64_t bytes) {
    TimedOperator t = op(StepFamily::collective, phase, count, us);
    t.op.collective.purpose = purpose;
    t.op.collective.size_bytes = bytes;
    return t;
  };
  const auto F = StepPhase::forward, B = StepPhase::backward;
  const StageOperators stage{attention(F, 1, 300, true),     attention(F, 2, 200, false),
                             message("cp", F, 2, 250, 1000), attention(B, 1, 600, true),
                             attention(B, 2, 400, false),    message("cp", B, 2, 250, 1000),
                             message("cp", B, 1, 500, 2000), message("tp", F, 1, 50, 1000)};
  StepConfig c;
  c.model = small_model();
  const StepProjection p = compose_step(c, {stage}, std::nullopt);
  CHECK(p.parts.attention_ms == Approx(2.1));
  CHECK(p.parts.exposed_comm_ms == Approx(0.05 + 0.1 + 0.05));
  CHECK(*p.step_ms == Approx(2.1 + 0.2));
}

TEST_CASE("step: --cp splits each sequence over a ring of ranks", "[step]") {
  // Llama 3.1 8B (32 layers, 32 query and 8 KV heads of 128), tp 2, cp 2, dp 2, one sequence of
  // 8192 tokens: a rank holds 4096 of them. Its attention is one causal call over its own 4096
  // and one unmasked call of its 4096 queries against the other rank's earlier 2048: half the
  // sequence's causal attention FLOPs, which 2 cp ranks make whole.
  StepConfig c = llama_8b(2, 1);
  c.cp = 2;
  c.dp = 2;
  REQUIRE(c.world() == 8);
  const auto ops = step_operators(c, 0);
  std::int64_t attention_flops = 0;
  for (const auto& op : ops)
    if (op.family == StepFamily::attention && op.phase == StepPhase::forward) {
      attention_flops += op.count * op.model_flops;
      CHECK(op.attention.seqlen_q == 4096);
      CHECK(op.attention.seqlen_kv == (op.attention.causal ? 4096 : 2048));
      CHECK(op.count == 32);
    }
  const std::int64_t whole_causal = 2LL * 16 * 8192 * 8192 * 256 / 2;  // 16 heads a tp rank
  CHECK(attention_flops * 2 == 32 * whole_causal);
  // the GEMMs see the rank's 4096 tokens
  for (const auto& op : ops)
    if (op.name == "qkv_proj fprop") CHECK(op.gemm.m == 4096);
  // K and V of 4096 tokens, 4 KV heads of 128 each, bf16: 8 MiB once forward, twice backward,
  // in a ring of 2; the gradients all-reduced over dp x cp = 4 ranks
  const Found fwd = collective(ops, "cp send_recv (K and V around the ring)", StepPhase::forward);
  CHECK((fwd.count == 32 && fwd.bytes == 8388608 && fwd.group == 2));
  CHECK(collective(ops, "cp send_recv (K and V around the ring again, the last block's gradients)",
                   StepPhase::backward)
            .count == 64);
  CHECK(collective(ops, "dp all_reduce (gradient buckets)", StepPhase::grad_sync).group == 4);
  // cp 4 (2048 tokens a rank, 4 MiB of K and V): three blocks come round forward; backward
  // K and V alone first, the gradients alone last, both packed (2 x 4 MiB) in the 2 steps between
  c.cp = 4;
  c.dp = 1;
  const auto four = step_operators(c, 0);
  CHECK(collective(four, "cp send_recv (K and V around the ring)", StepPhase::forward).count ==
        3 * 32);
  const Found packed = collective(
      four, "cp send_recv (K and V with the gradients of the block before)", StepPhase::backward);
  CHECK((packed.count == 2 * 32 && packed.bytes == 2 * 4194304 && packed.group == 4));
  // selective recomputation reruns the attention core and its ring
  c.recompute = Recompute::selective;
  CHECK(collective(step_operators(c, 0), "cp send_recv (recomputed forward)", StepPhase::recompute)
            .count == 3 * 32);
}

TEST_CASE(
    "step: the framework's host time, added on the CPU, only where launches outlast kernels "
    "on a GPU",
    "[step]") {
  // 100 forward kernels of 10 us (1 ms), 200 backward ones of 50 us (10 ms), 8 optimizer ones
  // of 1 ms (8 ms); the host 30 us a forward launch, 20 a backward or optimizer one: 3, 4 and
  // 0.16 ms of launches.
  auto timed = [](StepPhase phase, std::int64_t count, double us) {
    return timed_op(StepFamily::memop, phase, count, us);
  };
  const StageOperators stage = {timed(StepPhase::forward, 100, 10),
                                timed(StepPhase::backward, 200, 50),
                                timed(StepPhase::optimizer, 8, 1000)};
  StepConfig c;
  c.model = small_model();
  const double kernels = 1 + 10 + 8;
  CHECK(compose_step(c, {stage}, std::nullopt).parts.host_ms == 0);  // not modelled
  c.host_us_fwd = 30;
  c.host_us_bwd = 20;
  // A GPU: the forward waits 3 - 1 ms for its launches; the backward's 4 ms and the optimizer's
  // 0.16 hide under their kernels.
  StepProjection p = compose_step(c, {stage}, std::nullopt);
  CHECK(p.parts.host_ms == Approx(2.0));
  CHECK(p.parts.host_by_phase.forward_ms == Approx(2.0));
  CHECK(p.parts.host_by_phase.backward_ms == 0.0);
  CHECK(p.parts.host_by_phase.optimizer_ms == 0.0);
  REQUIRE(p.step_ms);
  CHECK(*p.step_ms == Approx(kernels + 2.0));
  // The CPU: the host runs every kernel after its dispatch: 3 + 4 + 0.16 ms more.
  c.host_serial = true;
  p = compose_step(c, {stage}, std::nullopt);
  CHECK(p.parts.host_ms == Approx(7.16));
  CHECK(p.parts.host_by_phase.forward_ms == Approx(3.0));
  CHECK(p.parts.host_by_phase.backward_ms == Approx(4.0));
  CHECK(p.parts.host_by_phase.optimizer_ms == Approx(0.16));
  CHECK(*p.step_ms == Approx(kernels + 7.16));
}

TEST_CASE("step: the host term counts launches: a _foreach_ operator once, AccumulateGrad a tensor",
          "[step]") {
  // Llama 3.2 3B on one rank: 3,212,749,824 parameters, timed in 12 pieces of at most 2^28
  // elements; PyTorch launches each of foreach AdamW's 8 operators once over all of them, the
  // fused one once, and AccumulateGrad adds each of the 254 tensors (28 layers x 9, the tied
  // embedding, the final norm) apart for the second micro-batch.
  StepConfig c = configs_step("llama3.2-3b", 2048);
  c.grad_accum = 2;
  c.kernels = Kernels::eager;
  REQUIRE(parameter_pass(stage_parameters(c, 0)).calls == 12);
  for (OptimizerImpl impl : {OptimizerImpl::foreach, OptimizerImpl::fused}) {
    c.optimizer_impl = impl;
    std::int64_t timed = 0, launches = 0, accumulate = 0;
    for (const StepOperator& op : step_operators(c, 0)) {
      if (op.phase == StepPhase::optimizer) timed += op.count, launches += op.host_launches();
      if (op.name == "gradient accumulation add") accumulate = op.host_launches();
    }
    CHECK(timed == (impl == OptimizerImpl::foreach ? 8 * 12 : 12));
    CHECK(launches == (impl == OptimizerImpl::foreach ? 8 : 1));
    CHECK(accumulate == 254);
  }
}

TEST_CASE("step: single-tensor AdamW and AccumulateGrad loop over the rank's own experts",
          "[step]") {
  // Mixtral at tp 2, ep 2, dp 4, zero1: a layer holds q, k, v, o, the router, two norms and 8
  // experts of 3 tensors; a rank holds 4 of them: 32 x (7 + 12) + the embedding, the final norm
  // and the LM head = 611 tensors (995 with every expert). Each expert tensor is 14336 x 4096 /
  // etp 2, its optimizer state sharded over the 2 ranks holding the same experts (tp x dp /
  // (etp x ep)): 14,680,064 elements a call, 32 x 12 such tensors.
  StepConfig c = mixtral_tp2_ep2(4);
  c.sharding = Sharding::zero1;
  c.grad_accum = 2;
  c.kernels = Kernels::eager;
  c.optimizer_impl = OptimizerImpl::single;
  std::int64_t tensors = 0;
  for (const RankTensors& t : rank_parameter_tensors(c, 0))
    tensors += t.count;
  CHECK(tensors == 611);
  std::int64_t launches = 0, accumulate = 0, expert_calls = 0;
  for (const StepOperator& op : step_operators(c, 0)) {
    if (op.phase == StepPhase::optimizer) launches += op.host_launches();
    if (op.name == "gradient accumulation add") accumulate = op.host_launches();
    if (op.name == "adamw single p *= 1 - lr*wd" && op.memop.cols == 14680064)
      expert_calls += op.count;
  }
  CHECK(launches == 8 * 611);
  CHECK(accumulate == 611);
  CHECK(expert_calls == 32 * 12);
}

TEST_CASE("step: configurations that cannot be built are refused naming the flag", "[step]") {
  StepConfig c;
  c.model = small_model();
  c.global_batch = 6;
  c.dp = 4;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("--global-batch 6"));
  c.global_batch = 8;
  c.ep = 2;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("--ep 2: model 'small4' has no routed experts"));
  c.ep = 1;
  c.cp = 3;  // the 32 tokens in 6 chunks
  CHECK_THROWS_WITH(validate(c),
                    Catch::Contains("--cp 3: does not split the sequence of 32 tokens"));
  c.cp = 2;
  c.kernels = Kernels::eager;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("--cp 2: context parallelism is modelled with "
                                                 "fused kernels only"));
  c.kernels = Kernels::fused;
  c.sharding = Sharding::fsdp;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("--cp 2: --sharding fsdp"));
  c.sharding = Sharding::ddp;
  c.cp = 1;
  c.pp = 5;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("--pp 5"));
  c.pp = 1;
  c.tp = 2;
  c.sharding = Sharding::fsdp;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("--sharding fsdp"));
  c.sharding = Sharding::ddp;
  c.overlap = 1.5;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("--overlap"));
}

// The flags' words come from one table per enum (common/enum_names.hpp): each name both ways,
// any case and spaces around, and the error naming the flag and every accepted word.
TEST_CASE("step: the --recompute, --sharding, --kernels and --optimizer-impl words, both ways",
          "[step]") {
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
    CHECK(parse_recompute(recompute_name(r)) == r);
  for (Sharding s : {Sharding::ddp, Sharding::zero1, Sharding::fsdp, Sharding::hsdp})
    CHECK(parse_sharding(sharding_name(s)) == s);
  CHECK(parse_kernels(" Eager ") == Kernels::eager);
  CHECK(optimizer_impl_name(parse_optimizer_impl("FOREACH")) == "foreach");
  CHECK(recompute_name(static_cast<Recompute>(9)) == "?");
  CHECK_THROWS_WITH(parse_sharding("zero3"),
                    "--sharding: 'zero3' is not one of ddp, zero1, fsdp, hsdp");
  CHECK_THROWS_WITH(parse_optimizer_impl("apex"),
                    "--optimizer-impl: 'apex' is not one of fused, foreach, single");
  CHECK(family_name(StepFamily::collective) == "collective");
  CHECK(phase_name(StepPhase::param_gather) == "param_gather");
}

TEST_CASE("step: a pass over every parameter is timed in pieces that fit an 80 GB GPU", "[step]") {
  // ceil(n / 2^28) equal calls, each of ceil(n / calls) elements.
  CHECK(parameter_pass(5).elements == 5);
  CHECK(parameter_pass(5).calls == 1);
  CHECK(parameter_pass(std::int64_t{1} << 28).calls == 1);
  CHECK(parameter_pass((std::int64_t{1} << 28) + 1).calls == 2);
  CHECK(parameter_pass((std::int64_t{1} << 28) + 1).elements == (std::int64_t{1} << 27) + 1);
  // Llama-3.1 8B on one rank: 8,030,261,248 parameters = 30 calls of 267,675,375 (2 over).
  CHECK(parameter_pass(8030261248).calls == 30);
  CHECK(parameter_pass(8030261248).elements == 267675375);

  StepConfig c = configs_step("llama3.1-8b", 4096);
  c.grad_accum = 2;  // with the gradient accumulation add
  REQUIRE(stage_parameters(c, 0) == 8030261248);
  for (Kernels kernels : {Kernels::fused, Kernels::eager})
    for (OptimizerImpl impl :
         {OptimizerImpl::fused, OptimizerImpl::foreach, OptimizerImpl::single}) {
      if ((kernels == Kernels::fused) != (impl == OptimizerImpl::fused)) continue;
      c.kernels = kernels;
      c.optimizer_impl = impl;
      CAPTURE(kernels_name(kernels), optimizer_impl_name(impl));
      std::int64_t largest = 0, adamw_elements = 0, accumulated = 0, accumulation_calls = 0;
      for (const auto& op : step_operators(c, 0)) {
        if (op.family != StepFamily::memop) continue;
        largest = std::max(largest, memop_io_bytes(op.memop));
        // the fused kernel, or the eager optimizers' last kernel: once per parameter either way
        if (op.phase == StepPhase::optimizer &&
            (op.memop.op == MemOp::adamw_bf16 || op.name.find("p -= step") != std::string::npos))
          adamw_elements += op.count * op.memop.cols;
        if (op.name == "gradient accumulation add") {
          accumulated += op.count * op.memop.cols;
          accumulation_calls += op.count;
        }
      }
      // Fused AdamW moves 28 bytes per parameter: 7.5 GB a piece, where its one call over every
      // parameter moved 225 GB (and needed 90 GiB of operands at once).
      CHECK(largest <= (std::int64_t{8} << 30));
      // Every parameter updated once; the pieces round up by less than one element a call.
      CHECK(adamw_elements >= 8030261248);
      CHECK(adamw_elements < 8030261248 + 300);
      CHECK(accumulation_calls == 30);
      CHECK(accumulated == 30 * std::int64_t{267675375});
    }
  // bench_memops --model cuts its AdamW row the same way: --from-reports finds it.
  const auto memops_rows =
      model_memop_cases(c.model, MemopModelRun{}, {MemOp::adamw_bf16}, {MemPass::fwd}, DType::bf16);
  REQUIRE(memops_rows.size() == 1);
  CHECK(memops_rows[0].cols == 267675375);
  CHECK(memops_rows[0].calls_per_step == 30);
}
