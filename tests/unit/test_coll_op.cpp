#include <catch2/catch.hpp>

#include "coll_call.hpp"
#include "collectives/ccl_report.hpp"
#include "collectives/coll_check.hpp"
#include "collectives/coll_op.hpp"
#include "collectives/model_messages.hpp"
#include "collectives/mpi_run.hpp"
#include "collectives/rank_groups.hpp"
#include "collectives/rank_load.hpp"
#include "common/case_loop.hpp"
#include "common/error.hpp"
#include "common/model_config.hpp"
#include "temp_files.hpp"

using namespace opbench;
using opbench::testing::coll_call;

TEST_CASE("busbw factors for n = 2, 4, 8") {
  // all_reduce 2(n-1)/n: 1, 1.5, 1.75; gather/scatter/all-to-all (n-1)/n: 0.5, 0.75, 0.875
  CHECK(busbw_factor(CollOp::all_reduce, 2) == 1.0);
  CHECK(busbw_factor(CollOp::all_reduce, 4) == 1.5);
  CHECK(busbw_factor(CollOp::all_reduce, 8) == 1.75);
  for (CollOp op : {CollOp::all_gather, CollOp::reduce_scatter, CollOp::all_to_all}) {
    CHECK(busbw_factor(op, 2) == 0.5);
    CHECK(busbw_factor(op, 4) == 0.75);
    CHECK(busbw_factor(op, 8) == 0.875);
  }
  for (CollOp op : {CollOp::broadcast, CollOp::reduce, CollOp::send_recv})
    CHECK(busbw_factor(op, 8) == 1.0);
}

TEST_CASE("a busbw from a known size and time") {
  // all_reduce of 1 GiB fp32 on 8 ranks in 10 ms: algbw = 2^30 B / 0.01 s = 107.374 GB/s; busbw
  // x1.75.
  auto c = coll_counts(CollOp::all_reduce, 1u << 30, 4, 8);
  CHECK(c.count == (1 << 28));
  double algbw = algbw_bytes(CollOp::all_reduce, c, 4, 8) / 0.01 / 1e9;
  CHECK(algbw == Approx(107.3741824));
  CHECK(algbw * busbw_factor(CollOp::all_reduce, 8) == Approx(187.9048192));
}

TEST_CASE("counts and sizes follow nccl-tests") {
  // all_gather of 1 MiB fp32 on 4 ranks: 65536 elements per rank, recv 262144; size = recv bytes.
  auto ag = coll_counts(CollOp::all_gather, 1 << 20, 4, 4);
  CHECK(ag.send_count == 65536);
  CHECK(ag.recv_count == 262144);
  CHECK(ag.count == 65536);
  CHECK(ag.size_bytes(4) == 1 << 20);
  CHECK(algbw_bytes(CollOp::all_gather, ag, 4, 4) == 1 << 20);
  // 1000 bytes of fp32 on 3 ranks: 250 elements, 83 per rank, aligned down to 16 bytes -> 80.
  auto rs = coll_counts(CollOp::reduce_scatter, 1000, 4, 3);
  CHECK(rs.count == 80);
  CHECK(rs.send_count == 240);
  CHECK(rs.size_bytes(4) == 960);
  auto a2a = coll_counts(CollOp::all_to_all, 1000, 4, 3);
  CHECK(a2a.count == 80);
  CHECK(algbw_bytes(CollOp::all_to_all, a2a, 4, 3) == 3 * 80 * 4);
  auto bf = coll_counts(CollOp::all_gather, 100, 2,
                        2);  // 50 elements, 25 per rank -> 24 (16 B = 8 elements)
  CHECK(bf.count == 24);
  auto sr = coll_counts(CollOp::send_recv, 1000, 8, 4);
  CHECK(sr.count == 125);
  CHECK(sr.size_bytes(8) == 1000);
}

