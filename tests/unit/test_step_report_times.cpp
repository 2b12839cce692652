// bench_step's times from earlier reports: small CSVs with the binaries' real columns, and the
// rows each kind of operator must (and must not) match.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.hpp"
#include "step/operator_times.hpp"
#include "temp_files.hpp"

using namespace opbench;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  return test::fresh_temp_dir("step_times_" + name);
}

void write(const fs::path& dir, const std::string& name, const std::string& content) {
  std::ofstream(dir / name) << content;
}

// bench_gemm's argument columns (most of them), then what ReportTimes reads.
const char* kGemmHeader =
    "model,gemm,pass,m,n,k,batch,transa,transb,dtype,out_dtype,tp,impl,experts_on_rank,backend,"
    "provider,device,time_us,rse,tokens_min,tokens_max,tokens_total,status,note\n";

StepOperator gemm_op(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype,
                     std::int64_t batch = 1) {
  StepOperator op;
  op.family = StepFamily::gemm;
  op.gemm.m = m, op.gemm.n = n, op.gemm.k = k, op.gemm.batch = batch;
  op.gemm.transa = false, op.gemm.transb = true;
  op.gemm.dtype = dtype;
  return op;
}

// fprop of 4 experts of a layer with N = 512, K = 256: padded to m = 30 tokens, batch 4, NT.
StepOperator experts_op(std::vector<std::int64_t> tokens, MoeImpl impl) {
  StepOperator op;
  op.family = StepFamily::experts;
  op.experts.pass = GemmPass::fprop;
  op.experts.N = 512, op.experts.K = 256;
  op.experts.tokens = std::move(tokens);
  op.experts.dtype = DType::bf16;
  op.moe_impl = impl;
  return op;
}

StepOperator attention_op(AttentionPass pass, bool causal = true) {
  StepOperator op;
  op.family = StepFamily::attention;
  op.attention.batch = 1, op.attention.seqlen_q = 4096, op.attention.seqlen_kv = 4096;
  op.attention.heads_q = 32, op.attention.heads_kv = 8;
  op.attention.head_dim_qk = 128, op.attention.head_dim_v = 128;
  op.attention.causal = causal;
  op.attention.dtype = DType::bf16;
  op.attention_pass = pass;
  return op;
}

StepOperator memop_op(MemOp m, std::int64_t heads = 0, std::int64_t kv_heads = 0,
                      std::int64_t head_dim = 0) {
  StepOperator op;
  op.family = StepFamily::memop;
  op.memop.op = m;
  op.memop.pass = MemPass::fwd;
  op.memop.rows = 4096, op.memop.cols = 4096;
  op.memop.heads = heads, op.memop.kv_heads = kv_heads, op.memop.head_dim = head_dim;
  op.memop.dtype = DType::bf16;
  return op;
}

StepOperator collective_op(CollOp c, std::int64_t size_bytes, std::int64_t group_size = 8) {
  StepOperator op;
  op.family = StepFamily::collective;
  op.collective.op = c;
  op.collective.size_bytes = size_bytes;
  op.collective.group_size = group_size;
  op.collective.dtype = DType::bf16;
  return op;
}

