// The trace readers (trace/) on the fixtures of tests/data/trace, written to the format PyTorch
// documents for torch.profiler's Chrome trace: one training step with a linear layer, a flash
// attention forward, an add_, a copy_ and a bf16 all-reduce of 1 Mi elements on 2 ranks, as a
// GPU trace (kernels linked by External id or by the launch's correlation) and as a CPU trace.
// Every figure below is worked out from the fixture's timestamps by hand.
#include <zlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <string>

#include "common/error.hpp"
#include "tests/unit/temp_files.hpp"
#include "trace/json_stream.hpp"
#include "trace/op_shapes.hpp"
#include "trace/step_phase.hpp"
#include "trace/trace_reader.hpp"

using namespace opbench;
using namespace opbench::trace;

namespace {

const std::string kData = std::string(OPBENCH_SOURCE_DIR) + "/tests/data/trace/";

// api -> (kind, calls, timed calls, total µs)
struct Row {
  std::string kind;
  std::uint64_t calls, timed;
  double total_us;
};
std::map<std::string, Row> by_api(const TraceTable& t) {
  std::map<std::string, Row> out;
  for (const auto& r : t.rows())
    out[r.key.api] = {r.key.kind, r.calls, r.timed_calls, r.total_us};
  return out;
}

double sum_us(const TraceTable& t) {
  double total = 0;
  for (const auto& r : t.rows())
    total += r.total_us;
  return total;
}

}  // namespace

TEST_CASE("trace: a GPU trace's rows are its kernels' times and sum to the devices' span") {
  const auto tables = read_traces(kData + "host-a_4242.1700000000000.pt.trace.json");
  REQUIRE(tables.size() == 1);
  const TraceTable& t = *tables[0];
  CHECK(t.facts.source == "trace:gpu");
  CHECK(t.facts.rank == "1");  // distributedInfo
  CHECK(t.facts.host == "host-a");
  CHECK(t.facts.pid == 4242);  // tensorboard_trace_handler's <host>_<pid> name
  CHECK(t.steps == 1);
  const auto rows = by_api(t);
  // aten::mm: its kernel (200 µs, External id 5) and the split-K reduction linked only through
  // its launch's correlation (20 µs)
  CHECK(rows.at("aten::mm").total_us == Approx(220.0));
  // the flash kernel is launched by _flash_attention_forward inside the SDPA call: the call's
  CHECK(rows.at("aten::_scaled_dot_product_flash_attention").total_us == Approx(300.0));
  CHECK(rows.count("aten::_flash_attention_forward") == 0);
  // nccl:all_reduce's kernel (100 µs) and the 50 µs before it (1650 -> 1700), when its launch
  // (at 1265) was long queued: the device's, not a wait for the host
  CHECK(rows.at("record_param_comms").total_us == Approx(150.0));
  CHECK(rows.at("aten::add_").kind == "memory_bound");
  CHECK(rows.at("aten::add_").total_us == Approx(30.0));
  CHECK(rows.at("aten::copy_").total_us == Approx(20.0));  // its memcpy
  CHECK(rows.at("(GPU work without an operator)").total_us == Approx(10.0));
  // busy [1080, 1650], [1700, 1800], [1850, 1860]: of the 50 + 50 µs between, the last kernel's
  // wait is the host's (no launch correlates with it)
  CHECK(rows.at("(GPU 0 idle)").kind == "idle");
  CHECK(rows.at("(GPU 0 idle)").total_us == Approx(50.0));
  CHECK(sum_us(t) == Approx(1860.0 - 1080.0));
  for (const auto& r : t.rows()) {
    const std::string api = r.key.api;
    if (api == "aten::mm") {  // [1024,1024]·[1024,4096] with B stored column-major
      CHECK(std::string(r.key.kind) == "gemm");
      CHECK((r.key.m == 1024 && r.key.n == 4096 && r.key.k == 1024 && r.key.batch == 1));
      CHECK((r.key.transa == 'N' && r.key.transb == 'T'));
      CHECK(std::string(r.key.dtype) == "bf16");
    } else if (api == "aten::_scaled_dot_product_flash_attention") {
      CHECK((r.key.batch == 2 && r.key.heads_q == 32 && r.key.heads_kv == 8));
      CHECK((r.key.seq_q == 512 && r.key.seq_kv == 512 && r.key.head_dim_qk == 128 &&
             r.key.head_dim_v == 128));
      CHECK(r.key.causal);
      CHECK(std::string(r.key.op) == "fwd");
    } else if (api == "record_param_comms") {
      CHECK(std::string(r.key.op) == "all_reduce");
      CHECK((r.key.count == 1048576 && r.key.bytes == 2097152 && r.key.comm_size == 2));
    }
  }
}

TEST_CASE("trace: a GPU event without a timestamp is left out, said, and adds no idle time") {
  // the GPU step above with a kernel at ts 0 (pytorch/kineto#109): as a span it would open a
  // gap of 1080 µs before the first real kernel, charged as idle
  std::ifstream in(kData + "host-a_4242.1700000000000.pt.trace.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string anchor = "\"traceEvents\": [";
  const auto at = text.find(anchor);
  REQUIRE(at != std::string::npos);
  text.insert(at + anchor.size(),
              R"({"ph": "X", "cat": "kernel", "name": "stray", "pid": 0, "tid": 7, "ts": 0,
                  "dur": 5, "args": {"device": 0}},)");
  const auto dir = test::fresh_temp_dir("trace_no_ts");
  const std::string path = (dir / "host-a_4242.1700000000000.pt.trace.json").string();
  std::ofstream(path) << text;
  const auto tables = read_traces(path);
  REQUIRE(tables.size() == 1);
  const auto rows = by_api(*tables[0]);
  CHECK(rows.at("(GPU 0 idle)").total_us == Approx(50.0));
  CHECK(rows.at("(GPU work without an operator)").total_us == Approx(10.0));
  CHECK(sum_us(*tables[0]) == Approx(1860.0 - 1080.0));
  CHECK_THAT(tables[0]->notes,
             Catch::VectorContains(std::string(
                 "1 GPU events without a timestamp (ts 0) left out: their time is in no row, and "
                 "no idle time is counted around them")));
}

TEST_CASE("trace: a CPU trace's rows are the operators' own times and sum to the step") {
  const auto tables = read_traces(kData + "cpu_rank0.pt.trace.json");
  REQUIRE(tables.size() == 1);
  const TraceTable& t = *tables[0];
  CHECK(t.facts.source == "trace:cpu");
  const auto rows = by_api(t);
  // replayed calls own their whole duration
  CHECK(rows.at("aten::mm").total_us == Approx(30.0));
  CHECK(rows.at("aten::_scaled_dot_product_flash_attention").total_us == Approx(50.0));
  CHECK(rows.at("record_param_comms").total_us == Approx(30.0));
  // others their own: linear 50 - t 3 - matmul 40; matmul 40 - mm 30; the composite SDPA 60 - 50
  CHECK(rows.at("aten::linear").total_us == Approx(7.0));
  CHECK(rows.at("aten::matmul").total_us == Approx(10.0));
  CHECK(rows.at("aten::scaled_dot_product_attention").total_us == Approx(10.0));
  CHECK(rows.at("c10d::allreduce_").total_us == Approx(10.0));
  // the step less its top-level operators (50 + 15 + 60 + 10 + 40)
  CHECK(rows.at("ProfilerStep (time between operators)").total_us == Approx(725.0));
  CHECK(sum_us(t) == Approx(900.0));
}