TEST_CASE("sweeps of sizes") {
  CHECK(sweep_sizes(8, 64, 2, 0) == std::vector<std::uint64_t>{8, 16, 32, 64});
  CHECK(sweep_sizes(1024, 4096, 1, 1024) == std::vector<std::uint64_t>{1024, 2048, 3072, 4096});
  CHECK(sweep_sizes(32 << 20, 32 << 20, 1, 1 << 20).size() == 1);
  CHECK_THROWS_WITH(sweep_sizes(64, 8, 2, 0), Catch::Contains("-b (64) is above -e (8)"));
}

TEST_CASE("op and reduction names") {
  CHECK(parse_coll_ops("allreduce,all_gather, sendrecv") ==
        std::vector<CollOp>{CollOp::all_reduce, CollOp::all_gather, CollOp::send_recv});
  CHECK(parse_coll_ops("all").size() == 7);
  CHECK_THROWS_WITH(parse_coll_ops("allreduse"), Catch::Contains("unknown op 'allreduse'"));
  CHECK(parse_red_op("MAX") == RedOp::max);
  CHECK_THROWS_WITH(parse_red_op("mean"), Catch::Contains("unknown reduction 'mean'"));
  CHECK(nccl_tests_type_name(DType::fp32) == "float");
  CHECK(nccl_tests_type_name(DType::bf16) == "bfloat16");
}

TEST_CASE("the check pattern keeps sums exact and knows every op's result") {
  CollCall call;
  call.op = CollOp::all_reduce;
  call.dtype = DType::bf16;
  call.counts = coll_counts(CollOp::all_reduce, 4096, 2, 8);
  auto spec = make_pattern(call, 8);
  CHECK(spec.amplitude == 5);  // 8 ranks x 5 = 40 <= 256: every partial sum exact in bf16
  CHECK(spec.tolerance == 0);
  // element 3 reduced over 8 ranks equals the sum of the inputs
  double sum = 0;
  for (int r = 0; r < 8; ++r)
    sum += pattern_input(spec, r, 3);
  CHECK(expected_result(call, spec, 0, 8, 3) == sum);
  call.dtype = DType::fp8_e4m3;
  CHECK(make_pattern(call, 8).amplitude == 2);  // 16 / 8
  CHECK(make_pattern(call, 32).amplitude == 1);
  // 32 ranks of ±1 would pass e4m3's exact limit of 16: every other rank adds 0 instead.
  CHECK(make_pattern(call, 32).stride == 2);
  CHECK(make_pattern(call, 32).tolerance == 0);

  CollCall ag = coll_call(CollOp::all_gather, DType::fp32, RedOp::sum, 64, 4);
  auto s = make_pattern(ag, 4);
  // 4 elements per rank: result element 9 is rank 2's element 1
  CHECK(expected_result(ag, s, 0, 4, 9) == pattern_input(s, 2, 1));
  CollCall a2a = coll_call(CollOp::all_to_all, DType::fp32, RedOp::sum, 64, 4);
  // on rank 3, block 1 came from rank 1's block 3: element 1·4+2 is rank 1's element 3·4+2
  CHECK(expected_result(a2a, s, 3, 4, 6) == pattern_input(s, 1, 14));
  CollCall sr = coll_call(CollOp::send_recv, DType::fp32, RedOp::sum, 64, 4);
  CHECK(expected_result(sr, s, 0, 4, 5) == pattern_input(s, 3, 5));  // rank 0 receives from rank 3
  CollCall red = coll_call(CollOp::reduce, DType::fp32, RedOp::sum, 64, 4, 2);
  CHECK(result_elements(red, 1, 4) == 0);  // only the root has a result
  CHECK(result_elements(red, 2, 4) == 16);
}

TEST_CASE("integer reductions wrap like the hardware") {
  CollCall call = coll_call(CollOp::all_reduce, DType::int8, RedOp::sum, 64, 200);
  auto spec = make_pattern(call, 200);
  long long exact = 0;
  for (int r = 0; r < 200; ++r)
    exact += static_cast<long long>(pattern_input(spec, r, 7));
  CHECK(pattern_reduced(spec, 7) == static_cast<double>(static_cast<std::int8_t>(exact)));
}

