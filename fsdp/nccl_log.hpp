#pragma once
// NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL logs: each collective call is a line like
//   host:86088:86640 [0] NCCL INFO AllGather: opCount c97 sendbuff 0x7ebe75600000 recvbuff
//   0x7ebe75600000 acc (nil) count 106956800 datatype 9 op 0 root 0 comm 0x... [nranks=8] stream
//   0x...
// parsed into a histogram by (collective, count, datatype, redop). Other lines are ignored; a
// collective line that is cut short or garbled is counted as malformed, never fatal.
#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace opbench {

struct NcclCall {
  std::string collective;  // "AllGather", "ReduceScatter", "AllReduce", ...
  std::int64_t count = 0;
  int datatype = -1;  // NCCL's code (9 = ncclBfloat16)
  int redop = -1;     // NCCL's code (4 = ncclAvg)
  int nranks = 0;     // 0 when the line does not say

  auto key() const { return std::tie(collective, count, datatype, redop); }
  bool operator<(const NcclCall& o) const { return key() < o.key(); }
};

struct NcclLogSummary {
  std::map<NcclCall, std::int64_t> calls;  // occurrences of each distinct call
  std::int64_t lines = 0, collective_lines = 0, malformed = 0;
  std::vector<std::string> malformed_examples;  // the first few, for the report
};

// Parses one line; returns false when it is not a collective line. Sets *malformed when it
// names a collective but cannot be read.
bool parse_nccl_log_line(const std::string& line, NcclCall* call, bool* malformed);
void add_nccl_log(std::istream& in, NcclLogSummary& summary);
// Reads a log file; a missing or unreadable file is bad_input naming it.
void add_nccl_log_file(const std::string& path, NcclLogSummary& summary);

std::string nccl_datatype_name(int code);  // 9 -> "bf16", unknown -> "datatype 42"
std::size_t nccl_datatype_size(int code);  // 9 -> 2 bytes, unknown -> 0
std::string nccl_redop_name(int code);     // 4 -> "avg"

}  // namespace opbench