TEST_CASE("trace: a profiler trace without shapes takes them from the execution trace beside it") {
  // joined/: the CPU step of cpu_rank0 recorded without record_shapes, and an execution trace of
  // the same step whose aten::mm and flash attention carry the same record-function ids (5, 11)
  const auto joined = read_traces(kData + "joined");
  REQUIRE(joined.size() == 1);  // the execution trace gives shapes, not a table of its own
  const auto alone = read_traces(kData + "cpu_rank0.pt.trace.json");
  auto cells = [](const TraceTable& t) {
    std::map<std::string, std::string> out;
    for (const auto& r : t.rows())
      out[r.key.api] = capture::shape_label(r.key) + " " + r.key.dtype + " " +
                       std::to_string(r.calls) + " " + std::to_string(r.total_us);
    return out;
  };
  CHECK(cells(*joined[0]) == cells(*alone[0]));
  const auto rows = by_api(*joined[0]);
  CHECK(rows.at("aten::mm").kind == "gemm");  // 1024x4096x1024 NT: the ET's view of the weight
  CHECK(rows.at("aten::_scaled_dot_product_flash_attention").kind == "attention");
}

TEST_CASE("trace: an execution trace of torch 2.3 and later (attrs, ctrl_deps) reads as 1.0.1's") {
  // et_chakra/: schema 1.1.1-chakra.0.0.4, each node's parent in ctrl_deps and its rf_id in its
  // attrs list: aten::linear (holding aten::t and aten::mm 64x128x256) and aten::relu under the
  // thread. Read with top-level parent and rf_id only, relu was never counted (its parent read as
  // 0) and no hint was kept, so et_chakra_joined/'s profiler trace without shapes was refused.
  const auto alone = read_traces(kData + "et_chakra");
  REQUIRE(alone.size() == 1);
  const auto rows = by_api(*alone[0]);
  CHECK(rows.at("aten::mm").kind == "gemm");
  CHECK(rows.count("aten::relu") == 1);
  CHECK(rows.at("aten::relu").kind == "memory_bound");
  const auto joined = read_traces(kData + "et_chakra_joined");
  REQUIRE(joined.size() == 1);
  const auto timed = by_api(*joined[0]);
  CHECK(timed.at("aten::mm").kind == "gemm");
  CHECK(timed.at("aten::mm").timed == 1);
}

TEST_CASE(
    "trace: kernels overlapping on two streams are each counted whole, and the note says by how "
    "much") {
  // overlap_rank0: an all_reduce's kernel on stream 20 over [100, 300] and a GEMM's on stream 7
  // over [100, 200]: rows of 200 and 100 us for a span of 200 (no idle time), said in a note
  // (the documentation said the rows sum to the span)
  const auto tables = read_traces(kData + "overlap_rank0.pt.trace.json");
  REQUIRE(tables.size() == 1);
  CHECK(sum_us(*tables[0]) == Approx(300.0));
  CHECK_THAT(tables[0]->notes,
             Catch::VectorContains(std::string(
                 "kernels on several streams ran at once for 100.0 us (communication under "
                 "compute): each is counted whole, so the rows sum to that much more than the "
                 "devices' span")));
}

TEST_CASE(
    "trace: a rank's profiler and execution traces pair by rank as a number, else by process") {
  // pairs/rank00: rank00.et.json beside a profiler trace of distributedInfo rank 0, with
  // shapes: one table (two before, rank "00" and rank "0": the rank counted twice)
  const auto padded = read_traces(kData + "pairs/rank00");
  REQUIRE(padded.size() == 1);
  CHECK(padded[0]->facts.source == "trace:cpu");
  // pairs/rank00_no_shapes: the same without shapes: the execution trace gives them (refused)
  const auto hinted = read_traces(kData + "pairs/rank00_no_shapes");
  REQUIRE(hinted.size() == 1);
  CHECK(by_api(*hinted[0]).at("aten::mm").kind == "gemm");
  // pairs/chakra_names: Chakra's kineto_trace_0.json and et_0.json (no rank in the names, the
  // same pid 4242): one table, of pid 4242 (et_0 was read as host "et", pid 0, and counted)
  const auto chakra = read_traces(kData + "pairs/chakra_names");
  REQUIRE(chakra.size() == 1);
  CHECK(chakra[0]->facts.pid == 4242);
  CHECK(chakra[0]->facts.source == "trace:cpu");
}

TEST_CASE("trace: a JSON file in the folder that is no trace is left out and said") {
  // with_config/: cpu_rank0's trace beside a config.json: one table, as cpu_rank0 alone, with a
  // note (the folder was refused: "neither a PyTorch profiler trace nor an execution trace");
  // alone, the config is refused
  const auto tables = read_traces(kData + "with_config");
  REQUIRE(tables.size() == 1);
  CHECK(sum_us(*tables[0]) == Approx(sum_us(*read_traces(kData + "cpu_rank0.pt.trace.json")[0])));
  CHECK_THAT(tables[0]->notes,
             Catch::VectorContains(std::string(
                 "config.json in the same folder left out: neither a PyTorch profiler trace (no "
                 "traceEvents) nor an execution trace (no nodes)")));
  CHECK_THROWS_WITH(read_traces(kData + "with_config/config.json"),
                    Catch::Contains("neither a PyTorch profiler trace (no traceEvents) nor an "
                                    "execution trace (no nodes)"));
}

TEST_CASE("trace: gzip reads as plain, and a truncated gzip names the byte") {
  const std::string dir = test::fresh_temp_dir("trace_gz").string();
  const std::string text = test::read_text(kData + "cpu_rank0.pt.trace.json");
  const std::string gz = dir + "/rank0.pt.trace.json.gz";
  gzFile f = gzopen(gz.c_str(), "wb");
  REQUIRE(f != nullptr);
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  const auto tables = read_traces(dir);
  REQUIRE(tables.size() == 1);
  CHECK(sum_us(*tables[0]) == Approx(900.0));
  const std::string whole = test::read_text(gz);
  std::ofstream(gz, std::ios::binary | std::ios::trunc) << whole.substr(0, whole.size() / 2);
  try {
    read_traces(gz);
    FAIL("a truncated gzip trace was read");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::bad_input);
    CHECK_THAT(e.what(), Catch::Contains("of the decompressed text") &&
                             Catch::Contains("gzip data ends early"));
  }
}

