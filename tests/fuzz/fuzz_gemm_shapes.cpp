// libFuzzer target: explicit GEMM shapes files, through FLOP and byte accounting.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "common/json_reader.hpp"
#include "gemm/gemm_cases.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto doc = opbench::parse_json_text(text, "fuzz.json");
    for (const auto& c : opbench::shape_cases_from_json(doc, "fuzz.json", {opbench::DType::bf16})) {
      c.problem.flops();
      c.problem.io_bytes();
    }
  } catch (const opbench::Error&) {
  }
  return 0;
}