TEST_CASE("model messages: Llama-3.1 70B at tp 8 all-reduces 8192 x 8192 bf16 activations") {
  auto models = load_models(test::repo_config("models.json"));
  auto llama = select_models(models, "llama3.1-70b", "m").front();
  auto msgs = model_messages(llama, ModelParallel{8, 1, 1, 1, 0, DType::bf16});
  REQUIRE(msgs.size() == 4);
  CHECK(msgs[0].op == CollOp::all_reduce);
  CHECK(msgs[0].size_bytes == 8192ull * 8192 * 2);  // mbs 1 x seq 8192 x hidden 8192 x 2 B
  CHECK(msgs[0].group_size == 8);
  // after attention and after the MLP, forward and backward, in 80 layers; the embedding's
  // output and the LM head's input gradient once each
  CHECK(msgs[0].calls_per_step == 4 * 80 + 2);
  // the vocabulary-parallel cross-entropy: max, target logit and sum, one fp32 per token
  CHECK(msgs[1].op == CollOp::all_reduce);
  CHECK(msgs[1].dtype == DType::fp32);
  CHECK(msgs[1].size_bytes == 8192ull * 4);
  CHECK(msgs[1].calls_per_step == 3);
  // sequence parallelism, as bench_step counts it: all-gathers 2 + 4 per layer (+ LM head input
  // and embedding output gradient), reduce-scatters 2 + 2 (+ embedding output and LM head
  // input gradient)
  CHECK(msgs[2].op == CollOp::all_gather);
  CHECK(msgs[2].calls_per_step == 6 * 80 + 2);
  CHECK(msgs[3].op == CollOp::reduce_scatter);
  CHECK(msgs[3].calls_per_step == 4 * 80 + 2);
  auto mixtral = select_models(models, "mixtral-8x7b", "m").front();
  auto moe = model_messages(mixtral, ModelParallel{1, 8, 1, 1, 4096, DType::bf16});
  REQUIRE(moe.size() == 1);
  CHECK(moe[0].op == CollOp::all_to_all);
  CHECK(moe[0].size_bytes == 4096ull * 2 * 4096 * 2);  // tokens x top-2 x hidden x 2 B
}

// The expert and pipeline messages bench_step looks for (--from-reports matches op, group and
// size): with tp 2 and sequence parallelism each rank holds 2048 of 4096 tokens, and 1F1B's
// send_recv is between two stages, whatever pp is. An MoE model at tp > 1 is listed with
// sequence parallelism only (Megatron-Core's MoE layers refuse tp > 1 without it).
TEST_CASE("model messages: ep and pp as bench_step sizes them") {
  auto models = load_models(test::repo_config("models.json"));
  auto mixtral = select_models(models, "mixtral-8x7b", "m").front();
  auto msgs = model_messages(mixtral, ModelParallel{2, 4, 4, 1, 4096, DType::bf16});
  std::vector<ModelMessage> a2a, p2p;
  for (const auto& x : msgs) {
    if (x.op == CollOp::all_to_all) a2a.push_back(x);
    if (x.op == CollOp::send_recv) p2p.push_back(x);
  }
  // only with sequence parallelism at tp 2 (Megatron-Core's MoE layers refuse tp > 1 without it)
  REQUIRE(a2a.size() == 1);
  CHECK(a2a[0].size_bytes == 2048ull * 2 * 4096 * 2);  // sp: tokens / tp x top-2 x hidden x 2 B
  CHECK(a2a[0].group_size == 4);
  CHECK(a2a[0].label.rfind("sp ep all_to_all", 0) == 0);
  REQUIRE(p2p.size() == 1);
  CHECK(p2p[0].size_bytes == 2048ull * 4096 * 2);  // sp: tokens / tp
  CHECK(p2p[0].group_size == 2);                   // pp 4: still pairs
  // a dense model at tp 2 lists both ways: the whole activation without sp
  p2p.clear();
  auto llama = select_models(models, "llama3.1-8b", "m").front();
  for (const auto& x : model_messages(llama, ModelParallel{2, 1, 4, 1, 4096, DType::bf16}))
    if (x.op == CollOp::send_recv) p2p.push_back(x);
  REQUIRE(p2p.size() == 2);
  CHECK((p2p[0].size_bytes == 4096ull * 4096 * 2 && p2p[1].size_bytes == 2048ull * 4096 * 2));
  // each in its own dimension's groups (bench_ccl strides them as Megatron-LM lays them out)
  for (const auto& x : msgs)
    CHECK(x.axis == (x.op == CollOp::all_to_all                  ? ParallelAxis::ep
                     : x.op == CollOp::send_recv                 ? ParallelAxis::pp
                     : x.label.find("etp ") != std::string::npos ? ParallelAxis::etp
                                                                 : ParallelAxis::tp));
}