TEST_CASE("trace: bad traces are one line naming the file") {
  const std::string dir = test::fresh_temp_dir("trace_bad").string();
  auto error_of = [](const std::string& path) {
    try {
      read_traces(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error_of(kData + "no_shapes.pt.trace.json"), Catch::Contains("record_shapes=True"));
  const std::string text = test::read_text(kData + "cpu_rank0.pt.trace.json");
  std::ofstream(dir + "/cut.json") << text.substr(0, 2000);
  CHECK_THAT(error_of(dir + "/cut.json"),
             Catch::Contains("cut.json: not a readable JSON trace at byte 2001"));
  std::ofstream(dir + "/other.json") << "{\"a\": 1}";
  CHECK_THAT(error_of(dir + "/other.json"), Catch::Contains("neither a PyTorch profiler trace"));
  CHECK_THAT(error_of(dir + "/none"), Catch::Contains("no such file or folder"));
}

TEST_CASE("trace: leaf products as bench_gemm GEMMs, layouts from strides") {
  auto operand = [](std::vector<std::int64_t> dims, std::optional<bool> transposed) {
    Operand o;
    o.dims = std::move(dims);
    o.type = "c10::BFloat16";
    o.transposed = transposed;
    return o;
  };
  // torch.nn.Linear's weight gradient: gradᵀ[out, T]·x[T, in], gradᵀ a transposed view
  const auto wgrad = gemm_call("aten::mm", {operand({688, 32}, true), operand({32, 256}, false)});
  REQUIRE(wgrad);
  CHECK((wgrad->m == 688 && wgrad->n == 256 && wgrad->k == 32 && wgrad->transa && !wgrad->transb));
  // addmm's operands are 1 and 2 (0 is the bias)
  const auto addmm = gemm_call(
      "aten::addmm", {operand({256}, false), operand({8, 32}, false), operand({32, 256}, true)});
  REQUIRE(addmm);
  CHECK((addmm->m == 8 && addmm->n == 256 && addmm->k == 32 && addmm->transb));
  const auto bmm = gemm_call("aten::bmm", {operand({4, 32, 64}, false), operand({4, 64, 16}, {})});
  REQUIRE(bmm);
  CHECK((bmm->batch == 4 && std::string(bmm->op) == "gemm_batched" && !bmm->layout_known));
  CHECK_FALSE(gemm_call("aten::matmul", {operand({8, 32}, false), operand({32, 4}, false)}));
  CHECK_FALSE(gemm_call("aten::mm", {operand({8, 32}, false), operand({31, 4}, false)}));
}

TEST_CASE("trace: ROCm's fp8 replays as fp8, and a dtype opbench lacks is said, not dropped") {
  // MI300's fp8 GEMM (Float8_e4m3fnuz) is bench_gemm's fp8_e4m3 of the same shape; an fp4 product
  // (Float4_e2m1fn_x2) has no case, and was dropped unsaid: now its own row and a note
  const std::string dir = test::fresh_temp_dir("trace_dtypes").string();
  std::ofstream(dir + "/rank0.pt.trace.json") << R"({
 "schemaVersion": 1, "record_shapes": 1, "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
 "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::_scaled_mm", "pid": 7, "tid": 1, "ts": 10, "dur": 10, "args": {"Input Dims": [[64, 32], [32, 16], [], []], "Input type": ["c10::Float8_e4m3fnuz", "c10::Float8_e4m3fnuz", "float", "float"]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1, "ts": 30, "dur": 10, "args": {"Input Dims": [[64, 32], [32, 16]], "Input type": ["c10::Float4_e2m1fn_x2", "c10::Float4_e2m1fn_x2"]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1, "ts": 50, "dur": 10, "args": {"Input Dims": [[64, 32], [32, 16]], "Input type": ["c10::Float4_e2m1fn_x2", "c10::Float4_e2m1fn_x2"]}}
 ]
})";
  const auto tables = read_traces(dir);
  REQUIRE(tables.size() == 1);
  for (const auto& r : tables[0]->rows()) {
    const std::string api = r.key.api;
    if (api == "aten::_scaled_mm")
      CHECK((r.key.kind == std::string("gemm") && r.key.dtype == std::string("fp8_e4m3") &&
             r.key.m == 64 && r.key.n == 16 && r.key.k == 32));
    else if (api == "aten::mm")
      CHECK((r.key.kind == std::string("other") && r.calls == 2 && r.total_us == Approx(20.0)));
    else
      FAIL("unexpected row " << api);
  }
  const std::string said =
      "2 calls of aten::mm in Float4_e2m1fn_x2, a dtype opbench does not benchmark: not "
      "replayed (their time is the operator's own row)";
  CHECK_THAT(tables[0]->notes, Catch::VectorContains(said));
  // joined/'s execution trace with its aten::mm in fp4: alone, and as the shapes of the profiler
  // trace beside it, the note is the same (one call)
  std::string et = test::read_text(kData + "joined/rank0.et.json");
  const std::string mm = "\"name\": \"aten::mm\"";
  const auto from = et.find(mm), to = et.find("\"outputs\"", et.find(mm));
  REQUIRE((from != std::string::npos && to != std::string::npos));
  std::string node = et.substr(from, to - from);
  for (auto at = node.find("c10::BFloat16"); at != std::string::npos;
       at = node.find("c10::BFloat16"))
    node.replace(at, 13, "c10::Float4_e2m1fn_x2");
  et.replace(from, to - from, node);
  const std::string one =
      "1 calls of aten::mm in Float4_e2m1fn_x2, a dtype opbench does not benchmark: not "
      "replayed (their time is the operator's own row)";
  const std::string et_dir = test::fresh_temp_dir("trace_dtypes_et").string();
  std::ofstream(et_dir + "/rank0.et.json") << et;
  const auto alone = read_traces(et_dir);
  REQUIRE(alone.size() == 1);
  CHECK_THAT(alone[0]->notes, Catch::VectorContains(one));
  std::ofstream(et_dir + "/rank0.pt.trace.json")
      << test::read_text(kData + "joined/rank0.pt.trace.json");
  const auto joined = read_traces(et_dir);
  REQUIRE(joined.size() == 1);
  CHECK(joined[0]->facts.source != "trace:et");
  CHECK_THAT(joined[0]->notes, Catch::VectorContains(one));
  CHECK(by_api(*joined[0]).at("aten::mm").kind == "other");
}

TEST_CASE("trace: flash-attn's own operators as attention, [B, S, H, D]") {
  // flash_attn::_flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, ...) on
  // Llama-3.1 8B's heads, 2 x 4096 tokens (it was a row of kind other, never replayed)
  auto bshd = [](std::int64_t heads) {
    Operand o;
    o.dims = {2, 4096, heads, 128};
    o.type = "c10::BFloat16";
    return o;
  };
  const auto fwd = attention_call("flash_attn::_flash_attn_forward", {bshd(32), bshd(8), bshd(8)},
                                  {"", "", "", "0.0", "0.08838834764831845", "True"});
  REQUIRE(fwd);
  CHECK((fwd->batch == 2 && fwd->heads_q == 32 && fwd->heads_kv == 8 && fwd->seq_q == 4096 &&
         fwd->seq_kv == 4096 && fwd->head_dim_qk == 128 && fwd->dtype == "bf16"));
  CHECK(fwd->causal == std::optional<bool>(true));
  // the backward: (dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p, softmax_scale,
  // causal, ...); causal found by its name where the trace has the schema
  const auto bwd = attention_call(
      "flash_attn::_flash_attn_backward", {bshd(32), bshd(32), bshd(8), bshd(8)},
      {"", "", "", "", "", "", "", "", "", "0.0", "0.088", "False"},
      "flash_attn::_flash_attn_backward(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor out, "
      "Tensor softmax_lse, Tensor(a!)? dq, Tensor(b!)? dk, Tensor(c!)? dv, float dropout_p, "
      "float softmax_scale, bool causal, SymInt window_size_left) -> Tensor");
  REQUIRE(bwd);
  CHECK((std::string(bwd->pass) == "bwd" && bwd->heads_q == 32 && bwd->heads_kv == 8));
  CHECK(bwd->causal == std::optional<bool>(false));
}

TEST_CASE("trace: PyTorch's communication metadata as nccl-tests counts") {
  // all_gather: 4 ranks each sending 1000 elements receive 4000; reduce_scatter the reverse
  const auto ag = comm_call("_allgather_base", 1000, 4000, 4, "BFloat16");
  REQUIRE(ag);
  CHECK((ag->op == CollOp::all_gather && ag->count == 1000 && ag->dtype == "bf16"));
  const auto rs = comm_call("reduce_scatter_tensor_coalesced", 4000, 1000, 4, "Float");
  REQUIRE(rs);
  CHECK((rs->op == CollOp::reduce_scatter && rs->count == 1000 && rs->dtype == "fp32"));
  const auto a2a = comm_call("all_to_allv", 4000, 4000, 4, "Float");
  CHECK((a2a->op == CollOp::all_to_all && a2a->count == 1000));
  CHECK_FALSE(comm_call("barrier", 0, 0, 4, "")->replayable);
  // WorkNCCL::wait's own record: no collective (it was a row of op other, inflating the calls)
  CHECK_FALSE(comm_call("wait", 0, 0, 1, "Byte"));
}

