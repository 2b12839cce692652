// libFuzzer target: models.json. Any input must end in a model list or an opbench::Error (a clear
// bad-input message); anything else — another exception, a crash, a sanitizer report — is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "common/json_reader.hpp"
#include "common/model_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto models =
        opbench::models_from_json(opbench::parse_json_text(text, "fuzz.json"), "fuzz.json");
    opbench::select_models(models, "all", "fuzz.json");
  } catch (const opbench::Error&) {
  }
  return 0;
}