// The tensor-parallel messages of a layer are half the attention's, half its MLP's; an MoE layer's
// MLP part runs only with shared experts (Megatron-Core's SharedExpertMLP gathers and scatters
// as a dense MLP), its routed experts getting their tokens through the dispatcher.
TEST_CASE("model messages: MoE layers gather over tp for their shared experts only") {
  auto models = load_models(test::repo_config("models.json"));
  auto sp_gathers = [&](const char* name) {
    for (const auto& x : model_messages(select_models(models, name, "m").front(),
                                        ModelParallel{2, 1, 1, 1, 1024, DType::bf16}))
      if (x.label.rfind("sp all_gather", 0) == 0) return x.calls_per_step;
    return std::int64_t{-1};
  };
  // Mixtral 8x7B: 32 MoE layers without shared experts: 3 gathers of the attention a layer (the
  // QKV input forward, again and the output gradient backward), and the LM head's and the
  // embedding's
  CHECK(sp_gathers("mixtral-8x7b") == 3 * 32 + 2);
  // DeepSeek-V2-Lite: 27 layers (1 dense, 26 MoE with 2 shared experts): 6 a layer
  CHECK(sp_gathers("deepseek-v2-lite") == 6 * 27 + 2);
  CHECK(sp_gathers("llama3.1-8b") == 6 * 32 + 2);
}

// Megatron-Core's all-to-all dispatcher with expert tensor parallelism (etp, by default tp):
// the tokens a rank received are all-gathered over its etp group before the experts and the
// outputs reduce-scattered after them, and the reverse in backward.
TEST_CASE("model messages: expert tensor parallelism gathers and scatters the routed tokens") {
  auto models = load_models(test::repo_config("models.json"));
  auto mixtral = select_models(models, "mixtral-8x7b", "m").front();  // 32 MoE layers, top-2
  auto etp_rows = [&](std::int64_t tp, std::int64_t etp) {
    std::vector<ModelMessage> out;
    for (const auto& x :
         model_messages(mixtral, ModelParallel{tp, 4, 1, 1, 4096, DType::bf16, etp}))
      if (x.axis == ParallelAxis::etp) out.push_back(x);
    return out;
  };
  // tp 2, etp by default 2, sequence parallel (Megatron-Core's MoE layers refuse tp > 1 without
  // it): each rank routes its 2048 tokens, top-2, hidden 4096, bf16: 32 MiB received, 64 MiB
  // gathered
  const auto at_tp = etp_rows(2, 0);
  REQUIRE(at_tp.size() == 2);
  CHECK((at_tp[0].op == CollOp::all_gather && at_tp[1].op == CollOp::reduce_scatter));
  CHECK(at_tp[0].size_bytes == 2ull * 2048 * 2 * 4096 * 2);
  CHECK(at_tp[0].label.rfind("sp etp all_gather", 0) == 0);
  for (const auto& x : at_tp)
    CHECK((x.group_size == 2 && x.calls_per_step == 2 * 32));  // forward and backward, each layer
  // --etp 1: each expert whole on its rank, nothing gathered
  CHECK(etp_rows(2, 1).empty());
  // tp 1, etp 4: groups of 4, 4 x 4096 x 2 x 4096 x 2 B
  const auto wide = etp_rows(1, 4);
  REQUIRE(wide.size() == 2);
  CHECK((wide[0].group_size == 4 && wide[0].size_bytes == 4ull * 4096 * 2 * 4096 * 2));
}

