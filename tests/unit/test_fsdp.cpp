#include <catch2/catch.hpp>

#include <map>
#include <sstream>

#include "common/error.hpp"
#include "common/model_config.hpp"
#include "fsdp/fsdp_plan.hpp"
#include "fsdp/nccl_log.hpp"
#include "temp_files.hpp"

using namespace opbench;

namespace {

ModelConfig model(const std::string& name) {
  static auto models = load_models(test::repo_config("models.json"));
  return select_models(models, name, "models.json").front();
}

std::map<std::string, FsdpUnit> units_by_name(const std::string& name,
                                              WrapPolicy wrap = WrapPolicy::layer) {
  std::map<std::string, FsdpUnit> out;
  for (auto& u : fsdp_units(model(name), wrap))
    out[u.name] = u;
  return out;
}

}  // namespace

TEST_CASE("Llama-3 70B at world size 8: 855,654,400 parameters per layer, 106,956,800 per rank") {
  // q 8192·8192 + k 1024·8192 + v 1024·8192 + o 8192·8192 = 150,994,944
  // gate, up, down 3 · 28672·8192 = 704,643,072; two RMSNorm weights 2 · 8192 = 16,384
  auto u = units_by_name("llama3.1-70b");
  const auto& layer = u.at("decoder_layer");
  CHECK(layer.instances == 80);
  CHECK(layer.numel() == 150994944 + 704643072 + 16384);
  CHECK(layer.numel() == 855654400);
  CHECK(fsdp1_per_rank_count(layer, 8) == 106956800);
  CHECK(fsdp2_per_rank_count(layer, 8) == 106956800);  // every dim 0 divides 8
  // The earlier public script left the norms out: (855,654,400 - 16,384) / 8 = 106,954,752.
  CHECK((layer.numel() - 16384) / 8 == 106954752);
  // Root: embedding 128256·8192 + final norm 8192 + LM head 128256·8192 = 2,101,354,496
  CHECK(u.at("root").numel() == 2101354496);
}

TEST_CASE("Llama-3.1 8B at world size 8") {
  // attention 4096·4096·2 + 1024·4096·2 = 41,943,040; MLP 3·14336·4096 = 176,160,768; norms 8192
  auto u = units_by_name("llama3.1-8b");
  CHECK(u.at("decoder_layer").numel() == 41943040 + 176160768 + 8192);  // 218,112,000
  CHECK(fsdp1_per_rank_count(u.at("decoder_layer"), 8) == 27264000);
  // root: 2 · 128256·4096 + 4096 = 1,050,677,248 -> 131,334,656 per rank
  CHECK(fsdp1_per_rank_count(u.at("root"), 8) == 131334656);
}

TEST_CASE("Mixtral 8x7B at world size 8: router and eight experts in every layer") {
  // attention 41,943,040; router 8·4096 = 32,768; experts 8 · 3·14336·4096 = 1,409,286,144; norms
  // 8192
  auto u = units_by_name("mixtral-8x7b");
  REQUIRE(u.count("moe_layer"));
  CHECK(u.count("decoder_layer") == 0);
  CHECK(u.at("moe_layer").instances == 32);
  CHECK(u.at("moe_layer").numel() == 41943040 + 32768 + 1409286144 + 8192);  // 1,451,270,144
  CHECK(fsdp1_per_rank_count(u.at("moe_layer"), 8) == 181408768);
}

TEST_CASE("DeepSeek-V3: MLA, dense and MoE layers are separate units") {
  auto u = units_by_name("deepseek-v3");
  CHECK(u.at("dense_layer").instances == 3);
  CHECK(u.at("moe_layer").instances == 58);
  // MLA: q_a 1536·7168 + q_a_norm 1536 + q_b 128·192·1536 + kv_a 576·7168 + kv_a_norm 512
  //      + kv_b 128·256·512 + o 7168·16384 = 187,107,328
  const std::int64_t mla = 1536LL * 7168 + 1536 + 128LL * 192 * 1536 + 576LL * 7168 + 512 +
                           128LL * 256 * 512 + 7168LL * 16384;
  CHECK(mla == 187107328);
  CHECK(u.at("dense_layer").numel() == mla + 3LL * 18432 * 7168 + 2 * 7168);
}

TEST_CASE(
    "FSDP2 pads each parameter's dim 0; FSDP1 pads the flat unit (tiny model, world size 3)") {
  // q [256,256], k [128,256], v [128,256], o [256,256], gate/up [688,256], down [256,688], 2 norms
  // [256]
  auto layer = units_by_name("tiny").at("decoder_layer");
  CHECK(layer.numel() ==
        65536 + 32768 + 32768 + 65536 + 176128 + 176128 + 176128 + 512);  // 725,504
  // FSDP1: ceil(725,504 / 3) = 241,835
  CHECK(fsdp1_per_rank_count(layer, 3) == 241835);
  // FSDP2: ceil(256/3)=86 ·256 (q) + 43·256 (k) + 43·256 (v) + 86·256 (o) + 230·256 (gate) +
  // 230·256 (up)
  //        + 86·688 (down) + 86 + 86 (norms) = 22016 + 11008 + 11008 + 22016 + 58880 + 58880 +
  //        59168 + 172
  CHECK(fsdp2_per_rank_count(layer, 3) == 243148);
}