// A folder with one report of each binary, and files that are not reports.
fs::path reports_folder() {
  auto dir = temp_dir("all");
  write(dir, "gemm_sweep.csv",
        std::string(kGemmHeader) +
            // line 2: a plain GEMM; line 3: the same shape in fp16, skipped (no time)
            "sweep,sweep,,8192,6144,4096,1,N,T,bf16,bf16,,,,cuda,cublaslt,H100,123.5,0.01,,,,ok,\n"
            "sweep,sweep,,8192,6144,4096,1,N,T,fp16,fp16,,,,cuda,cublaslt,H100,,,,,,skipped,"
            "\"no fp16,\nhere\"\n"
            // lines 5, 6 (the note above spans two lines): the experts of one rank, tokens 10,
            // 30, 20, 20, in two implementations
            "m,moe_expert_gate_up,fprop,30,512,256,4,N,T,bf16,bf16,1,grouped,4,cuda,cublas,H100,"
            "55,,10,30,80,ok,\n"
            "m,moe_expert_gate_up,fprop,30,512,256,4,N,T,bf16,bf16,1,loop,4,cuda,cublas,H100,"
            "77,,10,30,80,ok,\n");
  write(dir, "attention.csv",
        "model,batch_size,seqlen_q,seqlen_kv,num_head_q,num_head_kv,head_dim_qk,head_dim_v,"
        "causal,dtype,pass,backend,provider,device,time_us,rse,engine,status,note\n"
        "llama,1,4096,4096,32,8,128,128,true,bf16,fwd,cuda,cudnn,H100,100,,e1,ok,\n"
        "llama,1,4096,4096,32,8,128,128,true,bf16,bwd,cuda,cudnn,H100,250,,e2,ok,\n");
  write(dir, "memops_llama.csv",
        "model,op,pass,rows,cols,heads,kv_heads,head_dim,vocab,devices,dtype,backend,provider,"
        "device,time_us,rse,impl,status,note\n"
        "llama,rope,fwd,4096,4096,32,8,128,,,bf16,cuda,cuda,H100,40,,k,ok,\n"
        "llama,rope,fwd,4096,4096,16,8,128,,,bf16,cuda,cuda,H100,25,,k,ok,\n"
        "llama,rmsnorm,fwd,4096,4096,,,,,,bf16,cuda,cuda,H100,1.234568e+01,,k,ok,\n");
  write(dir, "ccl_all_reduce.csv",
        "op,label,world_size,group_size,num_groups,nodes,backend,dtype,redop,root,placement,"
        "size_bytes,count,time_us,rse,status,note\n"
        "all_reduce,,8,8,1,1,nccl,bf16,sum,,out_of_place,1048576,524288,100,0.02,ok,\n"
        "all_reduce,,8,8,1,1,nccl,bf16,sum,,in_place,1048576,524288,90,0.02,ok,\n"
        "all_reduce,,8,8,1,1,nccl,bf16,sum,,out_of_place,3145728,1572864,300,0.01,ok,\n"
        "all_reduce,,8,8,1,1,nccl,bf16,sum,,in_place,3145728,1572864,280,0.01,ok,\n"
        "all_reduce,,8,8,1,1,nccl,bf16,sum,,out_of_place,4194304,2097152,,,failed,timeout\n");
  write(
      dir, "fsdp.csv",
      "unit,phase,op,label,world_size,group_size,backend,dtype,redop,root,placement,size_bytes,"
      "time_us,rse,status,note\n"
      "decoder_layer,backward,reduce_scatter,x,8,8,nccl,bf16,sum,,out_of_place,2097152,150,,ok,\n");
  // Not reports of the families: skipped without a word.
  write(dir, "step.csv", "model,world_size,step_time_ms,status,note\nx,8,12.5,ok,\n");
  write(dir, "step_operators.csv",
        "model,stage,family,phase,operator,args,count,time_us,source,status,note\n"
        "x,0,gemm,forward,attn_qkv,m8192 n6144 k4096 NT bf16,1,1,a,ok,\n");
  write(dir, "attention_engines.csv",
        "model,batch_size,seqlen_q,seqlen_kv,num_head_q,num_head_kv,head_dim_qk,head_dim_v,"
        "causal,dtype,pass,device,dims,flops,status,note\n"
        "llama,1,4096,4096,32,8,128,128,true,bf16,fwd,H100,d,1,ok,\n");
  write(dir, "environment.json", "{}\n");
  return dir;
}

}  // namespace

TEST_CASE("report times: reports are told by their header, other files are skipped") {
  const auto dir = reports_folder();
  const auto times = ReportTimes::load({dir.string()});
  CHECK(times.files().size() == 5);  // gemm, attention, memops, ccl, fsdp
  CHECK(times.rows() == 13);         // ok rows: 3 gemm, 2 attention, 3 memops, 4 ccl, 1 fsdp
}