// Megatron-Core's all-gather dispatcher (its default): every rank's tokens, not their top-k
// copies, all-gathered over the etp x ep ranks that hold a layer's experts between them, and the
// outputs reduce-scattered back; the reverse in backward. No all-to-all, no etp messages.
TEST_CASE("model messages: the all-gather dispatcher gathers every token over etp x ep") {
  auto models = load_models(test::repo_config("models.json"));
  auto mixtral = select_models(models, "mixtral-8x7b", "m").front();  // 32 MoE layers, top-2
  ModelParallel p{2, 4, 1, 1, 4096, DType::bf16, 0, MoeDispatcher::allgather};
  std::vector<ModelMessage> gathered;
  for (const auto& x : model_messages(mixtral, p)) {
    CHECK(x.axis != ParallelAxis::ep);
    CHECK(x.axis != ParallelAxis::etp);
    if (x.axis == ParallelAxis::tp_ep) gathered.push_back(x);
  }
  // tp 2 (sequence parallel), etp 2 by default, ep 4: groups of 8; each rank's 2048 tokens of
  // hidden 4096 in bf16 (16 MiB), 8 of them gathered: 128 MiB
  REQUIRE(gathered.size() == 2);
  CHECK((gathered[0].op == CollOp::all_gather && gathered[1].op == CollOp::reduce_scatter));
  for (const auto& x : gathered)
    CHECK((x.group_size == 8 && x.size_bytes == 8ull * 2048 * 4096 * 2 &&
           x.calls_per_step == 2 * 32));
  CHECK(gathered[0].label == "sp etp*ep all_gather of etp*ep*tokens*hidden (2x4x2048x4096)");
  // tp 1, ep 1: one rank holds every expert, nothing is gathered (Megatron-Core skips it)
  p = {1, 1, 2, 1, 4096, DType::bf16, 0, MoeDispatcher::allgather};
  for (const auto& x : model_messages(mixtral, p))
    CHECK(x.axis == ParallelAxis::pp);
  CHECK(parse_moe_dispatcher(" AllGather ") == MoeDispatcher::allgather);
  CHECK_THROWS_WITH(parse_moe_dispatcher("deepep"),
                    "--moe-dispatcher: 'deepep' is not one of alltoall, allgather");
}

// Context parallelism: every message sees the rank's seq / cp tokens, and attention passes K and
// V around the cp ranks in a ring (Transformer Engine's P2P ring): cp - 1 blocks a layer
// forward; backward 2 single ones (K and V first, the last gradients last) and cp - 2 packed
// with the gradients.
TEST_CASE("model messages: context parallelism's ring of K and V") {
  auto models = load_models(test::repo_config("models.json"));
  auto llama = select_models(models, "llama3.1-8b", "m").front();  // 32 layers, 8 KV heads of 128
  ModelParallel p{2, 1, 1, 1, 8192, DType::bf16};
  p.cp = 4;
  std::vector<ModelMessage> ring;
  for (const auto& x : model_messages(llama, p)) {
    if (x.axis == ParallelAxis::cp) ring.push_back(x);
    if (x.label.rfind("sp all_gather", 0) == 0)  // 2048 tokens of hidden 4096 in bf16
      CHECK(x.size_bytes == 2048ull * 4096 * 2);
  }
  // 2048 tokens x 4 KV heads a tp rank x (128 + 128) x 2 B = 4 MiB
  REQUIRE(ring.size() == 2);
  CHECK((ring[0].op == CollOp::send_recv && ring[0].group_size == 4));
  CHECK((ring[0].size_bytes == 4194304 && ring[0].calls_per_step == (3 + 2) * 32));
  CHECK((ring[1].size_bytes == 2 * 4194304 && ring[1].calls_per_step == 2 * 32));
  CHECK(ring[0].label == "cp send_recv of mbs*(seq/cp)*kv (1x2048x1024)");
  // MLA: every head's decompressed key (128 + 64) and value (128): DeepSeek-V2-Lite's 16 heads
  auto lite = select_models(models, "deepseek-v2-lite", "m").front();
  CHECK(kv_elements_per_token(lite, 1) == 16 * (128 + 64 + 128));
  CHECK(kv_elements_per_token(llama, 2) == 4 * 2 * 128);
}

