#include "fsdp/nccl_log.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.hpp"

namespace opbench {
namespace {

// The value after " <key> " in a collective line, or false if absent or not a number.
bool field(const std::string& line, const std::string& key, int base, std::int64_t* value) {
  auto pos = line.find(" " + key + " ");
  if (pos == std::string::npos) return false;
  pos += key.size() + 2;
  std::size_t end = line.find(' ', pos);
  std::string token = line.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
  if (token.empty()) return false;
  try {
    std::size_t used = 0;
    long long v = std::stoll(token, &used, base);
    if (used != token.size()) return false;
    *value = v;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

bool parse_nccl_log_line(const std::string& line, NcclCall* call, bool* malformed) {
  *malformed = false;
  auto info = line.find(" NCCL INFO ");
  if (info == std::string::npos) return false;
  auto name_start = info + 11;
  auto colon = line.find(": opCount", name_start);
  if (colon == std::string::npos) {
    // "NCCL INFO AllGather:" cut before opCount is still a collective line, just broken.
    auto c = line.find(':', name_start);
    std::string name = c == std::string::npos ? "" : line.substr(name_start, c - name_start);
    if (!name.empty() && name.find(' ') == std::string::npos &&
        (name.rfind("All", 0) == 0 || name.rfind("Reduce", 0) == 0 || name == "Broadcast" ||
         name == "Send" || name == "Recv")) {
      *malformed = true;
      return true;
    }
    return false;
  }
  NcclCall c;
  c.collective = line.substr(name_start, colon - name_start);
  std::int64_t count = 0, datatype = 0, op = 0, nranks = 0;
  if (c.collective.empty() || c.collective.find(' ') != std::string::npos ||
      !field(line, "count", 10, &count) || !field(line, "datatype", 10, &datatype) ||
      !field(line, "op", 10, &op) || count < 0 ||
      // ncclDataType_t has 12 codes (nccl.h: ncclNumTypes = 12); any other is a garbled line.
      // Reduction codes from ncclNumOps on are custom ops (ncclRedOpCreatePreMulSum): valid.
      nccl_datatype_size(static_cast<int>(datatype)) == 0 || op < 0) {
    *malformed = true;
    return true;
  }
  c.count = count;
  c.datatype = static_cast<int>(datatype);
  c.redop = static_cast<int>(op);
  auto nr = line.find("[nranks=");
  if (nr != std::string::npos) {
    std::istringstream s(line.substr(nr + 8));
    if (s >> nranks) c.nranks = static_cast<int>(nranks);
  }
  *call = c;
  return true;
}

void add_nccl_log(std::istream& in, NcclLogSummary& s) {
  std::string line;
  while (std::getline(in, line)) {
    ++s.lines;
    NcclCall call;
    bool malformed = false;
    if (!parse_nccl_log_line(line, &call, &malformed)) continue;
    ++s.collective_lines;
    if (malformed) {
      ++s.malformed;
      if (s.malformed_examples.size() < 3) s.malformed_examples.push_back(line.substr(0, 160));
      continue;
    }
    ++s.calls[call];
  }
}

void add_nccl_log_file(const std::string& path, NcclLogSummary& summary) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw bad_input(fmt::format("--nccl-log {}: no such file", path));
  if (std::filesystem::is_directory(path, ec))
    throw bad_input(fmt::format("--nccl-log {}: is a directory", path));
  std::ifstream in(path);
  if (!in) throw bad_input(fmt::format("--nccl-log {}: cannot be read", path));
  add_nccl_log(in, summary);
}

std::string nccl_datatype_name(int code) {
  static const char* kNames[] = {"int8", "uint8", "int32", "uint32", "int64",    "uint64",
                                 "fp16", "fp32",  "fp64",  "bf16",   "fp8_e4m3", "fp8_e5m2"};
  if (code >= 0 && code < 12) return kNames[code];
  return fmt::format("datatype {}", code);
}

std::size_t nccl_datatype_size(int code) {
  static const std::size_t kSizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return code >= 0 && code < 12 ? kSizes[code] : 0;
}

std::string nccl_redop_name(int code) {
  static const char* kNames[] = {"sum", "prod", "max", "min", "avg"};
  if (code >= 0 && code < 5) return kNames[code];
  return fmt::format("op {}", code);
}

}  // namespace opbench