TEST_CASE("trace: a functional collective's group size is its own argument where it has one") {
  auto tensor = [](std::int64_t n, const char* type) {
    Operand o;
    o.dims = {n};
    o.numel = n;
    o.type = type;
    return o;
  };
  // _c10d_functional::reduce_scatter_tensor(input, reduce_op, group_size, group_name): 4 ranks
  // reduce 4096 elements to 1024 each; with the schema, and without it (group_size's index in
  // Functional.cpp's schema)
  const std::vector<Operand> rs_in = {tensor(4096, "Tensor(c10::Float)"), {}, {}, {}};
  const std::vector<std::string> rs_args = {"", "sum", "4", "0"};
  for (const char* schema : {"_c10d_functional::reduce_scatter_tensor(Tensor input, str "
                             "reduce_op, int group_size, str group_name) -> Tensor",
                             ""}) {
    const auto rs =
        functional_call("_c10d_functional::reduce_scatter_tensor", rs_in, rs_args, schema, 8);
    REQUIRE(rs);
    CHECK((rs->call.op == CollOp::reduce_scatter && rs->call.count == 1024 && rs->group_size == 4 &&
           rs->size_stated && rs->call.dtype == "fp32"));
  }
  // torch 2.0 to 2.2's c10d_functional::all_gather_into_tensor(shard, tag, ranks, group_size):
  // the last argument, schema or not
  const auto ag = functional_call("c10d_functional::all_gather_into_tensor",
                                  {tensor(2048, "Tensor(c10::BFloat16)"), {}, {}, {}},
                                  {"", "", "[0, 1]", "2"}, "", 8);
  REQUIRE(ag);
  CHECK((ag->call.op == CollOp::all_gather && ag->call.count == 2048 && ag->group_size == 2 &&
         ag->size_stated));
  // all_reduce(input, reduce_op, group_name) and its in-place form name no size: assumed
  for (const char* name : {"_c10d_functional::all_reduce", "_c10d_functional::all_reduce_"}) {
    const auto ar = functional_call(name, {tensor(1000, "Tensor(c10::BFloat16)"), {}, {}},
                                    {"", "sum", "3"}, "", 8);
    REQUIRE(ar);
    CHECK((ar->call.op == CollOp::all_reduce && ar->call.count == 1000 && ar->group_size == 8 &&
           !ar->size_stated));
  }
  // the _out form into a given tensor is the same gather
  const auto out =
      functional_call("_c10d_functional::all_gather_into_tensor_out",
                      {tensor(512, "Tensor(c10::Float)"), {}, {}, {}}, {"", "4", "0", ""}, "", 8);
  REQUIRE(out);
  CHECK((out->call.count == 512 && out->group_size == 4));
  // a group_size that is no positive number is not taken
  const auto bad =
      functional_call("_c10d_functional::all_gather_into_tensor",
                      {tensor(512, "Tensor(c10::Float)"), {}, {}}, {"", "0", ""}, "", 8);
  REQUIRE(bad);
  CHECK((bad->group_size == 8 && !bad->size_stated));
  CHECK_FALSE(functional_call("_c10d_functional::wait_tensor", {tensor(1, "Tensor(c10::Float)")},
                              {""}, "", 8));
  CHECK_FALSE(functional_call("c10d::allreduce_", {tensor(1, "Tensor(c10::Float)")}, {""}, "", 8));
}

TEST_CASE("trace: an execution trace's collective chain is one call, of the size it states") {
  // et_collectives/ (schema 1.1.1-chakra.0.0.4, as PyTorch 2.4 and later write it): a tensor-
  // parallel _c10d_functional::all_reduce -> c10d::allreduce_ -> record_param_comms (pg_size 2);
  // an FSDP c10d::_allgather_base_ -> record_param_comms (pg_size 4); a
  // _c10d_functional::reduce_scatter_tensor (group_size 4) ->
  // c10d::reduce_scatter_tensor_coalesced_ -> record_param_comms without its metadata; a
  // c10d::allreduce_ whose size nothing states; a wait_tensor holding ProcessGroupNCCL's "wait";
  // a _c10d_functional::all_gather_into_tensor -> c10d::allgather_into_tensor_coalesced_ ->
  // record_param_comms (pg_size 4), as Functional.cpp routes them; a c10d::broadcast_ whose
  // record_param_comms has the inputs of versions before the attrs, ending in its group's first
  // global rank, stride and size (0, 4, 2). Each collective was its c10d operator's row, of the
  // assumed size (1: one rank's traces); then the coalesced c10d operators, unknown to the
  // reader, left the functional gather counted twice. The FSDP groups' global_rank_stride is 2
  // (ranks 0, 2, 4, 6 beside tensor parallelism 2), the broadcast's 4: each row's comm_stride,
  // so that bench_ccl places the groups so (it read none: every group consecutive)
  struct Comm {
    std::string op;
    std::int64_t count, comm_size, bytes;
    int comm_stride;
  };
  auto comms = [](const TraceTable& t) {
    std::map<std::string, Comm> out;
    for (const auto& r : t.rows())
      if (r.key.kind == std::string("collective"))
        out[r.key.api] = {r.key.op, r.key.count, r.key.comm_size, r.key.bytes, r.key.comm_stride};
    return out;
  };
  const auto alone = read_traces(kData + "et_collectives");
  REQUIRE(alone.size() == 1);
  const auto c = comms(*alone[0]);
  REQUIRE(c.size() == 6);
  const Comm& tp = c.at("_c10d_functional::all_reduce");
  CHECK(
      (tp.op == "all_reduce" && tp.count == 8388608 && tp.comm_size == 2 && tp.bytes == 16777216));
  const Comm& ag = c.at("c10d::_allgather_base_");
  CHECK((ag.op == "all_gather" && ag.count == 1048576 && ag.comm_size == 4 && ag.bytes == 8388608));
  const Comm& rs = c.at("_c10d_functional::reduce_scatter_tensor");
  CHECK((rs.op == "reduce_scatter" && rs.count == 1048576 && rs.comm_size == 4 &&
         rs.bytes == 16777216));
  const Comm& fg = c.at("_c10d_functional::all_gather_into_tensor");
  CHECK((fg.op == "all_gather" && fg.count == 2048 && fg.comm_size == 4 && fg.bytes == 16384));
  const Comm& bc = c.at("c10d::broadcast_");
  CHECK((bc.op == "broadcast" && bc.count == 2048 && bc.comm_size == 2 && bc.bytes == 8192));
  const Comm& dp = c.at("c10d::allreduce_");
  CHECK((dp.op == "all_reduce" && dp.count == 1000 && dp.comm_size == 1));
  // the strides: stated by attrs (1, 2, 2), by the old inputs (4), by nothing (the functional
  // scatter's group_size alone: 0), and 1 for an assumed group of one rank
  CHECK(tp.comm_stride == 1);
  CHECK(ag.comm_stride == 2);
  CHECK(fg.comm_stride == 2);
  CHECK(bc.comm_stride == 4);
  CHECK(rs.comm_stride == 0);
  CHECK(dp.comm_stride == 1);
  for (const auto& r : alone[0]->rows())
    CHECK(r.calls == 1);
  CHECK(by_api(*alone[0]).at("_c10d_functional::wait_tensor").kind == "other");
  CHECK_THAT(alone[0]->notes,
             Catch::VectorContains(std::string(
                 "1 communication calls whose execution trace states no group size (no "
                 "record_param_comms that states it, as recent PyTorch versions write, nor a "
                 "group_size argument): communicator size 1 assumed, the number of ranks whose "
                 "traces were read together (no distributedInfo world_size)")));
  // read with the step's profiler trace, recorded without shapes (and its record_param_comms
  // without "Group size"): the outermost operators take the chains' stated sizes, and only the
  // last all_reduce's is assumed (all three were, of size 1)
  const std::string dir = test::fresh_temp_dir("trace_et_collectives").string();
  std::ofstream(dir + "/rank0.et.json") << test::read_text(kData + "et_collectives/rank0.et.json");
  std::ofstream(dir + "/rank0.pt.trace.json") << R"({
 "schemaVersion": 1, "record_shapes": 0,
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 1, "ts": 1000, "dur": 200, "args": {"External id": 1, "Record function id": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "_c10d_functional::all_reduce", "pid": 7, "tid": 1, "ts": 1010, "dur": 40, "args": {"External id": 110, "Record function id": 110}},
  {"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "pid": 7, "tid": 1, "ts": 1012, "dur": 30, "args": {"External id": 111, "Record function id": 111}},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 7, "tid": 1, "ts": 1014, "dur": 20, "args": {"External id": 112, "Record function id": 112, "Collective name": "allreduce", "In msg nelems": 8388608, "Out msg nelems": 8388608, "dtype": "BFloat16"}},
  {"ph": "X", "cat": "cpu_op", "name": "c10d::_allgather_base_", "pid": 7, "tid": 1, "ts": 1060, "dur": 40, "args": {"External id": 120, "Record function id": 120}},
  {"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "pid": 7, "tid": 1, "ts": 1110, "dur": 40, "args": {"External id": 140, "Record function id": 140}}
 ]
})";
  const auto joined = read_traces(dir);
  REQUIRE(joined.size() == 1);
  const auto j = comms(*joined[0]);
  CHECK((j.at("_c10d_functional::all_reduce").comm_size == 2 &&
         j.at("_c10d_functional::all_reduce").count == 8388608));
  CHECK(j.at("c10d::_allgather_base_").comm_size == 4);
  CHECK(j.at("c10d::_allgather_base_").comm_stride == 2);  // from the execution trace
  CHECK(j.at("c10d::allreduce_").comm_size == 1);
  CHECK_THAT(joined[0]->notes,
             Catch::VectorContains(std::string(
                 "1 communication calls whose trace records no group size (no \"Group size\", or "
                 "shapes from the execution trace): communicator size 1 assumed, the number of "
                 "ranks whose traces were read together (no distributedInfo world_size)")));
}

