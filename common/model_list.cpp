#include "common/model_list.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "common/json_reader.hpp"
#include "common/model_config.hpp"
#include "common/report.hpp"

namespace opbench {

int print_model_list(const std::string& given_path) {
  const std::string path = given_path.empty() ? find_config_file("models.json") : given_path;
  auto models = load_models(path);
  ConsoleTable table({{"model", "", 18},
                      {"layers", "", 6},
                      {"hidden", "", 6},
                      {"ffn", "", 6},
                      {"heads", "", 5},
                      {"kv_heads", "", 8},
                      {"vocab", "", 6},
                      {"seqlen", "", 6},
                      {"kind", "", 10}});
  for (const auto& m : models) {
    Record r;
    std::string kind =
        m.moe ? fmt::format("moe {}x{}", m.moe->num_experts_per_tok, m.moe->n_routed_experts)
              : "dense";
    if (m.mla) kind += "+mla";
    r.arg("model", m.name).arg("layers", m.num_hidden_layers).arg("hidden", m.hidden_size);
    r.arg("ffn", m.intermediate_size)
        .arg("heads", m.num_attention_heads)
        .arg("kv_heads", m.num_key_value_heads);
    r.arg("vocab", m.vocab_size).arg("seqlen", m.seqlen).arg("kind", kind);
    table.print(r);
  }
  std::printf("%zu models in %s\n", models.size(), path.c_str());
  return 0;
}

}  // namespace opbench