// Sequence parallelism splits each sequence over tp: where tp does not divide it a dense model's
// messages are listed without it, and an MoE model's (which Megatron-Core trains with it only)
// are refused.
TEST_CASE("model messages: no sequence-parallel rows where tp does not split the sequence") {
  auto models = load_models(test::repo_config("models.json"));
  auto llama = select_models(models, "llama3.1-8b", "m").front();
  const auto msgs = model_messages(llama, ModelParallel{2, 1, 2, 1, 4095, DType::bf16});
  REQUIRE_FALSE(msgs.empty());
  for (const auto& x : msgs)
    CHECK(x.label.rfind("sp ", 0) != 0);  // tp all_reduce rows and the whole pp activation
  auto mixtral = select_models(models, "mixtral-8x7b", "m").front();
  CHECK_THROWS_WITH(model_messages(mixtral, ModelParallel{2, 2, 1, 1, 4095, DType::bf16}),
                    Catch::Contains("--tp 2: does not divide the 4095 tokens of a sequence"));
}

TEST_CASE("layout of a row: ranks per node and whether its groups span nodes") {
  const std::vector<std::string> even{"a", "a", "b", "b", "c", "c"};
  auto l = layout_of(even, 2);
  CHECK(l.ranks_per_node_min == 2);
  CHECK(l.ranks_per_node_max == 2);
  CHECK(l.group_spans_nodes == "no");                    // {a,a} {b,b} {c,c}
  CHECK(layout_of(even, 3).group_spans_nodes == "yes");  // {a,a,b} {b,c,c}
  const std::vector<std::string> uneven{"a", "a", "a", "b"};
  l = layout_of(uneven, 2);
  CHECK(l.ranks_per_node_min == 1);
  CHECK(l.ranks_per_node_max == 3);
  CHECK(l.group_spans_nodes == "some");  // {a,a} inside, {a,b} across
  // HSDP's replica groups of 2 over shards of 2: ranks {0,2} and {1,3}, each across a and b
  CHECK(layout_of({"a", "a", "b", "b"}, 2, 2).group_spans_nodes == "yes");
  // a pipeline of 3 stages on 3 nodes of 2 ranks (tp 2): stages 0 and 1 pair across a and b,
  // the last stage's ranks pair inside c
  CHECK(layout_of(even, 2, 2).group_spans_nodes == "some");
  // 2 stages of tp 3: {0,3} {1,4} {2,5}, every pair across nodes (consecutive pairs stayed
  // inside a node: the pipeline's link was measured as the node's own)
  CHECK(layout_of(even, 2, 3).group_spans_nodes == "yes");
}