TEST_CASE("trace: a profiler trace's record_param_comms gives its group's global rank stride") {
  // A data-parallel all_reduce over ranks 0, 2, 4, 6 ("Global rank stride" 2) and an all_gather
  // over 4 ranks not evenly spaced, for which PyTorch writes no stride: comm_stride 2 and 0 (not
  // known), where both read as consecutive ranks before
  const std::string dir = test::fresh_temp_dir("trace_stride").string();
  std::ofstream(dir + "/rank0.pt.trace.json") << R"({
 "schemaVersion": 1, "record_shapes": 1, "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},
 "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 7, "tid": 1, "ts": 10, "dur": 10, "args": {"External id": 2, "Input Dims": [[1024]], "Input type": ["float"], "Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "Group size": 4, "Global rank start": 0, "Global rank stride": 2, "Process Group Ranks": "[0, 2, 4, 6]", "dtype": "Float"}},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 7, "tid": 1, "ts": 30, "dur": 10, "args": {"External id": 3, "Input Dims": [[256]], "Input type": ["float"], "Collective name": "_allgather_base", "In msg nelems": 256, "Out msg nelems": 1024, "Group size": 4, "Process Group Ranks": "[0, 1, 4, 5]", "dtype": "Float"}}
 ]
})";
  const auto tables = read_traces(dir);
  REQUIRE(tables.size() == 1);
  std::map<std::string, std::pair<int, int>> got;  // op -> (comm_size, comm_stride)
  for (const auto& r : tables[0]->rows())
    if (r.key.kind == std::string("collective"))
      got[r.key.op] = {r.key.comm_size, r.key.comm_stride};
  CHECK(got ==
        std::map<std::string, std::pair<int, int>>{{"all_reduce", {4, 2}}, {"all_gather", {4, 0}}});
  // and the capture file says so: 2 in the all_reduce's comm_stride cell, the gather's empty
  const std::string csv = tables[0]->csv();
  CHECK(csv.find(",4096,1024,4,2,,") != std::string::npos);
  CHECK(csv.find(",4096,256,4,,,") != std::string::npos);
}

TEST_CASE("trace: a compiled step's fused Triton kernels are memory-bound rows of their own") {
  // torch.compile's graph (CompiledFunction) launches each Triton kernel through the driver
  // (cuLaunchKernel) inside a record_function of the kernel's name, its GEMMs as aten::mm: a
  // fused RMSNorm (50 us), a GEMM (100 us), a Triton GEMM template (40 us), back to back. The
  // fused kernels were rows of kind other, so a calibration from this trace lost them
  const std::string dir = test::fresh_temp_dir("trace_compiled").string();
  std::ofstream(dir + "/rank0.pt.trace.json") << R"({
 "schemaVersion": 1, "record_shapes": 1,
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 1, "ts": 1000, "dur": 300, "args": {"External id": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "CompiledFunction", "pid": 7, "tid": 1, "ts": 1010, "dur": 200, "args": {"External id": 2}},
  {"ph": "X", "cat": "cpu_op", "name": "triton_red_fused_add_mean_mul_pow_rsqrt_0", "pid": 7, "tid": 1, "ts": 1020, "dur": 20, "args": {"External id": 3, "Input Dims": [[4096, 4096], [4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]}},
  {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 7, "tid": 1, "ts": 1025, "dur": 5, "args": {"External id": 3, "correlation": 100}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1, "ts": 1060, "dur": 30, "args": {"External id": 4, "Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"], "Input Strides": [[4096, 1], [4096, 1]]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 1, "ts": 1065, "dur": 5, "args": {"External id": 4, "correlation": 101}},
  {"ph": "X", "cat": "cpu_op", "name": "triton_tem_fused_mm_1", "pid": 7, "tid": 1, "ts": 1100, "dur": 20, "args": {"External id": 5, "Input Dims": [[4096, 4096], [4096, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]}},
  {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 7, "tid": 1, "ts": 1105, "dur": 5, "args": {"External id": 5, "correlation": 102}},
  {"ph": "X", "cat": "kernel", "name": "triton_red_fused_add_mean_mul_pow_rsqrt_0", "pid": 0, "tid": 7, "ts": 1100, "dur": 50, "args": {"device": 0, "stream": 7, "correlation": 100}},
  {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0, "tid": 7, "ts": 1150, "dur": 100, "args": {"device": 0, "stream": 7, "correlation": 101}},
  {"ph": "X", "cat": "kernel", "name": "triton_tem_fused_mm_1", "pid": 0, "tid": 7, "ts": 1250, "dur": 40, "args": {"device": 0, "stream": 7, "correlation": 102}}
 ]
})";
  const auto tables = read_traces(dir);
  REQUIRE(tables.size() == 1);
  const auto rows = by_api(*tables[0]);
  const Row& norm = rows.at("triton_red_fused_add_mean_mul_pow_rsqrt_0");
  CHECK((norm.kind == "memory_bound" && norm.total_us == Approx(50.0) && norm.timed == 1));
  CHECK((rows.at("aten::mm").kind == "gemm" && rows.at("aten::mm").total_us == Approx(100.0)));
  CHECK((rows.at("triton_tem_fused_mm_1").kind == "other" &&
         rows.at("triton_tem_fused_mm_1").total_us == Approx(40.0)));
  CHECK(rows.count("CompiledFunction") == 0);  // it ran no kernel of its own
  CHECK(sum_us(*tables[0]) == Approx(190.0));
}