TEST_CASE("report times: a GEMM matches its shape, layout and dtype") {
  const auto dir = reports_folder();
  const auto times = ReportTimes::load({dir.string()});
  const auto t = times.find(gemm_op(8192, 6144, 4096, DType::bf16));
  REQUIRE(t);
  CHECK(t->time_us == 123.5);
  CHECK(t->source == (dir / "gemm_sweep.csv").string() + " line 2");
  CHECK(t->device == "H100");
  REQUIRE(t->rse);
  CHECK(*t->rse == 0.01);
  CHECK_FALSE(times.find(gemm_op(8192, 6144, 4096, DType::fp16)));  // skipped row
  CHECK_FALSE(times.find(gemm_op(8192, 6144, 4096, DType::fp32)));  // no row
  CHECK_FALSE(times.find(gemm_op(6144, 8192, 4096, DType::bf16)));
  auto nn = gemm_op(8192, 6144, 4096, DType::bf16);
  nn.gemm.transb = false;
  CHECK_FALSE(times.find(nn));
  // The expert rows' padded problem is no plain batched GEMM.
  CHECK_FALSE(times.find(gemm_op(30, 512, 256, DType::bf16, 4)));
}

TEST_CASE("report times: experts match the implementation and the token figures") {
  const auto dir = reports_folder();
  const auto times = ReportTimes::load({dir.string()});
  const auto grouped = times.find(experts_op({10, 30, 20, 20}, MoeImpl::grouped));
  REQUIRE(grouped);
  CHECK(grouped->time_us == 55);
  CHECK(grouped->source == (dir / "gemm_sweep.csv").string() + " line 5");
  CHECK_FALSE(grouped->rse);
  const auto loop = times.find(experts_op({20, 10, 20, 30}, MoeImpl::loop));  // same figures
  REQUIRE(loop);
  CHECK(loop->time_us == 77);
  CHECK_FALSE(times.find(experts_op({10, 30, 20, 20}, MoeImpl::padded)));
  CHECK_FALSE(times.find(experts_op({15, 30, 15, 20}, MoeImpl::grouped)));  // min differs
  CHECK_FALSE(times.find(experts_op({10, 30, 20, 25}, MoeImpl::grouped)));  // total differs
  CHECK_FALSE(times.find(experts_op({10, 29, 20, 21}, MoeImpl::grouped)));  // padded m differs
}

TEST_CASE("report times: attention matches on the pass and the mask") {
  const auto dir = reports_folder();
  const auto times = ReportTimes::load({dir.string()});
  const auto fwd = times.find(attention_op(AttentionPass::fwd));
  const auto bwd = times.find(attention_op(AttentionPass::bwd));
  REQUIRE(fwd);
  REQUIRE(bwd);
  CHECK(fwd->time_us == 100);
  CHECK(bwd->time_us == 250);
  CHECK(bwd->source == (dir / "attention.csv").string() + " line 3");
  CHECK_FALSE(times.find(attention_op(AttentionPass::fwd, false)));
}

TEST_CASE("report times: memory-bound operators match, rope on its heads") {
  const auto dir = reports_folder();
  const auto times = ReportTimes::load({dir.string()});
  const auto rope32 = times.find(memop_op(MemOp::rope, 32, 8, 128));
  const auto rope16 = times.find(memop_op(MemOp::rope, 16, 8, 128));
  REQUIRE(rope32);
  REQUIRE(rope16);
  CHECK(rope32->time_us == 40);
  CHECK(rope16->time_us == 25);
  CHECK_FALSE(times.find(memop_op(MemOp::rope, 8, 8, 128)));
  const auto norm = times.find(memop_op(MemOp::rmsnorm));
  REQUIRE(norm);
  CHECK(norm->time_us == Approx(12.34568));
  CHECK(norm->source == (dir / "memops_llama.csv").string() + " line 4");
  CHECK_FALSE(times.find(memop_op(MemOp::layernorm)));
}

