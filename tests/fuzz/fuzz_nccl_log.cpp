// libFuzzer target: NCCL_DEBUG=INFO logs. Parsing never fails: malformed collective lines are
// counted, everything else ignored; a crash or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fsdp/nccl_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  opbench::NcclLogSummary summary;
  opbench::add_nccl_log(in, summary);
  for (const auto& [call, n] : summary.calls) {
    opbench::nccl_datatype_name(call.datatype);
    opbench::nccl_redop_name(call.redop);
  }
  return 0;
}
