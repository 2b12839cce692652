// The rules a capture file's rows obey (common/capture_rows): the bytes a collective's count
// makes, worked out by hand, and where the count alone does not give them; and what the tables
// read together say (common/capture_tables): an NCCL communicator's members.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/capture_rows.hpp"
#include "common/capture_tables.hpp"
#include "common/error.hpp"
#include "common/job_time.hpp"

using namespace opbench;

namespace {

const std::vector<std::string> kHeader = {
    "host",   "rank",      "pid",    "api",    "kind",        "op",       "dtype",
    "m",      "n",         "k",      "batch",  "layout",      "flops",    "bytes",
    "count",  "comm_size", "redop",  "calls",  "timed_calls", "total_us", "avg_us",
    "min_us", "p50_us",    "p99_us", "max_us", "note"};

// A timed collective row: 4 calls, 40 µs in all.
std::vector<std::string> collective(const std::string& api, const std::string& op,
                                    const std::string& dtype, const std::string& bytes,
                                    const std::string& count, const std::string& comm_size) {
  return {"n1", "0",      "7",      api,     "collective", op,       dtype,     "",    "",
          "",   "",       "",       "",      bytes,        count,    comm_size, "sum", "4",
          "4",  "40.000", "10.000", "9.000", "10.000",     "11.000", "11.000",  ""};
}

std::string refusal(const std::vector<std::string>& row) {
  try {
    check_capture_table("cap.csv", {kHeader, row});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE(
    "A collective row's bytes are its count x the element size of its dtype, x the ranks "
    "where the count is one rank's share") {
  // all_reduce: 1024 fp32 = 4096 B; all_gather on 4 ranks: 256 bf16 x 2 B x 4 = 2048 B;
  // reduce_scatter on 8 ranks: 16 fp64 x 8 B x 8 = 1024 B; a send of 10 int8 = 10 B
  CHECK(refusal(collective("MPI_Allreduce", "all_reduce", "fp32", "4096", "1024", "2")).empty());
  CHECK(refusal(collective("ncclAllGather", "all_gather", "bf16", "2048", "256", "4")).empty());
  CHECK(refusal(collective("ncclReduceScatter", "reduce_scatter", "fp64", "1024", "16", "8"))
            .empty());
  CHECK(refusal(collective("MPI_Send", "send", "int8", "10", "10", "2")).empty());
  CHECK(refusal(collective("ncclAllGather", "all_gather", "bf16", "4096", "256", "4")) ==
        "cap.csv row 1 bytes: 4096, but count 256 of bf16 (2 B each) on 4 ranks makes 2048 for "
        "ncclAllGather");
  // MPI_Alltoallv counts everything the rank sends: 300 fp32 are 1200 B on any number of ranks
  CHECK(refusal(collective("MPI_Alltoallv", "all_to_all", "fp32", "1200", "300", "4")).empty());
  CHECK(refusal(collective("MPI_Alltoall", "all_to_all", "fp32", "1200", "300", "4")) ==
        "cap.csv row 1 bytes: 1200, but count 300 of fp32 (4 B each) on 4 ranks makes 4800 for "
        "MPI_Alltoall");
}

TEST_CASE("Where the count alone does not give the bytes, they are not checked") {
  // MPI_Reduce_scatter's bytes sum every rank's count (3 + 5 fp32 = 32 B; this rank's is 3)
  CHECK(
      refusal(collective("MPI_Reduce_scatter", "reduce_scatter", "fp32", "32", "3", "2")).empty());
  // a group of an fp32 all_reduce of 4 and an fp16 one of 4: 16 + 8 = 24 B for 8 elements
  CHECK(refusal(collective("ncclGroupEnd", "all_reduce", "fp32", "24", "8", "2")).empty());
  // MPI's derived types, and types opbench does not name
  CHECK(refusal(collective("MPI_Allreduce", "all_reduce", "other", "96", "4", "2")).empty());
  CHECK(refusal(collective("MPI_Allreduce", "all_reduce", "int16", "8", "4", "2")).empty());
  CHECK(refusal(collective("MPI_Barrier", "barrier", "none", "0", "0", "2")).empty());
}

TEST_CASE("Counts and times of a capture row") {
  auto row = collective("MPI_Allreduce", "all_reduce", "fp32", "4096", "1024", "2");
  row[18] = "5";  // timed_calls above the 4 calls
  CHECK(refusal(row) == "cap.csv row 1 timed_calls: 5 exceeds calls (4)");
  row = collective("MPI_Allreduce", "all_reduce", "fp32", "4096", "1024", "2");
  row[19] = "1e999";  // beyond a double: infinite
  CHECK(refusal(row) == "cap.csv row 1 total_us: expected a finite number >= 0, got '1e999'");
  row[19] = "-1";
  CHECK(refusal(row) == "cap.csv row 1 total_us: expected a finite number >= 0, got '-1'");
  row[19] = "";  // 4 calls timed, and no time
  for (std::size_t i = 20; i < 25; ++i)
    row[i] = "";
  CHECK(refusal(row) == "cap.csv row 1 total_us: empty, but timed_calls is 4");
  row[18] = "0";  // none timed: no times is right
  CHECK(refusal(row).empty());
  row[17] = "9223372036854775808";  // one above the largest int64
  CHECK(refusal(row) ==
        "cap.csv row 1 calls: expected a whole number >= 0, got '9223372036854775808'");
}

// 10 timed calls of 1000 us in all (100 us each) and 5 the sampling skipped: 1500 us in the job.
// Without a timed call there is no mean to give the skipped ones.
TEST_CASE("A shape's time in the job counts the sampled-out calls at the timed calls' mean") {
  CHECK(job_time_us(1000.0, 10, 5) == Approx(1500.0));
  CHECK(job_time_us(1000.0, 10, 0) == Approx(1000.0));
  CHECK(job_time_us(0.0, 0, 5) == 0.0);
}

TEST_CASE("An NCCL communicator's stride comes from the ranks whose tables hold its comm_id") {
  // Four ranks' tables: communicator a... on ranks 0 and 2 (stride 2), b... on ranks 0, 1 and 3
  // (not evenly spaced), c... of 2 ranks whose second member's table is missing, and an MPI row
  // that states its own stride, 4
  auto table = [](const std::string& rank, const std::string& rows) {
    return std::pair<std::string, std::string>{
        "capture-h-rank" + rank + ".csv",
        "host,rank,pid,api,kind,op,dtype,m,n,k,batch,layout,flops,bytes,count,comm_size,"
        "comm_stride,comm_id,redop,calls,timed_calls,total_us,avg_us,min_us,p50_us,p99_us,max_us,"
        "note\n" +
            rows};
  };
  auto row = [](const std::string& rank, const std::string& bytes, const std::string& size,
                const std::string& stride, const std::string& id) {
    return "h," + rank + ",7,ncclAllReduce,collective,all_reduce,fp32,,,,,,," + bytes + "," +
           std::to_string(std::stoll(bytes) / 4) + "," + size + "," + stride + "," + id +
           ",sum,1,1,10.000,10.000,10.000,10.000,10.000,10.000,\n";
  };
  const std::string a = "aaaaaaaaaaaaaaaa", b = "bbbbbbbbbbbbbbbb", c = "cccccccccccccccc";
  ShapeSource source{"--capture-path", "job", {}, {}};
  // (and a GEMM row with a stray comm_id, whose empty comm_size is no number: not a member)
  const std::string gemm = "h,0,7,sgemm_,gemm,gemm,fp32,8,8,8,1,NN,1024,,,,," + a +
                           ",,1,1,10.000,10.000,10.000,10.000,10.000,10.000,\n";
  source.tables = {
      table("0", row("0", "4096", "2", "", a) + row("0", "8192", "3", "", b) +
                     row("0", "16384", "2", "", c) + row("0", "32768", "2", "4", "") + gemm),
      table("1", row("1", "8192", "3", "", b)), table("2", row("2", "4096", "2", "", a)),
      table("3", row("3", "8192", "3", "", b))};
  std::map<std::string, std::string> stride;  // bytes -> comm_stride as the key reads it
  for (const CapturedShape& s :
       read_capture_shapes({source, std::nullopt, {"collective"}, {"bytes", "comm_stride"}}))
    stride[s.key[0]] = s.key[1];
  CHECK(stride == std::map<std::string, std::string>{
                      {"4096", "2"}, {"8192", ""}, {"16384", ""}, {"32768", "4"}});
  // the members come from every table, whatever --rank keeps
  const auto rank2 = read_capture_shapes({source, 2, {"collective"}, {"bytes", "comm_stride"}});
  REQUIRE(rank2.size() == 1);
  CHECK(rank2[0].key == std::vector<std::string>{"4096", "2"});
}
