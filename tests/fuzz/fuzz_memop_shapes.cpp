// libFuzzer target: bench_memops shapes files, through the byte accounting of every case.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "common/json_reader.hpp"
#include "memops/memop_cases.hpp"
#include "memops/memop_operands.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto doc = opbench::parse_json_text(text, "fuzz.json");
    for (const auto& c : opbench::memop_cases_from_json(
             doc, "fuzz.json", {opbench::DType::fp32, opbench::DType::bf16})) {
      opbench::memop_io_bytes(c);
      c.copied_bytes();
      c.dims();
    }
  } catch (const opbench::Error&) {
  }
  return 0;
}