TEST_CASE("a row says how far apart its groups' ranks are, and where they lie") {
  // a pipeline pair of --model at pp 2 on 2 nodes of 4: ranks 0 and 4, 1 and 5, ...
  CclCase c{CollOp::send_recv,       DType::bf16, RedOp::sum,     0, 4096,
            Placement::out_of_place, 2,           "pp send_recv", 2, 4};
  CclContext ctx;
  ctx.world_size = 8;
  ctx.hosts = {"a", "a", "a", "a", "b", "b", "b", "b"};
  CollResult r;
  r.time_us = 10;
  r.rank_times_us.assign(8, 10.0);
  const CollCall call{c.op, c.dtype, c.redop, 0, coll_counts(c.op, c.size_bytes, 2, 2), false};
  const Record row = ccl_row(c, call, r, ctx);
  REQUIRE(row.get<std::int64_t>("group_stride"));
  CHECK(*row.get<std::int64_t>("group_stride") == 4);
  CHECK(*row.get<std::int64_t>("num_groups") == 4);
  CHECK(*row.get<std::string>("group_spans_nodes") == "yes");
}

TEST_CASE("rank groups: size ranks stride apart, blocks of size x stride, the rest consecutive") {
  auto leaders = [](int world, RankGroups g) {
    std::vector<int> out;
    for (int r = 0; r < world; ++r)
      out.push_back(group_leader(r, world, g));
    return out;
  };
  // consecutive: tensor parallelism of 2 over 6 ranks
  CHECK(leaders(6, {2, 1}) == std::vector<int>{0, 0, 2, 2, 4, 4});
  // Megatron-LM's expert groups of 4 at tp 2 over 16 ranks: {0,2,4,6} {1,3,5,7} {8,...} {9,...}
  CHECK(leaders(16, {4, 2}) == std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1, 8, 9, 8, 9, 8, 9, 8, 9});
  // pipeline neighbours at pp 4 over 8 ranks (tp 2): stages 0-1 and 2-3, 2 ranks apart
  CHECK(leaders(8, {2, 2}) == std::vector<int>{0, 1, 0, 1, 4, 5, 4, 5});
  // pp 3 over 6 ranks: stages 0-1 pair, the last stage's two ranks pair with each other
  CHECK(leaders(6, {2, 2}) == std::vector<int>{0, 1, 0, 1, 4, 4});
  // HSDP's replicas: stride world / size
  CHECK(leaders(8, {2, 4}) == std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3});
  // a block larger than the launch (ep 4 at tp 2 on 4 ranks): consecutive, as before
  CHECK(leaders(4, {4, 2}) == std::vector<int>{0, 0, 0, 0});
}

TEST_CASE("rank load: a host with more ranks than CPUs is oversubscribed, and named") {
  const auto rank = [](const char* host, int cpus) {
    return nlohmann::json{{"host", host}, {"cpus", cpus}};
  };
  nlohmann::json map = nlohmann::json::array();
  for (int r = 0; r < 8; ++r)
    map.push_back(rank("vm", 2));
  RankLoad crowded = rank_load(map);
  CHECK(crowded.oversubscribed);
  CHECK(crowded.hosts["vm"]["ranks"] == 8);
  CHECK(crowded.hosts["vm"]["cpus"] == 2);
  CHECK_THAT(crowded.warning, Catch::StartsWith("oversubscribed: 8 ranks share 2 CPUs on vm;"));

  // Two nodes of 2 ranks on 2 CPUs each: one rank per CPU, nothing to say.
  const nlohmann::json even = {rank("node1", 2), rank("node1", 2), rank("node2", 2),
                               rank("node2", 2)};
  const RankLoad fine = rank_load(even);
  CHECK_FALSE(fine.oversubscribed);
  CHECK(fine.warning.empty());
  CHECK(fine.hosts.size() == 2);
}