TEST_CASE("trace: a product not replayed is not memory-bound, whatever its prefix") {
  // addbmm, addmm_, addmv began as "add" does, and were counted in the memory-bound family
  for (const char* name : {"aten::addbmm", "aten::addmm_", "aten::addmv", "aten::addr",
                           "aten::baddbmm_", "aten::_grouped_mm", "aten::_int_mm", "aten::mm"})
    CHECK(std::string(unreplayed_kind(name)) == "other");
  CHECK(std::string(unreplayed_kind("aten::add_")) == "memory_bound");
  // torch.compile's fused Triton kernels (Inductor's names): a template is a GEMM
  CHECK(std::string(unreplayed_kind("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1")) ==
        "memory_bound");
  CHECK(std::string(unreplayed_kind("triton_poi_fused_add_cos_sin_0")) == "memory_bound");
  CHECK(std::string(unreplayed_kind("triton_for_fused_0")) == "memory_bound");
  CHECK(std::string(unreplayed_kind("triton_tem_fused_mm_0")) == "other");
  // a cooperative reduction: Inductor's category "unknown"
  CHECK(std::string(unreplayed_kind("triton_unk_fused_sum_0")) == "memory_bound");
  CHECK(std::string(unreplayed_kind("aten::addcmul_")) == "memory_bound");
}

TEST_CASE("trace: children outlasting their parent give it no time, not a negative one") {
  // overrun_rank0: add_ [1010, 1020] holds copy_ [1012, 1032]: 10 - 20 µs of its own
  const auto tables = read_traces(kData + "overrun_rank0.pt.trace.json");
  REQUIRE(tables.size() == 1);
  const auto rows = by_api(*tables[0]);
  CHECK(rows.at("aten::add_").total_us == 0.0);
  CHECK(rows.at("aten::copy_").total_us == Approx(20.0));
  CHECK(rows.at("ProfilerStep (time between operators)").total_us == Approx(90.0));
  for (const auto& r : tables[0]->rows())
    CHECK(r.total_us >= 0.0);
  CHECK_THAT(tables[0]->notes, Catch::VectorContains(std::string(
                                   "0 operators started before an earlier one of their thread, 1 "
                                   "had children outlasting them (own time taken as 0): nesting, "
                                   "and so own times, are approximate")));
}

TEST_CASE("trace: members of an unexpected type are read as missing, never an internal error") {
  const std::string dir = test::fresh_temp_dir("trace_forms").string();
  // a kernel whose args is null and a launch whose args is an array: the kernel is linked to no
  // operator (nlohmann's value() on them threw type_error: "internal error", exit 1). `args`
  // goes before the event's own, renamed.
  auto replace_args = [](std::string& text, const std::string& name, const std::string& args) {
    const std::size_t at = text.find("\"name\": \"" + name + "\",");
    REQUIRE(at != std::string::npos);
    text.replace(text.find("\"args\"", at), 6, "\"was_args\"");
    text.insert(at, "\"args\": " + args + ", ");
  };
  std::string gpu = test::read_text(kData + "host-a_4242.1700000000000.pt.trace.json");
  replace_args(gpu, "unattributed_kernel", "null");
  replace_args(gpu, "cudaLaunchKernel", "[1]");
  std::ofstream(dir + "/gpu.json") << gpu;
  const auto tables = read_traces(dir + "/gpu.json");
  REQUIRE(tables.size() == 1);
  CHECK(by_api(*tables[0]).at("(GPU work without an operator)").total_us == Approx(10.0));
  // an execution-trace node whose name is a number and op_schema a list: a nameless operator
  std::string et = test::read_text(kData + "joined/rank0.et.json");
  const std::string t_name = "\"name\": \"aten::t\",";
  REQUIRE(et.find(t_name) != std::string::npos);
  et.replace(et.find(t_name), t_name.size(), "\"name\": 5,");
  const std::string schema = "\"op_schema\": \"aten::t(Tensor(a) self) -> Tensor(a)\",";
  REQUIRE(et.find(schema) != std::string::npos);
  et.replace(et.find(schema), schema.size(), "\"op_schema\": [],");
  std::ofstream(dir + "/rank0.et.json") << et;
  // The rest of the trace reads as before: its product and its attention, one call each.
  const auto et_tables = read_traces(dir + "/rank0.et.json");
  REQUIRE(et_tables.size() == 1);
  const auto et_rows = et_tables[0]->rows();
  REQUIRE(et_rows.size() == 2);
  const auto mm = std::find_if(et_rows.begin(), et_rows.end(),
                               [](const auto& r) { return std::string(r.key.api) == "aten::mm"; });
  REQUIRE(mm != et_rows.end());
  CHECK((mm->key.m == 1024 && mm->key.n == 4096 && mm->key.k == 1024 && mm->calls == 1));
  for (const auto& r : et_rows)
    CHECK(std::string(r.key.api) != "5");
}

namespace {
// A reader that trips over a member's type the way nlohmann reports it.
struct TypeTrippingSink : JsonSink {
  void member(const std::string&, const nlohmann::json& value) override {
    (void)value.get<std::string>();
  }
  void element(const std::string&, nlohmann::json&) override {}
};
}  // namespace

TEST_CASE("trace: nlohmann's exceptions from a reader are bad input naming the file") {
  const std::string dir = test::fresh_temp_dir("trace_sink").string();
  std::ofstream(dir + "/t.json") << "{\"schemaVersion\": 1}";
  TypeTrippingSink sink;
  try {
    stream_json(dir + "/t.json", sink);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::bad_input);
    CHECK_THAT(e.what(), Catch::StartsWith(dir + "/t.json: an entry of an unexpected form: "));
  }
}

TEST_CASE(
    "trace: a record_param_comms without attrs gives its group size in every form PyTorch wrote") {
  // c10d::allreduce_ calls of 1000, 2000, 3000 and 4000 fp32 elements, each over a
  // record_param_comms of one form of RECORD_PARAM_COMMS_DATA's inputs (ParamCommsUtils.hpp):
  // ending in the size alone (4); in the first rank, stride and size, then isAsyncOp (8);
  // WorkNCCL::wait's record, whose last value is its devices (1, not a group size: assumed);
  // the oldest, ending at the split sizes (assumed). The world: 2 (the ranks read together).
  using json = nlohmann::json;
  json nodes = json::array();
  nodes.push_back({{"id", 1},
                   {"name", "[pytorch|profiler|execution_trace|thread]"},
                   {"parent", 0},
                   {"inputs", json::array()},
                   {"input_shapes", json::array()},
                   {"input_types", json::array()}});
  const std::vector<json> tails = {
      json::array({"allreduce", json::array(), json::array(), 4}),
      json::array({"allreduce", json::array(), json::array(), 0, 1, 8, false}),
      json::array({"wait", json::array(), json::array(), -1, -1, 1}),
      json::array({"allreduce", json::array(), json::array()})};
  int id = 10;
  for (std::size_t i = 0; i < tails.size(); ++i, id += 2) {
    json inputs = json::array({json::array({json::array({100 + id, 100 + id, 0, 1000, 4, "cpu"})}),
                               7, 140000000 + id, 0});
    for (const json& v : tails[i])
      inputs.push_back(v);
    nodes.push_back({{"id", id + 1},
                     {"name", "record_param_comms"},
                     {"parent", id},
                     {"rf_id", id + 1},
                     {"inputs", inputs},
                     {"input_shapes", json::array()},
                     {"input_types", json::array()}});
    const std::int64_t count = 1000 * static_cast<std::int64_t>(i + 1);
    nodes.push_back(
        {{"id", id},
         {"name", "c10d::allreduce_"},
         {"parent", 1},
         {"rf_id", id},
         {"inputs",
          json::array({json::array({json::array({100 + id, 100 + id, 0, count, 4, "cpu"})}),
                       "<ProcessGroup>", "<ReduceOp>", -1})},
         {"input_shapes", json::array({json::array({json::array({count})}), json::array(),
                                       json::array(), json::array()})},
         {"input_types", json::array({"GenericList[Tensor(float)]", "Object", "Object", "Int"})}});
  }
  const std::string dir = test::fresh_temp_dir("trace_legacy_comms").string();
  std::ofstream(dir + "/rank0.et.json") << json{{"schema", "1.0.1"}, {"pid", 7}, {"nodes", nodes}};
  std::ofstream(dir + "/rank1.et.json") << json{{"schema", "1.0.1"}, {"pid", 8}, {"nodes", nodes}};
  const auto tables = read_traces(dir);
  REQUIRE(tables.size() == 2);
  std::map<std::int64_t, std::int64_t> size_of;  // count -> comm_size
  for (const auto& r : tables[0]->rows())
    if (r.key.kind == std::string("collective")) size_of[r.key.count] = r.key.comm_size;
  CHECK(size_of ==
        std::map<std::int64_t, std::int64_t>{{1000, 4}, {2000, 8}, {3000, 2}, {4000, 2}});
}