TEST_CASE(
    "the per-step schedule: forward and backward gathers, reduce-scatters, HSDP all-reduces") {
  auto units = fsdp_units(model("llama3.1-70b"), WrapPolicy::layer);
  FsdpConfig c;
  c.world_size = 16;
  c.shard_group_size = 8;
  auto plan = fsdp_plan(units, c);
  // decoder layers: AG fwd, AG bwd, RS, AR; root: AG fwd, RS, AR (the root is not resharded)
  REQUIRE(plan.size() == 7);
  CHECK(plan[0].op == CollOp::all_gather);
  CHECK(plan[0].per_rank_count == 106956800);
  CHECK(plan[0].buffer_bytes() == 106956800LL * 2 * 8);  // nccl-tests size: 8 shards of bf16
  CHECK(plan[2].op == CollOp::reduce_scatter);
  CHECK(plan[2].shard_bytes() == 106956800LL * 4);  // fp32 gradients
  CHECK(plan[3].op == CollOp::all_reduce);
  CHECK(plan[3].group_size == 2);  // two replicas
  CHECK(plan[3].buffer_bytes() == 106956800LL * 4);
  c.reshard_after_forward = false;
  c.shard_group_size = 0;
  CHECK(fsdp_plan(units, c).size() == 4);  // no backward gathers, no all-reduces
  CHECK(nccl_tests_command(plan[0], RedOp::avg) ==
        "mpirun -np 8 all_gather_perf -b 1711308800 -e 1711308800 -d bfloat16 -g 1");
  c.world_size = 0;
  CHECK_THROWS_WITH(fsdp_plan(units, c), Catch::Contains("--world-size: must be at least 1"));
}

TEST_CASE("tied embeddings are counted once") {
  auto root = units_by_name("tiny").at("root");  // tiny ties its embeddings
  CHECK(root.numel() == 1024 * 256 + 256);
}

TEST_CASE("the NCCL log parser reads collective lines and counts the broken ones") {
  NcclLogSummary s;
  add_nccl_log_file(std::string(OPBENCH_SOURCE_DIR) + "/tests/data/nccl_log_llama3_70b.txt", s);
  CHECK(s.lines == 12);
  CHECK(s.collective_lines == 8);  // 5 good, 3 malformed (cut, cut, garbled count)
  CHECK(s.malformed == 3);
  NcclCall ag{"AllGather", 106956800, 9, 0, 0};
  NcclCall rs{"ReduceScatter", 106956800, 9, 4, 0};
  CHECK(s.calls.at(ag) == 2);
  CHECK(s.calls.at(rs) == 1);
  CHECK(s.calls.size() == 4);
  CHECK(nccl_datatype_name(9) == "bf16");
  CHECK(nccl_redop_name(4) == "avg");
  NcclCall c;
  bool malformed = false;
  CHECK(parse_nccl_log_line(
      "h:1:2 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x2 acc (nil) count 5 "
      "datatype 7 op 0 root 0 comm 0x3 [nranks=4] stream 0x4",
      &c, &malformed));
  CHECK_FALSE(malformed);
  CHECK(c.nranks == 4);
  CHECK(c.count == 5);
  // A datatype code NCCL does not have (ncclNumTypes = 12) makes the line malformed, so no
  // "--param-dtype datatype 12" is ever advised; a custom reduction (op 5 on) is valid.
  for (const char* datatype : {"12", "99", "-1"}) {
    INFO(datatype);
    CHECK(parse_nccl_log_line(
        std::string("h:1:2 [0] NCCL INFO AllGather: opCount 1 sendbuff 0x1 recvbuff 0x2 acc (nil) "
                    "count 5 datatype ") +
            datatype + " op 0 root 0 comm 0x3 [nranks=4] stream 0x4",
        &c, &malformed));
    CHECK(malformed);
  }
  CHECK(parse_nccl_log_line(
      "h:1:2 [0] NCCL INFO ReduceScatter: opCount 1 sendbuff 0x1 recvbuff 0x2 acc (nil) count 5 "
      "datatype 9 op 5 root 0 comm 0x3 [nranks=4] stream 0x4",
      &c, &malformed));
  CHECK_FALSE(malformed);
  CHECK_THROWS_WITH(add_nccl_log_file("/nonexistent.log", s),
                    Catch::Contains("--nccl-log /nonexistent.log: no such file"));
}