TEST_CASE("report times: collectives match their size or interpolate between two") {
  const auto dir = reports_folder();
  const auto times = ReportTimes::load({dir.string()});
  const std::string ccl = (dir / "ccl_all_reduce.csv").string();
  // Out of place wins over in place, though the in-place row comes later.
  const auto exact = times.find(collective_op(CollOp::all_reduce, 1 << 20));
  REQUIRE(exact);
  CHECK(exact->time_us == 100);
  CHECK(exact->source == ccl + " line 2");
  CHECK(exact->device == "nccl");  // bench_ccl has no device column
  const auto between = times.find(collective_op(CollOp::all_reduce, 2 << 20));
  REQUIRE(between);
  CHECK(between->time_us == Approx(200));
  CHECK(between->source ==
        "interpolated between 1048576 B (" + ccl + " line 2) and 3145728 B (" + ccl + " line 4)");
  // No extrapolation: below the sweep, and above its last ok size (4 MiB failed).
  CHECK_FALSE(times.find(collective_op(CollOp::all_reduce, 1 << 19)));
  CHECK_FALSE(times.find(collective_op(CollOp::all_reduce, 4 << 20)));
  CHECK_FALSE(times.find(collective_op(CollOp::all_reduce, 2 << 20, 4)));  // other group
  CHECK_FALSE(times.find(collective_op(CollOp::all_gather, 1 << 20)));
  // bench_fsdp's replay rows are collectives too.
  const auto fsdp = times.find(collective_op(CollOp::reduce_scatter, 2 << 20));
  REQUIRE(fsdp);
  CHECK(fsdp->time_us == 150);
}

TEST_CASE("report times: a later folder's row wins") {
  const auto first = reports_folder();
  const auto second = temp_dir("second");
  write(
      second, "gemm_step.csv",
      std::string(kGemmHeader) +
          "step,attn_qkv,fprop,8192,6144,4096,1,N,T,bf16,bf16,1,,,cuda,cublaslt,H200,99,,,,,ok,\n");
  const auto op = gemm_op(8192, 6144, 4096, DType::bf16);
  const auto later = ReportTimes::load({first.string(), second.string()}).find(op);
  REQUIRE(later);
  CHECK(later->time_us == 99);
  CHECK(later->source == (second / "gemm_step.csv").string() + " line 2");
  CHECK(later->device == "H200");
  const auto earlier = ReportTimes::load({second.string(), first.string()}).find(op);
  REQUIRE(earlier);
  CHECK(earlier->time_us == 123.5);
}

TEST_CASE("report times: a folder without reports, or missing, is bad input naming it") {
  const auto empty = temp_dir("empty");
  CHECK_THROWS_AS(ReportTimes::load({empty.string()}), Error);
  CHECK_THROWS_WITH(ReportTimes::load({empty.string()}), Catch::Contains(empty.string()));
  const auto only_step = temp_dir("only_step");
  write(only_step, "step.csv", "model,world_size,step_time_ms,status,note\nx,8,12.5,ok,\n");
  CHECK_THROWS_WITH(ReportTimes::load({only_step.string()}),
                    Catch::Contains(only_step.string()) && Catch::Contains("no bench_gemm"));
  const auto missing = (empty / "missing").string();
  CHECK_THROWS_WITH(ReportTimes::load({missing}), Catch::Contains(missing));
  try {
    ReportTimes::load({missing});
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::bad_input);
  }
}

TEST_CASE("report times: a malformed number in an ok row names file, line and column") {
  const auto dir = temp_dir("malformed");
  write(dir, "gemm_x.csv",
        std::string(kGemmHeader) +
            // a skipped row is not read, its numbers may be anything
            "sweep,sweep,,8x,6144,4096,1,N,T,bf16,bf16,,,,cuda,cublaslt,H100,,,,,,skipped,\n"
            "sweep,sweep,,8192,61x4,4096,1,N,T,bf16,bf16,,,,cuda,cublaslt,H100,1,,,,,ok,\n");
  const std::string file = (dir / "gemm_x.csv").string();
  CHECK_THROWS_WITH(ReportTimes::load({dir.string()}),
                    Catch::Contains(file + " line 3") && Catch::Contains("column n"));
}