TEST_CASE("trace: a trace that is one array of events streams as traceEvents, kept by nobody") {
  // the Chrome trace's JSON Array Format (the legacy autograd profiler's export): each event was
  // a top-level "member" of key "", every one of them held in memory until the file's end, and
  // the trace then refused
  struct Counting : JsonSink {
    std::size_t members = 0, events = 0;
    void member(const std::string&, const nlohmann::json&) override { ++members; }
    void element(const std::string& key, nlohmann::json& value) override {
      if (key == "traceEvents" && value.is_object()) ++events;
    }
  };
  const std::string dir = test::fresh_temp_dir("trace_array").string();
  const auto object = nlohmann::json::parse(test::read_text(kData + "cpu_rank0.pt.trace.json"));
  std::ofstream(dir + "/cpu_rank0.pt.trace.json") << object.at("traceEvents").dump();
  Counting sink;
  stream_json(dir + "/cpu_rank0.pt.trace.json", sink);
  CHECK((sink.members == 0 && sink.events == 13));
  // the same rows as the object it came from
  const auto array = read_traces(dir + "/cpu_rank0.pt.trace.json");
  const auto whole = read_traces(kData + "cpu_rank0.pt.trace.json");
  REQUIRE((array.size() == 1 && whole.size() == 1));
  const auto a = by_api(*array[0]), w = by_api(*whole[0]);
  REQUIRE(a.size() == w.size());
  for (const auto& [api, row] : w)
    CHECK((a.at(api).calls == row.calls && a.at(api).total_us == Approx(row.total_us)));
}

TEST_CASE("trace: a c10d call's communicator is the ranks' count, not the files', and says so") {
  // joined_all_gather/: rank 0's profiler trace without shapes and its execution trace, whose
  // c10d::_allgather_base_ gathers 1024 bf16 elements into 4096. Two files, one rank: the
  // communicator was taken as 2 (the files), bytes 1024 x 2 B x 2 = 4096
  auto gather = [](const TraceTable& t) {
    for (const auto& r : t.rows())
      if (std::string(r.key.api) == "c10d::_allgather_base_") return r.key;
    FAIL("no c10d::_allgather_base_ row");
    return capture::CaptureKey{};
  };
  const auto joined = read_traces(kData + "joined_all_gather");
  REQUIRE(joined.size() == 1);
  const auto k = gather(*joined[0]);
  CHECK((std::string(k.op) == "all_gather" && k.count == 1024 && k.comm_size == 1 &&
         k.bytes == 2048));
  CHECK_THAT(joined[0]->notes,
             Catch::VectorContains(std::string(
                 "1 communication calls whose trace records no group size (no \"Group size\", or "
                 "shapes from the execution trace): communicator size 1 assumed, the number of "
                 "ranks whose traces were read together (no distributedInfo world_size)")));
  // rank 0's profiler trace with `header` before its events and `event` after them, read with
  // its execution trace
  const std::string dir = test::fresh_temp_dir("trace_world").string();
  std::ofstream(dir + "/rank0.et.json")
      << test::read_text(kData + "joined_all_gather/rank0.et.json");
  auto read_with = [&](const std::string& header, const std::string& event = "") {
    std::string pt = test::read_text(kData + "joined_all_gather/rank0.pt.trace.json");
    if (!event.empty()) pt.insert(pt.rfind("]"), ",\n  " + event + "\n ");
    pt.insert(pt.find("\"traceEvents\""), header + ",\n ");
    std::ofstream(dir + "/rank0.pt.trace.json") << pt;
    auto tables = read_traces(dir);
    REQUIRE(tables.size() == 1);
    return std::move(tables[0]);
  };
  const std::string world_of_8 =
      "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 8}";
  // the profiler trace's distributedInfo world_size wins
  const auto stated =
      read_with("\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 4}");
  const auto s = gather(*stated);
  CHECK((s.count == 1024 && s.comm_size == 4 && s.bytes == 8192));
  CHECK_THAT(stated->notes,
             Catch::VectorContains(std::string(
                 "1 communication calls whose trace records no group size (no \"Group size\", or "
                 "shapes from the execution trace): communicator size 4 assumed, this trace's "
                 "distributedInfo world_size")));
  // as Kineto writes a GPU trace: the deviceProperties array before the distributedInfo (the
  // header's reading stopped at the array's first element, and the communicator was 1)
  const auto g = gather(*read_with(
      "\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H200\"}],\n " + world_of_8));
  CHECK((g.count == 1024 && g.comm_size == 8 && g.bytes == 16384));
  // the call's record_param_comms child states its group (4: an HSDP shard group of the 8
  // ranks), which beats the execution trace's hint and its assumed world (it came out as 8)
  const auto grouped = read_with(
      world_of_8,
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 7, \"tid\": "
      "1, \"ts\": 1012, \"dur\": 30, \"args\": {\"External id\": 8, \"Record function id\": 8, "
      "\"Collective name\": \"_allgather_base\", \"In msg nelems\": 1024, \"Out msg nelems\": "
      "4096, \"Group size\": 4, \"dtype\": \"BFloat16\"}}");
  const auto h = gather(*grouped);
  CHECK((h.count == 1024 && h.comm_size == 4 && h.bytes == 8192));
  for (const std::string& note : grouped->notes)
    CHECK(note.find("communicator size") == std::string::npos);
  // an on-demand trace's distributedInfo after its events: the call was read with 1 (the ranks
  // read together), which the note says, and that the trace's world_size came too late (it
  // said "communicator size 8 assumed" of a row of 1)
  {
    std::string pt = test::read_text(kData + "joined_all_gather/rank0.pt.trace.json");
    pt.insert(pt.rfind("}"), ",\n " + world_of_8 + "\n");
    std::ofstream(dir + "/rank0.pt.trace.json") << pt;
    const auto late = read_traces(dir);
    REQUIRE(late.size() == 1);
    CHECK(gather(*late[0]).comm_size == 1);
    CHECK_THAT(late[0]->notes,
               Catch::VectorContains(std::string(
                   "1 communication calls whose trace records no group size (no \"Group size\", "
                   "or shapes from the execution trace): communicator size 1 assumed, the number "
                   "of ranks whose traces were read together (no distributedInfo world_size) (its "
                   "distributedInfo, world_size 8, comes after the events)")));
    CHECK(late[0]->facts.rank == "0");
  }
}