TEST_CASE("ccl reports: --report-csv-path's file is listed once its first row made it") {
  // A run stopped before its first row (a signal during the first case's set-up) closes with the
  // files' listing: it must not name a CSV that was never created.
  const auto dir = opbench::test::fresh_temp_dir("ccl_listing");
  CclOptions o;
  o.report_csv_path = (dir / "all.csv").string();
  Progress progress(1, 1, true);
  HarnessCost harness;
  RunTally tally;
  std::vector<Record> rows;
  CaseLoop loop(progress, nullptr, harness, tally, rows);
  CclReports reports(o, dir.string(), nlohmann::json::object(), loop);
  CHECK(reports.listing().empty());
  CHECK_FALSE(std::filesystem::exists(dir / "all.csv"));
  Record row;
  row.arg("op", "all_reduce").metric("time_us", 1.5);
  reports.write(row);
  row = Record{};
  row.arg("op", "all_gather").metric("time_us", 2.5);
  reports.write(row);
  // every row in the one CSV, and each in its op's report, listed in the order they came
  CHECK(reports.listing() ==
        std::vector<std::string>{(dir / "all.csv").string() + " (2 rows)",
                                 (dir / "ccl_all_reduce.csv").string() + " (1 row)",
                                 (dir / "ccl_all_reduce.jsonl").string() + " (1 row)",
                                 (dir / "ccl_all_gather.csv").string() + " (1 row)",
                                 (dir / "ccl_all_gather.jsonl").string() + " (1 row)"});
  CHECK(std::filesystem::exists(dir / "all.csv"));
}

namespace {
// A row of ccl_row's for the table: all_reduce of 1 MiB fp32 on 4 ranks.
Record table_row(const std::string& placement, std::optional<double> time_us,
                 const std::string& status = "ok") {
  Record row;
  row.arg("op", "all_reduce").arg("label", Value{}).arg("group_size", std::int64_t{4});
  row.arg("dtype", "fp32").arg("redop", "sum").arg("root", Value{}).arg("placement", placement);
  row.arg("size_bytes", std::int64_t{1048576}).arg("count", std::int64_t{262144});
  row.metric("time_us", time_us ? Value{*time_us} : Value{});
  // 1 MiB in 100 us: algbw 10.49 GB/s, busbw x 2(n-1)/n = 1.5: 15.73 GB/s
  row.metric("algbw_gbps", time_us ? Value{1048576 / (*time_us * 1e-6) / 1e9} : Value{});
  row.metric("busbw_gbps", time_us ? Value{1.5 * 1048576 / (*time_us * 1e-6) / 1e9} : Value{});
  row.result("wrong", time_us ? Value{std::int64_t{0}} : Value{});
  row.result("status", status);
  return row;
}
}  // namespace

TEST_CASE("the nccl-tests table is printed from the rows: both placements on one line") {
  char buffer[4096] = {};
  std::FILE* out = fmemopen(buffer, sizeof buffer, "w");
  REQUIRE(out);
  NcclTestsTable table(false, 2, out);
  table.print(table_row("out_of_place", 100.0));
  table.print(table_row("in_place", std::nullopt, "failed"));
  table.finish();
  std::fclose(out);
  const std::string text = buffer;
  INFO(text);
  CHECK(text.find("# all_reduce, float, groups of 4 ranks\n") != std::string::npos);
  CHECK(text.find("\n     1048576        262144     float     sum      -1   100.00   10.49  "
                  " 15.73       0     fail       -       -       -\n") != std::string::npos);
  // the footer: one timed row (15.73 GB/s), and the failed row makes it FAILED
  CHECK(text.find("# Out of bounds values : 0 FAILED\n") != std::string::npos);
  CHECK(text.find("# Avg bus bandwidth    : 15.7286  (all_reduce)\n") != std::string::npos);
}

TEST_CASE("a collective's result as the case loop's measurement: a sample is its -n calls") {
  CollResult r;
  r.samples_us = {2.0, 4.0};  // time per call of two samples of 10 calls: runs of 20 and 40 us
  r.sampling_s = 0.001;
  Measurement m = measurement_of(r, 10);
  CHECK(m.samples_us == std::vector<double>{20.0, 40.0});
  CHECK(m.sampling_s == 0.001);
  // --per-iter: one pass of calls, each timed alone
  r.samples_us.clear();
  r.iter_times_us = {1.0, 3.0, 2.0};
  r.iter_stats = compute_stats(r.iter_times_us);
  CHECK(measurement_of(r, 3).samples_us == r.iter_times_us);
}
