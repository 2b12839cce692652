// libFuzzer target: attention shapes files, through validation and FLOP/byte accounting.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attention/attention_shape.hpp"
#include "common/error.hpp"
#include "common/json_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& s : opbench::attention_shapes_from_json(
             opbench::parse_json_text(text, "fuzz.json"), "fuzz.json")) {
      s.flops(opbench::AttentionPass::bwd);
      s.io_bytes(opbench::AttentionPass::bwd);
    }
  } catch (const opbench::Error&) {
  }
  return 0;
}