TEST_CASE(
    "trace: a GPU step's idle time is split by the phase whose kernel the device waited for") {
  // phases/: a forward GEMM and add_, the GEMM's backward on the autograd engine's thread
  // (inside autograd::engine::evaluate_function), foreach AdamW inside Optimizer.step#; kernels
  // [1100, 1200] fwd, [1250, 1300] fwd, [1400, 1600] bwd, [1620, 1630] no operator (after a
  // backward kernel), [1700, 1740] optimizer
  const auto tables = read_traces(kData + "phases");
  REQUIRE(tables.size() == 1);
  const TraceTable& t = *tables[0];
  CHECK(t.facts.source == "trace:gpu");
  const auto rows = by_api(t);
  CHECK(rows.count("(GPU 0 idle)") == 0);
  CHECK(rows.at("(GPU 0 idle, forward)").total_us == Approx(50.0));    // 1200 -> 1250
  CHECK(rows.at("(GPU 0 idle, backward)").total_us == Approx(120.0));  // 1300 -> 1400, 1600 -> 1620
  CHECK(rows.at("(GPU 0 idle, optimizer)").total_us == Approx(70.0));  // 1630 -> 1700
  CHECK(rows.at("(GPU 0 idle, optimizer)").kind == "idle");
  CHECK(rows.at("aten::mm").calls == 2);  // the forward's and the backward's, one shape
  CHECK(rows.at("aten::mm").total_us == Approx(300.0));
  CHECK(rows.at("aten::_foreach_add_").total_us == Approx(40.0));
  CHECK(rows.at("(GPU work without an operator)").total_us == Approx(10.0));
  CHECK(sum_us(t) == Approx(1740.0 - 1100.0));
}

TEST_CASE("trace: a GPU step whose optimizer has no Optimizer.step# annotation says so") {
  // phases/ with its optimizer's annotation renamed, as a step compiled by torch.compile or an
  // optimizer outside torch.optim records it: its kernel's wait (1630 -> 1700) is the forward's
  std::ifstream in(kData + "phases/rank0.pt.trace.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  for (auto& e : doc["traceEvents"])
    if (e.value("name", "") == "Optimizer.step#AdamW.step") e["name"] = "CompiledFunction";
  const auto tables = read_traces(test::write_temp("no_optimizer.pt.trace.json", doc.dump()));
  REQUIRE(tables.size() == 1);
  const auto rows = by_api(*tables[0]);
  CHECK(rows.count("(GPU 0 idle, optimizer)") == 0);
  CHECK(rows.at("(GPU 0 idle, forward)").total_us == Approx(50.0 + 70.0));
  const std::string note =
      "a backward but no Optimizer.step# annotation (an optimizer outside torch.optim, or one run "
      "under torch.compile): the optimizer's kernels and the GPU's waits for them count with the "
      "forward's";
  CHECK_THAT(tables[0]->notes, Catch::VectorContains(note));
  // with the annotation (the fixture as it is) there is no such note
  const auto plain = read_traces(kData + "phases");
  CHECK_THAT(plain[0]->notes, !Catch::VectorContains(note));
}

TEST_CASE("trace: on the CPU the optimizer's step keeps the time none of its operators took") {
  // The phases/ step without its kernels: Optimizer.step#AdamW.step (200 us) nests
  // _foreach_add_ (50) and owns the rest; zero_grad's annotation nests nothing
  std::ifstream in(kData + "phases/rank0.pt.trace.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  auto& events = doc["traceEvents"];
  events.erase(std::remove_if(events.begin(), events.end(),
                              [](const nlohmann::json& e) { return e["cat"] == "kernel"; }),
               events.end());
  const auto tables = read_traces(test::write_temp("cpu_phases.pt.trace.json", doc.dump()));
  REQUIRE(tables.size() == 1);
  const TraceTable& t = *tables[0];
  CHECK(t.facts.source == "trace:cpu");
  const auto rows = by_api(t);
  CHECK(rows.at("Optimizer.step#AdamW.step").total_us == Approx(150.0));
  CHECK(rows.at("Optimizer.step#AdamW.step").kind == "other");
  CHECK(rows.count("Optimizer.zero_grad#AdamW.zero_grad") == 0);
  // the step less its top-level operators (20 + 10 + 200)
  CHECK(rows.at("ProfilerStep (time between operators)").total_us == Approx(1770.0));
  // the autograd thread's: evaluate_function 100 - 90, MmBackward0 90 - 30, its mm 30
  CHECK(rows.at("autograd::engine::evaluate_function: MmBackward0").total_us == Approx(10.0));
  CHECK(rows.at("aten::mm").total_us == Approx(50.0));
  CHECK(sum_us(t) == Approx(2000.0 + 100.0));
}

TEST_CASE(
    "trace: a gap before a kernel the host had already launched is the device's own, not idle") {
  using P = Phase;
  // the second kernel was launched at 8, before the first ended at 10: its 2 µs gap (10 -> 12)
  // is the device's cost of starting a queued kernel; the third was launched at 25, after the
  // second ended at 20: the device waited 20 -> 27 for the host. A kernel with no known launch
  // (NaN) is the host's wait, as before.
  std::vector<GpuSpan> spans{{0, 10, P::forward, true},
                             {12, 20, P::forward, true},
                             {27, 30, P::backward, true},
                             {35, 40, P::backward, true}};
  spans[1].launched_us = 8;
  spans[2].launched_us = 25;
  const PhaseIdle idle = idle_by_phase(spans);
  CHECK(spans[1].queued_gap_us == 2.0);
  CHECK(spans[2].queued_gap_us == 0.0);
  CHECK(spans[3].queued_gap_us == 0.0);
  CHECK(idle.idle_us[0] == 0.0);
  CHECK(idle.idle_us[1] == 7.0 + 5.0);  // 20 -> 27, 30 -> 35
}

TEST_CASE("trace: idle_by_phase charges each gap to the kernel that ends it") {
  using P = Phase;
  // overlapping streams leave no gap; an unlinked first kernel is the forward's
  std::vector<GpuSpan> spans{{0, 10, P::forward, false},
                             {5, 8, P::backward, true},  // inside the first: no gap
                             {20, 30, P::backward, true},
                             {25, 40, P::optimizer, true},
                             {45, 50, P::optimizer, false}};  // the optimizer's, as before
  PhaseIdle idle = idle_by_phase(spans);
  CHECK(idle.idle_us[0] == 0.0);
  CHECK(idle.idle_us[1] == 10.0);  // 10 -> 20
  CHECK(idle.idle_us[2] == 5.0);   // 40 -> 45
  CHECK(idle.total_us() == 15.0);
  CHECK((idle.seen[0] && idle.seen[1] && idle.seen[2]));
  // listed out of time order: sorted first
  spans = {{30, 40, P::optimizer, true}, {0, 10, P::forward, true}};
  idle = idle_by_phase(spans);
  CHECK(idle.idle_us[2] == 20.0);
  CHECK(!idle.seen[1]);
  CHECK(spans[0].start_us == 0.0);
  spans.clear();
  CHECK(idle_by_phase(spans).total_us() == 0.0);
  CHECK(phase_of("Optimizer.step#SGD.step", P::forward) == P::optimizer);
  CHECK(phase_of("autograd::engine::evaluate_function: AddBackward0", P::forward) == P::backward);
  CHECK(phase_of("aten::mm", P::backward) == P::backward);
  CHECK(phase_of("Optimizer.zero_grad#SGD.zero_grad", P::forward) == P::forward);
}
